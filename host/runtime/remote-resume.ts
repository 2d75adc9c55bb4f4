// The filer's side of the approval inbox (issue 7,
// docs/decisions/0011-approval-inbox.md): `agent.resume` in a process that
// does not own the agent files the decision, resolves the Run's
// `executionId` once it is filed, and settles the Run's `result` from the
// durable rows — the owner's refusal, or the execution's final outcome,
// built as `env.wait` builds it for an execution not live here.
//
// Rules kept here:
// * No progress events reach the filer: they happen in the owner. The Run
//   gets `approval_required` when the execution suspends again (a new
//   decision is needed; its events end there and the result keeps waiting
//   for the final outcome, as a local resume's do, docs/decisions/0018),
//   or else a terminal event when it settles.
// * Every wait of the environment is read in one statement per poll, by
//   primary key; the interval doubles while nothing changes (a suspension
//   can last days) and drops back as soon as something does. The poll
//   timer keeps the process alive while a wait is pending, as the request
//   of any awaited result would.
// * The waits are bounded (`remoteResumesMax`); past it a resume is refused
//   with CAPACITY, nothing filed.
// * On close, every wait is settled with RuntimeShutdownError; the
//   decisions stay in the inbox and the owner still applies them.

import { randomUUID } from "node:crypto";
import { FiledFollowVerdict } from "../../assembly/abi.js";
import type { ControlCore } from "../core/control-core.js";
import { PhronomyError, RuntimeShutdownError } from "../errors.js";
import type { ExecutionRow } from "../store/records.js";
import { rebuildError } from "../store/error-transfer.js";
import type { DecisionProgress, InboxStore } from "./approval-inbox.js";
import type { DecisionFiling } from "../store/inbox-records.js";
import { cancelApprovalId } from "../store/cancel-filing.js";
import { retryApprovalId } from "../store/retry-filing.js";
import { emitToWaiter, settleWaiterWithError, type DeliverySettings } from "./delivery.js";
import { settleFromRow } from "./durable-outcome.js";
import { refusalOfResume } from "./resume-refusal.js";
import type { ApprovalRequest, HandoffRequest } from "./events.js";
import { filedActionOf, type Decision } from "./wait-decisions.js";
import type { Waiter } from "./run.js";
import { asPhronomyError } from "./session.js";
import { BackoffPoller } from "./backoff-poller.js";
import { filedDecisionFactsOf } from "./filed-follow.js";

/** Remote resumes one environment waits on at once (filing included). Each
 * costs a row in one polling statement; a thousand ids is still one quick
 * primary-key lookup (and `decisionReadMax` of the store). */
export const remoteResumesMax = 1_000;

/** First poll interval after something changed: the owner applies a
 * decision within one of its round trips of the notification. */
export const remotePollMsMin = 50;
/** Longest interval, reached while nothing changes (a decision waiting for
 * an owner, an execution suspended again): one small read every 2 s. */
export const remotePollMsMax = 2_000;

interface RemoteWait {
  readonly decisionId: string;
  readonly executionId: string;
  readonly agentId: string;
  /** What was filed: a decision on `approvalId`, a cancel, a retry. */
  readonly kind: "approval" | "cancel" | "retry";
  readonly approvalId: string;
  readonly waiter: Waiter;
  /** The last suspended revision the filer was told about. */
  announcedRevision: number;
  /** Told once the owner applied the decision (its commit landed): a
   * signal's sender returns then, not at the execution's end. */
  readonly applied: (() => void) | undefined;
  state: DecisionProgress["state"];
}

export class RemoteResumes {
  private readonly waits = new Map<string, RemoteWait>();
  private filing = 0;
  private readonly poller = new BackoffPoller(
    () => this.poll(),
    () => this.waits.size > 0,
    remotePollMsMin,
    remotePollMsMax,
  );
  private closed = false;

  constructor(
    private readonly store: InboxStore,
    private readonly settings: DeliverySettings & { readonly core: Pick<ControlCore, "filedDecisionVerdict"> },
  ) {}

