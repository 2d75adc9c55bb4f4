// The offload: a bounded first-in-first-out queue of store operations that
// runs them off the control loop with group commit, without making a lone
// operation pay a thread hop (SPEC §4.3, docs/decisions/0006).
//
// Rules kept here:
// * `submit` either throws at once (queue full: `OffloadFullError`; closed
//   or broken: `StoreError`), in which case nothing was submitted, or
//   returns a promise that settles exactly once with that operation's own
//   result or error.
// * At most one group is in the worker at a time. Operations that arrive
//   meanwhile wait here and leave together as the next group (one
//   transaction, a savepoint each), up to `groupOperationsMax`.
// * The calling thread's connection commits only while the worker holds no
//   group, so the two connections never write at the same time.
// * Operations are committed in submission order.
//
// Policies: `inline` commits every group on the calling thread; `worker`
// sends every group to the worker; `adaptive` (the default) commits a lone
// operation inline when the worker is idle and sends anything more to the
// worker, so a quiet store pays no hop and a busy one keeps the control loop
// free while the worker waits for the disk.
//
// Under `adaptive` the worker starts in the background (docs/decisions/0008):
// a thread takes tens of milliseconds to start, longer than everything else
// `open` does, and until it is ready every group commits inline, which is
// correct, only slower under load. A worker that cannot start leaves
// `adaptive` committing inline for good (`statistics.workerState`
// "unavailable", with the reason); `worker` waits for its worker, and its
// failure to start fails `start`.
//
// A worker that dies once it was ready (terminated, `process.exit` inside
// it, an uncaught error) is replaced (docs/decisions/0021). The groups it
// held fail with a `StoreError` whose outcome is unknown
// (`details.outcome: "unknown"`: each committed whole or not at all, and
// SQLite rolled back whatever was open when its connection closed); groups
// not sent yet stay queued, in order, for the new worker (or, under
// `adaptive`, commit inline while it starts). After `workerRestartsMax`
// replacements the offload gives up and refuses every write.
//
// An `adaptive` offload's worker rests once it held nothing for
// `workerRestMs` (docs/decisions/0121): it is closed like at `close`, its
// thread ends and its isolate, its connection's caches and its stack are
// given back (≈15–19 MB of RSS), and lone operations go on committing
// inline as they did beside it; the next group of more than one operation
// (or a checkpoint due) starts a new worker in the background, the queue
// committing inline meanwhile, as at open. A rest is not a death: it
// counts in `workerRests`, not in `workerRestarts`. While the worker rests
// the search index is swept inline, between groups, as with no worker.
//
// Checkpoints run on the worker, off the commit path (docs/decisions/0050):
// its connection never checkpoints inside a commit, the calling thread's
// only past `inlineAutocheckpointPages` (a bound for when there is no
// worker), and every `checkpointEveryPages` pages committed (counted by
// estimate), inline or on the worker, the offload asks the worker for a passive
// checkpoint, one at a time. While the calling thread commits inline the
// worker copies the log into the database file beside it; while the worker
// commits, the checkpoint runs between two of its transactions, after the
// groups before it were answered, instead of inside a COMMIT whose
// operations wait for it.
//
// The search index is swept off the commits (docs/decisions/0095): once
// `sweepEveryOperations` operations were committed since the last sweep, or
// `sweepDelayMs` after the first of them, the offload asks the worker for a
// sweep, in order among the groups (numbered as one, with no operations),
// so the calling thread's connection writes nothing while it runs; with no
// worker (`inline`, or one that could not start) it sweeps inline, on the
// same schedule. One that left work asks for the next at once. A store
// opened asks for one first: a crash may have left rows not indexed.
//
// Every commit is followed by a check that the store's files are still the
// ones opened (`settings.checkFiles`, `sqlite/file-identity.ts`): in the
// worker once per transaction, inline once per group, and `verifyFiles()`
// for a periodic look. A change fails that group and every later
// operation: nothing committed into a removed file is ever acknowledged.

import { InvalidInputError, OffloadFullError, StoreError, type PhronomyError } from "../errors.js";
import { rebuildError } from "./error-transfer.js";
import type { OffloadOperation, OffloadResult } from "./offload-operation.js";
import { assertOperationData } from "./plain-data.js";
import type { StoreWorker } from "./sqlite/start-worker.js";
import { encodeGroup } from "./sqlite/step-payloads.js";
import type { Settlement } from "./sqlite/transaction.js";
import type { TransferredSettlement, WorkerReply, WorkerRequest } from "./sqlite/worker-protocol.js";

