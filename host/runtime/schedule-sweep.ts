// The schedule sweep (docs/decisions/0078): one timer per environment,
// armed at the nearest due time of the schedules it may fire; at due it
// claims a bounded batch of due schedules (a compare-and-set per row in one
// transaction, so of all the processes sharing the store exactly one
// claims a firing) and turns each claimed firing into an ordinary start of
// its conversation.
//
// Entry points: `wake()` (look now: after a schedule was made here, and at
// open), `fireClaimed(row)` (run now), `close()`.
//
// Rules kept here:
// * Never one timer per schedule: one timer, armed at the nearest due time
//   read from the store (one indexed row), or `sweepIdleMsMax` when none
//   is nearer, so a schedule made by another process is seen within it.
// * A pass reads at most `scheduleClaimBatchMax` due rows; a full batch is
//   followed by another pass at once.
// * The start of a firing is keyed by (schedule, slot)
//   (`scheduledStartKey`): a firing claimed again — its claimer died or
//   was slow past `firingRetryMs` — starts the same execution, which the
//   store admits once. Its placement (run here, file for the owner,
//   refuse) and the busy policy are the core's, as for any start.
// * The core decides (docs/decisions/0087): which slot a due row fires
//   (`scheduleClaimVerdict`), whether a claim is started — a claim the
//   store did not apply is skipped — and how its start's answer settles it
//   (`scheduleFiringVerdict`: settled once the start has an execution id
//   or was refused for good; left pending, claimed again at its retry
//   time, when the refusal passes; settled started when the refusal names
//   the firing's keyed execution and the store has it, 0097/0098). This
//   file reads the facts and carries the verdicts out.
// * Nothing here throws into a timer: a failed pass is logged and the
//   timer armed again after `sweepFailureBackoffMs`.

import { ScheduleClaimVerdict, ScheduleFiringFact, ScheduleFiringVerdict, StartAnswer } from "../../assembly/abi.js";
import type { ControlCore } from "../core/control-core.js";
import { PhronomyError } from "../errors.js";
import { startExecutionIdOf } from "../store/start-filing.js";
import { scheduleClaimBatchMax, type ScheduleClaim, type ScheduleRow, type ScheduleScope, type ScheduleStore } from "../store/schedule-records.js";
import type { Logger } from "./options.js";
import type { Run } from "./run.js";
import { claimOf, scheduleFactsOf } from "./schedule-slots.js";
import { startAnswerOf } from "./start-answer.js";

/** The longest the timer sleeps while nothing is due nearer: a schedule
 * made by another process (PostgreSQL) is seen within it. One indexed read
 * a minute costs nothing. */
export const sweepIdleMsMax = 60_000;
/** How long a claimed firing waits for its claimer to settle it before any
 * process may claim it again (the same keyed start: run once). */
export const firingRetryMs = 10_000;
/** After a pass that failed (the store away), the next one. */
export const sweepFailureBackoffMs = 1_000;

/** The longest `close()` waits for firings under way to be settled. */
export const closeWaitMsMax = 5_000;

/** The idempotency key of a firing's start. */
export function scheduledStartKey(scheduleId: string, slotAt: number): string {
  return `schedule:${scheduleId}:${slotAt}`;
}

/** What the sweep needs of its environment. */
export interface ScheduleSweepHost {
  readonly store: ScheduleStore;
  readonly logger: Logger;
  /** Decides the claims and the firings. */
  readonly core: Pick<ControlCore, "scheduleClaimVerdict" | "scheduleFiringVerdict">;
  /** Whether the row's conversation is defined here (its start can be made here). */
  defines(row: ScheduleRow): boolean;
  /** The definitions and agents defined here: their schedules are fired here. */
  scope(): ScheduleScope;
  /** Starts the firing's conversation with its key; undefined when its
   * definition is not defined here (asked of `defines` first). */
  start(row: ScheduleRow, idempotencyKey: string): Run | undefined;
  /** The execution's durable status, to tell a queued start from a started one. */
  statusOf(executionId: string): Promise<string | undefined>;
  /** A single owner (SQLite): a firing pending at open was left by an owner
   * that is gone, and is claimed again at once. */
  readonly singleOwner: boolean;
}

export class ScheduleSweep {
  /** @internal The sweep's clock (tests move it; docs/decisions/0078). */
  clock: () => number = () => Date.now();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  private pass: Promise<void> | undefined;
  private passAgain = false;
  private firstPass = true;
  private closed = false;
  private readonly firings = new Set<Promise<void>>();

