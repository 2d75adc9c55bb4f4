// Where the CLI's store is and how it is opened. `--store` takes a SQLite
// file path (default `./.phronomy/store.db`, `file:` prefix allowed) or a
// PostgreSQL URL (`postgres://user@host:5432/db?schema=phronomy`). Commands
// that only read or decide (`ls`, `show`, `approve`, `reject`, `recover`)
// need the store to exist — a file, or a schema holding a Phronomy store;
// `run` and `demo` create it (`demo` runs on SQLite only).
//
// The CLI opens a SQLite store as its owner (SPEC §4.3): one process owns an
// embedded store at a time. When an application owns it, `ls`, `show`,
// `approve` and `reject` open it as a visitor instead (docs/decisions/0015:
// they read, and file the decision for the owner to apply); `run`,
// `recover` and `demo` need ownership and fail naming the owner. A PostgreSQL store
// is shared by many processes: `ls` and `show` define no agent and so take
// no lease; commands that define an agent take its lease (docs/decisions/0010)
// and are refused, or skip it, while another live process owns it.
//
// A URL's password is never printed: messages, `--json` and the commands
// the CLI suggests show it as `***` (`storeForDisplay`).

import { existsSync, mkdirSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { Phronomy, PostgresStore, SqliteStore, StoreError, type Environment, type ExecutionStore, type Logger } from "../index.js";
import { CliError, oneLine } from "./errors.js";

export const STORE_DEFAULT = "./.phronomy/store.db";

/** The environment variable that sets the store when `--store` is not given. */
export const STORE_VARIABLE = "PHRONOMY_STORE";

export type StoreLocation = SqliteLocation | PostgresLocation;

export interface SqliteLocation {
  readonly kind: "sqlite";
  /** Absolute path of the SQLite file. */
  readonly path: string;
  /** As the user wrote it, for messages. */
  readonly given: string;
}

export interface PostgresLocation {
  readonly kind: "postgres";
  /** For messages, `--json` and agent modules: the URL without its password. */
  readonly path: string;
  /** The URL to connect to, with its password: never printed. */
  readonly url: string;
  /** A read command's store must already hold a Phronomy schema. */
  readonly mustExist: boolean;
}

/** Resolves `--store`. With `mustExist`, a missing file is an error (a
 * read command must not create an empty store by accident); without it,
 * the parent directory is created. */
export function resolveStore(given: string, options: { readonly mustExist: boolean }): StoreLocation {
  if (isPostgresUrl(given)) {
    try {
      new URL(given);
    } catch {
      throw new CliError("USAGE", `--store ${storeForDisplay(given)} is not a valid URL; expected postgres://user@host:5432/database?schema=phronomy`);
    }
    return { kind: "postgres", path: storeForDisplay(given), url: given, mustExist: options.mustExist };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(given)) {
    throw new CliError("STORE_NOT_SUPPORTED", `--store ${storeForDisplay(given)}: a store is a SQLite file path or a postgres:// URL`);
  }
  const withoutScheme = given.startsWith("file:") ? given.slice("file:".length) : given;
  if (withoutScheme.length === 0) throw new CliError("USAGE", "--store needs a file path");
  const path = resolve(withoutScheme);
  if (existsSync(path)) {
    if (statSync(path).isDirectory())
      throw new CliError("USAGE", `--store ${given} is a directory; give the store's file path (e.g. ${given.replace(/\/$/, "")}/store.db)`);
  } else if (options.mustExist) {
    throw new CliError("STORE_NOT_FOUND", `no store at ${path}: \`phronomy demo\` or \`phronomy run\` creates one, or pass --store <path>`);
  } else {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 }); // owner-only, like the store's files
  }
  return { kind: "sqlite", path, given };
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
  /** When another process owns the SQLite store, open it as a visitor
   * (reads and approval decisions) instead of failing. */
  readonly visitBesideOwner?: boolean;
}

/** Opens the store as its owner (SQLite), or as one more process of a
 * PostgreSQL store. */
export async function openStore(location: StoreLocation, options: OpenStoreOptions): Promise<Environment> {
  const common = { logger: options.logger, recover: options.recover ?? true };
  if (location.kind === "postgres") {
    if (options.wrapStore !== undefined) throw new CliError("STORE_NOT_SUPPORTED", `this command runs on a SQLite store only, not on ${location.path}`);
    if (location.mustExist) await checkPostgresStoreExists(location);
    // A command takes no share of the partitions (docs/decisions/0030):
    // only those of the agents it uses, when no live process holds them.
    return Phronomy.open({ store: location.url, postgres: { balance: false }, ...common });
  }
  try {
    if (options.wrapStore === undefined) return await openOrVisit(location, options, common);
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

/** As owner; beside a live owner, as a visitor when the command allows it. */
async function openOrVisit(
  location: SqliteLocation,
  options: OpenStoreOptions,
  common: { readonly logger: Logger; readonly recover: boolean },
): Promise<Environment> {
  try {
    return await Phronomy.open({ store: location.path, ...common });
  } catch (error) {
    if (options.visitBesideOwner !== true || !isStoreOwned(error)) throw error;
    options.logger.debug?.(`${error instanceof Error ? error.message : String(error)}; opening it as a visitor`);
    return Phronomy.open({ store: location.path, logger: options.logger, visitor: true });
  }
}

function isStoreOwned(error: unknown): error is StoreError {
  return error instanceof StoreError && error.details?.reason === "store_owned";
}

/** The runtime's message already names the owner; the CLI adds what the
 * user can do from the command line. */
function explainOpenFailure(error: unknown, location: StoreLocation): unknown {
  if (!isStoreOwned(error)) return error;
  const owner = error.details?.owner as { pid?: number; hostname?: string; startedAt?: string } | null | undefined;
  const who = owner?.pid !== undefined ? `process ${owner.pid} on ${owner.hostname ?? "?"} (since ${owner.startedAt ?? "?"})` : "another process";
  return new StoreError(
    oneLine(
      `the store at ${location.path} is owned by ${who}; the CLI opens a store as its owner and one process owns a store at a time — `
        + "stop that process (or close its environment) and try again; `ls`, `show`, `approve` and `reject` work beside it (as visitors), `run`, `recover`, `prune` and `demo` need to own the store",
    ),
    { cause: error, details: error.details },
  );
}

export function isPostgresUrl(store: string): boolean {
  return /^postgres(ql)?:\/\//i.test(store);
}

/** The store as it may be printed: a URL without its password. The user
 * information ends at the last `@` before the query, so a password holding
 * an unescaped `@` or `/` is masked whole too. */
export function storeForDisplay(store: string): string {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(store);
  if (scheme === null) return store;
  const beforeQuery = store.slice(0, store.search(/[?#]|$/));
  const at = beforeQuery.lastIndexOf("@");
  const colon = store.indexOf(":", scheme[0].length);
  if (at < 0 || colon < 0 || colon > at) return store;
  return `${store.slice(0, colon)}:***${store.slice(at)}`;
}

/** A read command must not create an empty store by accident: the schema
 * must hold a Phronomy store. */
async function checkPostgresStoreExists(location: PostgresLocation): Promise<void> {
  const { schema, found } = await PostgresStore.exists(location.url, location.path);
  if (!found) {
    throw new CliError(
      "STORE_NOT_FOUND",
      `no Phronomy store in schema "${schema}" at ${location.path}: \`phronomy run\` creates one, or name the schema with ?schema=<name>`,
    );
  }
}