/** Where a SQLite store's commits run (docs/decisions/0006): `inline` on
 * the calling thread, `worker` on the store's worker thread, `adaptive`
 * (the default) a lone operation inline when the worker is idle and
 * anything more on the worker. */
export type OffloadPolicy = "adaptive" | "worker" | "inline";

/** Operations waiting or in flight before `submit` refuses. Each holds its
 * input and results (typically a few kilobytes), so 10,000 is tens of
 * megabytes at most; at the group-commit rates measured here (≈10k–50k
 * operations/s) it is well under a second of backlog. A deeper queue would
 * only hide that the store cannot keep up, while callers' latency grows
 * without bound: refusing tells the runtime to unwind at once (SPEC §3). */
export const offloadCapacityDefault = 10_000;

/** Most operations in one group commit. Bigger groups amortise the commit
 * (one fsync with `FULL`) over more operations but hold the write lock
 * longer and delay the first operation's answer; at 256 a group of
 * barriers commits in a few milliseconds, and 100 runs in flight fit in
 * one group. */
export const groupOperationsMax = 256;

/** Groups sent to the worker before the first is answered. More than one
 * lets the calling thread prepare the next group while the worker commits
 * (the worker merges whatever has arrived into one transaction), so the
 * two threads work in parallel instead of taking turns. */
export const groupsInFlightMax = 4;

/** Queued operations that are sent without waiting for the end of the
 * current turn: big enough to amortise a message, small enough that the
 * worker starts early. */
export const eagerGroupOperations = 16;

/** Pages of the log between two checkpoints the offload asks the worker
 * for: SQLite's own default bound (4 MB). The offload does not see the
 * log; it counts what a transaction writes, measured
 * (docs/decisions/0050): ≈5 pages, plus ≈0.5 per operation it holds (a
 * lone barrier ≈6, a group of 32 barriers ≈22). */
export const checkpointEveryPages = 1_000;

/** Operations committed after which a sweep of the search index is asked
 * for at once (docs/decisions/0095): about 85 runs of six operations, one
 * FTS5 segment each time instead of one per write. */
export const sweepEveryOperations = 512;

/** How long after the first commit not swept a sweep is asked for: what a
 * search may read outside the index stays the last moments' rows. */
export const sweepDelayMs = 1_000;

/** Log pages counted for a transaction of `operations` operations
 * (`checkpointEveryPages`). */
export function estimatedLogPages(operations: number): number {
  return 5 + operations / 2;
}

/** `wal_autocheckpoint` of the calling thread's connection when a worker
 * checkpoints (policies `adaptive` and `worker`): 4× SQLite's default, a
 * bound on the log's length (16 MB) for when the worker is not there to
 * checkpoint (starting, unavailable, replaced), never reached while it is. */
export const inlineAutocheckpointPages = 4_000;

/** Replacements of a dead worker before the offload gives up. A worker
 * dies for a reason outside the store's operations (terminated by the
 * application, out of memory, a bug); one that keeps dying points at
 * something a new thread will not fix, and each death leaves executions
 * for recovery, so after a few the store stops writing and says so. */
export const workerRestartsMax = 3;

/** How long an `adaptive` offload's worker holds nothing before it rests
 * (its thread ends; docs/decisions/0121). Longer than any pause inside a
 * load (a burst's groups follow each other within milliseconds), short
 * enough that a process resting between bursts gives its memory back
 * soon; a thread starts again in tens of milliseconds, the queue
 * committing inline meanwhile. */
export const workerRestMs = 10_000;

/** Counters of a SQLite store's offload, for tests and benchmarks. */
export interface OffloadStatistics {
  /** Operations submitted. */
  readonly submitted: number;
  /** Group commits run on the calling thread. */
  readonly inlineGroups: number;
  /** Operations they held. */
  readonly inlineOperations: number;
  /** Group commits run on the worker thread. */
  readonly workerGroups: number;
  /** Operations they held. */
  readonly workerOperations: number;
  /** The most operations one group commit held. */
  readonly largestGroup: number;
  /** The worker thread's state. */
  readonly workerState: WorkerState;
  /** Why the worker is unavailable, when it is. */
  readonly workerFailure?: string;
  /** Dead workers replaced so far (at most `workerRestartsMax`). */
  readonly workerRestarts: number;
  /** Times an `adaptive` offload's worker was stopped to rest, having held nothing for 10 s (`workerRestMs`). */
  readonly workerRests: number;
  /** Checkpoints the worker ran (docs/decisions/0050). */
  readonly checkpoints: number;
  /** Sweeps of the search index run, on the worker or inline (docs/decisions/0095). */
  readonly sweeps: number;
  /** Why sweeping stopped (a SQLite without FTS5, say), when it did. */
  readonly sweepFailure?: string;
}

