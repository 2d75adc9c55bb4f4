// How the failure of a live execution reaches its session and its waiters,
// carried out for the coordinator when the core says so: a barrier that
// could not be written (`SetupFailed`: the session fails), an execution
// released without an outcome (`FailWaiters`), and one held
// recovery_required (`RecoveryRequired`, execution scope: its session is
// abandoned, its row left for recovery). Nothing here decides: the core
// chose the failure; this words it, with the store's error when there was
// one, so the caller is told what happened and what to do.

import { SetupFailure } from "../../assembly/abi.js";
import { ExecutionRehydrationRequiredError, PhronomyError, RuntimeShutdownError, StoreError } from "../errors.js";
import type { CoordinatorCalls } from "./coordinator-calls.js";
import { settleWaiterWithError, type DeliverySettings } from "./delivery.js";
import type { ExecutionEntry, PendingRequest } from "./requests.js";
import { failFollowers } from "./resume-followers.js";
import { errorForCode } from "./error-codes.js";
import { sessionOf } from "./execution-sessions.js";

/** Effect SetupFailed: the barrier before a model call or tool batch was
 * not written, and the session fails with the store's error. */
export function setupFailed(calls: CoordinatorCalls, slot: number, sessionNumber: number, failure: number): void {
  const entry = calls.entryAt(slot);
  const session = sessionOf(calls, slot, sessionNumber);
  if (!entry || !session) return;
  const what = failure === SetupFailure.Provider ? "model call" : "tool batch";
  const cause = entry.storeError;
  // A barrier refused at submission because the execution moved on in the
  // store was not written either: the run ends failed here, so the
  // refusal's advice to recover does not apply.
  const said =
    cause instanceof ExecutionRehydrationRequiredError
      ? `: ${cause.reason}; the ${what} did not run and the execution ended failed`
      : cause
        ? `: ${cause.message}`
        : "";
  session.fail(
    cause instanceof PhronomyError && cause.code !== "OFFLOAD_FULL"
      ? new StoreError(`the barrier before the ${what} of execution ${entry.executionId} could not be written${said}`, {
          executionId: entry.executionId,
          agentId: entry.agent.id,
          cause,
        })
      : (cause ?? new StoreError(`the barrier before the ${what} of execution ${entry.executionId} could not be written`, { executionId: entry.executionId })),
  );
}

/** Effect FailWaiters: the execution is released without an outcome; its
 * waiters are told why (the store's error, when one held it). */
export function failWaiters(calls: CoordinatorCalls, slot: number, code: number): void {
  const entry = calls.entryAt(slot);
  if (!entry) return;
  const error =
    entry.storeError && code !== 0
      ? new ExecutionRehydrationRequiredError(`execution ${entry.executionId} could not be completed (${entry.storeError.message})`, {
          executionId: entry.executionId,
          agentId: entry.agent.id,
          cause: entry.storeError,
        })
      : errorForCode(code, { executionId: entry.executionId, agentId: entry.agent.id });
  entry.span?.fail(error);
  for (const waiter of entry.waiters.splice(0)) settleWaiterWithError(waiter, error, calls.settings);
}

/** Effect RecoveryRequired of an execution: the core holds it (asked
 * through `Coordinator.heldForRecovery`); its terminal watchers are told, its session abandoned. Returns the error that held it,
 * for the environment's listener; undefined when it is not live here. */
export function holdForRecovery(calls: CoordinatorCalls, slot: number, code: number): PhronomyError | undefined {
  const entry = calls.entryAt(slot);
  if (!entry) return undefined;
  for (const watcher of entry.terminalWatchers.splice(0)) watcher();
  const error = entry.storeError ?? errorForCode(code, { executionId: entry.executionId, agentId: entry.agent.id });
  calls.settings.logger.warn(`[phronomy] execution ${entry.executionId} of agent "${entry.agent.id}" requires recovery: ${error.message}`);
  entry.session?.abandon(
    new ExecutionRehydrationRequiredError(`execution ${entry.executionId} requires recovery`, {
      executionId: entry.executionId,
      agentId: entry.agent.id,
      cause: error,
    }),
  );
  return error;
}

/** On close: each live execution's waiters (those of suspended ones, the
 * only ones left) learn that this environment will not see it end. */
export function releaseWaitersAtClose(entries: Iterable<ExecutionEntry>, settings: DeliverySettings): void {
  for (const entry of entries) {
    const error = new RuntimeShutdownError(`the wait for execution ${entry.executionId} (suspended for approval)`, {
      executionId: entry.executionId,
      agentId: entry.agent.id,
    });
    for (const waiter of entry.waiters.splice(0)) settleWaiterWithError(waiter, error, settings);
  }
}

/** The core trapped: every pending request and every live execution's
 * waiters fail with the trap, and sessions stop what they started. */
export function failAllLive(requests: readonly PendingRequest[], entries: Iterable<ExecutionEntry>, error: PhronomyError, settings: DeliverySettings): void {
  for (const request of requests) {
    if (request.type === "recovery") request.settle({ ok: false, error });
    else settleWaiterWithError(request.waiter, error, settings);
    if (request.type === "resume") failFollowers(request, error, settings);
  }
  for (const entry of entries) {
    for (const watcher of entry.terminalWatchers.splice(0)) watcher();
    entry.session?.abandon(error);
    entry.span?.fail(error);
    for (const waiter of entry.waiters.splice(0)) settleWaiterWithError(waiter, error, settings);
  }
}
