// The approval resume commit (SPEC §4.1): a human decision applied to an
// execution suspended for approval, in one transaction. The
// compare-and-set on (execution_id, revision) with status `suspended` comes
// first (`ExecutionRehydrationRequiredError` when the execution moved on);
// then the stored approval request must be the one decided on — same
// approval id, same arguments hash, not decided yet — or the commit fails
// with `ApprovalMismatchError` (details.mismatch: `no_request`,
// `approval_id`, `already_decided` or `arguments_hash`) and writes nothing.

import { ApprovalMismatchError } from "../../errors.js";
import type { ApprovalCommitOperation, CommittedRevision, ExecutionMetadata, Json } from "../records.js";
import { compareAndSet, selectForUpdate } from "./compare-and-set.js";
import { appendStepsAt } from "./timeline.js";
import type { SqliteConnection } from "./driver.js";
import { jsonText } from "./rows.js";

export type ApprovalMismatch = "no_request" | "approval_id" | "already_decided" | "arguments_hash";

type JsonObject = { readonly [key: string]: Json };

export function approvalCommit(connection: SqliteConnection, operation: ApprovalCommitOperation): CommittedRevision {
  const current = selectForUpdate(connection, operation, ["suspended"]);
  const request = checkRequest(operation, current.agentId, current.approvalRequest);
  const { decided, metadata } = decisionWritten(operation, request, current.metadata);
  const revision = compareAndSet(
    connection,
    operation,
    `
    UPDATE executions SET revision = ?, status = 'active', phase = 'resuming', outcome = NULL, approval_request = ?,
                          metadata = ?, updated_at = ?
    WHERE execution_id = ? AND revision = ?
  `,
    [jsonText(decided), jsonText(metadata), operation.at],
  );
  appendStepsAt(connection, current.end, [{ kind: "approval_decided", at: operation.at, payload: decidedStepPayload(operation, revision) }]);
  return { revision };
}

/** The decided request and the metadata a decision leaves (both stores):
 * the decision — with its answer beyond approving and who decided, when
 * given (docs/decisions/0075) — and the tool batch it rewrote. */
export function decisionWritten(
  operation: ApprovalCommitOperation,
  request: JsonObject,
  before: ExecutionMetadata,
): { readonly decided: JsonObject; readonly metadata: ExecutionMetadata } {
  const extra = {
    ...(operation.action !== undefined ? { action: operation.action } : {}),
    ...(operation.decidedBy != null ? { decidedBy: operation.decidedBy } : {}),
  };
  const decided: JsonObject = { ...request, decision: { approved: operation.approved, reason: operation.reason, decidedAt: operation.at, ...extra } };
  const metadata: ExecutionMetadata = {
    ...before,
    ...(operation.toolBatch !== undefined ? { toolBatch: operation.toolBatch } : {}),
    approval: { approvalId: operation.approvalId, approved: operation.approved, reason: operation.reason, ...extra },
    // The resumed run's budget starts with the decision (docs/decisions/0016).
    runningSince: operation.at,
  };
  return { decided, metadata };
}

/** The `approval_decided` step: the decision and, when given, its answer
 * (the conversation read back shows edited arguments from it). */
export function decidedStepPayload(operation: ApprovalCommitOperation, revision: number): JsonObject {
  return {
    approvalId: operation.approvalId,
    approved: operation.approved,
    reason: operation.reason,
    revision,
    ...(operation.action !== undefined ? { action: operation.action } : {}),
    ...(operation.decidedBy != null ? { decidedBy: operation.decidedBy } : {}),
    ...(operation.filedAs != null ? { filedAs: operation.filedAs } : {}),
  };
}

/** The stored request, when it is the one this decision is for. */
export function checkRequest(operation: ApprovalCommitOperation, agentId: string, stored: Json): JsonObject {
  const { executionId, approvalId } = operation;
  const refuse = (mismatch: ApprovalMismatch, what: string, details: Record<string, unknown> = {}): never => {
    throw new ApprovalMismatchError(
      `approval ${approvalId} does not match execution ${executionId}: ${what}; nothing was written (read the pending request with getExecution("${executionId}").approvalRequest and decide on it)`,
      { executionId, agentId, details: { mismatch, approvalId, ...details } },
    );
  };
  if (typeof stored !== "object" || stored === null || Array.isArray(stored)) {
    return refuse("no_request", "the execution holds no approval request");
  }
  const request = stored as JsonObject;
  if (request["approvalId"] !== approvalId) {
    return refuse("approval_id", `its pending approval is ${JSON.stringify(request["approvalId"] ?? null)}`, {
      storedApprovalId: request["approvalId"] ?? null,
    });
  }
  if (request["decision"] !== undefined && request["decision"] !== null) {
    return refuse("already_decided", `the approval was already decided (${JSON.stringify(request["decision"])})`, { decision: request["decision"] });
  }
  if (request["argumentsHash"] !== operation.argumentsHash) {
    return refuse(
      "arguments_hash",
      `the tool arguments differ from the ones approval was requested for (stored arguments hash ${JSON.stringify(request["argumentsHash"] ?? null)}, decision made on ${JSON.stringify(operation.argumentsHash)})`,
      { storedArgumentsHash: request["argumentsHash"] ?? null, argumentsHash: operation.argumentsHash },
    );
  }
  return request;
}