/** `none` under policy `inline`; `starting` while an `adaptive` offload's
 * worker starts; `unavailable` when it could not; `resting` while an
 * `adaptive` offload's worker is stopped, having held nothing for 10 s (the next
 * group of more than one operation starts it again). */
export type WorkerState = "none" | "starting" | "ready" | "unavailable" | "resting";

export interface OffloadSettings {
  readonly policy: OffloadPolicy;
  readonly capacity: number;
  /** Where the operations go, for error messages. */
  readonly path: string;
  /** Commits a group on the calling thread. Never throws. */
  readonly commitInline: (operations: readonly OffloadOperation[]) => Settlement[];
  /** Starts the worker; not called for policy `inline`. */
  readonly startWorker: () => StoreWorker;
  /** Sweeps the search index on the calling thread (no worker); `more`:
   * another sweep is due. Throws when it cannot. */
  readonly sweepInline?: () => { readonly more: boolean };
  /** After an inline commit and periodically: the error every write gets
   * once the store's files are no longer the ones opened, or undefined. */
  readonly checkFiles?: () => StoreError | undefined;
  /** How long an `adaptive` worker holds nothing before it rests;
   * `workerRestMs` by default. */
  readonly restMs?: number;
}

interface Entry {
  readonly operation: OffloadOperation;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: PhronomyError) => void;
}

export class Offload {
  readonly policy: OffloadPolicy;
  readonly capacity: number;
  private readonly settings: OffloadSettings;
  /** The current worker (a dead one is replaced; `undefined` under `inline`). */
  private worker: StoreWorker | undefined;
  private workerRestarts = 0;
  private workerRests = 0;
  /** When the worker last held something (a group, a sweep, a checkpoint): performance.now(). */
  private workerBusyAt = 0;
  private restTimer: ReturnType<typeof setTimeout> | undefined;
  /** The close of a worker sent to rest, until its thread ended. */
  private resting: Promise<void> | undefined;
  private readonly queue: Entry[] = [];
  /** Groups sent to the worker and not answered yet, oldest first. */
  private readonly inFlight = new Map<number, readonly Entry[]>();
  private inFlightOperations = 0;
  private groupsSent = 0;
  private flushScheduled = false;
  private closing: Promise<void> | undefined;
  private broken: StoreError | undefined;
  private drained: (() => void) | undefined;
  private counters = { submitted: 0, inlineGroups: 0, inlineOperations: 0, workerGroups: 0, workerOperations: 0, largestGroup: 0, checkpoints: 0, sweeps: 0 };
  /** Operations committed since the last sweep was asked for. */
  private unswept = 0;
  /** A sweep is due now (the store just opened, a worker was replaced, the last one left work, or the delay passed). */
  private sweepDue = true;
  private sweepTimer: ReturnType<typeof setTimeout> | undefined;
  /** The group number of the sweep in the worker, if one is. */
  private sweepGroup: number | undefined;
  private sweepFailure: string | undefined;
  /** Log pages written (estimated) since the last checkpoint was asked for. */
  private sinceCheckpoint = 0;
  /** A checkpoint asked of the current worker and not answered yet. */
  private checkpointAsked = false;
  private workerState: WorkerState;
  private workerFailure: string | undefined;
  /** Settles once the worker is ready or unavailable (at once when it
   * was ready before `start` returned, or there is none); a replacement
   * worker gives a new one. */
  workerStarted: Promise<void>;

  private constructor(settings: OffloadSettings, worker: StoreWorker | undefined, ready: boolean) {
    this.settings = settings;
    this.policy = settings.policy;
    this.capacity = settings.capacity;
    this.workerState = worker === undefined ? "none" : ready ? "ready" : "starting";
    this.workerStarted = worker === undefined ? Promise.resolve() : this.attachWorker(worker, ready);
    if (worker === undefined || ready) this.scheduleFlush(); // the first sweep (else once the worker is ready)
  }

