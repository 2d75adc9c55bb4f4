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
// The one thing done here besides the start: a child that could not be
// started at all (its definition not defined here, its conversation busy
// with another execution, closed) leaves no execution whose end could be
// filed, so its refusal is given to the parent's wait as the child's
// failure, through the parent's resume path (the core decides it). Two
// refusals say nothing of whether the child starts, and are never told as
// a failure: another process holds the child's conversation (two processes
// may both start a parent's child, around a recovery: its end answers the
// parent from there, or its lease ends and the start made again here runs
// it), or the store failed the start (a lost connection: the start may have
// landed). Then, as when the read that would tell the parent fails, the
// start is made again `childStartRetryMs` later while the parent's row
// still waits on that wait (docs/decisions/0086: the whole-host simulation
// found a parent left waiting for good, and parents told "failed" while
// their child ran). A keyed start that finds its child ended already tells
// the parent its outcome again; a wait answered already refuses it.

import { PhronomyError } from "../errors.js";
import type { ExecutionStore } from "../store/store.js";
import { childOutcomeOf } from "../store/child-filings.js";
import type { Json } from "../store/records.js";
import { Agent, type AgentHost } from "./agent.js";
import { childStartKey } from "./child-waits.js";
import type { Conversations } from "./conversations.js";
import type { ApprovalRequest, ChildWait } from "./events.js";
import type { Logger } from "./options.js";
import type { ExecutionEntry } from "./requests.js";
import { asPhronomyError } from "./session.js";

/** What starting children needs of the environment (environment.ts wires it). */
export interface ChildHost {
  readonly conversations: Conversations;
  readonly agents: AgentHost;
  readonly store: ExecutionStore;
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
      return void this.notStarted(entry, request, child, error);
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
      () => this.followed(entry, request, child),
      (error: unknown) => this.notStarted(entry, request, child, asPhronomyError(error, "INTERNAL")),
    );
    // The child's end goes to the parent through the inbox, not through this Run.
    run.result.catch(() => undefined);
  }

  /** The child was refused before it was admitted: unless it exists after
   * all (started elsewhere, or by an earlier start), its refusal is its
   * failure, given to the parent's wait. */
  private async notStarted(entry: ExecutionEntry, request: ApprovalRequest, child: ChildWait, error: PhronomyError): Promise<void> {
    if (this.host.closed() || error.code === "RUNTIME_SHUTDOWN") return;
    if (mayStartElsewhere(error)) return void this.startAgainLater(entry, request);
    try {
      const row = await this.host.store.getExecution(child.executionId);
      if (row !== undefined && row.status !== "terminal") return;
      const outcome =
        row === undefined
          ? childOutcomeOf(child.executionId, "failed", null, error.toRecord())
          : childOutcomeOf(child.executionId, row.outcome ?? "failed", row.output, row.error);
      await this.tellParent(entry, request, child, outcome);
    } catch (failure) {
      this.host.logger.warn(
        `[phronomy] child execution ${child.executionId} of ${entry.executionId} could not be started (${error.message}), and telling its parent failed: ${failure instanceof Error ? failure.message : String(failure)}; started again in ${childStartRetryMs} ms`,
      );
      this.startAgainLater(entry, request);
    }
  }

  /** The keyed start found its child: one that has ended already (its end
   * filed for a wait whose answer was claimed, and lost with a commit whose
   * outcome is unknown) is told to the parent again now — a wait answered
   * already refuses it in the core (docs/decisions/0086; the whole-host
   * simulation found a parent left waiting for good, seed 2380454721). */
  private async followed(entry: ExecutionEntry, request: ApprovalRequest, child: ChildWait): Promise<void> {
    if (this.host.closed()) return;
    try {
      const row = await this.host.store.getExecution(child.executionId);
      if (row?.status !== "terminal") return;
      await this.tellParent(entry, request, child, childOutcomeOf(child.executionId, row.outcome ?? "failed", row.output, row.error));
    } catch (failure) {
      this.host.logger.debug?.(
        `[phronomy] reading child ${child.executionId} of ${entry.executionId} failed: ${failure instanceof Error ? failure.message : String(failure)}`,
      );
    }
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

  /** Starts the child again later, if the parent's row still waits on this
   * wait then (answered, cancelled or gone meanwhile: nothing to do). The
   * start is keyed: it follows a child that did start after all. */
  private startAgainLater(entry: ExecutionEntry, request: ApprovalRequest): void {
    const timer = setTimeout(() => {
      if (this.host.closed()) return;
      this.host.store.getExecution(entry.executionId).then(
        (row) => {
          const pending = row?.status === "suspended" ? (row.approvalRequest as { approvalId?: unknown } | null)?.approvalId : undefined;
          if (pending === request.approvalId && !this.host.closed()) this.waitingOn(entry);
        },
        () => this.startAgainLater(entry, request),
      );
    }, childStartRetryMs);
    timer.unref();
  }
}

/** A refusal that says nothing of whether the child starts: another process
 * holds its conversation (it runs there, or here once that lease ends), or
 * the store failed the start (it may have landed, or another process's may:
 * seed 256092519). The start is made again; the child is not failed. */
function mayStartElsewhere(error: PhronomyError): boolean {
  return (error.code === "AGENT_BUSY" && error.details?.["reason"] === "lease_not_held") || error.code === "STORE";
}
