// The terminal durable barrier: a finished session commits its outcome only
// when quiescent (no operation in flight), otherwise the terminal is
// deferred until the last operation settles; the commit's result then
// releases the admission (or keeps it, suspended) and settles the waiters
// (seeds: finish_on_event_loop, resume_deferred_terminal_on_event_loop,
// apply_terminal_commit_on_event_loop).

import {
  AdmissionState, EffectKind, ExecutionFlag, ExecutionStatus, MessageKind, OutcomeType, Phase,
  ResultCode, SessionEnding, SessionEventKind,
} from "../abi";
import { setAgentAdmission } from "../agent-table";
import { emit } from "../effects";
import {
  checkExecution, executionAgent, executionInFlight, executionPhase, executionRevision,
  hasExecutionFlag, setExecutionFlag, setExecutionPhase, setExecutionRevision,
  setExecutionSession, setExecutionStatus,
} from "../execution-table";
import { fsmNext } from "../fsm";
import { beginTerminalCommit, dropStale, finishExecution, isLiveSession, requireRecovery } from "./shared";

export function applySessionFinished(exec: u32, generation: u32, session: u32, ending: u32): i32 {
  const kind = MessageKind.SessionFinished;
  const check = checkExecution(exec, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  if (!isLiveSession(exec, session)) return dropStale(kind, ResultCode.SessionMustMatch);
  if (ending == SessionEnding.None || ending > <u32>SessionEnding.CoordinationWait) return dropStale(kind, ResultCode.ArgumentOutOfRange);
  if (fsmNext(executionPhase(exec), SessionEventKind.Finish) == Phase.None) return dropStale(kind, ResultCode.TransitionUndefined);
  setExecutionPhase(exec, Phase.Terminal);
  if (executionInFlight(exec) > 0) {
    const waitState = ending == SessionEnding.Cancelled || ending == SessionEnding.TimedOut
      ? AdmissionState.Cancelling : AdmissionState.Terminalizing;
    setAgentAdmission(executionAgent(exec), waitState);
    setExecutionFlag(exec, ExecutionFlag.TerminalDeferred, true);
    emit(EffectKind.DeferTerminal, exec, session);
    return ResultCode.Ok;
  }
  beginTerminalCommit(exec);
  return ResultCode.Ok;
}

export function applyDeferredTerminal(exec: u32, generation: u32, session: u32): i32 {
  const kind = MessageKind.DeferredTerminal;
  const check = checkExecution(exec, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  if (!isLiveSession(exec, session)) return dropStale(kind, ResultCode.SessionMustMatch);
  if (!hasExecutionFlag(exec, ExecutionFlag.TerminalDeferred)) return dropStale(kind, ResultCode.TerminalNotDeferred);
  if (executionInFlight(exec) > 0) return dropStale(kind, ResultCode.NotQuiescent);
  setExecutionFlag(exec, ExecutionFlag.TerminalDeferred, false);
  beginTerminalCommit(exec);
  return ResultCode.Ok;
}

export function applyTerminalCommitReady(
  exec: u32, generation: u32, session: u32, expectedRevision: u32, outcome: u32, newRevision: u32,
): i32 {
  const kind = MessageKind.TerminalCommitReady;
  const check = checkExecution(exec, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  if (executionRevision(exec) != expectedRevision) return dropStale(kind, ResultCode.RevisionMustMatch);
  if (!isLiveSession(exec, session)) return dropStale(kind, ResultCode.SessionMustMatch);
  if (executionPhase(exec) != Phase.Terminal) return dropStale(kind, ResultCode.PhaseMustMatch);

  if (outcome == OutcomeType.None || outcome > <u32>OutcomeType.StoreFailed) {
    requireRecovery(exec, ResultCode.OutcomeUnknown);
    return ResultCode.OutcomeUnknown;
  }
  if (outcome == OutcomeType.StoreFailed) {
    // The execution keeps its admission for recovery (seeds:
    // handle_terminal_commit_error_on_event_loop; the seeds' release of a
    // reservation is retired, docs/decisions/0022).
    requireRecovery(exec, ResultCode.StoreFailed);
    return ResultCode.Ok;
  }
  if (newRevision <= executionRevision(exec)) {
    requireRecovery(exec, ResultCode.RevisionMustIncrease);
    return ResultCode.RevisionMustIncrease;
  }
  setExecutionRevision(exec, newRevision);
  if (outcome == OutcomeType.Suspended) {
    suspendExecution(exec);
  } else {
    finishExecution(exec, outcome);
  }
  return ResultCode.Ok;
}

/** Suspended keeps the admission; waiters stay pending until the execution
 * really ends; the live session is gone (session 0). */
function suspendExecution(exec: u32): void {
  setExecutionStatus(exec, ExecutionStatus.Suspended);
  setExecutionPhase(exec, Phase.Suspended);
  setExecutionSession(exec, 0);
  setAgentAdmission(executionAgent(exec), AdmissionState.Suspended);
  emit(EffectKind.DeliverOutcome, exec, OutcomeType.Suspended);
}
