// The store worker's `FULL` durability with the fsync off its thread
// (docs/decisions/0144). SQLite's `synchronous = FULL` fsyncs the
// write-ahead log inside each COMMIT, and the worker waits for it before it
// can run the next transaction: at 100 in flight a third of the worker's
// time was that wait (decision 0141). The worker's connection runs at
// `NORMAL` instead (a commit writes the log and does not sync it; SQLite
// syncs it before each checkpoint), and this file syncs the log once a
// transaction committed, with `fdatasync` on the thread pool, while the
// worker runs the next transaction. No group is answered before a sync that
// began after its commit has finished: what the application is told is
// committed is on disk, as under `FULL`. What differs is only what another
// reader of the file may see meanwhile: a transaction committed and not yet
// synced (for at most one sync) — never reported as durable to anyone.

import { closeSync, fdatasync, openSync } from "node:fs";

/** Sends the worker's answers only once the commits before them are on
 * disk. `afterSync(send)`: `send` runs once a sync that began after this
 * call has finished. A sync that fails throws from its callback: the worker
 * ends, and the offload fails the groups it held with their outcome unknown
 * (`Offload.workerLost`), as a COMMIT whose sync failed would. */
export class WalSync {
  private fd: number | undefined;
  private syncing = false;
  /** Answers a running sync covers. */
  private covered: (() => void)[] = [];
  /** Answers for the next sync. */
  private next: (() => void)[] = [];

  constructor(
    private readonly logPath: string,
    private readonly sync: (fd: number, done: (error: Error | null) => void) => void = fdatasync,
  ) {}

  afterSync(send: () => void): void {
    this.next.push(send);
    if (!this.syncing) this.start();
  }

  /** Runs `send` after every answer already waiting, at once when none is:
   * an answer that needs no sync of its own but must not overtake one that
   * does (a checkpoint's, the close). */
  inOrder(send: () => void): void {
    if (!this.syncing && this.next.length === 0) send();
    else this.afterSync(send);
  }

  /** Closes the log's descriptor; call once nothing waits (`inOrder`). */
  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  private start(): void {
    // Opened at the first sync: the log exists once a transaction committed.
    this.fd ??= openSync(this.logPath, "r+");
    this.covered = this.next;
    this.next = [];
    this.syncing = true;
    this.sync(this.fd, (error) => {
      this.syncing = false;
      if (error !== null) throw new Error(`phronomy: the store's write-ahead log ${this.logPath} could not be synced to disk: ${error.message}`, { cause: error });
      const covered = this.covered;
      this.covered = [];
      for (const send of covered) send();
      if (this.next.length > 0) this.start();
    });
  }
}
