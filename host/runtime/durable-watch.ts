// `env.wait` on an execution another process runs (docs/decisions/0018): a
// visitor of a SQLite store, or a PostgreSQL environment that does not hold
// the agent's lease, cannot attach to the live execution, so it watches the
// durable row until the execution ends (the outcome, as `env.wait` builds
// it from a row) or suspends for approval (ApprovalRequiredError, exactly
// as a local observer is told).
//
// It is also the one follower of executions that moved away: when the
// store says this process lost a conversation's lease, every caller
// waiting here on one of its executions — a start's Run whose execution
// ran or was suspended here, a queued message's Run — is handed over
// (`follow`), and settled from the row once the execution ends wherever
// it runs next. A followed caller waits through "no row yet" (its message
// is still queued: it gets a row when it is prepared or cancelled) and,
// unless it is an exact observer, through a suspension (the start's Run
// carries the real end, docs/decisions/0018).
//
// Rules kept here (the filer's waits of remote-resume.ts keep the same):
// * One primary-key read per watched execution per poll; the interval
//   doubles while nothing changes (an execution may run for minutes) and
//   drops back as soon as something settles. The poll timer keeps the
//   process alive while a watch is pending, as any awaited request would.
// * The watches are bounded (`durableWatchesMax`); past it a wait is
//   refused with CAPACITY at once.
// * A read that fails (database unreachable) is retried at the next poll.
// * On close, every watch is settled with RuntimeShutdownError; nothing
//   durable is touched.

import type { ControlCore } from "../core/control-core.js";
import { PhronomyError, RuntimeShutdownError } from "../errors.js";
import type { ExecutionStore } from "../store/store.js";
import { settleWaiterWithError, type DeliverySettings } from "./delivery.js";
import { settleFromRow } from "./durable-outcome.js";
import type { Waiting } from "./run.js";
import { BackoffPoller } from "./backoff-poller.js";
import { watchDone } from "./observed-row.js";

/** Executions one environment watches at once. Each costs one small read
 * per poll; past a few hundred a caller should read `env.executions()`
 * itself rather than hold a wait on each. */
export const durableWatchesMax = 256;

/** First poll interval, and the one after something settled. */
export const durableWatchPollMsMin = 50;
/** Longest interval, reached while nothing changes: one read every 2 s. */
export const durableWatchPollMsMax = 2_000;

interface DurableWatch {
  readonly executionId: string;
  readonly agentId: string;
  readonly waiter: Waiting;
  /** Handed over by a lost lease: waits while the message is queued and,
   * for a Run that is no exact observer, through a suspension. */
  readonly untilEnd: boolean;
}

export class DurableWatches {
  private readonly watches = new Set<DurableWatch>();
  private readonly poller = new BackoffPoller(
    () => this.poll(),
    () => this.watches.size > 0,
    durableWatchPollMsMin,
    durableWatchPollMsMax,
  );
  private closed = false;

  constructor(
    private readonly store: ExecutionStore,
    private readonly settings: DeliverySettings & { readonly core: Pick<ControlCore, "durableWatchVerdict"> },
  ) {}

  /** Watches the execution's row until it ends or suspends. */
  watch(executionId: string, agentId: string, waiter: Waiting): void {
    this.add({ executionId, agentId, waiter, untilEnd: false });
  }

  /** Follows an execution (or a message still queued under its id) that
   * runs at another process now, until it ends. */
  follow(executionId: string, agentId: string, waiter: Waiting): void {
    if (waiter.settled) return;
    this.add({ executionId, agentId, waiter, untilEnd: true });
  }

  private add(watch: DurableWatch): void {
    const { executionId, agentId, waiter } = watch;
    const context = { executionId, agentId };
    if (this.closed) return settleWaiterWithError(waiter, new RuntimeShutdownError(`a wait for execution ${executionId}`, context), this.settings);
    if (this.watches.size >= durableWatchesMax) {
      return settleWaiterWithError(
        waiter,
        new PhronomyError(
          "CAPACITY",
          `this environment already waits on ${durableWatchesMax} executions that other processes run; the wait for execution ${executionId} was refused — retry once some settled, or read env.execution(id)`,
          context,
        ),
        this.settings,
      );
    }
    waiter.knowExecutionId(executionId);
    this.watches.add(watch);
    this.poller.wake();
  }

  /** Settles every watch with RuntimeShutdownError. */
  async close(): Promise<void> {
    this.closed = true;
    await this.poller.stop();
    for (const watch of this.watches) {
      settleWaiterWithError(
        watch.waiter,
        new RuntimeShutdownError(`the wait for execution ${watch.executionId} (it goes on in the process that runs it)`, {
          executionId: watch.executionId,
          agentId: watch.agentId,
        }),
        this.settings,
      );
    }
    this.watches.clear();
  }

  /** True when a watch settled. */
  private async poll(): Promise<boolean> {
    const settled = await Promise.all([...this.watches].map((watch) => this.check(watch)));
    return settled.some((done) => done);
  }

  /** True when the watch settled. */
  private async check(watch: DurableWatch): Promise<boolean> {
    try {
      const row = await this.store.getExecution(watch.executionId);
      // The core decides (`durableWatchVerdict`, decision 0110).
      if (!watchDone(this.settings.core, watch, row)) return false;
      this.watches.delete(watch);
      if (watch.waiter.settled) return true;
      settleFromRow(watch.waiter, watch.executionId, row, this.settings);
      return true;
    } catch (error) {
      this.settings.logger.debug?.(
        `[phronomy] reading execution ${watch.executionId} failed (polling again): ${error instanceof Error ? error.message : String(error)}`,
      );
      return false;
    }
  }
}
