// What `Phronomy.open` takes, checked before anything is opened, and the
// store a `store` string names, opened. Every option is refused with
// InvalidInputError naming what it must be — an unknown key, a value out of
// range, an option for another kind of store — rather than silently ignored.

import { loadPostgresStore } from "../store/load-postgres.js";
import { Limit } from "../../assembly/abi.js";
import type { CoreLimits } from "../core/machine.js";
import { InvalidInputError } from "../errors.js";
import { SqliteStore, type SqliteStoreOptions } from "../store/sqlite-store.js";
import type { PostgresStoreOptions } from "../store/postgres/options.js";
import type { ExecutionStore } from "../store/store.js";
import { isVisitorStore } from "../store/sqlite/visitor-mark.js";
import { rejectUnknownKeys, type CallbackErrorPolicy, type Logger } from "./options.js";
import { checkRetentionOptions, type RetentionOptions } from "./retention.js";

/** What `Phronomy.open` takes: the store and how the environment runs on it. */
export interface OpenOptions {
  /** A SQLite file path (`./agents.db` or `file:./agents.db`), a
   * PostgreSQL URL (`postgres://user@host:5432/db?schema=phronomy`), or a
   * store the application opened itself (any `ExecutionStore`). */
  readonly store: string | ExecutionStore;
  /** `FULL` (default): every barrier reaches the disk before its external
   * operation starts. `NORMAL`: survives a process crash, not power loss. */
  readonly synchronous?: SqliteStoreOptions["synchronous"];
  /** A SQLite store's bound on store operations queued for its writer;
   * past it a start fails with `OffloadFullError` (`SqliteStoreOptions`). */
  readonly offloadCapacity?: number;
  /** Where a SQLite store's commits run: `adaptive` (default), `worker` or
   * `inline` (docs/decisions/0006). */
  readonly offloadPolicy?: SqliteStoreOptions["offloadPolicy"];
  /** Sizes of the core: `agentsMax` conversations working or suspended at
   * once, `executionsMax` live executions (4,194,304 each by default, at
   * most 16,777,215 agents and 16,777,216 executions; the tables take
   * memory only as they fill). */
  readonly limits?: Partial<CoreLimits>;
  /** What a throwing event listener does: `report` (default) logs it;
   * `fail_task` also fails the Run with StreamCallbackError when it threw
   * on `done` or `handoff` (docs/decisions/0018). */
  readonly callbackErrorPolicy?: CallbackErrorPolicy;
  /** Where the runtime's warnings go (default `console.warn`). */
  readonly logger?: Logger;
  /** Recover each agent's unfinished executions when the agent is defined
   * (default true). With false, call `env.recover()` when you want it. */
  readonly recover?: boolean;
  /** For a `postgres://` store URL only: the pool size, the agent lease
   * length and the schema (`PostgresStore.open`'s options; `leaseMs` and
   * `schema` may instead be `?lease_ms=` and `?schema=` in the URL, not both). */
  readonly postgres?: PostgresStoreOptions;
  /** Open a SQLite store as a visitor beside its live owner (SPEC §4.3,
   * docs/decisions/0015-sqlite-visitors.md): reads, and `agent.resume`
   * files the decision for the owner to apply and waits for the outcome;
   * starts, recovery and purges are refused. A store opened with
   * `SqliteStore.openVisitor` is a visitor's without this option. */
  readonly visitor?: boolean;
  /** How long finished executions stay in the store (default 7 days) and
   * how often the background pruner looks (`runtime/retention.ts`,
   * docs/decisions/0027). */
  readonly retention?: RetentionOptions;
}

const OPEN_OPTION_KEYS = [
  "store",
  "synchronous",
  "offloadCapacity",
  "offloadPolicy",
  "limits",
  "callbackErrorPolicy",
  "logger",
  "recover",
  "postgres",
  "visitor",
  "retention",
] as const;
const POSTGRES_OPTION_KEYS = ["poolSize", "leaseMs", "schema", "instanceId", "partitions", "balance", "takeIdleHere"] as const;
const LIMIT_KEYS = ["agentsMax", "executionsMax"] as const;

