// The embedded store's file format: its tables, how a file is recognised as
// a Phronomy store, and the forward migrations that bring an older file up
// to this code's schema version.
//
// Rules kept here:
// * A file is touched only once it is known to be ours or empty. A file that
//   is not SQLite, is unreadable, belongs to another application, or was
//   written by a newer Phronomy is refused with a `StoreError` naming the
//   path and the reason, and left byte-for-byte as it was.
// * `PRAGMA application_id` marks the file as Phronomy's; `PRAGMA
//   user_version` is the schema version, i.e. the number of migrations
//   applied. Migrations only ever append; all pending ones run in one
//   transaction together with the version stamp, so a crash mid-way leaves
//   the old version intact.

import { Buffer } from "node:buffer";
import { closeSync, openSync, readSync, statSync } from "node:fs";
import { StoreError } from "../../errors.js";
import { openSqlite, type SqliteConnection } from "./driver.js";
import { addDecisionAction, addDecisionKind, addRetryKind, createApprovalInbox } from "./inbox.js";
import { createExecutionPages, dropCreationIndex } from "./pages.js";
import { createDueWaitIndex } from "./due-waits.js";
import { createPruneIndexes } from "./prune.js";
import { createConversationQueues } from "./queue.js";
import { createSchedules } from "./schedules.js";
import { deferSearchIndex } from "./search-index.js";
import { createEventSignals } from "./signals.js";
import { keyTimelineByRowid } from "./timeline.js";
import { createPageCounts, storeDefinitionColumn } from "./page-counts.js";

/** "PHRN" in ASCII: stamped in every Phronomy store's header. */
export const applicationId = 0x5048524e;

/** SQLite's `synchronous` setting for the store: `FULL` (every commit
 * survives power loss) or `NORMAL` (it survives a process crash). */
export type SynchronousMode = "FULL" | "NORMAL";

/** How long a connection waits for the other connection's write lock before
 * failing with SQLITE_BUSY. The offload never lets its two connections write
 * at once, so this is a safety net (checkpoints, a visiting process); five
 * seconds is far above any single group commit and short enough that a
 * stuck lock surfaces as an error rather than a hang. */
export const busyTimeoutMs = 5_000;

type Migration = (connection: SqliteConnection) => void;

/** Version 1: agents (root), executions, their step timeline (keyed by the
 * execution's rowid from version 14), the journal. */
function createInitialTables(connection: SqliteConnection): void {
  connection.exec(`
    CREATE TABLE agents (
      agent_id   TEXT PRIMARY KEY NOT NULL,
      lifecycle  TEXT NOT NULL CHECK (lifecycle IN ('open', 'closed')),
      revision   INTEGER NOT NULL,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL
    );
    CREATE TABLE executions (
      execution_id     TEXT PRIMARY KEY NOT NULL,
      agent_id         TEXT NOT NULL,
      revision         INTEGER NOT NULL,
      status           TEXT NOT NULL CHECK (status IN ('preparing', 'active', 'suspended', 'terminal')),
      phase            TEXT NOT NULL,
      mode             TEXT NOT NULL,
      input            TEXT NOT NULL,
      metadata         TEXT NOT NULL,
      outcome          TEXT,
      output           TEXT NOT NULL,
      error            TEXT NOT NULL,
      usage            TEXT NOT NULL,
      approval_request TEXT NOT NULL,
      created_at       INTEGER NOT NULL,
      updated_at       INTEGER NOT NULL
    );
    CREATE INDEX executions_by_agent ON executions (agent_id, created_at);
    CREATE INDEX executions_by_status ON executions (status, created_at);
    CREATE INDEX executions_by_creation ON executions (created_at);
    CREATE TABLE steps (
      execution_id TEXT NOT NULL,
      seq          INTEGER NOT NULL,
      kind         TEXT NOT NULL,
      at           INTEGER NOT NULL,
      payload      TEXT NOT NULL,
      PRIMARY KEY (execution_id, seq)
    );
    CREATE TABLE journal (
      agent_id     TEXT NOT NULL,
      seq          INTEGER NOT NULL,
      execution_id TEXT NOT NULL,
      role         TEXT NOT NULL,
      content      TEXT NOT NULL,
      at           INTEGER NOT NULL,
      PRIMARY KEY (agent_id, seq)
    );
  `);
}

