// Admission of a new execution: `Start` admits (one per agent) and asks for
// the offloaded *prepare*; `InitialPreparationReady` applies its outcome:
// bind the admission and install the execution with its first FSM session,
// or release / mark recovery_required and fail the start (seeds:
// begin_start_on_event_loop, apply_initial_preparation_on_event_loop).

import {
  AdmissionState, AgentLifecycle, EffectKind, ExecutionStatus, MessageKind, Phase, PreparationOutcome,
  RecoveryScope, ResultCode,
} from "../abi";
import {
  admitAgent, agentAdmission, agentLifecycle, agentOwnerToken, bindAdmission, checkAgent,
  releaseAdmission, setAgentAdmission,
} from "../agent-table";
import { emit } from "../effects";
import { allocateExecution, executionGeneration, reserveForAdmission } from "../execution-table";
import { enterPhase } from "./dispatch";
import { draining, dropStale, failRequest, isFlag, mintOwnerToken, mintSession, registerWaiter } from "./shared";

export function applyStart(agent: u32, generation: u32, request: u32, cancelled: u32): i32 {
  if (draining) return failRequest(request, ResultCode.RuntimeDraining);
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return failRequest(request, check);
  if (!isFlag(cancelled)) return failRequest(request, ResultCode.ArgumentOutOfRange);
  if (cancelled) return failRequest(request, ResultCode.StartCancelled);
  if (agentLifecycle(agent) == AgentLifecycle.Closed) return failRequest(request, ResultCode.AgentClosed);
  if (agentAdmission(agent) != AdmissionState.None) return failRequest(request, ResultCode.AgentAlreadyAdmitted);
  if (!reserveForAdmission()) return failRequest(request, ResultCode.ExecutionsFull);
  const token = mintOwnerToken();
  admitAgent(agent, token);
  emit(EffectKind.SubmitPrepare, agent, token, request);
  return ResultCode.Ok;
}

/** Argument `f` (was `flags`) is retired: no flag is set at preparation
 * (docs/decisions/0022). */
export function applyInitialPreparationReady(
  agent: u32, generation: u32, token: u32, outcome: u32, revision: u32, request: u32,
): i32 {
  const kind = MessageKind.InitialPreparationReady;
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  if (agentAdmission(agent) != AdmissionState.Admitting) return dropStale(kind, ResultCode.AdmissionStateMustMatch);
  if (agentOwnerToken(agent) != token) return dropStale(kind, ResultCode.OwnerTokenMustMatch);

  if (outcome == PreparationOutcome.None || outcome > <u32>PreparationOutcome.StoreFailed) {
    return refuseAdmission(agent, ResultCode.OutcomeUnknown, request);
  }
  if (outcome == PreparationOutcome.NotEstablished || outcome == PreparationOutcome.Terminal) {
    releaseAdmission(agent);
    emit(EffectKind.DeliverStartFailure, request, outcome);
    return ResultCode.Ok;
  }
  if (outcome != PreparationOutcome.Active) {
    // OutcomeUnknown, RecoveryRequired, StoreFailed: the execution may be
    // durable, so the admission is kept and marked for recovery.
    setAgentAdmission(agent, AdmissionState.RecoveryRequired);
    const code = outcome == PreparationOutcome.StoreFailed ? ResultCode.StoreFailed : ResultCode.RehydrationRequired;
    emit(EffectKind.RecoveryRequired, agent, RecoveryScope.Agent, code);
    emit(EffectKind.DeliverStartFailure, request, outcome);
    return ResultCode.Ok;
  }
  installPreparedExecution(agent, revision, request);
  return ResultCode.Ok;
}

/** A malformed preparation result: the durable outcome is unknown, so the
 * admission is kept for recovery and the start fails. */
function refuseAdmission(agent: u32, code: i32, request: u32): i32 {
  setAgentAdmission(agent, AdmissionState.RecoveryRequired);
  emit(EffectKind.RecoveryRequired, agent, RecoveryScope.Agent, code);
  return failRequest(request, code);
}

function installPreparedExecution(agent: u32, revision: u32, request: u32): void {
  const session = mintSession();
  const exec = allocateExecution(agent, revision, session, ExecutionStatus.Active, Phase.CallingLlm, 0);
  bindAdmission(agent, exec, AdmissionState.Executing);
  emit(EffectKind.ExecutionInstalled, exec, executionGeneration(exec), request);
  registerWaiter(exec, request);
  emit(EffectKind.StartSession, exec, session);
  enterPhase(exec, Phase.CallingLlm);
}
