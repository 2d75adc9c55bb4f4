// The owner's side of `env.cancel` on a live execution (docs/decisions/0026),
// carried out for the coordinator:
// * a running execution's session is cancelled as its AbortSignal would be
//   (`Session.cancelById`); one without a session yet (installed by
//   recovery or a retry, a resume being committed) is cancelled as soon as
//   its session is made (`cancelNewSession`);
// * a suspended one is ended by the core's `CancelSuspended`: effect
//   `SubmitCancelCommit` writes its terminal commit (outcome failed,
//   CANCELLED, its pending approval kept on the row for the record) and
//   `CancelCommitReady` reports it.

import { CommitOutcome, MessageKind as M, ResultCode } from "../../assembly/abi.js";
import { CancellationError, ExecutionRehydrationRequiredError, type PhronomyError } from "../errors.js";
import { isOutcomeUnknown } from "../store/store.js";
import type { CoordinatorCalls } from "./coordinator-calls.js";
import { settleWaiterWithError } from "./delivery.js";
import { errorForCode } from "./error-codes.js";
import type { CancelRequest, ExecutionEntry } from "./requests.js";
import { asPhronomyError, type Session } from "./session.js";

/** Effect SubmitCancelCommit: the suspended execution's terminal commit. */
export function submitCancelCommit(coordinator: CoordinatorCalls, slot: number, expectedRevision: number, handle: number): void {
  const entry = coordinator.entryAt(slot);
  const request = coordinator.requests.get(handle);
  if (!entry || request?.type !== "cancel") return;
  const { store, now } = coordinator.settings;
  const ready = (outcome: CommitOutcome, revision: number): void =>
    coordinator.post(() => {
      coordinator.apply(M.CancelCommitReady, slot, entry.generation, expectedRevision, outcome, revision, handle);
      if (outcome === CommitOutcome.StoreFailed) coordinator.suspensionKept(entry);
    });
  const cancellation = new CancellationError(
    { executionId: entry.executionId, agentId: entry.agent.id, ...(request.reason !== undefined ? { details: { reason: request.reason } } : {}) },
    request.reason,
  );
  // A failed commit may have committed (docs/decisions/0020): the row
  // says. Ended at the next revision → committed; still suspended at the
  // expected one → nothing was written (`StoreFailed`: the suspension is
  // given back); anything else, or no answer → held for recovery.
  const failed = (error: unknown): void => {
    entry.storeError = asPhronomyError(error, "STORE");
    const unknown = (): void => ready(CommitOutcome.RehydrationRequired, 0);
    if (error instanceof ExecutionRehydrationRequiredError || isOutcomeUnknown(error)) return unknown();
    store.getExecution(entry.executionId).then((row) => {
      if (row?.status === "terminal" && row.revision === expectedRevision + 1 && row.error?.code === "CANCELLED") {
        entry.endedWith = cancellation;
        return ready(CommitOutcome.Committed, row.revision);
      }
      if (row?.status === "suspended" && row.revision === expectedRevision) return ready(CommitOutcome.StoreFailed, 0);
      unknown();
    }, unknown);
  };
  store
    .getExecution(entry.executionId)
    .then((row) => {
      if (!row) throw new ExecutionRehydrationRequiredError(`execution ${entry.executionId} is no longer in the store`, { executionId: entry.executionId });
      return store.run({
        type: "terminalCommit",
        executionId: entry.executionId,
        expectedRevision,
        outcome: "failed",
        output: null,
        error: cancellation.toRecord(),
        usage: row.usage,
        approvalRequest: row.approvalRequest,
        handoff: null,
        steps: [{ kind: "note", at: now(), payload: { cancelled: { reason: request.reason ?? null, while: "suspended" } } }],
        journal: [],
        at: now(),
      });
    })
    .then(({ revision }) => {
      // What the waiters are settled with once the core finishes it.
      entry.endedWith = cancellation;
      ready(CommitOutcome.Committed, revision);
    }, failed);
}

/** FailRequest of a cancel: a resume being committed (`ResumeInProgress`)
 * does not refuse it — the resumed session is cancelled once made, and the
 * cancel waits for its outcome; anything else settles it with the error. */
export function cancelRefused(coordinator: CoordinatorCalls, request: CancelRequest, code: number): void {
  const entry = coordinator.entryById(request.executionId);
  if (code === ResultCode.ResumeInProgress && entry) {
    entry.cancelById ??= request.reason ?? null;
    entry.waiters.push(request.waiter);
    return;
  }
  const error: PhronomyError =
    code === ResultCode.StoreFailed && entry?.storeError
      ? entry.storeError
      : errorForCode(code, { executionId: request.executionId, agentId: entry?.agent.id });
  settleWaiterWithError(request.waiter, error, coordinator.settings);
}

/** A session made for an execution cancelled by id is cancelled at once. */
export function cancelNewSession(entry: ExecutionEntry, session: Session): void {
  if (entry.cancelById !== undefined) session.cancelById(entry.cancelById ?? undefined);
}
