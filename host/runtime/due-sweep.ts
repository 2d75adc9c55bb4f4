// The due sweep (docs/decisions/0076): one timer per environment, armed at
// the next due time of any pending wait the store holds for this process,
// that fires each wait found due through the ordinary resume path with the
// clock's answer (`{ waitId, fire: true }`). No JS timer per wait, no wait
// held in memory: the store's index is the schedule.
//
// Rules kept here:
// * The store is read in bounded batches (`dueWaitsBatchMax`), each fired
//   before the next is read; one sweep at a time (a wake-up during one
//   runs another after it).
// * A suspension committed here with a nearer due time re-arms the timer
//   (`waitCommitted`); a conversation recovered or taken over here reports
//   its suspension the same way, so a wait committed by a process that
//   died is armed by the one that recovers it. A wait due no sooner than
//   the timer fires (its due time, or the rescan, which reads the store
//   again) leaves it as it is: a suspension costs one comparison, and a
//   steady stream of them does not push the rescan back (decision 0085).
// * Whether the clock may answer a wait — not twice, not after a cancel,
//   not a wait with no due time — is the core's (`ResumeFact.ClockAnswers`),
//   checked by the same revision and compare-and-set as any answer. A fire
//   refused is logged (debug) and left: the wait is answered or gone.
// * At most `dueRescanMs` between reads even with nothing armed: a wait of
//   a conversation this process could not fire when it was due (not
//   defined here yet, a fire that failed) is found again.
// * Any other entry point that needs a deadline (keyed event waits' time
//   out) puts `dueAt` on its wait record and calls `waitCommitted`: the
//   sweep fires it like a timer; what the clock's answer does is the
//   wait's (`wait-deadlines.ts`).

import { dueWaitsBatchMax, type DueCursor, type DueWait, type DueWaitsStore } from "../store/due-waits.js";
import type { Logger } from "./options.js";

/** The longest the sweep sleeps between reads of the store: a wait it
 * could not fire when due is fired at most this late. One indexed read a
 * minute costs nothing measurable; a shorter pause would only matter for
 * waits of conversations defined after they fell due. */
export const dueRescanMs = 60_000;

/** How soon a sweep that failed (the store unreachable) is tried again. */
export const dueRetryMs = 1_000;

/** What the sweep needs of the environment. */
export interface DueSweepHost {
  readonly store: DueWaitsStore;
  readonly logger: Logger;
  now(): number;
  /** Fires one due wait through the resume path; resolves once it is
   * committed, filed for its owner, refused, or not this process's to
   * fire (its conversation not defined here); rejects when it should be
   * tried again (the store failed). */
  fire(wait: DueWait): Promise<void>;
}

export class DueSweep {
  private timer: NodeJS.Timeout | undefined;
  /** When the armed timer fires: a wait's due time, or the rescan
   * (undefined: none armed, a sweep under way, or closed). */
  private firesAt: number | undefined;
  /** @internal Timers set so far (what a suspension costs the sweep: the
   * timers test counts them, the waits bench prints them). */
  timersSet = 0;
  private running = false;
  private again = false;
  private closed = false;

  constructor(private readonly host: DueSweepHost) {}

  /** Reads the store now, then arms at the next due time. */
  start(): void {
    this.wake();
  }

  /** A wait with this due time was committed (or recovered) here. */
  waitCommitted(dueAt: number): void {
    if (this.closed) return;
    if (this.running) {
      // The sweep under way may have read before this commit: once more.
      this.again = true;
      return;
    }
    if (this.firesAt !== undefined && this.firesAt <= dueAt) return;
    this.arm(dueAt);
  }

  /** Stops the timer; a sweep under way finishes its batch. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.firesAt = undefined;
  }

  private wake(): void {
    if (this.closed) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.firesAt = undefined;
    this.sweep().then(
      (next) => this.swept(next),
      (error: unknown) => {
        if (this.closed) return this.swept(undefined);
        this.host.logger.warn(`[phronomy] the due sweep could not read or fire the due waits (tried again in ${dueRetryMs} ms): ${messageOf(error)}`);
        this.swept(this.host.now() + dueRetryMs);
      },
    );
  }

  private swept(next: number | undefined): void {
    this.running = false;
    if (this.closed) return;
    if (this.again) {
      this.again = false;
      return this.wake();
    }
    this.arm(next);
  }

  /** Fires every wait due now, a batch at a time; the next due time after. */
  private async sweep(): Promise<number | undefined> {
    const through = this.host.now();
    let after: DueCursor | undefined;
    let failed = false;
    for (;;) {
      const batch = await this.host.store.dueWaits(through, dueWaitsBatchMax, after);
      const fired = await Promise.allSettled(batch.map((wait) => this.host.fire(wait)));
      failed ||= fired.some((outcome) => outcome.status === "rejected");
      const last = batch.at(-1);
      if (last === undefined || batch.length < dueWaitsBatchMax) break;
      after = { dueAt: last.dueAt, executionId: last.executionId };
    }
    const next = await this.host.store.nextDueAt(through);
    return failed ? Math.min(next ?? Infinity, this.host.now() + dueRetryMs) : next;
  }

  /** Arms the one timer at `dueAt` (no later than the rescan). A timer for
   * a real due time keeps the process alive, as a pending wait should; the
   * rescan alone does not. */
  private arm(dueAt: number | undefined): void {
    clearTimeout(this.timer);
    const now = this.host.now();
    const rescanAt = now + dueRescanMs;
    const forWait = dueAt !== undefined && dueAt <= rescanAt;
    const firesAt = forWait ? dueAt : rescanAt;
    this.firesAt = firesAt;
    this.timersSet += 1;
    this.timer = setTimeout(() => this.wake(), Math.max(0, firesAt - now));
    if (!forWait) this.timer.unref();
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
