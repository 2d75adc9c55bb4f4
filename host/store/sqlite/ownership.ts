// One owner per embedded store (SPEC §4.3, docs/decisions/0007): before a
// process writes to `<store>`, it takes an exclusive lock that lives exactly
// as long as it (or until the store is closed). The lock is SQLite's own:
// a dedicated connection to the side file `<store>-owner` (an empty SQLite
// database) holds `BEGIN EXCLUSIVE` for the store's lifetime. SQLite locks
// with POSIX advisory locks, which the kernel drops when the process dies
// (`kill -9` included), so there is no stale lock and no timeout; SQLite
// also makes two connections of one process conflict, so a second open in
// the same process is refused too. After taking the lock, the owner writes
// `<store>-owner.json` (pid, hostname, startedAt; `owner-file.ts`) so that
// a refused opener can name it.
//
// Rules kept here:
// * `<store>-owner` is never deleted: a process may hold a lock on it, and
//   unlinking it would let a third process lock a new file of the same name.
// * Nothing else in the process may open and close `<store>-owner` outside
//   SQLite: closing any descriptor of a file drops the process's POSIX
//   locks on it (SQLite's own connections are safe: it defers those closes).
// * `-owner.json` is informative only; it may be missing or stale (a killed
//   owner leaves it behind) and is overwritten by the next owner.

import { renameSync, rmSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { StoreError } from "../../errors.js";
import { openSqlite, ownerOnlyFileMode, type SqliteConnection } from "./driver.js";
import { messageOf } from "./schema.js";
import { hostName, ownerInfoPath, readOwner, type StoreOwner } from "./owner-file.js";

/** Attempts before a busy lock is reported as owned. Two processes opening
 * at the same instant can each see the other's brief lock and both fail;
 * one retry after a few milliseconds separates them, while a real owner is
 * still reported in well under a tenth of a second. */
export const ownershipAttempts = 3;
export const ownershipRetryDelayMs = 15;

export function ownerLockPath(storePath: string): string {
  return `${storePath}-owner`;
}

/** The held lock; `release()` gives it up (idempotent). */
export class StoreOwnership {
  private connection: SqliteConnection | undefined;

  constructor(
    readonly storePath: string,
    readonly owner: StoreOwner,
    connection: SqliteConnection,
  ) {
    this.connection = connection;
  }

  release(): void {
    const connection = this.connection;
    if (connection === undefined) return;
    this.connection = undefined;
    // The information file goes first, while the lock still says it is ours.
    rmSync(ownerInfoPath(this.storePath), { force: true });
    connection.close(); // ends the transaction: the lock is released
  }
}

/** Takes ownership of the store at `storePath` (an absolute path), or fails
 * with `StoreError` naming the path and the current owner. */
export async function takeOwnership(storePath: string): Promise<StoreOwnership> {
  for (let attempt = 1; ; attempt += 1) {
    const connection = tryLock(storePath);
    if (connection !== undefined) return ownedBy(storePath, connection);
    if (attempt >= ownershipAttempts) throw ownedError(storePath, readOwner(storePath));
    await sleep(ownershipRetryDelayMs);
  }
}

/** The lock connection, or `undefined` when another connection holds it. */
function tryLock(storePath: string): SqliteConnection | undefined {
  const lockPath = ownerLockPath(storePath);
  let connection: SqliteConnection;
  try {
    connection = openSqlite(lockPath);
  } catch (error) {
    throw new StoreError(`cannot take ownership of the store at ${storePath}: opening its lock file ${lockPath} failed: ${messageOf(error)}`, { cause: error });
  }
  try {
    connection.exec("PRAGMA busy_timeout = 0"); // fail at once: a live owner holds it for its lifetime
    connection.exec("PRAGMA journal_mode = MEMORY"); // no `-owner-journal` file beside the store
    connection.exec("BEGIN EXCLUSIVE");
    return connection;
  } catch (error) {
    connection.close();
    if (isBusy(error)) return undefined;
    throw new StoreError(`cannot take ownership of the store at ${storePath}: locking ${lockPath} failed: ${messageOf(error)}`, { cause: error });
  }
}

function ownedBy(storePath: string, connection: SqliteConnection): StoreOwnership {
  const owner: StoreOwner = { pid: process.pid, hostname: hostName(), startedAt: new Date().toISOString() };
  const infoPath = ownerInfoPath(storePath);
  const temporary = `${infoPath}.${process.pid}.tmp`;
  try {
    rmSync(temporary, { force: true }); // a stale one would keep its mode
    writeFileSync(temporary, `${JSON.stringify(owner)}\n`, { mode: ownerOnlyFileMode });
    renameSync(temporary, infoPath); // atomic: a reader sees the old file or the new one
  } catch (error) {
    connection.close();
    rmSync(temporary, { force: true });
    throw new StoreError(`cannot take ownership of the store at ${storePath}: writing ${infoPath} failed: ${messageOf(error)}`, { cause: error });
  }
  return new StoreOwnership(storePath, owner, connection);
}

function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "SQLITE_BUSY" || code === "SQLITE_LOCKED";
}

function ownedError(storePath: string, owner: StoreOwner | undefined): StoreError {
  const who =
    owner === undefined
      ? `another process (its details in ${ownerInfoPath(storePath)} are missing or unreadable; it may be starting up)`
      : owner.pid === process.pid && owner.hostname === hostName()
        ? `this very process (pid ${owner.pid} on ${owner.hostname}, since ${owner.startedAt}), through a store or environment opened earlier and not closed`
        : `process ${owner.pid} on ${owner.hostname} (since ${owner.startedAt})`;
  return new StoreError(
    `the store at ${storePath} is already open, owned by ${who}; one process owns a store at a time: close the other process (or its store) first, or open this store as a visitor (SqliteStore.openVisitor, or Phronomy.open({ store, visitor: true }): it reads and files approval decisions beside the owner)`,
    { details: { reason: "store_owned", storePath, owner: owner === undefined ? null : { ...owner } } },
  );
}
