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

/** The authoritative-state check every barrier result passes: same slot
 * tenant, same revision, same session, expected phase. */
function checkBarrierResult(kind: u32, exec: u32, generation: u32, session: u32, expectedRevision: u32, phase: u32): i32 {
  const check = checkExecution(exec, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  if (executionRevision(exec) != expectedRevision) return dropStale(kind, ResultCode.RevisionMustMatch);
  if (!isLiveSession(exec, session)) return dropStale(kind, ResultCode.SessionMustMatch);
  if (executionPhase(exec) != phase) return dropStale(kind, ResultCode.PhaseMustMatch);
  return ResultCode.Ok;
}

export function applyProviderDispatchReady(
  exec: u32, generation: u32, session: u32, expectedRevision: u32, outcome: u32, newRevision: u32,
): i32 {
  const check = checkBarrierResult(MessageKind.ProviderDispatchReady, exec, generation, session, expectedRevision, Phase.CallingLlm);
  if (check != ResultCode.Ok) return check;
  const failure = barrierFailure(exec, session, outcome, SetupFailure.Provider);
  if (failure >= 0) return failure;
  return startOperations(exec, session, newRevision, 1, SetupFailure.Provider, EffectKind.StartProviderCall);
}

export function applyToolDispatchReady(
  exec: u32, generation: u32, session: u32, expectedRevision: u32, outcome: u32, newRevision: u32, toolCount: u32,
): i32 {
  const check = checkBarrierResult(MessageKind.ToolDispatchReady, exec, generation, session, expectedRevision, Phase.DispatchingTools);
  if (check != ResultCode.Ok) return check;
  const failure = barrierFailure(exec, session, outcome, SetupFailure.Tool);
  if (failure >= 0) return failure;
  if (toolCount == 0 || toolCount > <u32>Limit.InFlightMax) {
    emit(EffectKind.SetupFailed, exec, session, SetupFailure.Tool);
    return ResultCode.ArgumentOutOfRange;
  }
  return startOperations(exec, session, newRevision, toolCount, SetupFailure.Tool, EffectKind.StartToolBatch);
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
  setExecutionPhase(exec, next);
  enterPhase(exec, next);
  return ResultCode.Ok;
}

/** Entry effects of the FSM: a barrier before every external operation. */
export function enterPhase(exec: u32, phase: u32): void {
  if (phase == Phase.CallingLlm) {
    emit(EffectKind.SubmitProviderBarrier, exec, executionSession(exec), executionRevision(exec));
  } else if (phase == Phase.DispatchingTools) {
    emit(EffectKind.SubmitToolBarrier, exec, executionSession(exec), executionRevision(exec));
  }
}

export function applyOperationSettled(exec: u32, generation: u32): i32 {
  const kind = MessageKind.OperationSettled;
  const check = checkExecution(exec, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  const inFlight = executionInFlight(exec);
  if (inFlight == 0) return dropStale(kind, ResultCode.InFlightUnderflow);
  setExecutionInFlight(exec, inFlight - 1);
  if (inFlight == 1 && hasExecutionFlag(exec, ExecutionFlag.TerminalDeferred)) {
    emit(EffectKind.PostDeferredTerminal, exec, executionSession(exec));
  }
  return ResultCode.Ok;
}

export function applyCancelRequested(exec: u32, generation: u32): i32 {
  const check = checkExecution(exec, generation);
  if (check != ResultCode.Ok) return dropStale(MessageKind.CancelRequested, check);
  setExecutionFlag(exec, ExecutionFlag.CancelRequested, true);
  return ResultCode.Ok;
}