/** Migration 14 (docs/decisions/0094). */
export function writeFewerPages(connection: SqliteConnection): void {
  keyTimelineByRowid(connection);
  storeDefinitionColumn(connection);
}

/** Migration i brings a file from version i to version i + 1. Append only.
 * Version 2: the approval inbox visitors file decisions into (`inbox.ts`).
 * Version 3: the indexes pruning reads by (`prune.ts`, docs/decisions/0027).
 * Version 4: the conversation queues (`queue.ts`, docs/decisions/0025).
 * Version 5: the inbox's decision kind, for cancels by id (docs/decisions/0026).
 * Version 6: the inbox's `retry` kind, for retries filed by a visitor (docs/decisions/0026).
 * Version 7: a decision's answer beyond approve/decline, in the inbox (docs/decisions/0075).
 * Version 8: scheduled starts (`schedules.ts`, docs/decisions/0078).
 * Version 9: paging, search and counts (`pages.ts`, docs/decisions/0082).
 * Version 10: keyed signals, and the index of event waits by key (`signals.ts`, docs/decisions/0077).
 * Version 11: suspended rows indexed by their wait's due time (`due-waits.ts`, docs/decisions/0076).
 * Version 12: counts kept by triggers, executions by definition (`page-counts.ts`, docs/decisions/0089).
 * Version 13: the index on `created_at` alone dropped, `executions_by_time` serves its reads (`pages.ts`, docs/decisions/0091).
 * Version 14: fewer pages a run writes — the step timeline keyed by the execution's rowid, a queued message's step in its
 *   queue row (`timeline.ts`); the definition's name in a column of its own (`page-counts.ts`) (docs/decisions/0094).
 * Version 15: the search index kept by a sweep, off the writing transactions (`search-index.ts`, docs/decisions/0095). */
export const migrations: readonly Migration[] = [
  createInitialTables,
  createApprovalInbox,
  createPruneIndexes,
  createConversationQueues,
  addDecisionKind,
  addRetryKind,
  addDecisionAction,
  createSchedules,
  createExecutionPages,
  createEventSignals,
  createDueWaitIndex,
  createPageCounts,
  dropCreationIndex,
  writeFewerPages,
  deferSearchIndex,
];

export const schemaVersion = migrations.length;

export interface StoreConnectionOptions {
  readonly synchronous: SynchronousMode;
  /** `PRAGMA wal_autocheckpoint`: the write-ahead log's length in pages
   * past which a commit of this connection checkpoints it, inside that
   * commit; 0: never (someone else checkpoints). Default: SQLite's 1,000. */
  readonly autocheckpointPages?: number;
  /** Open only a file that exists: the store worker's connection, which
   * may open long after the owner's open, must never create a new file in
   * place of one removed meanwhile (its file check runs just before). */
  readonly mustExist?: boolean;
}

/** SQLite's own `wal_autocheckpoint`, in pages (4 KiB each). */
export const autocheckpointPagesDefault = 1_000;

/** The page cache of each store connection, in KiB: SQLite's own default.
 * better-sqlite3 builds SQLite with 16,000 KiB, which the worker's
 * connection filled (and kept, as RSS) once the file passed 16 MB, e.g.
 * with 10,000 executions suspended; the store writes near the end of its
 * tables and reads recent rows, so the operating system's file cache
 * serves the rest (docs/decisions/0028-memory-of-idle-and-suspended.md). */
export const pageCacheKib = 2_000;