  constructor(private readonly host: ScheduleSweepHost) {}

  /** Looks for due schedules now (coalesced with a pass under way). */
  wake(): void {
    if (this.closed) return;
    if (this.pass !== undefined) {
      this.passAgain = true;
      return;
    }
    this.clearTimer();
    this.pass = this.sweep()
      .catch((error: unknown) => {
        this.host.logger.warn(`[phronomy] the schedule sweep failed; it looks again in ${sweepFailureBackoffMs} ms: ${(error as Error).message}`);
        this.armAt(this.clock() + sweepFailureBackoffMs);
      })
      .finally(() => {
        this.pass = undefined;
        if (this.passAgain) {
          this.passAgain = false;
          this.wake();
        }
      });
  }

  /** Arms the timer at `dueAt` if that is nearer than the time armed. */
  armAt(dueAt: number): void {
    if (this.closed) return;
    const now = this.clock();
    const at = Math.min(dueAt, now + sweepIdleMsMax);
    if (this.timer !== undefined && this.timerAt <= at) return;
    this.clearTimer();
    this.timerAt = at;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Number.POSITIVE_INFINITY;
        this.wake();
      },
      Math.max(0, at - now),
    );
    this.timer.unref();
  }

  /** Starts a firing this process claimed (a pass, or run now) and settles it. */
  fireClaimed(row: ScheduleRow): Promise<void> {
    const firing = this.fire(row).catch((error: unknown) => {
      this.host.logger.warn(`[phronomy] schedule ${row.scheduleId}: its firing was not settled, it is claimed again later: ${(error as Error).message}`);
    });
    this.firings.add(firing);
    void firing.finally(() => this.firings.delete(firing));
    return firing;
  }

  /** Stops the timer; a pass under way stops at its next batch. */
  halt(): void {
    this.closed = true;
    this.clearTimer();
  }

  /** Stops the timer; waits for the pass and the firings under way, at
   * most `closeWaitMsMax` (the drain settled every start before this: a
   * firing still unsettled then is claimed again after its retry time). */
  async close(): Promise<void> {
    this.halt();
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, closeWaitMsMax);
    });
    await Promise.race([Promise.all([this.pass, ...this.firings]), bound]);
    clearTimeout(timer);
  }

  private clearTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
  }

  /** One indexed read when nothing is due (the nearest due time, to arm
   * the timer); claims in bounded batches while something is. */
  private async sweep(): Promise<void> {
    const { store } = this.host;
    const scope = this.host.scope();
    if (scope.definitions.length === 0 && scope.agentIds.length === 0) return;
    const nearest = await store.nextScheduleDue(scope);
    if (nearest === undefined || (nearest > this.clock() && !(this.firstPass && this.host.singleOwner))) {
      this.armAt(nearest ?? Number.POSITIVE_INFINITY);
      return;
    }
    for (;;) {
      if (this.closed) return;
      const now = this.clock();
      const ownerGone = this.firstPass && this.host.singleOwner;
      const rows = await this.dueRows(scope, now);
      const claims: ScheduleClaim[] = [];
      for (const row of rows) {
        const claim = this.claimFor(row, now, ownerGone);
        if (claim !== undefined) claims.push(claim);
      }
      const claimed = claims.length === 0 ? [] : await store.claimSchedules(claims);
      for (const claim of claims) this.fireIfClaimed(claim, claimed);
      if (rows.length < scheduleClaimBatchMax) break;
    }
    const next = await store.nextScheduleDue(scope);
    this.armAt(next ?? Number.POSITIVE_INFINITY);
  }

  /** Due rows; on a single owner's first pass, its firings left pending
   * too (up to their retry time: the core claims them again at once, and
   * skips the rest). */
  private async dueRows(scope: ScheduleScope, now: number): Promise<ScheduleRow[]> {
    if (!this.firstPass || !this.host.singleOwner) return this.host.store.dueSchedules(scope, now, scheduleClaimBatchMax);
    this.firstPass = false;
    return this.host.store.dueSchedules(scope, now + firingRetryMs, scheduleClaimBatchMax);
  }

  /** The claim the core's verdict names for a row, if it claims one. */
  private claimFor(row: ScheduleRow, now: number, ownerGone: boolean): ScheduleClaim | undefined {
    const verdict = this.host.core.scheduleClaimVerdict(scheduleFactsOf(row, now, { runNow: false, ownerGone })) as ScheduleClaimVerdict;
    try {
      return claimOf(row, verdict, now, now + firingRetryMs);
    } catch (error) {
      this.host.logger.warn(`[phronomy] schedule ${row.scheduleId} cannot be fired: ${(error as Error).message}`);
      return undefined;
    }
  }

  /** A claim the store did not apply is skipped (the core's verdict); the rest fire. */
  private fireIfClaimed(claim: ScheduleClaim, claimed: readonly ScheduleRow[]): void {
    const row = claimed.find((candidate) => candidate.scheduleId === claim.scheduleId);
    const facts = row === undefined ? 0 : ScheduleFiringFact.Claimed;
    if (this.host.core.scheduleFiringVerdict(facts, StartAnswer.None) === ScheduleFiringVerdict.Skip) return;
    void this.fireClaimed(row as ScheduleRow);
  }

  private async fire(row: ScheduleRow): Promise<void> {
    const slotAt = row.firingSlotAt as number;
    const facts = ScheduleFiringFact.Claimed | (this.host.defines(row) ? ScheduleFiringFact.DefinedHere : 0);
    if (this.verdictOf(facts, StartAnswer.None) !== ScheduleFiringVerdict.Start) return;
    const key = scheduledStartKey(row.scheduleId, slotAt);
    const run = this.host.start(row, key);
    if (run === undefined) return;
    run.result.catch(() => undefined);
    let executionId: string | undefined;
    let answer: StartAnswer;
    let refusal: unknown;
    let keyedFacts = 0;
    try {
      executionId = await run.executionId;
      answer = await this.startedAnswer(executionId);
    } catch (error) {
      refusal = error;
      answer = startAnswerOf(error);
      // A firing claimed again whose start an earlier claimer made: the keyed
      // start follows that execution, and rejects with its failure if it
      // failed (decision 0097). Whether that counts as started is the core's.
      keyedFacts = await this.keyedExecutionFacts(error, startExecutionIdOf(row.agentId, key));
    }
    const verdict = this.verdictOf(facts | keyedFacts, answer);
    if (verdict === ScheduleFiringVerdict.LeavePending) throw refusal;
    const outcome = settledOutcome(verdict);
    if (outcome === undefined) throw new Error(`the core answered no settlement for start answer ${answer} (facts ${facts | keyedFacts})`);
    if (verdict !== ScheduleFiringVerdict.SettleRefused && executionId === undefined) executionId = startExecutionIdOf(row.agentId, key);
    const error = verdict === ScheduleFiringVerdict.SettleRefused && refusal instanceof PhronomyError ? refusal.code : undefined;
    // Under this claim only (its revision): a firing claimed again since is the later claimer's (docs/decisions/0135).
    await this.host.store.settleScheduleFiring({
      scheduleId: row.scheduleId,
      firingSlotAt: slotAt,
      revision: row.revision,
      outcome,
      executionId,
      error,
      at: this.clock(),
    });
  }

  /** What the store has of the firing's keyed execution when its start's
   * refusal names it (`ScheduleFiringFact`): found, and queued; 0 when the
   * refusal names another or the store has none (or cannot be read). */
  private async keyedExecutionFacts(error: unknown, keyed: string): Promise<number> {
    if (!(error instanceof PhronomyError) || error.executionId !== keyed) return 0;
    const status = await this.host.statusOf(keyed).catch(() => undefined);
    if (status === undefined) return 0;
    return ScheduleFiringFact.KeyedExecutionFound | (status === "queued" ? ScheduleFiringFact.KeyedExecutionQueued : 0);
  }

  /** Started, or queued behind its busy conversation (its durable status). */
  private async startedAnswer(executionId: string): Promise<StartAnswer> {
    const status = await this.host.statusOf(executionId).catch(() => undefined);
    return status === "queued" ? StartAnswer.Queued : StartAnswer.Started;
  }

  private verdictOf(facts: number, answer: StartAnswer): ScheduleFiringVerdict {
    return this.host.core.scheduleFiringVerdict(facts, answer) as ScheduleFiringVerdict;
  }
}

function settledOutcome(verdict: ScheduleFiringVerdict): "started" | "queued" | "refused" | undefined {
  if (verdict === ScheduleFiringVerdict.SettleStarted) return "started";
  if (verdict === ScheduleFiringVerdict.SettleQueued) return "queued";
  return verdict === ScheduleFiringVerdict.SettleRefused ? "refused" : undefined;
}
