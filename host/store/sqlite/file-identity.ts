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
// * A check made after every commit looks at the store's directory first
//   (`StoreFileCheck`): a file is removed, renamed or replaced only by
//   changing its directory's entries, which sets the directory's mtime and
//   ctime. While the directory's inode and times are those of the last
//   check that found the files unchanged, the files are unchanged and not
//   looked at. Why: a `stat` of the `-wal` file right after a commit's
//   `fsync` cost ≈70–80 µs on this machine's ext4, ≈0.4 ms of a run's
//   six commits — a quarter of a sequential run under `synchronous=FULL`
//   (issue 11's regression) — while the directory, not written by a
//   commit, is cheap to look at. Directory times are only as fine as the
//   filesystem's clock tick, so a directory changed less than
//   `settledDirectoryMs` before a check is never taken as unchanged: a
//   later change then always shows as a newer time. The times are
//   compared as `stat`'s milliseconds with their fraction (a double, exact
//   to a fraction of a microsecond, far finer than any such tick), not as
//   BigInt nanoseconds: a BigInt `stat` and a string key cost every commit
//   more instructions than the rest of its check (issue 25).

import { statSync, type Stats } from "node:fs";
import { dirname } from "node:path";
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
    throw new StoreError(
      `the store at ${path} was opened but its ${database === undefined ? "database" : "write-ahead log"} file is missing; it was removed while opening`,
      { details: { reason: "store_file_replaced", storePath: path } },
    );
  }
  return { database, wal };
}

/** What changed since `identity` was taken, in words, or undefined. */
export function storeFileChange(path: string, identity: StoreFileIdentity): string | undefined {
  return fileChange(path, identity.database) ?? fileChange(walPath(path), identity.wal);
}

/** A directory whose times are at least this old when the files were
 * found unchanged is trusted until its times change (coarser than any
 * filesystem timestamp tick in use: ext4/xfs/btrfs ticks are ≤ 10 ms,
 * FAT's 2 s). */
export const settledDirectoryMs = 2_000;

/** A directory's device, inode and change times (milliseconds, with the
 * fraction `stat` gives: two times a clock tick apart never compare equal). */
interface DirectoryStamp {
  readonly device: number;
  readonly inode: number;
  readonly modifiedMs: number;
  readonly changedMs: number;
}

/** The check after every commit: `storeFileChange`, skipped while the
 * store's directory is unchanged since a check that found nothing. */
export class StoreFileCheck {
  /** The directory's stamp at the last check that found the files
   * unchanged, when its times were settled then. */
  private trusted: DirectoryStamp | undefined;
  private readonly directory: string;

  constructor(
    private readonly path: string,
    private readonly identity: StoreFileIdentity,
    private readonly now: () => number = Date.now,
  ) {
    this.directory = dirname(path);
  }

  /** What changed since the store opened, in words, or undefined. Runs
   * after every commit: the usual answer (the directory as trusted) reads
   * one `stat` of plain numbers and builds nothing. */
  change(): string | undefined {
    const stats = statOrUndefined(this.directory);
    if (stats !== undefined && this.trusted !== undefined && sameStamp(stats, this.trusted)) return undefined;
    const change = storeFileChange(this.path, this.identity);
    const settled = stats !== undefined && this.now() - Math.max(stats.mtimeMs, stats.ctimeMs) >= settledDirectoryMs;
    this.trusted = change === undefined && settled ? stampOf(stats) : undefined;
    return change;
  }
}

/** The directory's stats; undefined when it cannot be read. */
function statOrUndefined(path: string): Stats | undefined {
  try {
    return statSync(path, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

function sameStamp(stats: Stats, stamp: DirectoryStamp): boolean {
  return stats.ino === stamp.inode && stats.dev === stamp.device && stats.mtimeMs === stamp.modifiedMs && stats.ctimeMs === stamp.changedMs;
}

function stampOf(stats: Stats): DirectoryStamp {
  return { device: stats.dev, inode: stats.ino, modifiedMs: stats.mtimeMs, changedMs: stats.ctimeMs };
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