  /** Makes `worker` the current one: its replies and its end are listened
   * to (events of a replaced worker are ignored), and, unless it is ready
   * already, its start is awaited. Settles once it is ready or unavailable. */
  private attachWorker(worker: StoreWorker, ready: boolean): Promise<void> {
    this.worker = worker;
    this.checkpointAsked = false;
    this.sweepDue = true;
    worker.port.on("message", (reply: WorkerReply) => {
      if (this.worker === worker) this.onWorkerReply(reply);
    });
    let failure: string | undefined;
    worker.thread.on("error", (error) => {
      failure = error.message;
    });
    worker.thread.on("exit", (code) => {
      if (this.worker === worker) this.workerLost(failure === undefined ? `it exited (code ${code})` : `it failed: ${failure}`);
    });
    // Idle, neither keeps the process alive (nor does a worker starting); a
    // group in flight refs the thread until it is answered (`sendToWorker`,
    // `onWorkerReply`).
    worker.port.unref();
    worker.thread.unref();
    if (ready) return Promise.resolve();
    return waitUntilReady(worker, this.settings.path).then(
      () => {
        if (this.worker !== worker) return;
        this.workerState = "ready";
        worker.port.unref(); // waitUntilReady's listener may have ref'd it
        this.flush();
        this.restSoon();
      },
      (error: PhronomyError) => {
        if (this.worker !== worker) return;
        this.workerState = "unavailable";
        this.workerFailure = error.message;
        // A replacement that cannot start: `adaptive` goes on inline, as
        // when its first worker could not start; `worker` has nowhere to go.
        const replaced = this.workerRestarts > 0;
        if (isFilesChanged(error) || (replaced && this.policy === "worker")) {
          this.breakDown(error instanceof StoreError ? error : new StoreError(error.message, { cause: error }));
        } else if (replaced) {
          this.flush();
        }
      },
    );
  }

  /** Starts the worker unless the policy is `inline`: under `worker`, waits
   * until its connection is open; under `adaptive`, lets it start in the
   * background. */
  static async start(settings: OffloadSettings): Promise<Offload> {
    checkCapacity(settings.capacity);
    if (settings.policy === "inline") return new Offload(settings, undefined, false);
    const worker = settings.startWorker();
    if (settings.policy === "adaptive") return new Offload(settings, worker, false);
    await waitUntilReady(worker, settings.path);
    return new Offload(settings, worker, true);
  }

  get statistics(): OffloadStatistics {
    return {
      ...this.counters,
      workerState: this.workerState,
      ...(this.workerFailure === undefined ? {} : { workerFailure: this.workerFailure }),
      workerRestarts: this.workerRestarts,
      workerRests: this.workerRests,
      ...(this.sweepFailure === undefined ? {} : { sweepFailure: this.sweepFailure }),
    };
  }

  /** Why every write is refused, once the offload broke down (its store's
   * files changed, its worker could not be replaced); undefined while it
   * works. */
  get failure(): StoreError | undefined {
    return this.broken;
  }

  /** Looks at the store's files now (`settings.checkFiles`); a change
   * breaks the offload down at once. */
  verifyFiles(): void {
    if (this.broken !== undefined || this.closing !== undefined) return;
    const changed = this.settings.checkFiles?.();
    if (changed !== undefined) this.breakDown(changed);
  }

  /** @internal For tests that kill the worker: its thread, once started. */
  get workerThread(): StoreWorker["thread"] | undefined {
    return this.worker?.thread;
  }

  /** Operations accepted and not yet settled. */
  get pending(): number {
    return this.queue.length + this.inFlightOperations;
  }

  submit<O extends OffloadOperation>(operation: O): Promise<OffloadResult<O>> {
    if (this.broken !== undefined) throw this.broken;
    if (this.closing !== undefined) {
      throw new StoreError(`the store at ${this.settings.path} is closed and accepts no more operations (${operation.type}); open it again to continue`);
    }
    if (this.pending >= this.capacity) throw new OffloadFullError(this.capacity);
    this.counters.submitted += 1;
    const result = new Promise<OffloadResult<O>>((resolve, reject) => {
      this.queue.push({ operation, resolve: resolve as (value: unknown) => void, reject });
    });
    // A full enough group leaves at once, so the worker starts committing
    // while this thread is still producing the rest (pipelining); the
    // remainder leaves when the current turn is over.
    if (this.queue.length >= eagerGroupOperations && this.workerState === "ready") this.flush();
    else this.scheduleFlush();
    return result;
  }

  /** Finishes every accepted operation, then stops the worker. Idempotent. */
  close(): Promise<void> {
    clearTimeout(this.sweepTimer);
    clearTimeout(this.restTimer);
    this.closing ??= this.drainThenStop();
    return this.closing;
  }

  // -- dispatch ----------------------------------------------------------------

