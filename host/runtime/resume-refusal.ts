// Why a decision on an execution that is not live in this environment
// cannot be applied, read from its durable row: most often it was already
// decided and has ended, which is an `APPROVAL_MISMATCH` saying so — only
// an unfinished execution that recovery has not installed yet is
// `EXECUTION_REHYDRATION_REQUIRED` (recovery is then really the answer).

import { ApprovalMismatchError, ExecutionRehydrationRequiredError, InvalidInputError, StoreError, type PhronomyError } from "../errors.js";
import type { ExecutionRow, Json } from "../store/records.js";

interface StoredDecision {
  readonly approved?: unknown;
  readonly reason?: unknown;
}

export function refusalOfResume(executionId: string, approvalId: string, agentId: string, row: ExecutionRow | undefined): PhronomyError {
  if (row === undefined) {
    return new InvalidInputError(`there is no execution ${executionId} in this store (an unknown execution id, or its agent was purged); nothing was decided`, {
      executionId,
      agentId,
    });
  }
  const context = { executionId, agentId: row.agentId };
  if (row.agentId !== agentId) {
    return new ApprovalMismatchError(
      `execution ${executionId} belongs to agent "${row.agentId}", not "${agentId}"; resume it through its own agent; nothing was decided`,
      { ...context, details: { mismatch: "agent" } },
    );
  }
  const request = objectOf(row.approvalRequest);
  const decision = decisionOn(row, approvalId);
  const decided = decision === undefined ? "" : `approval ${approvalId} was already ${decision.approved === true ? "approved" : "declined"}`;
  if (row.status === "terminal") {
    const ending = row.error ? `${row.outcome ?? "failed"} (${row.error.code})` : (row.outcome ?? "an unknown outcome");
    return new ApprovalMismatchError(
      `execution ${executionId} already ended with outcome ${ending}${decided ? ` (${decided})` : ""}: there is no pending approval to decide; nothing was decided`,
      { ...context, details: { mismatch: "execution_ended", approvalId, outcome: row.outcome, ...(decision ? { decision: decision as Json } : {}) } },
    );
  }
  if (decision !== undefined) {
    return new ApprovalMismatchError(`${decided} on execution ${executionId}, which is running on that decision; nothing else was decided`, {
      ...context,
      details: { mismatch: "already_decided", approvalId, decision: decision as Json },
    });
  }
  if (row.status === "suspended" && request?.["approvalId"] !== approvalId) {
    return new ApprovalMismatchError(
      `approval ${approvalId} is not the pending approval of execution ${executionId} (that is ${JSON.stringify(request?.["approvalId"] ?? null)}); nothing was decided`,
      { ...context, details: { mismatch: "approval_id", approvalId } },
    );
  }
  return new ExecutionRehydrationRequiredError(
    `execution ${executionId} is ${row.status} in the store but not live in this environment (its agent's recovery has not installed it: define agent "${agentId}" or call env.recover(), then decide again)`,
    context,
  );
}

/** The decision taken on this approval, if any: the metadata keeps the last
 * decision until the execution suspends again (a terminal commit clears the
 * approval request, not the decision). */
function decisionOn(row: ExecutionRow, approvalId: string): StoredDecision | undefined {
  const approval = row.metadata.approval;
  if (approval?.approvalId === approvalId) return { approved: approval.approved, reason: approval.reason };
  const request = objectOf(row.approvalRequest);
  return request?.["approvalId"] === approvalId ? (objectOf(request["decision"] ?? null) as StoredDecision | undefined) : undefined;
}

function objectOf(value: Json): { readonly [key: string]: Json } | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? value : undefined;
}

/** A decision on an execution held after a commit whose outcome is not
 * known, when the store could not be read to find out (docs/decisions/0057). */
export function heldAfterUnknownCommit(executionId: string, agentId: string, cause: PhronomyError): StoreError {
  return new StoreError(
    `execution ${executionId} is held after a commit whose outcome is not known, and the store could not be read to find out (${cause.message}); `
      + "nothing was decided: send the decision again once the store answers, or call env.recover()",
    { executionId, agentId, cause },
  );
}
