// Recovery: installing a durable, unfinished execution found by the host
// and resuming it at the continuation its saved facts name — validated here
// against the durable phase (SPEC §6.2; seeds:
// continue_recovered_on_event_loop, validate_recovered_continuation!).
// Also discharging an execution that waits for recovery, so the host can
// install it again from its durable row.
//
// Only continuations from states the stores write are here: preparation
// recovery and the continuations from the recovery phases (framework_calls,
// output, followup, failed_terminal) are retired (docs/decisions/0022). A
// row in any other state is installed, so its agent is held, and refused
// by `ContinueRecovered` for inspection.

import {
  AdmissionState, AgentLifecycle, Continuation, ContinuationLimit, ConversationFlag, ConversationPhase, EffectKind, ExecutionFlag,
  ExecutionFlagMask, ExecutionStatus, Phase, PhaseLimit, ResultCode,
} from "../abi";
import {
  agentAdmission, agentExecutionPlusOne, agentLifecycle, agentSlotsUsed, bindAdmission, checkAgent, releaseAdmission, setAgentAdmission,
} from "../agent-table";
import { emit } from "../effects";
import {
  allocateExecution, checkExecution, executionAgent, executionAgentPlusOne, executionGeneration, executionInFlight, executionPhase,
  executionRevision, executionSession, executionStatus, hasExecutionFlag, reserveForAdmission,
  executionSlotsUsed, setExecutionPhase, setExecutionSession,
} from "../execution-table";
import { continuationResumePhase } from "../fsm";
import { conversationPhase, conversationUsers, hasConversationFlag, queuedMessages } from "../conversation-table";
import { enterPhase } from "./dispatch";
import { draining, failAttachedWaiters, failRequest, mintSession, registerWaiter, releaseExecution, requireRecovery } from "./shared";

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

/** Argument `e` (was `hasFailure`, of the retired failed_terminal
 * continuation) is retired. Every continuation left resumes a live session
 * that moves at once: a barrier is submitted, or (approval_rejection) the
 * host posts the decline's events. */
export function applyContinueRecovered(
  exec: u32, generation: u32, expectedRevision: u32, continuation: u32, request: u32,
): i32 {
  const stale = checkRecovered(exec, generation, expectedRevision);
  if (stale != ResultCode.Ok) return failRequest(request, stale);
  const invalid = validateContinuation(exec, continuation);
  if (invalid != ResultCode.Ok) return rejectContinuation(exec, invalid, request);

  const resumePhase = continuationResumePhase(continuation, executionPhase(exec));
  const session = mintSession();
  setExecutionPhase(exec, resumePhase);
  setExecutionSession(exec, session);
  setAgentAdmission(executionAgent(exec), AdmissionState.Executing);
  registerWaiter(exec, request);
  emit(EffectKind.ContinueSession, exec, session, continuation);
  enterPhase(exec, resumePhase);
  return ResultCode.Ok;
}

/** `None` and the retired continuations have no row in the table, so they
 * are refused as not fitting the durable state, like a continuation named
 * for another phase. */
function validateContinuation(exec: u32, continuation: u32): i32 {
  if (continuation >= <u32>ContinuationLimit.End) return ResultCode.ArgumentOutOfRange;
  if (executionStatus(exec) != ExecutionStatus.Active) return ResultCode.ContinuationInvalid;
  if (continuationResumePhase(continuation, executionPhase(exec)) == Phase.None) return ResultCode.ContinuationInvalid;
  if (continuation == Continuation.ApprovalRejection && hasExecutionFlag(exec, ExecutionFlag.ApprovalGranted)) {
    return ResultCode.ContinuationInvalid;
  }
  return ResultCode.Ok;
}

/** The execution in `slot` is held `recovery_required`: its agent's
 * admission is, and is bound to it (*require recovery* set both). The one
 * definition the host asks (`executionHeldForRecovery`): it keeps no copy.
 * A free or never-used slot is not held. */
export function isExecutionHeldForRecovery(exec: u32): bool {
  if (exec >= executionSlotsUsed() || executionAgentPlusOne(exec) == 0) return false;
  const agent = executionAgent(exec);
  return agentAdmission(agent) == AdmissionState.RecoveryRequired && agentExecutionPlusOne(agent) == exec + 1;
}

/** Whether the execution in `slot` is at rest: suspended for approval
 * (its status `Suspended`) with its agent's admission `Suspended` and bound
 * to it — no decision being committed (`Resuming`), no cancel
 * (`Terminalizing`), no hold — and no operation in flight. Only then may
 * the host let go of everything but this record and its index entry, and
 * read the rest back from the store when asked (docs/decisions/0066). A
 * free or never-used slot is not at rest. */
export function isExecutionAtRest(exec: u32): bool {
  if (exec >= executionSlotsUsed() || executionAgentPlusOne(exec) == 0) return false;
  if (executionStatus(exec) != ExecutionStatus.Suspended || executionInFlight(exec) != 0) return false;
  const agent = executionAgent(exec);
  return agentAdmission(agent) == AdmissionState.Suspended && agentExecutionPlusOne(agent) == exec + 1;
}

/** Whether the conversation in agent `slot` is at rest: ready (owned and
 * recovered here), no host operation using it, no message queued behind
 * it, no head starting, and its admission bound to an execution at rest
 * (`isExecutionAtRest`). Only then may the host let go of its objects too
 * — nothing but its execution, let go of already, could ask for them — and
 * rebuild them from this record and its definition when something names
 * the conversation again (docs/decisions/0092). A free or never-used slot
 * is not at rest. */
export function isConversationAtRest(slot: u32): bool {
  if (slot >= agentSlotsUsed() || agentLifecycle(slot) == AgentLifecycle.Free) return false;
  if (conversationPhase(slot) != ConversationPhase.Ready || conversationUsers(slot) != 0 || queuedMessages(slot) != 0) return false;
  if (hasConversationFlag(slot, ConversationFlag.HeadStarting)) return false;
  const plusOne = agentExecutionPlusOne(slot);
  return plusOne != 0 && isExecutionAtRest(plusOne - 1);
}

/** Releases an execution whose admission is `recovery_required` once the
 * operations of its abandoned session settled, so the host can install it
 * again from its durable row (`RecoveryInstall`). Also one `suspended` here
 * whose durable row the host read at a later revision (`rowRevision`, 0
 * when none was read): its decision was applied at another process while
 * that one held the conversation, and the suspension held here is stale
 * (docs/decisions/0063). Administrative: a refusal returns its code and
 * emits nothing. Allowed while draining: it admits nothing. */
export function applyDischargeRecovery(exec: u32, generation: u32, rowRevision: u32): i32 {
  const check = checkExecution(exec, generation);
  if (check != ResultCode.Ok) return check;
  const agent = executionAgent(exec);
  if (agentExecutionPlusOne(agent) != exec + 1) return ResultCode.AdmissionStateMustMatch;
  const admission = agentAdmission(agent);
  const superseded = admission == AdmissionState.Suspended && rowRevision > executionRevision(exec);
  if (admission != AdmissionState.RecoveryRequired && !superseded) return ResultCode.AdmissionStateMustMatch;
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