  /** Waits one turn of the event loop before choosing where the queue goes,
   * so that every operation submitted in this turn (including its promise
   * continuations) joins one group. */
  private scheduleFlush(): void {
    if (this.flushScheduled || this.inFlight.size >= groupsInFlightMax) return;
    this.flushScheduled = true;
    // On the event loop's next round, never in a microtask: inline commits
    // resolve promises whose continuations submit again, and a flush in a
    // microtask would chain them forever, starving timers and the worker's
    // messages (seen: a 100-run load never yielded to its own stop timer).
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    this.wakeIfNeeded(this.queue.length > 1);
    while (this.inFlight.size < groupsInFlightMax && this.queue.length > 0 && this.broken === undefined) {
      const inline = this.commitsInline(Math.min(this.queue.length, groupOperationsMax));
      // Under `worker`, a replacement worker still starting: the queue waits.
      if (!inline && this.workerState !== "ready") break;
      const entries = this.queue.splice(0, groupOperationsMax);
      this.counters.largestGroup = Math.max(this.counters.largestGroup, entries.length);
      if (inline) this.commitInline(entries);
      else this.sendToWorker(entries);
    }
    if (this.pending === 0) this.drained?.();
    this.sweepSoon();
  }

  // -- the search index's sweep (docs/decisions/0095) -------------------------

  /** Asks for a sweep when one is due, or arms the delay after a commit. */
  private sweepSoon(): void {
    if (this.sweepFailure !== undefined || this.closing !== undefined || this.broken !== undefined) return;
    if (this.sweepDue || this.unswept >= sweepEveryOperations) {
      this.sweepNow();
      return;
    }
    if (this.unswept === 0 || this.sweepTimer !== undefined) return;
    this.sweepTimer = setTimeout(() => {
      this.sweepTimer = undefined;
      this.sweepDue = true;
      this.sweepSoon();
    }, sweepDelayMs);
    this.sweepTimer.unref(); // a sweep never keeps the process alive
  }

  private sweepNow(): void {
    const worker = this.worker;
    if (this.workerState === "ready" && worker !== undefined) {
      // Once the worker answers a group there is room again (`flush`).
      if ((this.sweepGroup !== undefined && this.inFlight.has(this.sweepGroup)) || this.inFlight.size >= groupsInFlightMax) return;
      this.groupsSent += 1;
      this.sweepGroup = this.groupsSent;
      this.inFlight.set(this.groupsSent, []);
      worker.port.postMessage({ type: "sweep", group: this.groupsSent } satisfies WorkerRequest);
    } else if (this.policy === "inline" || this.workerState === "unavailable" || this.workerState === "resting") {
      // Between groups only: the queue's next turn comes first.
      if (this.queue.length > 0 || this.inFlight.size > 0 || this.settings.sweepInline === undefined) return;
      try {
        this.sweepDue = this.settings.sweepInline().more;
        this.counters.sweeps += 1;
      } catch (error) {
        this.sweepFailure = error instanceof Error ? error.message : String(error);
        return;
      }
      this.unswept = 0;
      if (this.sweepDue) this.scheduleFlush();
      return;
    } else return; // a worker starting: asked for once it is ready
    this.sweepDue = false;
    this.unswept = 0;
    clearTimeout(this.sweepTimer);
    this.sweepTimer = undefined;
  }

  private commitsInline(groupSize: number): boolean {
    switch (this.policy) {
      case "inline":
        return true;
      case "worker":
        return false;
      // Inline only while the worker holds nothing: the two connections
      // never write at the same time. Until the worker is ready, it holds
      // nothing.
      // A prune (many deletes, docs/decisions/0027) waits for the worker
      // rather than run on the control loop's thread.
      case "adaptive":
        return this.workerState !== "ready" || (groupSize === 1 && this.inFlight.size === 0 && this.queue[0]?.operation.type !== "pruneExecutions");
    }
  }

  private commitInline(entries: readonly Entry[]): void {
    this.counters.inlineGroups += 1;
    this.counters.inlineOperations += entries.length;
    const settlements = this.settings.commitInline(entries.map((entry) => entry.operation));
    const changed = this.settings.checkFiles?.();
    if (changed !== undefined) {
      for (const entry of entries) entry.reject(changed);
      this.breakDown(changed);
      return;
    }
    entries.forEach((entry, index) => settle(entry, settlements[index]));
    this.committed(entries.length);
  }

  /** Counts a transaction of `operations` committed; asks the worker for a
   * checkpoint once `checkpointEveryPages` were written (docs/decisions/0050). */
  private committed(operations: number): void {
    this.unswept += operations;
    this.sinceCheckpoint += estimatedLogPages(operations);
    this.wakeIfNeeded(this.sinceCheckpoint >= checkpointEveryPages);
    if (this.sinceCheckpoint < checkpointEveryPages || this.checkpointAsked || this.workerState !== "ready" || this.closing !== undefined) return;
    const worker = this.worker;
    if (worker === undefined) return;
    this.sinceCheckpoint = 0;
    this.checkpointAsked = true;
    worker.port.postMessage({ type: "checkpoint" } satisfies WorkerRequest);
  }

