// Whether a connection of the store's owner can write (docs/decisions/0090).
//
// SQLite opens a file read-only, without an error, when the file cannot be
// opened for writing at that moment (made immutable, its file system
// remounted read-only, its mode changed): the connection answers reads, and
// every write it is given fails with SQLITE_READONLY — for the rest of its
// life, even once the file is writable again. A connection opened before
// such a fault keeps its descriptor open for writing: its writes fail with
// an I/O error during the fault and succeed after it.
//
// Rules kept here:
// * The probe writes nothing: in a transaction it rolls back, it sets the
//   file's `user_version` to the value it has (a change in the page cache
//   only). A connection opened for writing passes it even while the file
//   refuses writes; only a connection opened read-only fails it.
// * The owner's first connection (`Phronomy.open`) must write: one opened
//   read-only fails the open with a `StoreError` saying so.
// * The store worker's connection (`WriteConnection`) can be opened at any
//   time — in the background after the open, or to replace a worker that
//   died — so also during such a fault: one opened read-only is opened
//   again before each later use, until the new one can write.

import { StoreError } from "../../errors.js";
import type { SqliteConnection } from "./driver.js";

/** How SQLite opened a connection: `reading_only` is its fallback, whose
 * writes fail with SQLITE_READONLY whatever the file allows now; `unknown`
 * when the probe could not tell (the write lock busy past the busy
 * timeout, an I/O error). */
export type OpenedFor = "writing" | "reading_only" | "unknown";

export function openedFor(connection: SqliteConnection): OpenedFor {
  try {
    // On some files SQLite refuses the write lock already (SQLITE_READONLY).
    connection.prepare("BEGIN IMMEDIATE").run();
    const version = Number(connection.prepare("PRAGMA user_version").get()?.["user_version"] ?? 0);
    connection.prepare(`PRAGMA user_version = ${version}`).run();
    return "writing";
  } catch (error) {
    return isReadOnlyError(error) ? "reading_only" : "unknown";
  } finally {
    try {
      connection.exec("ROLLBACK");
    } catch {
      // No transaction was open (BEGIN failed), or SQLite rolled it back.
    }
  }
}

/** SQLITE_READONLY and its extended codes. */
function isReadOnlyError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && code.startsWith("SQLITE_READONLY");
}

/** The owner's first connection must write: refuses one SQLite opened read-only. */
export function checkWritable(connection: SqliteConnection): void {
  if (openedFor(connection) !== "reading_only") return;
  throw new StoreError(
    `cannot open the store at ${connection.path} as its owner: SQLite could open its file for reading only (the file or its file system refuses writes); make it writable and open it again, or open it as a visitor to read it`,
    { details: { reason: "store_read_only", storePath: connection.path } },
  );
}

/** The store worker's connection: one opened read-only (during a fault) is
 * opened again before each use until the new one can write; meanwhile its
 * writes fail with SQLITE_READONLY, which is then the truth. */
export class WriteConnection {
  private connection: SqliteConnection;
  private readOnly: boolean;

  /** `open` opens a connection to the store's own file, or throws. */
  constructor(private readonly open: () => SqliteConnection) {
    this.connection = open();
    // Could not tell: taken as it was before the probe existed, writable.
    this.readOnly = openedFor(this.connection) === "reading_only";
  }

  /** The connection to use now. `mayReopen`, asked only before a reopen:
   * whether the store's files are still the ones the owner opened (a
   * reopen must never open another file). */
  current(mayReopen: () => boolean): SqliteConnection {
    if (this.readOnly && mayReopen()) this.reopen();
    return this.connection;
  }

  close(): void {
    this.connection.close();
  }

  private reopen(): void {
    let next: SqliteConnection;
    try {
      next = this.open();
    } catch {
      // Not openable now: the read-only one answers, as the file does.
      return;
    }
    // Read-only again, or not known to write: tried again at the next use.
    if (openedFor(next) !== "writing") return next.close();
    this.connection.close();
    this.connection = next;
    this.readOnly = false;
  }
}