  /** Files the decision; the waiter learns the execution id once it is
   * filed, and its result from the durable rows. */
  file(agentId: string, executionId: string, decision: Decision, waiter: Waiter, applied?: () => void): void {
    const action = filedActionOf(decision);
    this.submit(
      agentId,
      executionId,
      { approvalId: decision.approvalId, approved: decision.approved, reason: decision.reason ?? null, ...(action !== undefined ? { action } : {}) },
      waiter,
      randomUUID(),
      applied,
    );
  }

  /** Files `env.cancel` of an execution another process runs
   * (docs/decisions/0026); the waiter settles from the durable rows. */
  fileCancel(agentId: string, executionId: string, reason: string | undefined, waiter: Waiter): void {
    const decisionId = randomUUID();
    this.submit(
      agentId,
      executionId,
      { kind: "cancel", approvalId: cancelApprovalId(decisionId), approved: false, reason: reason ?? null },
      waiter,
      decisionId,
    );
  }

  /** Files `env.retry` of an execution whose conversation another process
   * runs (docs/decisions/0026): the owner retries it; the waiter gets
   * `approval_required` if the new attempt suspends, and settles with its
   * outcome from the durable rows (the filing's revision is the ended
   * attempt's, so only a later one settles it). */
  fileRetry(agentId: string, executionId: string, waiter: Waiter): void {
    const decisionId = randomUUID();
    this.submit(agentId, executionId, { kind: "retry", approvalId: retryApprovalId(decisionId), approved: false, reason: null }, waiter, decisionId);
  }

  private submit(
    agentId: string,
    executionId: string,
    decision: Pick<DecisionFiling, "approvalId" | "approved" | "reason" | "kind" | "action">,
    waiter: Waiter,
    decisionId = randomUUID(),
    applied?: () => void,
  ): void {
    if (this.closed)
      return settleWaiterWithError(waiter, new RuntimeShutdownError(`a resume of execution ${executionId}`, { executionId, agentId }), this.settings);
    if (this.waits.size + this.filing >= remoteResumesMax) {
      return settleWaiterWithError(
        waiter,
        new PhronomyError(
          "CAPACITY",
          `this environment already waits on ${remoteResumesMax} decisions filed for other processes; execution ${executionId} was not resumed (nothing filed) — retry once some settled`,
          { executionId, agentId },
        ),
        this.settings,
      );
    }
    this.filing += 1;
    this.store.fileDecision({ decisionId, executionId, agentId, ...decision, filedAt: Date.now() }).then(
      (filed) => {
        this.filing -= 1;
        waiter.knowExecutionId(executionId);
        if (this.closed) return settleWaiterWithError(waiter, shutdownError(executionId, agentId, decisionId), this.settings);
        this.waits.set(decisionId, {
          decisionId,
          executionId,
          agentId,
          kind: decision.kind === "cancel" || decision.kind === "retry" ? decision.kind : "approval",
          approvalId: decision.approvalId,
          waiter,
          announcedRevision: filed.executionRevision,
          state: "filed",
          applied,
        });
        this.poller.wake();
      },
      (error: unknown) => {
        this.filing -= 1;
        settleWaiterWithError(waiter, asPhronomyError(error, "STORE"), this.settings);
      },
    );
  }

  /** Settles every wait with RuntimeShutdownError (the decisions stay filed). */
  async close(): Promise<void> {
    this.closed = true;
    await this.poller.stop();
    for (const wait of this.waits.values()) settleWaiterWithError(wait.waiter, shutdownError(wait.executionId, wait.agentId, wait.decisionId), this.settings);
    this.waits.clear();
  }

  /** True when a wait moved on. */
  private async poll(): Promise<boolean> {
    let changed = false;
    try {
      const progress = await this.store.readDecisions([...this.waits.keys()]);
      const seen = new Set<string>();
      for (const item of progress) {
        const wait = this.waits.get(item.decisionId);
        if (wait === undefined) continue;
        seen.add(item.decisionId);
        if (this.judge(wait, item)) changed = true;
      }
      for (const wait of [...this.waits.values()].filter((candidate) => !seen.has(candidate.decisionId))) {
        this.settle(wait, () =>
          settleWaiterWithError(
            wait.waiter,
            new PhronomyError(
              "INVALID_INPUT",
              `decision ${wait.decisionId} on execution ${wait.executionId} is no longer in the approval inbox (its agent was purged?)`,
              { executionId: wait.executionId, agentId: wait.agentId },
            ),
            this.settings,
          ),
        );
        changed = true;
      }
    } catch (error) {
      // The database is unreachable: keep waiting, poll again later.
      this.settings.logger.debug?.(`[phronomy] reading the approval inbox failed (polling again): ${error instanceof Error ? error.message : String(error)}`);
    }
    return changed;
  }