  private sendToWorker(entries: readonly Entry[]): void {
    const worker = this.worker;
    if (worker === undefined) throw new Error("phronomy: the offload has no worker for policy " + this.policy);
    this.groupsSent += 1;
    // Operations and settlements cross the thread boundary as JSON text:
    // flat strings copy far faster than a structured clone of many small
    // nested objects, and operations are JSON by contract. The steps'
    // payloads go as their columns' text, which the worker binds as it is
    // (`step-payloads.ts`, docs/decisions/0129).
    let request: WorkerRequest;
    try {
      const operations = entries.map((entry) => entry.operation);
      // Without a replacer: JSON.stringify's fast path (a replacer function
      // called for every value cost a third of it), then the walk that
      // refuses what JSON would have dropped silently (docs/decisions/0103).
      const group = encodeGroup(operations);
      for (let index = 0; index < operations.length; index += 1) assertOperationData(operations[index]!);
      request = {
        type: "commit",
        group: this.groupsSent,
        count: entries.length,
        operations: group.operations,
        payloads: group.payloads,
        encoded: group.encoded,
      };
      worker.port.postMessage(request);
    } catch (error) {
      this.refuseUncloneable(entries, error);
      return;
    }
    this.counters.workerGroups += 1;
    this.counters.workerOperations += entries.length;
    this.inFlight.set(this.groupsSent, entries);
    this.inFlightOperations += entries.length;
    worker.thread.ref(); // a group in flight keeps the process alive until it is answered
    this.workerBusyAt = performance.now();
  }

  /** An operation that cannot be structured-cloned (a function or a symbol
   * in its data) cannot cross to the worker: it alone fails with
   * `InvalidInputError`, and the rest of its group goes back to the head of
   * the queue, in order. */
  private refuseUncloneable(entries: readonly Entry[], cause: unknown): void {
    const cloneable = entries.filter((entry) => {
      try {
        structuredClone(entry.operation);
        return true;
      } catch {
        entry.reject(
          new InvalidInputError(
            `store operation ${entry.operation.type} holds a value that cannot be copied to the store worker (a function, a symbol or a class with private state); operations must be plain data`,
            { cause },
          ),
        );
        return false;
      }
    });
    if (cloneable.length === entries.length) {
      for (const entry of entries)
        entry.reject(
          new StoreError(`the store worker for ${this.settings.path} refused a group: ${cause instanceof Error ? cause.message : String(cause)}`, { cause }),
        );
      return;
    }
    this.queue.unshift(...cloneable);
  }

  private onWorkerReply(reply: WorkerReply): void {
    this.workerBusyAt = performance.now();
    this.restSoon();
    if (reply.type === "swept") {
      const oldest = this.inFlight.keys().next().value;
      if (oldest !== reply.group || this.sweepGroup !== reply.group) {
        this.breakDown(`the store worker answered sweep ${reply.group}, which is not the oldest group in flight (${String(oldest)})`);
        return;
      }
      this.inFlight.delete(reply.group);
      this.counters.sweeps += 1;
      if (reply.failure !== undefined) this.sweepFailure = reply.failure;
      else if (reply.more) this.sweepDue = true;
      if (this.inFlight.size === 0 && this.closing === undefined) this.worker?.thread.unref(); // closing: the close reply holds it
      this.flush();
      return;
    }
    if (reply.type === "checkpointed") {
      this.checkpointAsked = false;
      if (reply.frames >= 0) this.counters.checkpoints += 1;
      return;
    }
    if (reply.type !== "settled") return;
    if (reply.filesChanged !== undefined) {
      // The worker committed, then found the files changed: nothing it
      // holds is acknowledged.
      const error = rebuildError(reply.filesChanged);
      this.breakDown(error instanceof StoreError ? error : new StoreError(error.message));
      return;
    }
    // The transaction's groups, oldest first: each must be the oldest in
    // flight when its turn comes.
    const answered: (readonly Entry[])[] = [];
    for (let index = 0; index < reply.groups; index += 1) {
      const group = reply.group + index;
      const oldest = this.inFlight.keys().next().value;
      const entries = this.inFlight.get(group);
      if (entries === undefined || oldest !== group) {
        this.breakDown(`the store worker answered group ${group}, which is not the oldest group in flight (${String(oldest)})`);
        for (const held of answered) for (const entry of held) entry.reject(this.broken!);
        return;
      }
      this.inFlight.delete(group);
      this.inFlightOperations -= entries.length;
      answered.push(entries);
    }
    if (this.inFlight.size === 0 && this.closing === undefined) this.worker?.thread.unref();
    const settlements = JSON.parse(reply.settlements) as TransferredSettlement[];
    let offset = 0;
    for (const entries of answered) {
      for (let index = 0; index < entries.length; index += 1) settleTransferred(entries[index]!, settlements[offset + index], this.settings.path);
      offset += entries.length;
    }
    this.committed(offset);
    this.flush();
  }

