// The SQLite connection the store talks to, and its three implementations,
// one per runtime (SPEC §4.3, §9): better-sqlite3 on Node, `node:sqlite` on
// Deno, `bun:sqlite` on Bun. The interface is their small common ground: run
// a script, prepare a statement, run/get/all with positional `?` parameters,
// close. No driver type leaves this file.
//
// Rules kept here, so that the store behaves the same on every runtime:
// * `get` answers `undefined` when there is no row (bun:sqlite says `null`).
// * A parameter is a string, a number, a bigint, null or a Uint8Array; a
//   boolean or `undefined` is refused (bun:sqlite would bind them silently,
//   the other two refuse them).
// * A SQLite failure is thrown with `code` set to SQLite's extended result
//   code name (`SQLITE_BUSY`, `SQLITE_CONSTRAINT_NOTNULL`), as better-sqlite3
//   and bun:sqlite do; `node:sqlite` reports a number (`errcode`), named
//   here. Its `exec` reports no code at all, so single statements run
//   through a prepared statement there (the ownership lock needs to tell
//   SQLITE_BUSY from other failures).
// * Integers are read as numbers (no driver's `safeIntegers` mode): every
//   integer the store writes is a revision, a sequence number or a
//   millisecond timestamp, far below 2^53.
//
// * A file a connection creates is the owner's only (mode 0600, as database
//   servers keep theirs): every runtime's SQLite creates a new database with
//   0644 less the umask, and its `-wal`, `-shm` and journals with the
//   database's own mode, so the file is created 0600 first (`createOwnerOnly`).
//
// The driver module is loaded when a connection is opened, not when this
// module is imported: better-sqlite3 is an optional peer dependency needed on
// Node only, and `bun:sqlite` / `node:sqlite` exist only in their runtimes.

import { closeSync, existsSync, openSync } from "node:fs";
import { createRequire } from "node:module";
import type BetterSqlite3 from "better-sqlite3";

/** What a `?` parameter may be bound to. Booleans are not SQLite values:
 * callers store them as 0/1. */
export type SqliteValue = string | number | bigint | null | Uint8Array;

/** A result row: column name → value. */
export type SqliteRow = { readonly [column: string]: SqliteValue };

export interface SqliteStatement {
  /** `lastInsertRowid`: the rowid of the last row an INSERT wrote on this
   * connection (not one its triggers wrote). */
  run(...parameters: SqliteValue[]): { readonly changes: number; readonly lastInsertRowid: number | bigint };
  get(...parameters: SqliteValue[]): SqliteRow | undefined;
  all(...parameters: SqliteValue[]): SqliteRow[];
}

export interface SqliteConnection {
  /** The file this connection opened, for error messages. */
  readonly path: string;
  /** The library behind this connection. */
  readonly driver: SqliteDriverName;
  /** Runs one or more statements without parameters (DDL, BEGIN, PRAGMA). */
  exec(sql: string): void;
  /** A statement for `sql`. Statements are cached by their text: the store
   * prepares a fixed set of SQL texts written in its own code, so the cache
   * is bounded by that set (`preparedStatementsMax` guards the assumption). */
  prepare(sql: string): SqliteStatement;
  close(): void;
}

/** The store prepares about thirty distinct SQL texts. A cache growing past
 * this means SQL is being built from data, which would be a bug (and an
 * unbounded cache): fail loudly instead. */
export const preparedStatementsMax = 256;

export interface OpenConnectionOptions {
  /** Fail instead of creating the file when it does not exist. */
  readonly mustExist?: boolean;
  /** A read-only connection (a visitor's reads): every write fails with
   * SQLITE_READONLY. Implies `mustExist`. */
  readonly readonly?: boolean;
}

/** The SQLite libraries the embedded store runs on. */
export type SqliteDriverName = "better-sqlite3" | "node:sqlite" | "bun:sqlite";

/** The SQLite library of the runtime this code runs on: Bun's and Deno's
 * own; on Node, better-sqlite3 when it is installed (measured faster, and
 * the only choice on Node 20), else Node's built-in `node:sqlite` from
 * Node 22.13 on, where it needs no flag (docs/decisions/0040).
 * `PHRONOMY_SQLITE_DRIVER` (`better-sqlite3` or `node:sqlite`) picks one on
 * Node. Chosen once per process. */
