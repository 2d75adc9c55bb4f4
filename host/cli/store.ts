// Where the CLI's store is and how it is opened. `--store` takes a SQLite
// file path (default `./.phronomy/store.db`, `file:` prefix allowed); a
// `postgres://` URL is refused with a clear "not supported yet". Commands
// that only read or decide (`ls`, `show`, `approve`, `reject`, `recover`)
// need the store to exist; `run` and `demo` create it.
//
// The CLI opens a store as its owner (SPEC §4.3): one process owns an
// embedded store at a time. When an application owns it, the open fails and
// the CLI says which process owns it; opening as a visitor (reading and
// filing decisions beside a live owner) is not built yet.

import { existsSync, mkdirSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { Phronomy, StoreError, type Environment, type Logger } from "../index.js";
import { SqliteStore } from "../store/sqlite-store.js";
import type { ExecutionStore } from "../store/store.js";
import { CliError, oneLine } from "./errors.js";

export const STORE_DEFAULT = "./.phronomy/store.db";

/** The environment variable that sets the store when `--store` is not given. */
export const STORE_VARIABLE = "PHRONOMY_STORE";

export interface StoreLocation {
  /** Absolute path of the SQLite file. */
  readonly path: string;
  /** As the user wrote it, for messages. */
  readonly given: string;
}

/** Resolves `--store`. With `mustExist`, a missing file is an error (a
 * read command must not create an empty store by accident); without it,
 * the parent directory is created. */
export function resolveStore(given: string, options: { readonly mustExist: boolean }): StoreLocation {
  if (/^postgres(ql)?:\/\//i.test(given)) {
    throw new CliError("STORE_NOT_SUPPORTED", `PostgreSQL stores are not supported yet (--store ${redactUrl(given)}); use a SQLite file path such as ${STORE_DEFAULT}`);
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(given)) {
    throw new CliError("STORE_NOT_SUPPORTED", `--store ${redactUrl(given)}: only SQLite file paths are supported (PostgreSQL is planned)`);
  }
  const withoutScheme = given.startsWith("file:") ? given.slice("file:".length) : given;
  if (withoutScheme.length === 0) throw new CliError("USAGE", "--store needs a file path");
  const path = resolve(withoutScheme);
  if (existsSync(path)) {
    if (statSync(path).isDirectory()) throw new CliError("USAGE", `--store ${given} is a directory; give the store's file path (e.g. ${given.replace(/\/$/, "")}/store.db)`);
  } else if (options.mustExist) {
    throw new CliError("STORE_NOT_FOUND", `no store at ${path}: \`phronomy demo\` or \`phronomy run\` creates one, or pass --store <path>`);
  } else {
    mkdirSync(dirname(path), { recursive: true });
  }
  return { path, given };
}

export interface OpenedStore {
  readonly environment: Environment;
  readonly location: StoreLocation;
}

export interface OpenStoreOptions {
  readonly logger: Logger;
  /** `false` leaves recovery to the caller (`env.recover()`); by default
   * each agent's unfinished executions are recovered when it is defined. */
  readonly recover?: boolean;
  /** Wraps the SQLite store before the environment uses it (the crash demo
   * watches its barriers this way). */
  readonly wrapStore?: (store: ExecutionStore) => ExecutionStore;
}

/** Opens the store as its owner. */
export async function openStore(location: StoreLocation, options: OpenStoreOptions): Promise<Environment> {
  const common = { logger: options.logger, recover: options.recover ?? true };
  try {
    if (options.wrapStore === undefined) return await Phronomy.open({ store: location.path, ...common });
    const store = await SqliteStore.open(location.path);
    try {
      return await Phronomy.open({ store: options.wrapStore(store), ...common });
    } catch (error) {
      await store.close();
      throw error;
    }
  } catch (error) {
    throw explainOpenFailure(error, location);
  }
}

/** The runtime's message already names the owner; the CLI adds what the
 * user can do from the command line. */
function explainOpenFailure(error: unknown, location: StoreLocation): unknown {
  if (!(error instanceof StoreError) || error.details?.reason !== "store_owned") return error;
  const owner = error.details.owner as { pid?: number; hostname?: string; startedAt?: string } | null | undefined;
  const who = owner?.pid !== undefined ? `process ${owner.pid} on ${owner.hostname ?? "?"} (since ${owner.startedAt ?? "?"})` : "another process";
  return new StoreError(
    oneLine(`the store at ${location.path} is owned by ${who}; the CLI opens a store as its owner and one process owns a store at a time — ` +
      "stop that process (or close its environment) and try again; opening a store as a visitor beside its owner is not built yet"),
    { cause: error, details: error.details },
  );
}

/** A URL in a message without its password. */
function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@/]*@/, "//$1:***@");
}
