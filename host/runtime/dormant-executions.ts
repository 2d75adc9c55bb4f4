// Suspended executions let go of (docs/decisions/0066): an execution at
// rest — suspended for approval, nothing under way for it, the core says
// (`executionAtRest`) — keeps no `ExecutionEntry` here. What stays is the
// core's record (its slot: agent, generation, revision) and this index:
// the execution id by slot and the slot by execution id, and the tails of
// the Runs that may still be waiting for its result (`Waiter.tail`: strong
// for a result someone read, weak for one nobody did). Everything else is
// read back from the store's row when something asks for it
// (`Coordinator.wake`, `rehydration.ts`).
//
// Rules kept: an id is here only while its slot's entry is not in the
// coordinator's tables (`take` removes it before the entry is rebuilt);
// a weak tail whose Run was collected is swept, so an execution nobody
// waits on costs its id's 16 bytes and its index entry in `SlotIds`
// (docs/decisions/0084) and no object.

import { WeakTail, type Waiting } from "./run.js";
import { SlotIds } from "./slot-ids.js";

/** How long after a weak tail is kept the sweep runs: the Runs an
 * application dropped are collected by then, usually. Unreferenced timer. */
const sweepDelayMs = 2_000;

/** How often the slots whose weak tail outlived a sweep are looked at again. */
const olderSweepMs = 5_000;

/** What a dormant slot keeps of its Runs: nothing, one tail, or several. */
type Kept = Waiting | Waiting[] | undefined;

export class DormantExecutions {
  /** The execution id of each dormant slot, and the slot by id. */
  private readonly ids = new SlotIds();
  /** The tails of the dormant slots that keep any. */
  private readonly kept = new Map<number, Kept>();
  private sweepTimer: ReturnType<typeof setTimeout> | undefined;
  /** Slots given a weak tail since the last sweep. */
  private recent: number[] = [];
  /** Slots whose weak tail outlived a sweep (the application held its
   * Run then, or no collection had run yet): swept again at most every
   * `olderSweepMs`, while there are any. */
  private older: number[] = [];
  private olderSweptAt = 0;

  get size(): number {
    return this.ids.size;
  }

  has(executionId: string): boolean {
    return this.ids.has(executionId);
  }

  slotOf(executionId: string): number | undefined {
    return this.ids.slotOf(executionId);
  }

  idAt(slot: number): string | undefined {
    return this.ids.idAt(slot);
  }

  /** Keeps the execution `executionId` of `slot` as dormant, with the
   * tails of `waiters` that may still be waited on. */
  add(slot: number, executionId: string, waiters: readonly Waiting[]): void {
    this.ids.add(slot, executionId);
    const tails = waiters.map((waiter) => waiter.tail()).filter((tail) => !(tail instanceof WeakTail && tail.gone));
    this.keep(slot, tails);
    if (tails.some((tail) => tail instanceof WeakTail)) {
      this.recent.push(slot);
      this.sweepSoon();
    }
  }

  /** Removes the dormant execution of `slot`: its id and the tails it kept. */
  take(slot: number): { readonly executionId: string; readonly waiters: Waiting[] } | undefined {
    const executionId = this.ids.idAt(slot);
    if (executionId === undefined) return undefined;
    const kept = this.kept.get(slot);
    this.ids.remove(slot);
    this.kept.delete(slot);
    const waiters = kept === undefined ? [] : Array.isArray(kept) ? kept : [kept];
    return { executionId, waiters: waiters.filter((waiter) => !(waiter instanceof WeakTail && waiter.gone)) };
  }

  /** Every dormant slot (close, a core trap). */
  allSlots(): number[] {
    return this.ids.slots();
  }

  private keep(slot: number, tails: Waiting[]): void {
    if (tails.length === 0) this.kept.delete(slot);
    else this.kept.set(slot, tails.length === 1 ? tails[0] : tails);
  }

  /** The sweep of weak tails whose Run was collected, once, soon. */
  private sweepSoon(): void {
    if (this.sweepTimer !== undefined) return;
    this.sweepTimer = setTimeout(() => {
      this.sweepTimer = undefined;
      this.sweep();
    }, sweepDelayMs);
    this.sweepTimer.unref?.();
  }

  /** Lets go of the weak tails whose Run was collected: of the slots given
   * one since the last sweep, and every `olderSweepMs` of the older ones. */
  sweep(): void {
    const recent = this.recent;
    this.recent = [];
    for (const slot of recent) if (this.sweepSlot(slot)) this.older.push(slot);
    const now = performance.now();
    if (now - this.olderSweptAt >= olderSweepMs) {
      this.older = this.older.filter((slot) => this.sweepSlot(slot));
      this.olderSweptAt = now;
    }
    if (this.older.length > 0) this.sweepSoon();
  }

  /** Drops the collected weak tails of one slot; true while a weak one is left. */
  private sweepSlot(slot: number): boolean {
    const kept = this.kept.get(slot);
    if (kept === undefined) return false;
    const tails = (Array.isArray(kept) ? kept : [kept]).filter((tail) => !(tail instanceof WeakTail && tail.gone));
    this.keep(slot, tails);
    return tails.some((tail) => tail instanceof WeakTail);
  }

  /** Stops the sweep (the environment closed). */
  close(): void {
    if (this.sweepTimer !== undefined) clearTimeout(this.sweepTimer);
    this.sweepTimer = undefined;
  }
}