export function sqliteDriverName(): SqliteDriverName {
  chosenDriver ??= chooseDriver();
  return chosenDriver;
}

let chosenDriver: SqliteDriverName | undefined;

function chooseDriver(): SqliteDriverName {
  if (process.versions["bun"] !== undefined) return "bun:sqlite";
  if (process.versions["deno"] !== undefined) return "node:sqlite";
  const forced = process.env["PHRONOMY_SQLITE_DRIVER"];
  if (forced !== undefined && forced !== "") {
    if (forced === "better-sqlite3") return forced;
    if (forced === "node:sqlite" && nodeSqliteUnflagged()) return forced;
    throw new Error(
      `phronomy: PHRONOMY_SQLITE_DRIVER=${forced} is not a SQLite driver this runtime has (better-sqlite3, or node:sqlite on Node 22.13 and later; this is Node ${process.versions.node})`,
    );
  }
  if (resolvable("better-sqlite3") || !nodeSqliteUnflagged()) return "better-sqlite3";
  return "node:sqlite";
}

/** Node 22.13+ (and 23.4+) load `node:sqlite` without a flag. */
function nodeSqliteUnflagged(): boolean {
  const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
  return major >= 24 || (major === 23 && minor >= 4) || (major === 22 && minor >= 13);
}

function resolvable(name: string): boolean {
  try {
    createRequire(import.meta.url).resolve(name);
    return true;
  } catch {
    return false;
  }
}

/** Mode of every file the store creates: read and write for the owner only
 * (executions hold every conversation). */
export const ownerOnlyFileMode = 0o600;

/** SQLite's name for a database in memory (test stores use it). */
const inMemoryPath = ":memory:";

/** Opens `path` with the runtime's SQLite library. Opening reads nothing and
 * writes nothing but an empty owner-only file when `path` does not exist yet. */
export function openSqlite(path: string, options: OpenConnectionOptions = {}): SqliteConnection {
  // ":memory:" is SQLite's name for a database in memory, not a file: creating
  // it left an empty file of that name in the working directory.
  if (options.readonly !== true && options.mustExist !== true && path !== inMemoryPath) createOwnerOnly(path);
  switch (sqliteDriverName()) {
    case "bun:sqlite":
      return openBunSqlite(path, options);
    case "node:sqlite":
      return openNodeSqlite(path, options);
    case "better-sqlite3":
      return openBetterSqlite3(path, options);
  }
}

/** Creates `path` empty with mode 0600 when it does not exist; SQLite then
 * opens it as a new database and gives its side files the same mode. An
 * existing file is not opened here at all (`wx`: create or fail): closing a
 * descriptor of a file drops this process's POSIX locks on it, which SQLite
 * connections may hold (`ownership.ts`). Any other failure is left for
 * SQLite to report as it opens the path. */
function createOwnerOnly(path: string): void {
  let descriptor: number;
  try {
    descriptor = openSync(path, "wx", ownerOnlyFileMode);
  } catch {
    return;
  }
  closeSync(descriptor);
}

// -- the shared shell: statement cache, parameter check, error names ----------

/** What each library provides, before the shared rules are applied. */
interface NativeDatabase {
  exec(sql: string): void;
  prepare(sql: string): SqliteStatement;
  close(): void;
}

function connectionOver(path: string, driver: SqliteDriverName, database: NativeDatabase): SqliteConnection {
  const statements = new Map<string, SqliteStatement>();
  return {
    path,
    driver,
    exec(sql) {
      database.exec(sql);
    },
    prepare(sql) {
      const cached = statements.get(sql);
      if (cached !== undefined) return cached;
      if (statements.size >= preparedStatementsMax) {
        throw new Error(`phronomy: more than ${preparedStatementsMax} distinct SQL statements prepared on ${path}; SQL must not be built from data`);
      }
      const statement = database.prepare(sql);
      statements.set(sql, statement);
      return statement;
    },
    close() {
      statements.clear();
      database.close();
    },
  };
}

