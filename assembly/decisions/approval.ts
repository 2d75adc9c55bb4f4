// Approval resume: `Resume` checks the live suspended owner and asks for
// the durable approval commit — or answers a wait: recover the held
// execution first, or wait for the suspension being committed
// (docs/decisions/0065); `ResumeCommitReady` installs the resumed
// execution with a new FSM session (seeds: begin_resume_on_event_loop,
// apply_resume_commit_on_event_loop).

import {
  AdmissionState, CommitOutcome, EffectKind, ExecutionFlag, ExecutionStatus, Phase, ResultCode, ResumeFact,
} from "../abi";
import { agentAdmission, checkAgent, setAgentAdmission } from "../agent-table";
import { emit } from "../effects";
import {
  checkExecution, executionAgent, executionRevision, executionStatus, setExecutionFlag,
  setExecutionPhase, setExecutionRevision, setExecutionSession, setExecutionStatus,
} from "../execution-table";
import { draining, failRequest, isFlag, mintSession, registerWaiter, requireRecovery } from "./shared";

/** A decision on a suspended execution. `facts` (`ResumeFact` bits) are
 * what only the host can see: the approval id matches the pending one, or
 * the suspension being committed; the decision is sent again after the
 * recovery asked for. `sameAsCommitting` (1/0): the host found this decision
 * equal to the one whose approval commit is under way on the execution
 * (same approval id, approval and reason). Sent again while that commit's
 * outcome is not known yet, it follows that commit (`FollowResume`): the
 * same decision gets the same result. A different one is refused
 * `ResumeInProgress`.
 *
 * Two answers are waits, decided before the drain is checked: a decision
 * asked for before the environment began to drain is carried through its
 * wait and meets the drain when it is sent again (docs/decisions/0065). */
export function applyResume(
  exec: u32, generation: u32, agent: u32, agentGeneration: u32, request: u32, facts: u32, sameAsCommitting: u32,
): i32 {
  if (facts >= <u32>ResumeFact.End || !isFlag(sameAsCommitting) || !factsConsistent(facts)) return failRequest(request, ResultCode.ArgumentOutOfRange);
  if (checkExecution(exec, generation) != ResultCode.Ok) return failRequest(request, ResultCode.RehydrationRequired);
  const check = checkAgent(agent, agentGeneration);
  if (check != ResultCode.Ok) return failRequest(request, check);
  if (executionAgent(exec) != agent) return failRequest(request, ResultCode.AgentMustMatch);
  const afterRecovery = (facts & ResumeFact.AfterRecovery) != 0;
  const admission = agentAdmission(agent);
  if (admission == AdmissionState.RecoveryRequired) {
    // Held after a commit whose outcome is not known: the store says what
    // was written (docs/decisions/0057). Recovered once; still held after it
    // is refused (the host words why).
    if (afterRecovery) return failRequest(request, ResultCode.AgentAdmissionHeld);
    emit(EffectKind.RecoverBeforeResume, exec, request);
    return ResultCode.Ok;
  }
  const suspended = executionStatus(exec) == ExecutionStatus.Suspended;
  if (!suspended && !afterRecovery && (facts & ResumeFact.MatchesCommittingSuspension) != 0) {
    // The suspension asking for this decision is being committed (its row
    // may already be read): decided once the commit is answered, as if sent
    // a moment later.
    emit(EffectKind.AwaitSuspensionCommit, exec, request);
    return ResultCode.Ok;
  }
  // Recovered, and running on: the earlier decision was written.
  if (!suspended && afterRecovery) return failRequest(request, ResultCode.StatusMustMatch);
  const matchesPending = (facts & ResumeFact.MatchesPending) != 0;
  if (suspended && !matchesPending) return failRequest(request, ResultCode.ApprovalMustMatch);
  if (suspended) {
    // The wait's kind decides which resume it takes: a typed input wait
    // only a value, an approval only a decision (docs/decisions/0075), an
    // event wait only a signal (0077), a child's wait only its child's end
    // (0079), a timer only the clock, which answers only a wait with a due
    // time (0076).
    const kind = waitKindCheck(facts);
    if (kind != ResultCode.Ok) return failRequest(request, kind);
  }
  if (draining) return failRequest(request, ResultCode.RuntimeDraining);
  if (!suspended) return failRequest(request, ResultCode.StatusMustMatch);
  if (admission == AdmissionState.Resuming && sameAsCommitting) {
    emit(EffectKind.FollowResume, exec, request);
    return ResultCode.Ok;
  }
  if (admission != AdmissionState.Suspended) return failRequest(request, ResultCode.ResumeInProgress);
  setAgentAdmission(agent, AdmissionState.Resuming);
  emit(EffectKind.SubmitApprovalCommit, exec, executionRevision(exec), request);
  return ResultCode.Ok;
}

/** A wait is of one kind, an answer of one kind; a signal offered from the
 * store is a signal (docs/decisions/0077). */
function factsConsistent(facts: u32): bool {
  const waitKinds = <u32>ResumeFact.PendingWaitsForInput | <u32>ResumeFact.PendingWaitsForEvent | <u32>ResumeFact.PendingWaitsForChild;
  const answerKinds = <u32>ResumeFact.GivesValue | <u32>ResumeFact.GivesSignal | <u32>ResumeFact.GivesChildOutcome;
  if (popcnt<u32>(facts & waitKinds) > 1 || popcnt<u32>(facts & answerKinds) > 1) return false;
  return (facts & ResumeFact.SignalStored) == 0 || (facts & ResumeFact.GivesSignal) != 0;
}

/** 0 an approval, 1 a typed input wait, 2 a keyed event wait, 3 a child's wait. */
function waitKindOf(facts: u32): u32 {
  if ((facts & ResumeFact.PendingWaitsForInput) != 0) return 1;
  if ((facts & ResumeFact.PendingWaitsForEvent) != 0) return 2;
  return (facts & ResumeFact.PendingWaitsForChild) != 0 ? 3 : 0;
}

/** 0 a decision, 1 a value, 2 a signal, 3 a child's outcome: the wait kind each answers. */
function answerKindOf(facts: u32): u32 {
  if ((facts & ResumeFact.GivesValue) != 0) return 1;
  if ((facts & ResumeFact.GivesSignal) != 0) return 2;
  return (facts & ResumeFact.GivesChildOutcome) != 0 ? 3 : 0;
}

/** Which answer the pending wait takes. The clock answers only a wait
 * with a due time (a timer's, or a timeout's) and gives nothing else, and
 * a timer only the clock (docs/decisions/0076); else the answer's kind is
 * the wait's. A value its schema refused decides nothing. */
function waitKindCheck(facts: u32): i32 {
  if ((facts & ResumeFact.ClockAnswers) != 0) {
    const answers = <u32>ResumeFact.GivesValue | <u32>ResumeFact.GivesSignal | <u32>ResumeFact.GivesChildOutcome;
    if ((facts & ResumeFact.PendingHasDeadline) == 0 || (facts & answers) != 0) return ResultCode.WaitKindMustMatch;
    return ResultCode.Ok;
  }
  if ((facts & ResumeFact.PendingWaitsForClock) != 0) return ResultCode.WaitKindMustMatch;
  if (waitKindOf(facts) != answerKindOf(facts)) return ResultCode.WaitKindMustMatch;
  if ((facts & ResumeFact.ValueRefused) != 0) return ResultCode.ValueMustMatchSchema;
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
