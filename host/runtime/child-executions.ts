// Starting the child an `agentTool()` call waits for (docs/decisions/0079).
// Once a parent's `child` wait is committed here — by its session, or
// reinstalled by a recovery — the child is started in its conversation as
// a keyed start (`idempotencyKey` fixed by the parent's execution and call
// ids), carrying the link to its parent (`childOf`, stored as
// `config.parent`). Keyed, the start runs once per key in whichever process
// it reaches: starting it again after a crash follows the child already
// there (running, or ended and filed). The child's end reaches the parent
// through the approval inbox, filed by the child's terminal commit.
//
// What comes of the start is the core's (`childStartVerdict`, docs/decisions
// 0096): the host translates the start's answer (`startAnswerOf`) and what
// it read of the child's row into facts, and carries the verdict out. A
// child that could not be started at all (its definition not defined here,
// its conversation busy with another execution, closed) leaves no execution
// whose end could be filed, so its refusal is given to the parent's wait as
// the child's failure, through the parent's resume path. Three refusals
// say nothing of whether the child starts and are made again
// `childStartRetryMs` later while the parent's row still waits on that
// wait (the core's too: the host reads the row, the core answers): another
// process holds the child's conversation, the store failed the start
// (docs/decisions/0086), or the child's conversation is held here for a
// recovery after a store failure (0099). A keyed start that finds its
// child ended already tells the parent its outcome again; a wait answered
// already refuses it.

import { ChildFact, ChildStartVerdict, StartAnswer } from "../../assembly/abi.js";
import type { ControlCore } from "../core/control-core.js";
import { PhronomyError } from "../errors.js";
import type { ExecutionStore } from "../store/store.js";
import type { ExecutionRow, Json } from "../store/records.js";
import { childOutcomeOf } from "../store/child-filings.js";
import { Agent, type AgentHost } from "./agent.js";
import { childStartKey } from "./child-waits.js";
import type { Conversations } from "./conversations.js";
import type { ApprovalRequest, ChildWait } from "./events.js";
import type { Logger } from "./options.js";
import type { ExecutionEntry } from "./requests.js";
import { asPhronomyError } from "./session.js";
import { startAnswerOf } from "./start-answer.js";

/** What starting children needs of the environment (environment.ts wires it). */
export interface ChildHost {
  readonly conversations: Conversations;
  readonly agents: AgentHost;
  readonly store: ExecutionStore;
  readonly core: Pick<ControlCore, "childStartVerdict">;
  readonly logger: Logger;
  closed(): boolean;
}

/** How soon a child start that the store failed, with its parent not told,
 * is made again (the due sweep's retry, for the same reason). */
export const childStartRetryMs = 1_000;

export class ChildExecutions {
  constructor(private readonly host: ChildHost) {}

  /** A parent's wait is committed (or reinstalled): start the child it names. */
  waitingOn(entry: ExecutionEntry): void {
    const request = entry.approvalRequest;
    const child = request?.child;
    const call = request?.toolCalls[0];
    if (request?.kind !== "child" || child === undefined || call === undefined || this.host.closed()) return;
    const kind = this.host.conversations.kindOf(child.conversationId, child.definition);
    if (kind === undefined) {
      const error = new PhronomyError(
        "INVALID_INPUT",
        `the child agent definition "${child.definition}" is not defined in this process; define it (env.agent({ name: "${child.definition}", … })) before the agent whose tool it is`,
        { executionId: child.executionId, agentId: child.conversationId, details: { reason: "agent_not_defined", definition: child.definition } },
      );
      return void this.answered(entry, request, child, startAnswerOf(error), error);
    }
    const agent = new Agent({ environment: this.host.agents, kind, ready: Promise.resolve() }, child.conversationId);
    // The child runs under its parent's timeout, or its own when shorter.
    const parentTimeoutMs = entry.start.options.timeoutMs ?? entry.agent.definition.timeoutMs;
    const timeoutMs = parentTimeoutMs === undefined ? undefined : Math.min(parentTimeoutMs, kind.definition.timeoutMs ?? parentTimeoutMs);
    const run = agent.start(child.input, {
      idempotencyKey: childStartKey(entry.executionId, call.callId),
      childOf: { executionId: entry.executionId, agentId: entry.agent.id, callId: call.callId, waitId: request.approvalId },
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    });
    run.executionId.then(
      () => this.answered(entry, request, child, StartAnswer.Started, undefined),
      (error: unknown) => this.answered(entry, request, child, startAnswerOf(error), asPhronomyError(error, "INTERNAL")),
    );
    // The child's end goes to the parent through the inbox, not through this Run.
    run.result.catch(() => undefined);
  }