function loadModule<T>(name: string, missing: string): T {
  const require = createRequire(import.meta.url);
  try {
    return require(name) as T;
  } catch (error) {
    throw new Error(missing, { cause: error });
  }
}

function checkParameters(parameters: readonly unknown[]): void {
  for (const [index, value] of parameters.entries()) {
    if (value === null || typeof value === "string" || typeof value === "number" || typeof value === "bigint" || value instanceof Uint8Array) continue;
    throw new TypeError(
      `phronomy: SQLite parameter ${index + 1} is ${value === undefined ? "undefined" : typeof value}; only strings, numbers, bigints, null and Uint8Array can be bound`,
    );
  }
}

// -- Node: better-sqlite3 ------------------------------------------------------

type BetterSqlite3Constructor = typeof BetterSqlite3;

/** Opens `path` with better-sqlite3 (the Node driver; also what the store
 * tests use to look at a file behind the store's back). */
export function openBetterSqlite3(path: string, options: OpenConnectionOptions = {}): SqliteConnection {
  const Database = loadModule<BetterSqlite3Constructor>(
    "better-sqlite3",
    `phronomy: the embedded SQLite store needs the optional peer dependency better-sqlite3 on Node ${process.versions.node} (npm install better-sqlite3@12); from Node 22.13 on it uses the built-in node:sqlite when better-sqlite3 is not installed`,
  );
  const readonly = options.readonly ?? false;
  const database = new Database(path, { readonly, fileMustExist: readonly || (options.mustExist ?? false) });
  // better-sqlite3 already refuses booleans and undefined, and names its
  // errors' codes; its statements have the interface's shape.
  return connectionOver(path, "better-sqlite3", {
    exec: (sql) => void database.exec(sql),
    prepare: (sql) => database.prepare<SqliteValue[], SqliteRow>(sql),
    close: () => void database.close(),
  });
}

// -- Bun: bun:sqlite ---------------------------------------------------------------

interface BunStatement {
  run(...parameters: SqliteValue[]): { changes: number; lastInsertRowid: number | bigint };
  get(...parameters: SqliteValue[]): SqliteRow | null;
  all(...parameters: SqliteValue[]): SqliteRow[];
}

interface BunDatabase {
  exec(sql: string): void;
  prepare(sql: string): BunStatement;
  close(): void;
}

type BunDatabaseConstructor = new (
  path: string,
  options: { readonly create?: boolean; readonly readwrite?: boolean; readonly readonly?: boolean },
) => BunDatabase;

function openBunSqlite(path: string, options: OpenConnectionOptions): SqliteConnection {
  const { Database } = loadModule<{ Database: BunDatabaseConstructor }>("bun:sqlite", "phronomy: bun:sqlite is not available in this runtime");
  const database =
    options.readonly === true ? new Database(path, { readonly: true }) : new Database(path, { create: !(options.mustExist ?? false), readwrite: true });
  return connectionOver(path, "bun:sqlite", {
    exec: (sql) => database.exec(sql),
    prepare(sql) {
      const statement = database.prepare(sql);
      return {
        run(...parameters) {
          checkParameters(parameters);
          const { changes, lastInsertRowid } = statement.run(...parameters);
          return { changes, lastInsertRowid };
        },
        get(...parameters) {
          checkParameters(parameters);
          return statement.get(...parameters) ?? undefined;
        },
        all(...parameters) {
          checkParameters(parameters);
          return statement.all(...parameters);
        },
      };
    },
    close: () => database.close(),
  });
}

// -- Deno: node:sqlite -----------------------------------------------------------

