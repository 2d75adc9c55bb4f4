// Recovery: installing a durable, unfinished execution found by the host,
// re-running a replay-safe preparation, and resuming an execution at the
// continuation its saved facts name — validated here against the durable
// phase (SPEC §6.2; seeds: recover_preparation_on_event_loop,
// apply_initial_preparation_recovery_on_event_loop,
// continue_recovered_on_event_loop, validate_recovered_continuation!).
// Also discharging an execution that waits for recovery, so the host can
// install it again from its durable row.

import {
  AdmissionState, Continuation, ContinuationLimit, EffectKind, ExecutionFlag, ExecutionFlagMask,
  ExecutionStatus, OutcomeType, Phase, PhaseLimit, PreparationOutcome, ResultCode,
} from "../abi";
import { agentAdmission, agentExecutionPlusOne, bindAdmission, checkAgent, releaseAdmission, setAgentAdmission } from "../agent-table";
import { emit } from "../effects";
import {
  allocateExecution, checkExecution, executionAgent, executionGeneration, executionInFlight, executionPhase,
  executionRevision, executionSession, executionStatus, hasExecutionFlag, reserveForAdmission,
  setExecutionPhase, setExecutionRevision, setExecutionSession, setExecutionStatus,
} from "../execution-table";
import { continuationResumePhase } from "../fsm";
import { enterPhase } from "./dispatch";
import {
  beginTerminalCommit, draining, failAttachedWaiters, failRequest, finishExecution, isFlag, isLiveSession, mintSession,
  registerWaiter, releaseExecution, requireRecovery,
} from "./shared";

export function applyRecoveryInstall(
  agent: u32, agentGeneration: u32, revision: u32, status: u32, phase: u32, flags: u32, request: u32,
): i32 {
  if (draining) return failRequest(request, ResultCode.RuntimeDraining);
  const check = checkAgent(agent, agentGeneration);
  if (check != ResultCode.Ok) return failRequest(request, check);
  if (!isInstallable(status, phase, flags)) return failRequest(request, ResultCode.ArgumentOutOfRange);
  if (agentAdmission(agent) != AdmissionState.None) return failRequest(request, ResultCode.AgentAlreadyAdmitted);
  if (!reserveForAdmission()) return failRequest(request, ResultCode.ExecutionsFull);
  const exec = allocateExecution(agent, revision, 0, status, phase, flags);
  const suspended = status == ExecutionStatus.Suspended;
  bindAdmission(agent, exec, suspended ? AdmissionState.Suspended : AdmissionState.Executing);
  emit(EffectKind.ExecutionInstalled, exec, executionGeneration(exec), request);
  return ResultCode.Ok;
}

function isInstallable(status: u32, phase: u32, flags: u32): bool {
  if (status != ExecutionStatus.Preparing && status != ExecutionStatus.Active && status != ExecutionStatus.Suspended) return false;
  if (phase == Phase.None || phase >= <u32>PhaseLimit.End || phase == Phase.Terminal) return false;
  if (status == ExecutionStatus.Suspended && phase != Phase.Suspended) return false;
  return (flags & ~ExecutionFlagMask.HostSettable) == 0;
}

/** The identity checks of a recovery message: a failure means the message
 * is stale (a duplicate, or the continuation already started). */
function checkRecovered(exec: u32, generation: u32, expectedRevision: u32): i32 {
  const check = checkExecution(exec, generation);
  if (check != ResultCode.Ok) return check;
  if (executionRevision(exec) != expectedRevision) return ResultCode.RevisionMustMatch;
  if (executionSession(exec) != 0) return ResultCode.SessionMustMatch;
  // An abandoned session's operations must settle before recovery reuses
  // the execution in the same core.
  if (executionInFlight(exec) != 0) return ResultCode.NotQuiescent;
  return ResultCode.Ok;
}

/** Leaves the execution untouched for inspection and fails the request. */
function rejectContinuation(exec: u32, code: i32, request: u32): i32 {
  requireRecovery(exec, code);
  return failRequest(request, code);
}

export function applyRecoverPreparation(exec: u32, generation: u32, expectedRevision: u32, request: u32): i32 {
  const stale = checkRecovered(exec, generation, expectedRevision);
  if (stale != ResultCode.Ok) return failRequest(request, stale);
  if (executionStatus(exec) != ExecutionStatus.Preparing || executionPhase(exec) != Phase.Preparing) {
    return rejectContinuation(exec, ResultCode.ContinuationInvalid, request);
  }
  const session = mintSession();
  setExecutionSession(exec, session);
  setAgentAdmission(executionAgent(exec), AdmissionState.Executing);
  emit(EffectKind.SubmitPreparationRecovery, exec, session, expectedRevision, request);
  return ResultCode.Ok;
}

export function applyInitialPreparationRecoveryReady(
  exec: u32, generation: u32, session: u32, expectedRevision: u32, outcome: u32, newRevision: u32, request: u32,
): i32 {
  const check = checkExecution(exec, generation);
  if (check != ResultCode.Ok) return failRequest(request, check);
  if (!isLiveSession(exec, session)) return failRequest(request, ResultCode.SessionMustMatch);
  if (executionRevision(exec) != expectedRevision) return failRequest(request, ResultCode.RevisionMustMatch);
  if (executionStatus(exec) != ExecutionStatus.Preparing || executionPhase(exec) != Phase.Preparing) {
    return failRequest(request, ResultCode.StatusMustMatch);
  }
  if (outcome != PreparationOutcome.Active && outcome != PreparationOutcome.Terminal) {
    return abandonPreparationRecovery(exec, outcome, request);
  }
  if (newRevision <= executionRevision(exec)) return rejectContinuation(exec, ResultCode.RevisionMustIncrease, request);
  setExecutionRevision(exec, newRevision);
  registerWaiter(exec, request);
  if (outcome == PreparationOutcome.Terminal) {
    finishExecution(exec, OutcomeType.Failed);
    return ResultCode.Ok;
  }
  const restarted = mintSession();
  setExecutionStatus(exec, ExecutionStatus.Active);
  setExecutionPhase(exec, Phase.CallingLlm);
  setExecutionSession(exec, restarted);
  emit(EffectKind.StartSession, exec, restarted);
  enterPhase(exec, Phase.CallingLlm);
  return ResultCode.Ok;
}