  /** The keyed start answered (an execution id, or its refusal): the
   * core says what comes next, from the answer and then from what the
   * child's row holds. A child found ended (its end filed for a wait whose
   * answer was claimed, and lost with a commit whose outcome is unknown) is
   * told to the parent again — a wait answered already refuses it
   * (docs/decisions/0086, seed 2380454721). */
  private async answered(
    entry: ExecutionEntry,
    request: ApprovalRequest,
    child: ChildWait,
    answer: StartAnswer,
    error: PhronomyError | undefined,
  ): Promise<void> {
    if (this.host.closed()) return;
    const first = this.verdictOf(answer, 0);
    if (first === ChildStartVerdict.StartAgainLater) return void this.startAgainLater(entry, request, answer);
    if (first !== ChildStartVerdict.ReadChild) return;
    let facts: number = ChildFact.Read;
    try {
      const row = await this.host.store.getExecution(child.executionId);
      if (row !== undefined) facts |= ChildFact.Found | (row.status === "terminal" ? ChildFact.Ended : 0);
      const verdict = this.verdictOf(answer, facts);
      if (verdict === ChildStartVerdict.TellOutcome) await this.tellParent(entry, request, child, outcomeOf(row as ExecutionRow));
      if (verdict === ChildStartVerdict.TellRefusal)
        await this.tellParent(entry, request, child, childOutcomeOf(child.executionId, "failed", null, (error as PhronomyError).toRecord()));
    } catch (failure) {
      this.failed(entry, request, child, answer, facts | ChildFact.Failed, error, failure);
    }
  }

  /** Reading the child's row or telling the parent failed: the core says
   * whether the start is made again (a refused one) or left (a followed
   * one, whose end files itself). */
  private failed(
    entry: ExecutionEntry,
    request: ApprovalRequest,
    child: ChildWait,
    answer: StartAnswer,
    facts: number,
    error: PhronomyError | undefined,
    failure: unknown,
  ): void {
    const reason = failure instanceof Error ? failure.message : String(failure);
    if (this.verdictOf(answer, facts) !== ChildStartVerdict.StartAgainLater) {
      return void this.host.logger.debug?.(`[phronomy] reading child ${child.executionId} of ${entry.executionId} failed: ${reason}`);
    }
    this.host.logger.warn(
      `[phronomy] child execution ${child.executionId} of ${entry.executionId} could not be started (${error?.message ?? "refused"}), and telling its parent failed: ${reason}; started again in ${childStartRetryMs} ms`,
    );
    this.startAgainLater(entry, request, answer);
  }

  private verdictOf(answer: StartAnswer, facts: number): ChildStartVerdict {
    return this.host.core.childStartVerdict(answer, facts) as ChildStartVerdict;
  }

  /** Gives the child's outcome to the parent's wait, through the parent's
   * resume path (the core refuses it for a wait answered already). */
  private async tellParent(entry: ExecutionEntry, request: ApprovalRequest, child: ChildWait, outcome: ReturnType<typeof childOutcomeOf>): Promise<void> {
    const parent = this.host.conversations.handleOf(this.host.agents, entry.agent.id);
    const refusal = await parent?.applyFiledDecision(entry.executionId, {
      approvalId: request.approvalId,
      approved: true,
      given: { kind: "child", callId: request.toolCalls[0]!.callId, payload: outcome as unknown as Json },
    });
    if (refusal !== undefined)
      this.host.logger.debug?.(`[phronomy] the end of child ${child.executionId} was not applied to ${entry.executionId}: ${refusal.message}`);
  }

  /** Makes the child's start, refused with `answer`, again later: when it
   * comes due, the host reads the parent's row and the core says whether
   * it still waits on this wait (made now), may not be known yet (its read
   * failed: later again) or not (answered, cancelled or gone: nothing to
   * do). The start is keyed: it follows a child that did start. */
  private startAgainLater(entry: ExecutionEntry, request: ApprovalRequest, answer: StartAnswer): void {
    const timer = setTimeout(() => {
      if (this.host.closed()) return;
      this.host.store.getExecution(entry.executionId).then(
        (row) => this.dueAgain(entry, request, answer, ChildFact.ParentRead | parentFactsOf(row, request)),
        () => this.dueAgain(entry, request, answer, ChildFact.ParentRead | ChildFact.Failed),
      );
    }, childStartRetryMs);
    timer.unref();
  }

  private dueAgain(entry: ExecutionEntry, request: ApprovalRequest, answer: StartAnswer, facts: number): void {
    if (this.host.closed()) return;
    const verdict = this.verdictOf(answer, facts);
    if (verdict === ChildStartVerdict.StartAgain) this.waitingOn(entry);
    else if (verdict === ChildStartVerdict.StartAgainLater) this.startAgainLater(entry, request, answer);
  }
}

/** What the parent's row, read when a start made again came due, says of
 * the wait (`ChildFact` bits). */
function parentFactsOf(row: ExecutionRow | undefined, request: ApprovalRequest): number {
  const pending = (row?.approvalRequest as { approvalId?: unknown } | null | undefined)?.approvalId;
  return (row?.status === "suspended" ? ChildFact.ParentSuspended : 0) | (pending !== undefined && pending === request.approvalId ? ChildFact.ParentOnWait : 0);
}

/** The outcome a child's ended row gives its parent. */
function outcomeOf(row: ExecutionRow): ReturnType<typeof childOutcomeOf> {
  return childOutcomeOf(row.executionId, row.outcome ?? "failed", row.output, row.error);
}