/** Checks `Phronomy.open`'s options, in the order they are named in an
 * error, before anything is opened: the logger to use (guarded) and the
 * retention settings. */
export function checkOpenOptions(options: OpenOptions): { readonly logger: Logger; readonly retention: RetentionOptions } {
  if (typeof options !== "object" || options === null) throw new InvalidInputError("Phronomy.open(options): options must be an object");
  rejectUnknownKeys(options, OPEN_OPTION_KEYS, "Phronomy.open(options)");
  const givenStore = typeof options.store === "object" && options.store !== null && typeof options.store.run === "function";
  if (!givenStore && (typeof options.store !== "string" || options.store.length === 0)) {
    throw new InvalidInputError(
      `Phronomy.open(options): "store" must be a SQLite file path, a postgres:// URL or an ExecutionStore, got ${JSON.stringify(options.store)}`,
    );
  }
  if (options.callbackErrorPolicy !== undefined && !["report", "fail_task"].includes(options.callbackErrorPolicy)) {
    throw new InvalidInputError(`Phronomy.open(options): "callbackErrorPolicy" must be "report" or "fail_task"`);
  }
  if (options.recover !== undefined && typeof options.recover !== "boolean") {
    throw new InvalidInputError(`Phronomy.open(options): "recover" must be true or false, got ${JSON.stringify(options.recover)}`);
  }
  checkLimits(options);
  const logger = guardedLogger(options.logger);
  checkPostgresOptions(options);
  checkSqliteOnlyOptions(options);
  checkVisitorOption(options);
  return { logger, retention: checkRetentionOptions(options.retention) };
}
const consoleLogger: Logger = { warn: (message) => console.warn(message) };

/** The application's logger, checked when opened and called so that a
 * logger that throws never breaks the runtime: its messages are reported
 * from handlers and timers, where a throw would end the process (an
 * uncaught exception or unhandled rejection). */
function guardedLogger(logger: unknown): Logger {
  if (logger === undefined) return consoleLogger;
  const given = logger as Partial<Logger> | null;
  if (typeof given !== "object" || given === null || typeof given.warn !== "function" || (given.debug !== undefined && typeof given.debug !== "function")) {
    throw new InvalidInputError(`Phronomy.open(options): "logger" must be an object with a warn(message) method (and optionally debug(message))`);
  }
  const quietly =
    (write: (message: string) => void) =>
    (message: string): void => {
      try {
        write.call(given, message);
      } catch {
        // A logger that throws loses its message, never the process.
      }
    };
  return { warn: quietly(given.warn), ...(given.debug !== undefined ? { debug: quietly(given.debug) } : {}) };
}

/** A `postgres://` or `postgresql://` URL opens a `PostgresStore`
 * (imported on demand, so SQLite users never load `pg`); anything else is
 * a SQLite path. */
export async function openStoreAt(location: string, options: OpenOptions, logger: Logger): Promise<ExecutionStore> {
  if (/^postgres(ql)?:\/\//i.test(location)) {
    const { PostgresStore } = await loadPostgresStore();
    return PostgresStore.open(location, options.postgres ?? {});
  }
  const store = await openSqlite(location, options);
  // Which SQLite library the runtime gave the store (docs/decisions/0040);
  // the driver's module, loaded by the open, is not one `phronomy` imports.
  if (logger.debug !== undefined) {
    const { sqliteDriverName } = await import("../store/sqlite/driver.js");
    logger.debug(`[phronomy] the SQLite store at ${store.path} runs on ${sqliteDriverName()}${options.visitor === true ? " (a visitor)" : ""}`);
  }
  return store;
}

