// Starts the core answered `WaitUntilReady` (docs/decisions/0062, "One way
// back in"): their conversation is registering or recovering, so they wait
// here until the core says their answer may have changed
// (`ReadinessChanged`: the conversation left registering or recovering —
// ready, held, owned elsewhere — or its agent closed), then ask `Admit`
// again, and the core answers run, queue, refuse held or closed, file for
// the owner, or wait again. Nothing here decides when that is. So a hold and an ownership change settle a
// waiting start as the core says, and none is left waiting once the
// environment closes (`takeAll`: the queues tell them).

import type { AgentEntry } from "./requests.js";
import type { Waiter } from "./run.js";

/** A start waiting for its conversation to be ready. */
interface WaitingStart {
  readonly agent: AgentEntry;
  readonly waiter: Waiter;
  /** Posts the start's admission again (never applies on the spot: it is
   * called inside an apply). */
  readonly retry: () => void;
}

export class ReadinessWaiters {
  /** By agent slot: the conversation's entry is kept while a start waits
   * (the start counts as a use until it is admitted or refused). */
  private readonly waiting = new Map<number, WaitingStart[]>();

  /** Starts waiting on the conversation now (for tests). */
  count(): number {
    let total = 0;
    for (const starts of this.waiting.values()) total += starts.length;
    return total;
  }

  /** Starts waiting on the conversation in `slot` now: the fact `Admit`
   * is told, so the core's `Limit.WaitingStartsMax` bounds each list. */
  waitingOn(slot: number): number {
    return this.waiting.get(slot)?.length ?? 0;
  }

  /** The start waits until the core says its answer may have changed. */
  wait(agent: AgentEntry, waiter: Waiter, retry: () => void): void {
    const starts = this.waiting.get(agent.slot) ?? [];
    starts.push({ agent, waiter, retry });
    this.waiting.set(agent.slot, starts);
  }

  /** The core changed the phase of the conversation in `slot`: every start
   * waiting on it asks `Admit` again (posted, in the order they came). */
  phaseChanged(slot: number): void {
    const starts = this.waiting.get(slot);
    if (starts === undefined) return;
    this.waiting.delete(slot);
    for (const start of starts) start.retry();
  }

  /** The environment closes: no phase will change. Every waiting start,
   * for the caller to tell. */
  takeAll(): { readonly agent: AgentEntry; readonly waiter: Waiter }[] {
    const starts = [...this.waiting.values()].flat();
    this.waiting.clear();
    return starts;
  }
}
