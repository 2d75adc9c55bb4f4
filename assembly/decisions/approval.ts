// Approval resume: `Resume` checks the live suspended owner and asks for
// the durable approval commit; `ResumeCommitReady` installs the resumed
// execution with a new FSM session (seeds: begin_resume_on_event_loop,
// apply_resume_commit_on_event_loop).

import {
  AdmissionState, CommitOutcome, EffectKind, ExecutionFlag, ExecutionStatus, Phase, ResultCode,
} from "../abi";
import { agentAdmission, checkAgent, setAgentAdmission } from "../agent-table";
import { emit } from "../effects";
import {
  checkExecution, executionAgent, executionRevision, executionStatus, setExecutionFlag,
  setExecutionPhase, setExecutionRevision, setExecutionSession, setExecutionStatus,
} from "../execution-table";
import { draining, failRequest, isFlag, mintSession, registerWaiter, requireRecovery } from "./shared";

/** `sameAsCommitting` (1/0): the host found this decision equal to the one
 * whose approval commit is under way on the execution (same approval id,
 * approval and reason). Sent again while that commit's outcome is not
 * known yet, it follows that commit (`FollowResume`): the same decision
 * gets the same result. A different one is refused `ResumeInProgress`. */
export function applyResume(
  exec: u32, generation: u32, agent: u32, agentGeneration: u32, request: u32, approvalMatches: u32, sameAsCommitting: u32,
): i32 {
  if (draining) return failRequest(request, ResultCode.RuntimeDraining);
  if (!isFlag(approvalMatches) || !isFlag(sameAsCommitting)) return failRequest(request, ResultCode.ArgumentOutOfRange);
  if (checkExecution(exec, generation) != ResultCode.Ok) return failRequest(request, ResultCode.RehydrationRequired);
  const check = checkAgent(agent, agentGeneration);
  if (check != ResultCode.Ok) return failRequest(request, check);
  if (executionAgent(exec) != agent) return failRequest(request, ResultCode.AgentMustMatch);
  if (executionStatus(exec) != ExecutionStatus.Suspended) return failRequest(request, ResultCode.StatusMustMatch);
  const admission = agentAdmission(agent);
  if (admission == AdmissionState.Resuming && approvalMatches && sameAsCommitting) {
    emit(EffectKind.FollowResume, exec, request);
    return ResultCode.Ok;
  }
  if (admission != AdmissionState.Suspended) return failRequest(request, ResultCode.ResumeInProgress);
  if (!approvalMatches) return failRequest(request, ResultCode.ApprovalMustMatch);
  setAgentAdmission(agent, AdmissionState.Resuming);
  emit(EffectKind.SubmitApprovalCommit, exec, executionRevision(exec), request);
  return ResultCode.Ok;
}

export function applyResumeCommitReady(
  exec: u32, generation: u32, expectedRevision: u32, outcome: u32, newRevision: u32, approved: u32, request: u32,
): i32 {
  const check = checkExecution(exec, generation);
  if (check != ResultCode.Ok) return failRequest(request, check);
  if (executionRevision(exec) != expectedRevision) return failRequest(request, ResultCode.RevisionMustMatch);
  if (executionStatus(exec) != ExecutionStatus.Suspended) return failRequest(request, ResultCode.StatusMustMatch);
  if (agentAdmission(executionAgent(exec)) != AdmissionState.Resuming) {
    return failRequest(request, ResultCode.AdmissionStateMustMatch);
  }

  if (outcome == CommitOutcome.StoreFailed && isFlag(approved)) {
    // Nothing was written (docs/decisions/0057): the execution stays
    // suspended, its decision still pending — the same decision may be sent again.
    setAgentAdmission(executionAgent(exec), AdmissionState.Suspended);
    failRequest(request, ResultCode.StoreFailed);
    return ResultCode.Ok;
  }
  let code: i32 = ResultCode.Ok;
  if (outcome == CommitOutcome.None || outcome > <u32>CommitOutcome.StoreFailed) code = ResultCode.OutcomeUnknown;
  else if (!isFlag(approved)) code = ResultCode.ArgumentOutOfRange;
  else if (outcome == CommitOutcome.RehydrationRequired) code = ResultCode.RehydrationRequired;
  else if (newRevision <= executionRevision(exec)) code = ResultCode.RevisionMustIncrease;
  if (code != ResultCode.Ok) {
    requireRecovery(exec, code);
    failRequest(request, code);
    return code == ResultCode.RehydrationRequired ? ResultCode.Ok : code;
  }

  const session = mintSession();
  setExecutionRevision(exec, newRevision);
  setExecutionStatus(exec, ExecutionStatus.Active);
  setExecutionPhase(exec, Phase.Resuming);
  setExecutionSession(exec, session);
  setExecutionFlag(exec, ExecutionFlag.ApprovalGranted, approved == 1);
  setAgentAdmission(executionAgent(exec), AdmissionState.Executing);
  registerWaiter(exec, request);
  emit(EffectKind.ResumeSession, exec, session, approved);
  return ResultCode.Ok;
}
