// A parent's wait for a child execution (docs/decisions/0079): the key its
// child is started under, the parent a child's row names (`config.parent`),
// and what the child's end — filed by its terminal commit, claimed from the
// inbox by the parent's owner — does to the parent's call: its output is
// the call's result, its failure the call's error. What may resume which
// wait is the core's (`ResumeFact.PendingWaitsForChild`,
// `GivesChildOutcome`); the host only reports the facts. The request the
// call suspends with is built in child-wait-request.ts.

import { ApprovalMismatchError, type PhronomyError } from "../errors.js";
import { type ChildOutcome } from "../store/child-filings.js";
export type { ChildOutcome };
import type { ExecutionRow, StoredError } from "../store/records.js";
import type { ParentLink } from "../store/parent-link.js";
import type { ApprovalRequest } from "./events.js";

/** The idempotency key of a child's start: one child per parent call. */
export function childStartKey(parentExecutionId: string, callId: string): string {
  return `child:${parentExecutionId}:${callId}`;
}

/** True for a wait on a child execution. */
export function waitsForChild(request: ApprovalRequest | undefined): boolean {
  return request?.kind === "child";
}

/** The child's outcome as the value a decision carries, or undefined when
 * the payload is not one (a filing nobody but a child's commit makes). */
export function childOutcomeIn(payload: unknown): ChildOutcome | undefined {
  const outcome = payload as Partial<ChildOutcome> | null;
  if (typeof outcome !== "object" || outcome === null || typeof outcome.executionId !== "string" || typeof outcome.outcome !== "string") return undefined;
  return outcome as ChildOutcome;
}

/** The error a failed child's call is told: the child's own, named. */
export function childFailure(childOutcome: ChildOutcome): StoredError {
  const error = childOutcome.error ?? { code: "INTERNAL", message: "no error recorded" };
  return {
    ...error,
    message: `child execution ${childOutcome.executionId} ended ${childOutcome.outcome}: ${error.message}`,
  };
}

/** A refusal to answer a child's wait by hand. */
export function childWaitAnsweredByHand(request: ApprovalRequest): PhronomyError {
  return new ApprovalMismatchError(
    `wait ${request.approvalId} of execution ${request.executionId} waits for its child execution ${request.child?.executionId ?? "(unknown)"}: only that child's end resumes it (cancel the parent to stop both); nothing was decided`,
    { executionId: request.executionId, agentId: request.agentId, details: { mismatch: "wait_kind", approvalId: request.approvalId, waitKind: "child" } },
  );
}

/** The parent a child execution's row names (`config.parent`), if any. */
export function parentOfRow(row: ExecutionRow): { readonly executionId: string; readonly agentId: string; readonly callId: string } | undefined {
  const link = row.metadata.config?.["parent"] as Partial<ParentLink> | undefined;
  if (typeof link?.executionId !== "string" || typeof link.agentId !== "string" || typeof link.callId !== "string") return undefined;
  return { executionId: link.executionId, agentId: link.agentId, callId: link.callId };
}