async function openSqlite(location: string, options: OpenOptions): Promise<ExecutionStore> {
  const path = location.startsWith("file:") ? location.slice("file:".length) : location;
  if (options.visitor === true) return SqliteStore.openVisitor(path);
  return SqliteStore.open(path, {
    ...(options.synchronous ? { synchronous: options.synchronous } : {}),
    ...(options.offloadCapacity !== undefined ? { offloadCapacity: options.offloadCapacity } : {}),
    ...(options.offloadPolicy ? { offloadPolicy: options.offloadPolicy } : {}),
  });
}

/** `visitor` is for a SQLite file path (or a visitor store) only. */
function checkVisitorOption(options: OpenOptions): void {
  if (options.visitor === undefined || options.visitor === false) return;
  if (options.visitor !== true) throw new InvalidInputError(`Phronomy.open(options): "visitor" must be true or false, got ${JSON.stringify(options.visitor)}`);
  if (typeof options.store === "string" ? /^postgres(ql)?:\/\//i.test(options.store) : !isVisitorStore(options.store)) {
    throw new InvalidInputError(
      `Phronomy.open(options): "visitor" applies to a SQLite store given by its file path (a PostgreSQL store is shared by every process already; a store the application opened is a visitor's only when opened with SqliteStore.openVisitor)`,
    );
  }
}

/** An option that must be an object of known keys: refused otherwise,
 * naming them. */
function checkOptionObject(given: unknown, name: string, keys: readonly string[]): asserts given is object {
  if (typeof given !== "object" || given === null || Array.isArray(given)) {
    throw new InvalidInputError(`Phronomy.open(options): "${name}" must be an object { ${keys.join(", ")} }, got ${JSON.stringify(given)}`);
  }
  rejectUnknownKeys(given, keys, `Phronomy.open(options.${name})`);
}

/** `postgres` is checked before anything is opened: it must be an object
 * of known keys, for a store given as a `postgres://` URL (the values are
 * checked by `PostgresStore.open`, before it connects). */
function checkPostgresOptions(options: OpenOptions): void {
  if (options.postgres === undefined) return;
  checkOptionObject(options.postgres, "postgres", POSTGRES_OPTION_KEYS);
  if (typeof options.store === "string" && /^postgres(ql)?:\/\//i.test(options.store)) return;
  const store =
    typeof options.store === "string"
      ? `the SQLite file ${JSON.stringify(options.store)}`
      : "a store the application opened (pass these options to PostgresStore.open)";
  throw new InvalidInputError(`Phronomy.open(options): "postgres" applies only when "store" is a postgres:// URL; here it is ${store}`);
}

/** `limits` is an object of known keys, each an integer in the core's
 * range; checked before anything is opened. */
function checkLimits(options: OpenOptions): void {
  const given = options.limits;
  if (given === undefined) return;
  checkOptionObject(given, "limits", LIMIT_KEYS);
  const ceilings = { agentsMax: Limit.AgentsMaxCeiling, executionsMax: Limit.ExecutionsMaxCeiling };
  for (const key of LIMIT_KEYS) {
    const value = given[key];
    if (value !== undefined && (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > ceilings[key])) {
      throw new InvalidInputError(`Phronomy.open(options.limits): "${key}" must be an integer from 1 to ${ceilings[key]}, got ${String(value)}`);
    }
  }
}

/** The options only a SQLite file store has are refused for any other
 * store, rather than silently ignored. */
function checkSqliteOnlyOptions(options: OpenOptions): void {
  if (typeof options.store === "string" && !/^postgres(ql)?:\/\//i.test(options.store)) return;
  const given = (["synchronous", "offloadCapacity", "offloadPolicy"] as const).filter((key) => options[key] !== undefined);
  if (given.length === 0) return;
  const store =
    typeof options.store === "string"
      ? "a PostgreSQL store (durability there is the server's: synchronous_commit)"
      : "a store the application opened (pass them to SqliteStore.open)";
  throw new InvalidInputError(
    `Phronomy.open(options): ${given.map((key) => `"${key}"`).join(", ")} ${given.length === 1 ? "applies" : "apply"} only to a SQLite file store; here it is ${store}`,
  );
}
