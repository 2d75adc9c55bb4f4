// The SQLite connection the store talks to, and its better-sqlite3
// implementation. The interface is the small common ground of better-sqlite3
// (Node), `node:sqlite` (Deno) and `bun:sqlite` (Bun): run a script, prepare
// a statement, run/get/all with positional `?` parameters, close. No
// better-sqlite3 type leaves this file, so the other runtimes can be added
// behind the same interface.
//
// better-sqlite3 is an optional peer dependency: it is loaded when a store is
// opened, not when this module is imported, and its absence is a clear error.

import { createRequire } from "node:module";
import type BetterSqlite3 from "better-sqlite3";

/** What a `?` parameter may be bound to. Booleans are not SQLite values:
 * callers store them as 0/1. */
export type SqliteValue = string | number | bigint | null | Uint8Array;

/** A result row: column name → value. */
export type SqliteRow = { readonly [column: string]: SqliteValue };

export interface SqliteStatement {
  run(...parameters: SqliteValue[]): { readonly changes: number };
  get(...parameters: SqliteValue[]): SqliteRow | undefined;
  all(...parameters: SqliteValue[]): SqliteRow[];
}

export interface SqliteConnection {
  /** The file this connection opened, for error messages. */
  readonly path: string;
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
}

type BetterSqlite3Constructor = typeof BetterSqlite3;

function loadBetterSqlite3(): BetterSqlite3Constructor {
  const require = createRequire(import.meta.url);
  try {
    return require("better-sqlite3") as BetterSqlite3Constructor;
  } catch (error) {
    throw new Error(
      "phronomy: the embedded SQLite store needs the optional peer dependency better-sqlite3 on Node (npm install better-sqlite3@12)",
      { cause: error },
    );
  }
}

/** Opens `path` with better-sqlite3. Opening reads nothing and writes
 * nothing but an empty file when `path` does not exist yet. */
export function openBetterSqlite3(path: string, options: OpenConnectionOptions = {}): SqliteConnection {
  const Database = loadBetterSqlite3();
  const database = new Database(path, { fileMustExist: options.mustExist ?? false });
  const statements = new Map<string, SqliteStatement>();
  return {
    path,
    exec(sql) {
      database.exec(sql);
    },
    prepare(sql) {
      const cached = statements.get(sql);
      if (cached !== undefined) return cached;
      if (statements.size >= preparedStatementsMax) {
        throw new Error(`phronomy: more than ${preparedStatementsMax} distinct SQL statements prepared on ${path}; SQL must not be built from data`);
      }
      const statement = database.prepare<SqliteValue[], SqliteRow>(sql);
      statements.set(sql, statement);
      return statement;
    },
    close() {
      statements.clear();
      database.close();
    },
  };
}