  // -- the worker's rest (docs/decisions/0121) ------------------------------------

  /** Arms the rest timer of an idle `adaptive` worker (one timer at a time;
   * it never keeps the process alive). */
  private restSoon(): void {
    if (this.policy !== "adaptive" || this.workerState !== "ready" || this.restTimer !== undefined || this.closing !== undefined) return;
    this.restTimer = setTimeout(() => {
      this.restTimer = undefined;
      this.restIfIdle();
    }, this.restMs);
    this.restTimer.unref();
  }

  private get restMs(): number {
    return this.settings.restMs ?? workerRestMs;
  }

  /** Stops the worker if it held nothing for `workerRestMs`; else waits
   * the rest of that time. */
  private restIfIdle(): void {
    const worker = this.worker;
    if (this.workerState !== "ready" || worker === undefined || this.closing !== undefined || this.broken !== undefined) return;
    const idleMs = performance.now() - this.workerBusyAt;
    if (this.inFlight.size > 0 || this.checkpointAsked || idleMs < this.restMs) {
      this.restTimer = setTimeout(
        () => {
          this.restTimer = undefined;
          this.restIfIdle();
        },
        Math.max(this.restMs - idleMs, 10),
      );
      this.restTimer.unref();
      return;
    }
    // From here on the worker is not this offload's: its replies and its
    // exit are ignored (`attachWorker` compares), lone operations commit
    // inline, and it holds no group, so the two connections never write at
    // once. It closes its connection as at `close`, then its thread ends.
    this.worker = undefined;
    this.workerState = "resting";
    this.workerRests += 1;
    this.resting = retire(worker).finally(() => {
      this.resting = undefined;
    });
  }

  /** Starts a resting worker again when `needed` (a group for it, a
   * checkpoint due), in the background: the queue commits inline meanwhile.
   * A worker still closing is let close first (its thread is ending). */
  private wakeIfNeeded(needed: boolean): void {
    if (!needed || this.workerState !== "resting" || this.closing !== undefined || this.broken !== undefined) return;
    this.workerState = "starting";
    const closing = this.resting ?? Promise.resolve();
    this.workerStarted = closing.then(() => {
      if (this.closing === undefined) return this.attachWorker(this.settings.startWorker(), false);
      this.workerState = "resting"; // closed meanwhile: no worker to start
      return undefined;
    });
  }

  // -- shutdown ------------------------------------------------------------------

  private async drainThenStop(): Promise<void> {
    if (this.pending > 0 && this.broken === undefined) {
      await new Promise<void>((resolve) => {
        this.drained = resolve;
      });
    }
    clearTimeout(this.restTimer);
    await this.resting;
    while (this.workerState === "starting") {
      // A worker still starting is let finish, then closed; it keeps the
      // process alive until then, so that close completes.
      this.worker?.thread.ref();
      await this.workerStarted;
    }
    const worker = this.workerState === "ready" ? this.worker : undefined;
    if (worker === undefined || this.broken !== undefined) {
      if (worker !== undefined) await stopWorker(worker);
      return;
    }
    worker.thread.removeAllListeners("exit");
    worker.thread.ref();
    await closeThenStop(worker);
  }