/** Opens (creating or migrating when needed) the store at `path`. */
export function openStoreConnection(path: string, options: StoreConnectionOptions): SqliteConnection {
  checkFileHeader(path);
  let connection: SqliteConnection;
  try {
    connection = openSqlite(path, options.mustExist === true ? { mustExist: true } : {});
  } catch (error) {
    throw new StoreError(`cannot open the store at ${path}: ${messageOf(error)}`, { cause: error });
  }
  try {
    connection.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
    checkOwnership(path, readFileState(connection));
    connection.exec("PRAGMA journal_mode = WAL");
    connection.exec(`PRAGMA synchronous = ${options.synchronous}`);
    connection.exec(`PRAGMA cache_size = -${pageCacheKib}`);
    connection.exec(`PRAGMA wal_autocheckpoint = ${options.autocheckpointPages ?? autocheckpointPagesDefault}`);
    checkDurability(connection, options.synchronous);
    migrate(connection);
    return connection;
  } catch (error) {
    connection.close();
    if (error instanceof StoreError) throw error;
    throw new StoreError(`cannot open the store at ${path}: ${messageOf(error)}`, { cause: error });
  }
}

/** `PRAGMA synchronous` reads back as a number. */
const synchronousLevels: Readonly<Record<SynchronousMode, number>> = { NORMAL: 1, FULL: 2 };

/** Reads the durability settings back: each runtime brings its own SQLite
 * build, and a build (or a file system) that silently kept another journal
 * mode or sync level would break the guarantees without a sound. */
function checkDurability(connection: SqliteConnection, synchronous: SynchronousMode): void {
  const journalMode = String(connection.prepare("PRAGMA journal_mode").get()?.["journal_mode"]);
  const level = Number(connection.prepare("PRAGMA synchronous").get()?.["synchronous"]);
  if (journalMode !== "wal" || level !== synchronousLevels[synchronous]) {
    throw new StoreError(
      `cannot open the store at ${connection.path} with the durability it needs: SQLite (${connection.driver}) kept journal_mode ${journalMode} and synchronous ${level} (wanted wal and ${synchronous}); the store needs a local file system with WAL support`,
    );
  }
}

const sqliteHeader = "SQLite format 3\0";

/** The database header's first 100 bytes (sqlite.org/fileformat.html §1.3):
 * where the fields the pre-open check reads live. */
const headerLength = 100;
const headerWriteVersionOffset = 18; // 2: WAL mode
const headerUserVersionOffset = 60;
const headerApplicationIdOffset = 68;
const walWriteVersion = 2;

/** Refuses a non-empty file that does not start with SQLite's header before
 * SQLite opens it (SQLite would only say "file is not a database"), and a
 * path that is not a regular file. Returns the header (undefined: no file
 * yet, or an empty one). */
export function checkFileHeader(path: string): Buffer | undefined {
  let stats: ReturnType<typeof statSync>;
  try {
    stats = statSync(path);
  } catch (error) {
    if ((error as { code?: unknown }).code === "ENOENT") return undefined; // no file yet: SQLite creates it
    throw new StoreError(`cannot read the store file ${path}: ${messageOf(error)}`, { cause: error });
  }
  if (stats.isDirectory()) {
    throw new StoreError(`${path} is a directory, not a store file; it was left untouched: point the store at a file (for example ${path}/store.db)`);
  }
  if (!stats.isFile()) throw new StoreError(`${path} is not a regular file; it was left untouched: point the store at a file`);
  if (stats.size === 0) return undefined;
  const header = Buffer.alloc(headerLength);
  let length: number;
  try {
    const descriptor = openSync(path, "r");
    try {
      length = readSync(descriptor, header, 0, header.length, 0);
    } finally {
      closeSync(descriptor);
    }
  } catch (error) {
    throw new StoreError(`cannot read the store file ${path}: ${messageOf(error)}`, { cause: error });
  }
  if (length < sqliteHeader.length || header.toString("latin1", 0, sqliteHeader.length) !== sqliteHeader) {
    throw new StoreError(
      `${path} is not a SQLite database (its first bytes are not the SQLite header); it was left untouched: point the store at a new file or at a Phronomy store`,
    );
  }
  return header;
}

/** Everything that can refuse an existing file without taking the store's
 * ownership or writing anything (issue 11): a directory, a file that is not
 * SQLite, another application's database, a newer Phronomy's store. Run
 * before the lock file is created, so a refusal leaves the directory as it
 * was. A database not in WAL mode (never a Phronomy store) is read through
 * a read-only connection, which creates no file; a WAL-mode one is judged
 * by its header (a read-only connection would create its `-shm`), and
 * `openStoreConnection` checks it fully once the store is owned. */