/** Preparation recovery did not establish the execution: release the live
 * state; the durable row is what recovery reads next time. Observers
 * attached while it was in flight fail with the request's code. */
function abandonPreparationRecovery(exec: u32, outcome: u32, request: u32): i32 {
  const invalid = outcome == PreparationOutcome.None || outcome > <u32>PreparationOutcome.StoreFailed;
  const code = invalid ? ResultCode.OutcomeUnknown
    : outcome == PreparationOutcome.StoreFailed ? ResultCode.StoreFailed : ResultCode.RehydrationRequired;
  failRequest(request, code);
  failAttachedWaiters(exec, code);
  releaseExecution(exec);
  return invalid ? code : ResultCode.Ok;
}

export function applyContinueRecovered(
  exec: u32, generation: u32, expectedRevision: u32, continuation: u32, hasFailure: u32, request: u32,
): i32 {
  const stale = checkRecovered(exec, generation, expectedRevision);
  if (stale != ResultCode.Ok) return failRequest(request, stale);
  const invalid = validateContinuation(exec, continuation, hasFailure);
  if (invalid != ResultCode.Ok) return rejectContinuation(exec, invalid, request);

  const resumePhase = continuationResumePhase(continuation, executionPhase(exec));
  setExecutionPhase(exec, resumePhase);
  if (continuation == Continuation.FailedTerminal) {
    registerWaiter(exec, request);
    beginTerminalCommit(exec);
    return ResultCode.Ok;
  }
  const session = mintSession();
  setExecutionSession(exec, session);
  setAgentAdmission(executionAgent(exec), AdmissionState.Executing);
  registerWaiter(exec, request);
  emit(EffectKind.ContinueSession, exec, session, continuation);
  if (continuation == Continuation.FrameworkTools || continuation == Continuation.RecallModel) {
    enterPhase(exec, resumePhase);
  }
  return ResultCode.Ok;
}

function validateContinuation(exec: u32, continuation: u32, hasFailure: u32): i32 {
  if (continuation == Continuation.None || continuation >= <u32>ContinuationLimit.End || !isFlag(hasFailure)) {
    return ResultCode.ArgumentOutOfRange;
  }
  if (executionStatus(exec) != ExecutionStatus.Active) return ResultCode.ContinuationInvalid;
  if (continuationResumePhase(continuation, executionPhase(exec)) == Phase.None) return ResultCode.ContinuationInvalid;
  const frameworkCalls = hasExecutionFlag(exec, ExecutionFlag.FrameworkCallsPending);
  if (continuation == Continuation.FrameworkCalls && !frameworkCalls) return ResultCode.ContinuationInvalid;
  if ((continuation == Continuation.Output || continuation == Continuation.Followup) && frameworkCalls) {
    return ResultCode.ContinuationInvalid;
  }
  if (continuation == Continuation.ApprovalRejection && hasExecutionFlag(exec, ExecutionFlag.ApprovalGranted)) {
    return ResultCode.ContinuationInvalid;
  }
  if (continuation == Continuation.FailedTerminal && !hasFailure) return ResultCode.FailureRequired;
  return ResultCode.Ok;
}

/** Releases an execution whose admission is `recovery_required` once the
 * operations of its abandoned session settled, so the host can install it
 * again from its durable row (`RecoveryInstall`). Administrative: a refusal
 * returns its code and emits nothing. Allowed while draining: it admits
 * nothing. */
export function applyDischargeRecovery(exec: u32, generation: u32): i32 {
  const check = checkExecution(exec, generation);
  if (check != ResultCode.Ok) return check;
  const agent = executionAgent(exec);
  if (agentAdmission(agent) != AdmissionState.RecoveryRequired || agentExecutionPlusOne(agent) != exec + 1) {
    return ResultCode.AdmissionStateMustMatch;
  }
  if (executionInFlight(exec) != 0) return ResultCode.NotQuiescent;
  // *Require recovery* failed every waiter; observers attached since then
  // would otherwise wait on a slot that no longer exists.
  failAttachedWaiters(exec, ResultCode.RehydrationRequired);
  releaseExecution(exec);
  return ResultCode.Ok;
}

/** Releases an agent whose admission is `recovery_required` with no
 * execution bound to it: a preparation whose durable outcome the host
 * could not learn (`InitialPreparationReady` with `OutcomeUnknown`,
 * `RecoveryRequired` or `StoreFailed`). The host sends it once it has read
 * the durable rows: the execution, if it was written, is then installed
 * again with `RecoveryInstall`; if not, the agent admits again.
 * Administrative: a refusal returns its code and emits nothing. Allowed
 * while draining: it admits nothing. */
export function applyDischargeAgentRecovery(agent: u32, generation: u32): i32 {
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return check;
  if (agentAdmission(agent) != AdmissionState.RecoveryRequired || agentExecutionPlusOne(agent) != 0) {
    return ResultCode.AdmissionStateMustMatch;
  }
  releaseAdmission(agent);
  return ResultCode.Ok;
}