  /** True when the wait moved on (settled, or something to tell). The
   * core decides what the read becomes (`filedDecisionVerdict`, decision
   * 0110): the owner's refusal; not applied and its execution ended — a
   * decision never claimed can no longer be applied, a cancel has nothing
   * left to do; the owner may never claim it (a conversation gone idle
   * claims only what wakes it), so the filer is answered from the row now
   * (docs/decisions/0086); applied — a resume's approval commit, a retry's
   * reopen landed — a terminal row is how the execution ended after it, a
   * later suspension is announced. */
  private judge(wait: RemoteWait, progress: DecisionProgress): boolean {
    const moved = progress.state !== wait.state;
    wait.state = progress.state;
    const row = progress.execution;
    const verdict = this.settings.core.filedDecisionVerdict(filedDecisionFactsOf(wait.kind, progress.state, row, wait.announcedRevision)) as FiledFollowVerdict;
    if (verdict === FiledFollowVerdict.SettleRefused) {
      this.settle(wait, () => settleWaiterWithError(wait.waiter, refusalOf(progress), this.settings));
      return true;
    }
    if (progress.state === "applied" && moved) wait.applied?.();
    switch (verdict) {
      case FiledFollowVerdict.SettleEnded:
        this.settle(wait, () => settleTerminal(wait, row, this.settings));
        return true;
      case FiledFollowVerdict.RefuseUnapplied:
        this.settle(wait, () => settleWaiterWithError(wait.waiter, refusalOfResume(wait.executionId, wait.approvalId, wait.agentId, row!), this.settings));
        return true;
      case FiledFollowVerdict.AnnounceSuspended:
        wait.announcedRevision = row!.revision;
        emitToWaiter(
          wait.waiter,
          { type: "approval_required", executionId: wait.executionId, request: row!.approvalRequest as unknown as ApprovalRequest },
          this.settings,
        );
        return true;
      default:
        // `Follow`; `None` cannot come of these facts: followed, as before.
        return moved;
    }
  }

  private settle(wait: RemoteWait, how: () => void): void {
    this.waits.delete(wait.decisionId);
    how();
  }
}

/** The terminal event a local run would get, then the result `env.wait`
 * builds from the row. */
function settleTerminal(wait: RemoteWait, row: ExecutionRow | undefined, settings: DeliverySettings): void {
  if (row?.outcome === "completed") {
    emitToWaiter(wait.waiter, { type: "done", executionId: wait.executionId, output: row.output, usage: row.usage }, settings);
  } else if (row?.outcome === "handed_off" && row.metadata.handoff) {
    emitToWaiter(wait.waiter, { type: "handoff", executionId: wait.executionId, handoff: row.metadata.handoff as unknown as HandoffRequest }, settings);
  }
  settleFromRow(wait.waiter, wait.executionId, row, settings);
}

/** The owner's refusal as the typed error it was (ApprovalMismatchError …). */
function refusalOf(progress: DecisionProgress): PhronomyError {
  const record = progress.error ?? {
    code: "INTERNAL" as const,
    message: `decision ${progress.decisionId} on execution ${progress.executionId} was refused without a recorded error`,
  };
  return rebuildError({ executionId: progress.executionId, agentId: progress.agentId, ...record });
}

function shutdownError(executionId: string, agentId: string, decisionId: string): RuntimeShutdownError {
  return new RuntimeShutdownError(`the wait for execution ${executionId} (its decision ${decisionId} stays in the approval inbox; its owner applies it)`, {
    executionId,
    agentId,
  });
}
