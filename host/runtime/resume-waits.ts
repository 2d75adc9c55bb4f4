// What the host carries out when `Resume` answers a wait instead of a commit
// (assembly/decisions/approval.ts, docs/decisions/0065), and the wording of
// the refusals only the host can word. The core chooses; this file only
// does: the request leaves the table (the decision is sent again under a
// new one), the held execution is recovered or the terminal commit waited
// for, and a refusal is told with the ids and the durable row.

import { EffectKind, ResultCode } from "../../assembly/abi.js";
import { ApprovalMismatchError, type PhronomyError } from "../errors.js";
import type { ExecutionStore } from "../store/store.js";
import type { ExecutionEntry, RequestTable, ResumeRequest } from "./requests.js";
import { heldAfterUnknownCommit, refusalOfResume } from "./resume-refusal.js";
import { asPhronomyError } from "./session.js";
import { settleWaiterWithError, type DeliverySettings } from "./delivery.js";
import { errorForCode } from "./error-codes.js";
import { failFollowers } from "./resume-followers.js";
import { childWaitAnsweredByHand } from "./child-waits.js";

/** Effects `RecoverBeforeResume` and `AwaitSuspensionCommit`. */
export function waitBeforeResume(
  requests: RequestTable,
  entry: ExecutionEntry | undefined,
  kind: EffectKind.RecoverBeforeResume | EffectKind.AwaitSuspensionCommit,
  handle: number,
): void {
  const request = requests.take(handle);
  if (request?.type !== "resume") return;
  if (kind === EffectKind.RecoverBeforeResume) return request.waits.recoverFirst();
  // The core answers a wait only for a live execution: `entry` is there.
  if (entry === undefined) return request.waits.askAgain();
  // Fired once the terminal commit under way is answered: suspended,
  // ended (released), held for recovery, or the core trapped.
  entry.terminalWatchers.push(() => request.waits.askAgain());
}

/** A refusal of `Resume` whose words need what only the host holds (the
 * pending approval's id, the store error that held the execution, the
 * durable row): told through `refuse`, and true; false for the others. */
export function refuseResumeFromFacts(
  request: ResumeRequest,
  code: number,
  entry: ExecutionEntry | undefined,
  store: ExecutionStore,
  refuse: (error: PhronomyError) => void,
): boolean {
  const { executionId, approvalId } = request;
  const agentId = request.waiter.agentId;
  if (code === ResultCode.ApprovalMustMatch) {
    const pending = entry?.approvalRequest;
    refuse(
      new ApprovalMismatchError(
        `approval ${approvalId} is not the pending approval of execution ${executionId}${pending ? ` (that is ${pending.approvalId})` : ""}; nothing was decided`,
        { executionId, agentId, details: { mismatch: "approval_id", approvalId } },
      ),
    );
    return true;
  }
  if (code === ResultCode.ValueMustMatchSchema && request.refusedAnswer !== undefined) {
    refuse(request.refusedAnswer);
    return true;
  }
  if (code === ResultCode.WaitKindMustMatch) {
    refuse(waitKindRefusal(request, entry));
    return true;
  }
  if (!request.afterRecovery) return false;
  if (code === ResultCode.AgentAdmissionHeld) {
    // Recovered, and still held: the store could not say what was written.
    const cause = entry?.storeError ?? new Error("it is still held for recovery");
    refuse(heldAfterUnknownCommit(executionId, agentId, asPhronomyError(cause, "STORE")));
    return true;
  }
  if (code !== ResultCode.StatusMustMatch) return false;
  // Recovered and running on: the earlier decision was written; the row says which.
  store.getExecution(executionId).then(
    (row) => refuse(refusalOfResume(executionId, approvalId, agentId, row)),
    (error: unknown) => refuse(asPhronomyError(error, "STORE")),
  );
  return true;
}

/** A decision the core refused, and those that followed it. Refused as
 * not suspended (`StatusMustMatch`: the execution live here runs on a
 * decision already taken, often the same one whose commit's outcome was
 * read back by a recovery), the durable row says what was decided. */
export function resumeRefused(
  request: ResumeRequest,
  code: number,
  entry: ExecutionEntry | undefined,
  settings: DeliverySettings & { readonly store: ExecutionStore },
): void {
  const context = { agentId: request.waiter.agentId, executionId: request.executionId };
  const refuse = (error: PhronomyError): void => {
    settleWaiterWithError(request.waiter, error, settings);
    failFollowers(request, error, settings);
  };
  if (!request.error && refuseResumeFromFacts(request, code, entry, settings.store, refuse)) return;
  if (request.error || code !== ResultCode.StatusMustMatch) return refuse(request.error ?? errorForCode(code, context));
  settings.store.getExecution(request.executionId).then(
    (row) => {
      const refusal = refusalOfResume(request.executionId, request.approvalId, request.waiter.agentId, row);
      refuse(refusal instanceof ApprovalMismatchError ? refusal : errorForCode(code, context));
    },
    () => refuse(errorForCode(code, context)),
  );
}

/** A resume of another kind than the pending wait (decisions 0075, 0077):
 * a value or a signal for an approval, approve/decline for a typed or an
 * event wait. */
function waitKindRefusal(request: ResumeRequest, entry: ExecutionEntry | undefined): PhronomyError {
  const { executionId, approvalId } = request;
  if (entry?.approvalRequest?.kind === "child") return childWaitAnsweredByHand(entry.approvalRequest);
  const pending = entry?.approvalRequest;
  const waitKind = pending?.kind ?? "approval";
  const clock = request.clock === true;
  const told =
    waitKind === "timer"
      ? `wait ${approvalId} of execution ${executionId} is a timer: only the clock answers it (at its due time, or now with { waitId, fire: true })`
      : clock && pending?.dueAt === undefined
        ? `wait ${approvalId} of execution ${executionId} has no due time: the clock cannot answer it`
        : waitKind === "input"
          ? `wait ${approvalId} of execution ${executionId} waits for a typed value: resume it with { waitId, value }`
          : waitKind === "event"
            ? `wait ${approvalId} of execution ${executionId} waits for an event: send it with env.signal(${JSON.stringify(pending?.key ?? "")}, payload)`
            : `approval ${approvalId} of execution ${executionId} waits for a decision: resume it with { approvalId, approved } (or "input", "respond")`;
  return new ApprovalMismatchError(`${told}; nothing was decided`, {
    executionId,
    agentId: request.waiter.agentId,
    details: { mismatch: "wait_kind", approvalId, waitKind },
  });
}