  /** The current worker ended. Before it was ready, the startup wait
   * reports it (`workerStarted`). After, the groups it held fail with their
   * outcome unknown and a new worker takes over the queue, up to
   * `workerRestartsMax` times. */
  private workerLost(reason: string): void {
    if (this.workerState !== "ready" || this.broken !== undefined) return;
    if (this.closing !== undefined && this.pending === 0) return; // the normal exit after close
    const held = [...this.inFlight.values()].flat();
    this.inFlight.clear();
    this.inFlightOperations = 0;
    const { path } = this.settings;
    const lost = new StoreError(
      `the store worker for ${path} stopped while it held ${held.length} operation${held.length === 1 ? "" : "s"} (${reason}): whether each committed is unknown (each committed whole or not at all); the executions they belong to are held for recovery — call env.recover()`,
      { details: { reason: "store_worker_lost", outcome: "unknown", storePath: path } },
    );
    for (const entry of held) entry.reject(lost);
    if (this.workerRestarts >= workerRestartsMax) {
      this.breakDown(
        new StoreError(
          `the store at ${path} can no longer write: its worker stopped ${this.workerRestarts + 1} times (last: ${reason}), more than the ${workerRestartsMax} replacements allowed; operations in flight may or may not have committed; close the environment, open the store again and recover`,
          { details: { reason: "store_worker_lost", storePath: path } },
        ),
      );
      return;
    }
    this.workerRestarts += 1;
    this.workerState = "starting";
    this.workerStarted = this.attachWorker(this.settings.startWorker(), false);
    // Under `adaptive` the queue commits inline while the new worker starts.
    this.flush();
  }

  /** The store cannot write any more (its files changed, its worker is gone
   * for good, or it answered out of order): everything accepted fails with
   * `error` (what was in flight may or may not have committed), and later
   * submissions are refused with it. */
  private breakDown(error: StoreError | string): void {
    if (this.broken !== undefined) return;
    if (this.closing !== undefined && this.pending === 0) return; // the normal exit after close
    this.broken =
      typeof error !== "string"
        ? error
        : new StoreError(
            `the store at ${this.settings.path} can no longer write: ${error}; operations in flight may or may not have committed; reopen the store and recover`,
          );
    const failed = [...[...this.inFlight.values()].flat(), ...this.queue.splice(0)];
    this.inFlight.clear();
    this.inFlightOperations = 0;
    for (const entry of failed) entry.reject(this.broken);
    this.drained?.();
  }
}

function isFilesChanged(error: PhronomyError): boolean {
  return error.details?.["reason"] === "store_file_replaced";
}

function settle(entry: Entry, settlement: Settlement | undefined): void {
  if (settlement === undefined) entry.reject(new StoreError("phronomy: a group commit returned fewer settlements than operations"));
  else if (settlement.ok) entry.resolve(settlement.value);
  else entry.reject(settlement.error);
}

function settleTransferred(entry: Entry, settlement: TransferredSettlement | undefined, path: string): void {
  if (settlement === undefined) entry.reject(new StoreError(`the store worker for ${path} returned fewer settlements than operations`));
  else if (settlement.ok) entry.resolve(settlement.value);
  else entry.reject(rebuildError(settlement.error));
}

export function checkCapacity(capacity: number): void {
  if (!Number.isInteger(capacity) || capacity < 1) {
    throw new InvalidInputError(`offloadCapacity must be a positive integer, got ${String(capacity)}`);
  }
}

/** Closes a worker that holds nothing: its connection (until it says so,
 * or its thread ends), then its thread. */
async function closeThenStop(worker: StoreWorker): Promise<void> {
  const closed = new Promise<void>((resolve) => {
    worker.port.on("message", (reply: WorkerReply) => {
      if (reply.type === "closed") resolve();
    });
    worker.thread.once("exit", () => resolve());
  });
  worker.port.postMessage({ type: "close" } satisfies WorkerRequest);
  await closed;
  await stopWorker(worker);
}

/** A worker sent to rest: closed and stopped; a failure to stop it is
 * its own (the offload no longer holds it). */
async function retire(worker: StoreWorker): Promise<void> {
  await closeThenStop(worker).catch(() => undefined);
}

async function stopWorker(worker: StoreWorker): Promise<void> {
  worker.port.close();
  await worker.thread.terminate();
}

function waitUntilReady(worker: StoreWorker, path: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onMessage = (reply: WorkerReply): void => {
      if (reply.type === "ready") finish(undefined);
      else if (reply.type === "failed") finish(rebuildError(reply.error));
      else finish(new StoreError(`the store worker for ${path} sent "${reply.type}" before it was ready`));
    };
    const onError = (error: Error): void => finish(new StoreError(`the store worker for ${path} failed to start: ${error.message}`, { cause: error }));
    const onExit = (code: number): void => finish(new StoreError(`the store worker for ${path} exited (code ${code}) before it was ready`));
    const finish = (error: PhronomyError | undefined): void => {
      worker.port.off("message", onMessage);
      worker.thread.off("error", onError).off("exit", onExit);
      if (error === undefined) return resolve();
      stopWorker(worker).catch(() => undefined); // the startup error is what matters
      reject(error);
    };
    worker.port.on("message", onMessage);
    worker.thread.on("error", onError).on("exit", onExit);
  });
}
