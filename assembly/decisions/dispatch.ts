// The external-operation barriers and the live FSM session: applying a
// provider or tool barrier's commit (stale check, then start the model call
// or tool batch), FSM events, operations settling (quiescence), and the
// cancel flag (seeds: apply_*_dispatch_preparation_on_event_loop,
// authoritative_state_for_operation).

import {
  CommitOutcome, EffectKind, ExecutionFlag, Limit, MessageKind, Phase, ResultCode, SessionEventKind,
  SetupFailure,
} from "../abi";
import { emit } from "../effects";
import {
  checkExecution, executionInFlight, executionPhase, executionRevision, executionSession,
  hasExecutionFlag, setExecutionFlag, setExecutionInFlight, setExecutionPhase, setExecutionRevision,
} from "../execution-table";
import { fsmNext } from "../fsm";
import { dropStale, isLiveSession, requireRecovery } from "./shared";

/** The identity check every barrier result passes: same slot tenant, same
 * revision, same live session. Returns the phase path to take (see
 * `applyBarrierResult`), or a negative drop. */
function checkBarrierResult(kind: u32, exec: u32, generation: u32, session: u32, expectedRevision: u32, phase: u32): i32 {
  const check = checkExecution(exec, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  if (executionRevision(exec) != expectedRevision) return dropStale(kind, ResultCode.RevisionMustMatch);
  if (!isLiveSession(exec, session)) return dropStale(kind, ResultCode.SessionMustMatch);
  const current = executionPhase(exec);
  if (current != phase && current != Phase.Terminal) return dropStale(kind, ResultCode.PhaseMustMatch);
  if (executionInFlight(exec) == 0) return dropStale(kind, ResultCode.InFlightUnderflow);
  return ResultCode.Ok;
}

export function applyProviderDispatchReady(
  exec: u32, generation: u32, session: u32, expectedRevision: u32, outcome: u32, newRevision: u32,
): i32 {
  const check = checkBarrierResult(MessageKind.ProviderDispatchReady, exec, generation, session, expectedRevision, Phase.CallingLlm);
  if (check != ResultCode.Ok) return check;
  if (executionPhase(exec) == Phase.Terminal) return barrierSettledAfterFinish(exec, outcome, newRevision);
  settleOperation(exec);
  const failure = barrierFailure(exec, session, outcome, SetupFailure.Provider);
  if (failure >= 0) return failure;
  return startOperations(exec, session, newRevision, 1, SetupFailure.Provider, EffectKind.StartProviderCall);
}

export function applyToolDispatchReady(
  exec: u32, generation: u32, session: u32, expectedRevision: u32, outcome: u32, newRevision: u32, toolCount: u32,
): i32 {
  const check = checkBarrierResult(MessageKind.ToolDispatchReady, exec, generation, session, expectedRevision, Phase.DispatchingTools);
  if (check != ResultCode.Ok) return check;
  if (executionPhase(exec) == Phase.Terminal) return barrierSettledAfterFinish(exec, outcome, newRevision);
  settleOperation(exec);
  const failure = barrierFailure(exec, session, outcome, SetupFailure.Tool);
  if (failure >= 0) return failure;
  if (toolCount == 0 || toolCount > <u32>Limit.InFlightMax) {
    emit(EffectKind.SetupFailed, exec, session, SetupFailure.Tool);
    return ResultCode.ArgumentOutOfRange;
  }
  return startOperations(exec, session, newRevision, toolCount, SetupFailure.Tool, EffectKind.StartToolBatch);
}

/** The session finished while its barrier was being written. The barrier
 * is genuine (same session, same revision): a committed one moved the
 * durable revision, so the core takes it, or the terminal commit's
 * compare-and-set would fail. Nothing starts; the deferred terminal goes
 * ahead once this was the last operation in flight. Whatever its outcome,
 * the barrier's answer came: it is no longer in flight. One that holds
 * the execution for recovery settles after the hold (which drops the
 * deferred terminal), or the execution would never be quiescent and
 * `DischargeRecovery` would refuse it for good (issue 24 item 11). */
function barrierSettledAfterFinish(exec: u32, outcome: u32, newRevision: u32): i32 {
  if (outcome == CommitOutcome.None || outcome > <u32>CommitOutcome.StoreFailed) {
    return heldAndSettled(exec, ResultCode.OutcomeUnknown, ResultCode.OutcomeUnknown);
  }
  if (outcome == CommitOutcome.RehydrationRequired) return heldAndSettled(exec, ResultCode.RehydrationRequired, ResultCode.Ok);
  if (outcome == CommitOutcome.Committed) {
    if (newRevision <= executionRevision(exec)) return heldAndSettled(exec, ResultCode.RevisionMustIncrease, ResultCode.RevisionMustIncrease);
    setExecutionRevision(exec, newRevision);
  }
  settleOperation(exec);
  return ResultCode.Ok;
}

/** Holds the execution for recovery, then settles the barrier that
 * answered (no deferred terminal is left to post). */
function heldAndSettled(exec: u32, code: i32, result: i32): i32 {
  requireRecovery(exec, code);
  settleOperation(exec);
  return result;
}

/** Handles every outcome but `Committed`; returns -1 for `Committed`. */
function barrierFailure(exec: u32, session: u32, outcome: u32, setup: u32): i32 {
  if (outcome == CommitOutcome.Committed) return -1;
  if (outcome == CommitOutcome.RehydrationRequired) {
    requireRecovery(exec, ResultCode.RehydrationRequired);
    return ResultCode.Ok;
  }
  if (outcome == CommitOutcome.StoreFailed) {
    emit(EffectKind.SetupFailed, exec, session, setup);
    return ResultCode.Ok;
  }
  requireRecovery(exec, ResultCode.OutcomeUnknown);
  return ResultCode.OutcomeUnknown;
}

function startOperations(exec: u32, session: u32, newRevision: u32, count: u32, setup: u32, effect: u32): i32 {
  if (executionInFlight(exec) + count > <u32>Limit.InFlightMax) {
    emit(EffectKind.SetupFailed, exec, session, setup);
    return ResultCode.InFlightFull;
  }
  if (newRevision <= executionRevision(exec)) {
    requireRecovery(exec, ResultCode.RevisionMustIncrease);
    return ResultCode.RevisionMustIncrease;
  }
  setExecutionRevision(exec, newRevision);
  setExecutionInFlight(exec, executionInFlight(exec) + count);
  if (effect == EffectKind.StartToolBatch) emit(effect, exec, session, count);
  else emit(effect, exec, session);
  return ResultCode.Ok;
}

export function applySessionEvent(exec: u32, generation: u32, session: u32, event: u32): i32 {
  const kind = MessageKind.SessionEvent;
  const check = checkExecution(exec, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  if (!isLiveSession(exec, session)) return dropStale(kind, ResultCode.SessionMustMatch);
  if (event == SessionEventKind.None || event >= <u32>SessionEventKind.Finish) return dropStale(kind, ResultCode.ArgumentOutOfRange);
  const next = fsmNext(executionPhase(exec), event);
  if (next == Phase.None) return dropStale(kind, ResultCode.TransitionUndefined);
  if (writesBarrier(next) && executionInFlight(exec) >= <u32>Limit.InFlightMax) return dropStale(kind, ResultCode.InFlightFull);
  setExecutionPhase(exec, next);
  enterPhase(exec, next);
  return ResultCode.Ok;
}

@inline function writesBarrier(phase: u32): bool {
  return phase == Phase.CallingLlm || phase == Phase.DispatchingTools;
}

/** Entry effects of the FSM: a barrier before every external operation.
 * The barrier counts as an operation in flight until its result arrives,
 * so a terminal never commits under a barrier still being written. */
export function enterPhase(exec: u32, phase: u32): void {
  if (!writesBarrier(phase)) return;
  setExecutionInFlight(exec, executionInFlight(exec) + 1);
  const effect = phase == Phase.CallingLlm ? EffectKind.SubmitProviderBarrier : EffectKind.SubmitToolBarrier;
  emit(effect, exec, executionSession(exec), executionRevision(exec));
}

export function applyOperationSettled(exec: u32, generation: u32): i32 {
  const kind = MessageKind.OperationSettled;
  const check = checkExecution(exec, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  if (executionInFlight(exec) == 0) return dropStale(kind, ResultCode.InFlightUnderflow);
  settleOperation(exec);
  return ResultCode.Ok;
}

/** One operation in flight settled; the last one lets a deferred terminal
 * go ahead. */
export function settleOperation(exec: u32): void {
  const inFlight = executionInFlight(exec) - 1;
  setExecutionInFlight(exec, inFlight);
  if (inFlight == 0 && hasExecutionFlag(exec, ExecutionFlag.TerminalDeferred)) {
    emit(EffectKind.PostDeferredTerminal, exec, executionSession(exec));
  }
}

export function applyCancelRequested(exec: u32, generation: u32): i32 {
  const check = checkExecution(exec, generation);
  if (check != ResultCode.Ok) return dropStale(MessageKind.CancelRequested, check);
  setExecutionFlag(exec, ExecutionFlag.CancelRequested, true);
  return ResultCode.Ok;
}