export function checkStoreFile(path: string): void {
  const header = checkFileHeader(path);
  if (header === undefined) return;
  if (header[headerWriteVersionOffset] === walWriteVersion) {
    const applicationIdInHeader = header.readUInt32BE(headerApplicationIdOffset);
    const userVersion = header.readUInt32BE(headerUserVersionOffset);
    // An unstamped header may be a new store's before its first checkpoint: judged once owned.
    if (applicationIdInHeader !== 0) checkOwnership(path, { applicationId: applicationIdInHeader, userVersion, schemaObjects: 0, tableNames: [] }, "");
    return;
  }
  let connection: SqliteConnection;
  try {
    connection = openSqlite(path, { readonly: true });
  } catch (error) {
    throw new StoreError(`cannot open the store at ${path}: ${messageOf(error)}`, { cause: error });
  }
  try {
    checkOwnership(path, readFileState(connection));
  } finally {
    connection.close();
  }
}

export interface FileState {
  readonly applicationId: number;
  readonly userVersion: number;
  /** Tables, indexes, views and triggers: an empty file has none. */
  readonly schemaObjects: number;
  /** The first few table names, to name a foreign database in messages. */
  readonly tableNames: readonly string[];
}

/** How many table names a refusal quotes. */
const tableNamesShownMax = 5;

export function readFileState(connection: SqliteConnection): FileState {
  try {
    return {
      applicationId: Number(connection.prepare("PRAGMA application_id").get()?.["application_id"] ?? 0),
      userVersion: Number(connection.prepare("PRAGMA user_version").get()?.["user_version"] ?? 0),
      schemaObjects: Number(connection.prepare("SELECT count(*) AS objects FROM sqlite_schema").get()?.["objects"] ?? 0),
      tableNames: connection
        .prepare(`SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name LIMIT ${tableNamesShownMax}`)
        .all()
        .map((row) => String(row["name"])),
    };
  } catch (error) {
    throw new StoreError(
      `${connection.path} cannot be read as a SQLite database (${messageOf(error)}): it is corrupt or not a database; it was left untouched`,
      { cause: error },
    );
  }
}

/** `tablesShown`: how the refusal of a foreign database names its tables
 * (undefined: from `state.tableNames`). */
function checkOwnership(path: string, state: FileState, tablesShown?: string): void {
  if (state.applicationId === applicationId) {
    if (state.userVersion > schemaVersion) {
      throw new StoreError(
        `${path} was written by a newer Phronomy (store schema version ${state.userVersion}; this version reads up to ${schemaVersion}); it was left untouched: upgrade Phronomy to open it`,
      );
    }
    return;
  }
  const empty = state.applicationId === 0 && state.userVersion === 0 && state.schemaObjects === 0;
  if (!empty) {
    const tables = tablesShown ?? (state.tableNames.length === 0 ? ", no tables" : `, tables ${state.tableNames.join(", ")}`);
    throw new StoreError(
      `${path} is a SQLite database of another application (application_id ${state.applicationId}${tables}), not a Phronomy store; it was left untouched: point the store at a new file`,
    );
  }
}

/** Applies the pending migrations and stamps the version, in one
 * transaction. Re-reads the version under the write lock, so two
 * connections opening the same new file migrate it once. */
function migrate(connection: SqliteConnection): void {
  if (readFileState(connection).userVersion === schemaVersion) return;
  connection.exec("BEGIN IMMEDIATE");
  try {
    const state = readFileState(connection);
    checkOwnership(connection.path, state);
    for (const migration of migrations.slice(state.userVersion)) migration(connection);
    connection.exec(`PRAGMA application_id = ${applicationId}`);
    connection.exec(`PRAGMA user_version = ${schemaVersion}`);
    connection.exec("COMMIT");
  } catch (error) {
    connection.exec("ROLLBACK");
    throw error;
  }
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
