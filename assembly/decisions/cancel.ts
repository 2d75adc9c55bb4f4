// Cancel by id of a suspended execution (docs/decisions/0026): a running
// execution is cancelled through its session, as a start's AbortSignal
// would (`CancelRequested`, then the session's `Cancelled` ending); a
// suspended one has no session, so `CancelSuspended` takes its admission
// (`Terminalizing`) and asks for its terminal commit, and
// `CancelCommitReady` finishes it (outcome `Failed`, the host's error
// CANCELLED) or, when the store refused the write, gives the suspension back.

import {
  AdmissionState, CommitOutcome, EffectKind, ExecutionStatus, OutcomeType, Phase, ResultCode,
} from "../abi";
import { agentAdmission, setAgentAdmission } from "../agent-table";
import { emit } from "../effects";
import {
  checkExecution, executionAgent, executionRevision, executionStatus, setExecutionPhase, setExecutionRevision,
} from "../execution-table";
import { draining, failRequest, finishExecution, registerWaiter, requireRecovery } from "./shared";

export function applyCancelSuspended(exec: u32, generation: u32, request: u32): i32 {
  if (draining) return failRequest(request, ResultCode.RuntimeDraining);
  const check = checkExecution(exec, generation);
  if (check != ResultCode.Ok) return failRequest(request, check);
  if (executionStatus(exec) != ExecutionStatus.Suspended) return failRequest(request, ResultCode.StatusMustMatch);
  if (agentAdmission(executionAgent(exec)) != AdmissionState.Suspended) return failRequest(request, ResultCode.ResumeInProgress);
  setAgentAdmission(executionAgent(exec), AdmissionState.Terminalizing);
  emit(EffectKind.SubmitCancelCommit, exec, executionRevision(exec), request);
  return ResultCode.Ok;
}

export function applyCancelCommitReady(
  exec: u32, generation: u32, expectedRevision: u32, outcome: u32, newRevision: u32, request: u32,
): i32 {
  const check = checkExecution(exec, generation);
  if (check != ResultCode.Ok) return failRequest(request, check);
  if (executionRevision(exec) != expectedRevision) return failRequest(request, ResultCode.RevisionMustMatch);
  if (executionStatus(exec) != ExecutionStatus.Suspended) return failRequest(request, ResultCode.StatusMustMatch);
  const agent = executionAgent(exec);
  if (agentAdmission(agent) != AdmissionState.Terminalizing) return failRequest(request, ResultCode.AdmissionStateMustMatch);

  if (outcome == CommitOutcome.StoreFailed) {
    // Nothing was written: the execution stays suspended, its decision still pending.
    setAgentAdmission(agent, AdmissionState.Suspended);
    return failRequest(request, ResultCode.StoreFailed);
  }
  let code: i32 = ResultCode.Ok;
  if (outcome == CommitOutcome.None || outcome > <u32>CommitOutcome.StoreFailed) code = ResultCode.OutcomeUnknown;
  else if (outcome == CommitOutcome.RehydrationRequired) code = ResultCode.RehydrationRequired;
  else if (newRevision <= executionRevision(exec)) code = ResultCode.RevisionMustIncrease;
  if (code != ResultCode.Ok) {
    requireRecovery(exec, code);
    failRequest(request, code);
    return code == ResultCode.RehydrationRequired ? ResultCode.Ok : code;
  }

  setExecutionRevision(exec, newRevision);
  setExecutionPhase(exec, Phase.Terminal);
  registerWaiter(exec, request);
  finishExecution(exec, OutcomeType.Failed);
  return ResultCode.Ok;
}