interface NodeSqliteStatement {
  run(...parameters: SqliteValue[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  get(...parameters: SqliteValue[]): SqliteRow | undefined;
  all(...parameters: SqliteValue[]): SqliteRow[];
}

interface NodeSqliteDatabase {
  exec(sql: string): void;
  prepare(sql: string): NodeSqliteStatement;
  close(): void;
}

type NodeSqliteConstructor = new (path: string, options?: { readonly readOnly?: boolean }) => NodeSqliteDatabase;

function openNodeSqlite(path: string, options: OpenConnectionOptions): SqliteConnection {
  const { DatabaseSync } = loadModule<{ DatabaseSync: NodeSqliteConstructor }>("node:sqlite", "phronomy: node:sqlite is not available in this runtime");
  // node:sqlite has no "must exist" flag; the store opens existing files
  // only where the file was just seen, so a check before opening is enough.
  if ((options.mustExist === true || options.readonly === true) && !existsSync(path)) {
    throw Object.assign(new Error(`unable to open database file ${path}: it does not exist`), { code: "SQLITE_CANTOPEN" });
  }
  const database = named(() => new DatabaseSync(path, { readOnly: options.readonly === true }));
  return connectionOver(path, "node:sqlite", {
    exec(sql) {
      // `exec` errors carry no result code: run a single statement prepared.
      if (isSingleStatement(sql)) named(() => database.prepare(sql).run());
      else named(() => database.exec(sql));
    },
    prepare(sql) {
      const statement = named(() => database.prepare(sql));
      return {
        run: (...parameters) =>
          named(() => {
            const { changes, lastInsertRowid } = statement.run(...parameters);
            return { changes: Number(changes), lastInsertRowid };
          }),
        get: (...parameters) => named(() => statement.get(...parameters)),
        all: (...parameters) => named(() => statement.all(...parameters)),
      };
    },
    close: () => database.close(),
  });
}

/** No `;` but a trailing one: one statement (the store's single statements
 * hold no string literals with semicolons). */
function isSingleStatement(sql: string): boolean {
  const trimmed = sql.trim().replace(/;$/, "");
  return !trimmed.includes(";");
}

/** Runs `body`, giving a node:sqlite error SQLite's code name. */
function named<T>(body: () => T): T {
  try {
    return body();
  } catch (error) {
    throw withSqliteCode(error);
  }
}

function withSqliteCode(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const fields = error as Error & { code?: unknown; errcode?: unknown };
  if (typeof fields.code === "string" && fields.code.startsWith("SQLITE_")) return error;
  const code = typeof fields.errcode === "number" ? resultCodeName(fields.errcode) : resultCodeNameOfMessage(error.message);
  if (code === undefined) return error;
  fields.code = code;
  return error;
}

/** SQLite's primary result codes (sqlite3.h), by number. */
const primaryResultCodes: readonly string[] = [
  "OK",
  "ERROR",
  "INTERNAL",
  "PERM",
  "ABORT",
  "BUSY",
  "LOCKED",
  "NOMEM",
  "READONLY",
  "INTERRUPT",
  "IOERR",
  "CORRUPT",
  "NOTFOUND",
  "FULL",
  "CANTOPEN",
  "PROTOCOL",
  "EMPTY",
  "SCHEMA",
  "TOOBIG",
  "CONSTRAINT",
  "MISMATCH",
  "MISUSE",
  "NOLFS",
  "AUTH",
  "FORMAT",
  "RANGE",
  "NOTADB",
  "NOTICE",
  "WARNING",
];

/** SQLite's extended result codes (sqlite3.h): primary code | (n << 8). */
const extendedResultCodes: ReadonlyMap<number, string> = new Map([
  [257, "ERROR_MISSING_COLLSEQ"],
  [513, "ERROR_RETRY"],
  [769, "ERROR_SNAPSHOT"],
  [261, "BUSY_RECOVERY"],
  [517, "BUSY_SNAPSHOT"],
  [773, "BUSY_TIMEOUT"],
  [262, "LOCKED_SHAREDCACHE"],
  [518, "LOCKED_VTAB"],
  [264, "READONLY_RECOVERY"],
  [520, "READONLY_CANTLOCK"],
  [776, "READONLY_ROLLBACK"],
  [1032, "READONLY_DBMOVED"],
  [1288, "READONLY_CANTINIT"],
  [1544, "READONLY_DIRECTORY"],
  [266, "IOERR_READ"],
  [522, "IOERR_SHORT_READ"],
  [778, "IOERR_WRITE"],
  [1034, "IOERR_FSYNC"],
  [1290, "IOERR_DIR_FSYNC"],
  [1546, "IOERR_TRUNCATE"],
  [1802, "IOERR_FSTAT"],
  [2058, "IOERR_UNLOCK"],
  [2314, "IOERR_RDLOCK"],
  [2570, "IOERR_DELETE"],
  [2826, "IOERR_BLOCKED"],
  [3082, "IOERR_NOMEM"],
  [3338, "IOERR_ACCESS"],
  [3594, "IOERR_CHECKRESERVEDLOCK"],
  [3850, "IOERR_LOCK"],
  [4106, "IOERR_CLOSE"],
  [4362, "IOERR_DIR_CLOSE"],
  [4618, "IOERR_SHMOPEN"],
  [4874, "IOERR_SHMSIZE"],
  [5130, "IOERR_SHMLOCK"],
  [5386, "IOERR_SHMMAP"],
  [5642, "IOERR_SEEK"],
  [5898, "IOERR_DELETE_NOENT"],
  [6154, "IOERR_MMAP"],
  [6410, "IOERR_GETTEMPPATH"],
  [6666, "IOERR_CONVPATH"],
  [6922, "IOERR_VNODE"],
  [7178, "IOERR_AUTH"],
  [7434, "IOERR_BEGIN_ATOMIC"],
  [7690, "IOERR_COMMIT_ATOMIC"],
  [7946, "IOERR_ROLLBACK_ATOMIC"],
  [8202, "IOERR_DATA"],
  [8458, "IOERR_CORRUPTFS"],
  [8714, "IOERR_IN_PAGE"],
  [267, "CORRUPT_VTAB"],
  [523, "CORRUPT_SEQUENCE"],
  [779, "CORRUPT_INDEX"],
  [270, "CANTOPEN_NOTEMPDIR"],
  [526, "CANTOPEN_ISDIR"],
  [782, "CANTOPEN_FULLPATH"],
  [1038, "CANTOPEN_CONVPATH"],
  [1550, "CANTOPEN_SYMLINK"],
  [516, "ABORT_ROLLBACK"],
  [275, "CONSTRAINT_CHECK"],
  [531, "CONSTRAINT_COMMITHOOK"],
  [787, "CONSTRAINT_FOREIGNKEY"],
  [1043, "CONSTRAINT_FUNCTION"],
  [1299, "CONSTRAINT_NOTNULL"],
  [1555, "CONSTRAINT_PRIMARYKEY"],
  [1811, "CONSTRAINT_TRIGGER"],
  [2067, "CONSTRAINT_UNIQUE"],
  [2323, "CONSTRAINT_VTAB"],
  [2579, "CONSTRAINT_ROWID"],
  [2835, "CONSTRAINT_PINNED"],
  [3091, "CONSTRAINT_DATATYPE"],
  [283, "NOTICE_RECOVER_WAL"],
  [539, "NOTICE_RECOVER_ROLLBACK"],
  [284, "WARNING_AUTOINDEX"],
  [279, "AUTH_USER"],
]);

export function resultCodeName(code: number): string | undefined {
  const name = extendedResultCodes.get(code) ?? primaryResultCodes[code & 0xff];
  return name === undefined ? undefined : `SQLITE_${name}`;
}

/** SQLite's own text for a primary code (`sqlite3_errstr`), for the errors
 * node:sqlite reports without a number. */
const resultCodesByMessage: ReadonlyMap<string, string> = new Map([
  ["database is locked", "SQLITE_BUSY"],
  ["database table is locked", "SQLITE_LOCKED"],
  ["disk I/O error", "SQLITE_IOERR"],
  ["database or disk is full", "SQLITE_FULL"],
  ["attempt to write a readonly database", "SQLITE_READONLY"],
  ["database disk image is malformed", "SQLITE_CORRUPT"],
  ["file is not a database", "SQLITE_NOTADB"],
  ["unable to open database file", "SQLITE_CANTOPEN"],
]);

function resultCodeNameOfMessage(message: string): string {
  return resultCodesByMessage.get(message) ?? "SQLITE_ERROR";
}
