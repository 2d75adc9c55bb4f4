// The identity of the store's files (docs/decisions/0021): the device and
// inode of `<path>` and of its `-wal`, taken when the store is opened, and
// compared again after every group commit and periodically.
//
// Why: SQLite writes through the descriptors it opened. A store file
// removed (or renamed, or replaced by another file) while the store runs
// goes on accepting commits — into an inode no path names any more, gone
// for good once the process closes it. A path that names another inode, or
// none, is the only sign; SQLite reports it only in rollback-journal mode
// (SQLITE_READONLY_DBMOVED), not in WAL mode.
//
// Rules kept here:
// * A check is two `stat` calls and never throws: a missing file or one
//   that cannot be read is a change.
// * The `-wal` file exists from the first connection's open until the last
//   connection closes; the store keeps its calling-thread connection open
//   for its whole life, so the `-wal` file it opened stays the same one.
// * Inode numbers are compared as JavaScript numbers: above 2^53 two of them
//   may compare equal (a change missed), never unequal (a false alarm).

import { statSync } from "node:fs";
import { StoreError } from "../../errors.js";

export interface FileIdentity {
  readonly device: number;
  readonly inode: number;
}

/** The database file and its write-ahead log, as opened. */
export interface StoreFileIdentity {
  readonly database: FileIdentity;
  readonly wal: FileIdentity;
}

/** Reads the identity of the files at `path` (an open store's: both exist). */
export function readStoreFileIdentity(path: string): StoreFileIdentity {
  const database = identityOf(path);
  const wal = identityOf(walPath(path));
  if (database === undefined || wal === undefined) {
    throw new StoreError(`the store at ${path} was opened but its ${database === undefined ? "database" : "write-ahead log"} file is missing; it was removed while opening`, { details: { reason: "store_file_replaced", storePath: path } });
  }
  return { database, wal };
}

/** What changed since `identity` was taken, in words, or undefined. */
export function storeFileChange(path: string, identity: StoreFileIdentity): string | undefined {
  return fileChange(path, identity.database) ?? fileChange(walPath(path), identity.wal);
}

/** The error every write gets once the files changed. */
export function storeFileReplacedError(path: string, change: string): StoreError {
  return new StoreError(
    `the store at ${path} can no longer write: ${change} while the store was open; commits would go to a file no path names and be lost when the process ends, so this store refuses every write from now on — stop the process, put the store file back (or start a new store) and open it again`,
    { details: { reason: "store_file_replaced", storePath: path } },
  );
}

function walPath(path: string): string {
  return `${path}-wal`;
}

function fileChange(path: string, expected: FileIdentity): string | undefined {
  const now = identityOf(path);
  if (now === undefined) return `${path} was removed`;
  if (now.device !== expected.device || now.inode !== expected.inode) return `${path} was replaced by another file`;
  return undefined;
}

function identityOf(path: string): FileIdentity | undefined {
  try {
    const stats = statSync(path, { throwIfNoEntry: false });
    return stats === undefined ? undefined : { device: stats.dev, inode: stats.ino };
  } catch {
    return undefined;
  }
}
