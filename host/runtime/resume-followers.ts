// The same decision sent again while its approval commit is under way
// (`FollowResume`, assembly/decisions/approval.ts): the core lets it follow
// that commit, so it gets the same result — the resumed run's outcome if
// the commit landed, the same refusal if it did not. Here the host carries
// that out: the follower's waiter rides on the committing request.

import { ResultCode } from "../../assembly/abi.js";
import type { PhronomyError } from "../errors.js";
import { type DeliverySettings, settleWaiterWithError } from "./delivery.js";
import { errorForCode } from "./error-codes.js";
import type { Decision } from "./wait-decisions.js";
import type { ExecutionEntry, RequestTable, ResumeRequest } from "./requests.js";

/** Effect FollowResume: the request's waiter follows the resume of the
 * same execution being committed. */
export function followResume(requests: RequestTable, entry: ExecutionEntry | undefined, handle: number, settings: DeliverySettings): void {
  const follower = requests.take(handle);
  if (follower?.type !== "resume") return;
  const committing = entry === undefined ? undefined : requests.resumeOf(entry.executionId);
  if (committing === undefined) {
    // Nothing is being committed here any more (never so: the core follows
    // only while a commit is under way); refused as the core would be.
    const context = { executionId: follower.executionId, agentId: follower.waiter.agentId };
    settleWaiterWithError(follower.waiter, errorForCode(ResultCode.ResumeInProgress, context), settings);
    return;
  }
  (committing.followers ??= []).push(follower.waiter);
}

/** The committing request was refused: its followers get the same error. */
export function failFollowers(request: ResumeRequest, error: PhronomyError, settings: DeliverySettings): void {
  for (const waiter of request.followers?.splice(0) ?? []) settleWaiterWithError(waiter, error, settings);
}

/** The committing request's commit landed: its followers wait on the
 * resumed run as its own waiter does. */
export function attachFollowers(request: ResumeRequest, entry: ExecutionEntry): void {
  for (const waiter of request.followers?.splice(0) ?? []) {
    if (waiter.settled) continue;
    entry.waiters.push(waiter);
    waiter.knowExecutionId(entry.executionId);
  }
}

/** The decision is the one being committed: the same approval id, approval
 * and reason (its listener and signal are its own; a follower's signal
 * does not cancel the run the first decision resumes). */
export function sameDecision(committing: ResumeRequest, decision: Decision): boolean {
  return (
    committing.approvalId === decision.approvalId
    && committing.approved === decision.approved
    && committing.reason === (decision.reason ?? null)
    && committing.action?.kind === decision.given?.kind
    && JSON.stringify(committing.action?.value) === JSON.stringify(decision.checked?.action?.value)
  );
}
