// Requests that observe or unwind: attaching another waiter to a live
// execution, and unwinding a submission the offload refused (its queue was
// full) exactly as the seeds' `rescue` branches do: nothing was submitted,
// so what the submitting decision reserved is given back.

import { AdmissionState, EffectKind, MessageKind, Phase, ResultCode, SetupFailure, Submission } from "../abi";
import { agentAdmission, agentOwnerToken, checkAgent, releaseAdmission, setAgentAdmission } from "../agent-table";
import { emit } from "../effects";
import { checkExecution, executionAgent, executionInFlight, executionPhase } from "../execution-table";
import { settleOperation } from "./dispatch";
import { dropStale, failRequest, isLiveSession, registerWaiter, requireRecovery } from "./shared";

export function applyAttachWaiter(exec: u32, generation: u32, request: u32): i32 {
  const check = checkExecution(exec, generation);
  if (check != ResultCode.Ok) return failRequest(request, check);
  return registerWaiter(exec, request) ? ResultCode.Ok : ResultCode.WaitersFull;
}

export function applySubmissionRefused(submission: u32, slot: u32, generation: u32, tokenOrSession: u32, request: u32): i32 {
  const kind = MessageKind.SubmissionRefused;
  if (!isSubmission(submission)) return dropStale(kind, ResultCode.ArgumentOutOfRange);
  if (submission == Submission.Prepare) return refusePrepare(slot, generation, tokenOrSession, request);

  const check = checkExecution(slot, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  if (submission == Submission.ApprovalCommit) {
    if (agentAdmission(executionAgent(slot)) != AdmissionState.Resuming) return dropStale(kind, ResultCode.AdmissionStateMustMatch);
    setAgentAdmission(executionAgent(slot), AdmissionState.Suspended);
    failRequest(request, ResultCode.OffloadFull);
    return ResultCode.Ok;
  }
  // Every other submission came from a live session.
  if (!isLiveSession(slot, tokenOrSession)) return dropStale(kind, ResultCode.SessionMustMatch);
  const phase = executionPhase(slot);
  if (submission == Submission.TerminalCommit) {
    if (phase != Phase.Terminal) return dropStale(kind, ResultCode.PhaseMustMatch);
    requireRecovery(slot, ResultCode.OffloadFull);
    return ResultCode.Ok;
  }
  const provider = submission == Submission.ProviderBarrier;
  const barrierPhase = provider ? Phase.CallingLlm : Phase.DispatchingTools;
  if (phase != barrierPhase && phase != Phase.Terminal) return dropStale(kind, ResultCode.PhaseMustMatch);
  if (executionInFlight(slot) == 0) return dropStale(kind, ResultCode.InFlightUnderflow);
  // The barrier was never submitted: it is no longer in flight.
  settleOperation(slot);
  if (phase == barrierPhase) emit(EffectKind.SetupFailed, slot, tokenOrSession, provider ? SetupFailure.Provider : SetupFailure.Tool);
  return ResultCode.Ok;
}

/** A submission this core makes; the retired number 5 (preparation
 * recovery, docs/decisions/0022) is out of range like any unknown one. */
function isSubmission(value: u32): bool {
  return value == Submission.Prepare || value == Submission.ProviderBarrier || value == Submission.ToolBarrier ||
    value == Submission.ApprovalCommit || value == Submission.TerminalCommit;
}

function refusePrepare(agent: u32, generation: u32, token: u32, request: u32): i32 {
  const kind = MessageKind.SubmissionRefused;
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  if (agentAdmission(agent) != AdmissionState.Admitting || agentOwnerToken(agent) != token) {
    return dropStale(kind, ResultCode.OwnerTokenMustMatch);
  }
  releaseAdmission(agent);
  failRequest(request, ResultCode.OffloadFull);
  return ResultCode.Ok;
}
