// The core's exports: `init` once, then `apply` for every control message.
// Integers in, a result code out, effects in the effect buffer (see
// docs/core.md for every decision). The remaining exports describe where the
// tables live so the host can read them through typed views; the host never
// writes core memory.
//
// The core is deterministic and does no I/O: the same message sequence
// always yields the same codes, effects and tables. It never traps on host
// input: every slot, generation and enum is checked and refused with a code.

import { Limit, MessageKind, ResultCode } from "./abi";
import { resetAgentTable, agentSlotsUsed, admittingAgents, seedFirstGeneration } from "./agent-table";
import { clearEffects } from "./effects";
import { executionSlotsUsed, liveExecutions, resetExecutionTable } from "./execution-table";
import { isConversationAtRest, isExecutionAtRest, isExecutionHeldForRecovery } from "./decisions/recovery";
import {
  agentTable, effectBuffer, executionCapacity, executionTable, layoutRegions,
} from "./memory-layout";
import { fsmNext, continuationResumePhase } from "./fsm";
import { conversationNext } from "./conversation-fsm";
import {
  admissionVerdictOf, applyAdmit, applyHeadRetryDue, applyHeadSettled, applyMessageLeft, applyMessageQueued, applyMessageWritten,
} from "./decisions/admission";
import {
  applyAdmissionReleased, applyConversationHeld, applyConversationOwned, applyConversationRetaken, applyRecoveryFinished,
  applyRecoveryRequested, applyRetryDue, applySetPinned, applyUseBegin, applyUseEnd,
} from "./decisions/conversation";
import { byIdVerdictOf } from "./decisions/by-id";
import { queuedRunVerdictOf } from "./decisions/queued-run";
import { childStartVerdictOf } from "./decisions/child-start";
import { filedStartVerdictOf } from "./decisions/filed-start";
import { keyedStartVerdictOf } from "./decisions/keyed-start";
import { dueFireVerdictOf } from "./decisions/due-fire";
import { storedSignalVerdictOf } from "./decisions/stored-signal";
import { claimedDecisionVerdictOf, claimedStartVerdictOf } from "./decisions/inbox-claim";
import { enqueueRefusalVerdictOf } from "./decisions/enqueue-refusal";
import { refusedStartVerdictOf } from "./decisions/refused-start";
import { cancelRoundVerdictOf } from "./decisions/cancel-round";
import { filedDecisionVerdictOf, filedStartFollowVerdictOf } from "./decisions/filed-follow";
import { durableWatchVerdictOf, observedRowVerdictOf } from "./decisions/observed-row";
import { failedAttemptVerdictOf } from "./decisions/failed-attempt";
import { scheduleClaimVerdictOf, scheduleFiringVerdictOf } from "./decisions/schedule";
import { toolCallsToStartOf } from "./decisions/tool-calls";
import { replaceVerdictOf } from "./decisions/replace-from";
import { turnCallVerdictOf } from "./decisions/turn-calls";
import { applyCloseAgent, applyPurgeAgent, applyRegisterAgent, applySetDraining } from "./decisions/agents";
import { applyResume, applyResumeCommitReady } from "./decisions/approval";
import {
  applyCancelRequested, applyOperationSettled, applyProviderDispatchReady, applySessionEvent,
  applyToolDispatchReady,
} from "./decisions/dispatch";
import { applyContinueRecovered, applyDischargeAgentRecovery, applyDischargeRecovery, applyRecoveryInstall } from "./decisions/recovery";
import { applyCancelCommitReady, applyCancelSuspended } from "./decisions/cancel";
import { applyAttachWaiter, applySubmissionRefused } from "./decisions/requests";
import { draining, nextOwnerToken, nextSession, resetShared, seedCounters } from "./decisions/shared";
import { applyInitialPreparationReady, applyStart } from "./decisions/start";
import { applyDeferredTerminal, applySessionFinished, applyTerminalCommitReady } from "./decisions/terminal";

let initialized = false;

/** Sizes the tables. Call once per instance; a second call, or a limit out
 * of range, is refused. */
export function init(agentsMax: u32, executionsMax: u32): i32 {
  if (initialized) return ResultCode.ArgumentOutOfRange;
  if (agentsMax == 0 || agentsMax > <u32>Limit.AgentsMaxCeiling) return ResultCode.ArgumentOutOfRange;
  if (executionsMax == 0 || executionsMax > <u32>Limit.ExecutionsMaxCeiling) return ResultCode.ArgumentOutOfRange;
  if (!layoutRegions(agentsMax, executionsMax)) return ResultCode.AgentsFull;
  resetAgentTable(agentsMax);
  resetExecutionTable(executionsMax);
  resetShared();
  clearEffects();
  initialized = true;
  return ResultCode.Ok;
}

/** Applies one control message. Arguments a..g are the message's fields in
 * the order docs/core.md gives; unused ones, and retired ones (a field of a
 * message that lost its meaning keeps its position), are ignored. A retired
 * message kind is unknown. */
export function apply(kind: u32, a: u32, b: u32, c: u32, d: u32, e: u32, f: u32, g: u32): i32 {
  if (!initialized) return ResultCode.MessageKindUnknown;
  clearEffects();
  switch (kind) {
    case MessageKind.RegisterAgent: return applyRegisterAgent(a);
    case MessageKind.CloseAgent: return applyCloseAgent(a, b);
    case MessageKind.PurgeAgent: return applyPurgeAgent(a, b);
    case MessageKind.Start: return applyStart(a, b, c, d);
    case MessageKind.InitialPreparationReady: return applyInitialPreparationReady(a, b, c, d, e, g);
    case MessageKind.ProviderDispatchReady: return applyProviderDispatchReady(a, b, c, d, e, f);
    case MessageKind.ToolDispatchReady: return applyToolDispatchReady(a, b, c, d, e, f, g);
    case MessageKind.SessionEvent: return applySessionEvent(a, b, c, d);
    case MessageKind.OperationSettled: return applyOperationSettled(a, b);
    case MessageKind.SessionFinished: return applySessionFinished(a, b, c, d);
    case MessageKind.DeferredTerminal: return applyDeferredTerminal(a, b, c);
    case MessageKind.TerminalCommitReady: return applyTerminalCommitReady(a, b, c, d, e, f);
    case MessageKind.Resume: return applyResume(a, b, c, d, e, f, g);
    case MessageKind.ResumeCommitReady: return applyResumeCommitReady(a, b, c, d, e, f, g);
    case MessageKind.RecoveryInstall: return applyRecoveryInstall(a, b, c, d, e, f, g);
    case MessageKind.ContinueRecovered: return applyContinueRecovered(a, b, c, d, f);
    case MessageKind.CancelRequested: return applyCancelRequested(a, b);
    case MessageKind.AttachWaiter: return applyAttachWaiter(a, b, c);
    case MessageKind.SubmissionRefused: return applySubmissionRefused(a, b, c, d, e);
    case MessageKind.SetDraining: return applySetDraining(a);
    case MessageKind.DischargeRecovery: return applyDischargeRecovery(a, b, c);
    case MessageKind.DischargeAgentRecovery: return applyDischargeAgentRecovery(a, b);
    case MessageKind.CancelSuspended: return applyCancelSuspended(a, b, c);
    case MessageKind.CancelCommitReady: return applyCancelCommitReady(a, b, c, d, e, f);
    default: return applyConversationMessage(kind, a, b, c, d, e, f, g);
  }
}

/** The conversation lifecycle's messages (docs/decisions/0062). */
function applyConversationMessage(kind: u32, a: u32, b: u32, c: u32, d: u32, e: u32, f: u32, g: u32): i32 {
  switch (kind) {
    case MessageKind.ConversationOwned: return applyConversationOwned(a, b, c, d);
    case MessageKind.RecoveryRequested: return applyRecoveryRequested(a, b, c, d);
    case MessageKind.RecoveryFinished: return applyRecoveryFinished(a, b, c, d, e);
    case MessageKind.UseBegin: return applyUseBegin(a, b);
    case MessageKind.UseEnd: return applyUseEnd(a, b);
    case MessageKind.SetPinned: return applySetPinned(a, b, c);
    case MessageKind.Admit: return applyAdmit(a, b, c, d, e, f, g);
    case MessageKind.MessageQueued: return applyMessageQueued(a, b, c);
    case MessageKind.MessageLeft: return applyMessageLeft(a, b);
    case MessageKind.HeadSettled: return applyHeadSettled(a, b, c, d);
    case MessageKind.AdmissionReleased: return applyAdmissionReleased(a, b);
    case MessageKind.ConversationHeld: return applyConversationHeld(a, b, c);
    case MessageKind.MessageWritten: return applyMessageWritten(a, b);
    case MessageKind.HeadRetryDue: return applyHeadRetryDue(a, b);
    case MessageKind.RetryDue: return applyRetryDue(a, b, c, d);
    case MessageKind.ConversationRetaken: return applyConversationRetaken(a, b, c);
    default: return ResultCode.MessageKindUnknown;
  }
}

// -- where the host reads -------------------------------------------------------

export function effectBufferPointer(): usize { return effectBuffer; }
export function agentTablePointer(): usize { return agentTable; }
export function executionTablePointer(): usize { return executionTable; }
export function executionTableCapacity(): u32 { return executionCapacity; }
export function agentHighWater(): u32 { return agentSlotsUsed(); }
export function executionHighWater(): u32 { return executionSlotsUsed(); }
export function liveExecutionCount(): u32 { return liveExecutions; }
export function admittingAgentCount(): u32 { return admittingAgents; }
export function isDraining(): u32 { return draining; }
export function nextOwnerTokenValue(): u32 { return nextOwnerToken; }
export function nextSessionValue(): u32 { return nextSession; }
/** 1 when the execution in `slot` is held `recovery_required` (its agent's
 * admission, bound to it), else 0: a slot out of range or free is not
 * held. The host asks this instead of keeping its own copy; only
 * `DischargeRecovery` ends the hold. */
export function executionHeldForRecovery(slot: u32): u32 { return isExecutionHeldForRecovery(slot) ? 1 : 0; }
/** 1 when the execution in `slot` is at rest: suspended for approval,
 * nothing under way for it (`isExecutionAtRest`), else 0. The host lets go
 * of such an execution's objects and reads them back from the store when
 * something asks for it (docs/decisions/0066). */
export function executionAtRest(slot: u32): u32 { return isExecutionAtRest(slot) ? 1 : 0; }
/** 1 when the conversation in agent `slot` is at rest: ready, unused, no
 * message queued, its execution at rest (`isConversationAtRest`), else 0.
 * The host lets go of its conversation record too, and rebuilds it from
 * the core's slot and its definition when the conversation is named again
 * (docs/decisions/0092). */
export function conversationAtRest(slot: u32): u32 { return isConversationAtRest(slot) ? 1 : 0; }

// -- testing only ---------------------------------------------------------------

/** TESTING ONLY — the host never calls it, and no message can do what it
 * does. Starts the owner-token and session counters, and the generation a
 * never-used slot starts at, at the given values, so the differential fuzz
 * (test/fuzz) can run the core next to the u32 wrap, which real use takes
 * years to reach. Refused (`ArgumentOutOfRange`) for 0, which no counter
 * ever holds, and once an agent was registered: only a fresh core, whose
 * counters nothing has used yet, is seeded. */
export function testingSeedCounters(ownerToken: u32, session: u32, generation: u32): i32 {
  if (!initialized) return ResultCode.MessageKindUnknown;
  if (ownerToken == 0 || session == 0 || generation == 0) return ResultCode.ArgumentOutOfRange;
  if (agentSlotsUsed() != 0) return ResultCode.ArgumentOutOfRange;
  seedCounters(ownerToken, session);
  seedFirstGeneration(generation);
  return ResultCode.Ok;
}

/** The FSM table, for docs/fsm.md and the exhaustive table test. */
export function fsmTransition(phase: u32, event: u32): u32 { return fsmNext(phase, event); }
/** The continuation table, for the same. */
export function continuationPhase(continuation: u32, phase: u32): u32 { return continuationResumePhase(continuation, phase); }
/** The conversation table, for docs/fsm.md and its table test. */
export function conversationTransition(phase: u32, event: u32): u32 { return conversationNext(phase, event); }
/** The admission decision as a pure function, for the same. */
export function admissionVerdict(phase: u32, source: u32, policy: u32, situation: u32): u32 {
  return admissionVerdictOf(phase, source, policy, situation);
}
/** Where an operation by execution id goes with no conversation here to
 * ask (`AdmissionSource` Cancel, Resume, Retry, Observe; `ByIdFact` bits),
 * as a pure function: the host reads the facts and carries the verdict out. */
export function byIdVerdict(source: u32, facts: u32): u32 {
  return byIdVerdictOf(source, facts);
}
/** What becomes of a message taken from the durable queue whose Run
 * failed before it ran (its `StartAnswer`), as a pure function: a
 * `QueuedRunVerdict` the host carries out. */
export function queuedRunVerdict(answer: u32): u32 {
  return queuedRunVerdictOf(answer);
}
/** The next step of a parent's child start (its `StartAnswer`, `ChildFact`
 * bits read since): a `ChildStartVerdict` (docs/decisions/0096). */
export function childStartVerdict(answer: u32, facts: u32): u32 {
  return childStartVerdictOf(answer, facts);
}
/** A start filed for this process: its fate in the inbox once its Run
 * answered (its `StartAnswer`, `FiledStartFact` bits): a
 * `FiledStartVerdict` (docs/decisions/0096). */
export function filedStartVerdict(answer: u32, facts: u32): u32 {
  return filedStartVerdictOf(answer, facts);
}
/** The outer Run of a keyed start whose inner Run was refused (its
 * `StartAnswer`, `KeyedStartFact` bits): a `KeyedStartVerdict`
 * (docs/decisions/0102). */
export function keyedStartVerdict(answer: u32, facts: u32): u32 {
  return keyedStartVerdictOf(answer, facts);
}
/** The due sweep's fire of one wait (`DueFireFact` bits): a
 * `DueFireVerdict` (docs/decisions/0102). */
export function dueFireVerdict(facts: u32): u32 {
  return dueFireVerdictOf(facts);
}
/** A signal stored for an event wait's key, offered to the wait
 * (`StoredSignalFact` bits): a `StoredSignalVerdict` (docs/decisions/0102). */
export function storedSignalVerdict(facts: u32): u32 {
  return storedSignalVerdictOf(facts);
}
/** A decision claimed in the approval inbox (its `ClaimAnswer`,
 * `ClaimFact` bits): a `ClaimVerdict` (docs/decisions/0102). */
export function claimedDecisionVerdict(answer: u32, facts: u32): u32 {
  return claimedDecisionVerdictOf(answer, facts);
}
/** A start claimed in the approval inbox (its fate, a
 * `FiledStartVerdict`; `ClaimFact` bits): a `ClaimVerdict`
 * (docs/decisions/0102). */
export function claimedStartVerdict(fate: u32, facts: u32): u32 {
  return claimedStartVerdictOf(fate, facts);
}
/** A refused enqueue (its `StartAnswer`, `EnqueueRefusalFact` bits): an
 * `EnqueueRefusalVerdict` (docs/decisions/0110). */
export function enqueueRefusalVerdict(answer: u32, facts: u32): u32 {
  return enqueueRefusalVerdictOf(answer, facts);
}
/** A start whose preparation the store refused (its `StartAnswer`,
 * `RefusedStartFact` bits): a `RefusedStartVerdict` (docs/decisions/0112). */
export function refusedStartVerdict(answer: u32, facts: u32): u32 {
  return refusedStartVerdictOf(answer, facts);
}
/** A cancel by id whose wait settled (its `CancelAnswer`, `CancelRoundFact`
 * bits, the round from 0): a `CancelRoundVerdict` (docs/decisions/0110). */
export function cancelRoundVerdict(answer: u32, facts: u32, round: u32): u32 {
  return cancelRoundVerdictOf(answer, facts, round);
}
/** A decision filed for another process, as its filer read it
 * (`FiledDecisionFact` bits): a `FiledFollowVerdict` (docs/decisions/0110). */
export function filedDecisionVerdict(facts: u32): u32 {
  return filedDecisionVerdictOf(facts);
}
/** A start filed for another process, as its filer (or an observer) read
 * it (`FiledStartFollowFact` bits): a `FiledFollowVerdict`
 * (docs/decisions/0110). */
export function filedStartFollowVerdict(facts: u32): u32 {
  return filedStartFollowVerdictOf(facts);
}
/** `env.wait` on an execution not live here, its row read
 * (`ObservedRowFact` bits): an `ObservedRowVerdict` (docs/decisions/0110). */
export function observedRowVerdict(facts: u32): u32 {
  return observedRowVerdictOf(facts);
}
/** A durable watch's read of its row (`DurableWatchFact` bits): a
 * `DurableWatchVerdict` (docs/decisions/0110). */
export function durableWatchVerdict(facts: u32): u32 {
  return durableWatchVerdictOf(facts);
}
/** A failed attempt of a model call or a tool (`FailedAttemptFact` bits,
 * the attempt from 1, the retries allowed): a `FailedAttemptVerdict`
 * (docs/decisions/0110). */
export function failedAttemptVerdict(facts: u32, number: u32, maxRetries: u32): u32 {
  return failedAttemptVerdictOf(facts, number, maxRetries);
}
/** Which slot a schedule row fires (`ScheduleFact` bits): a
 * `ScheduleClaimVerdict` the host computes the times of (docs/decisions/0087). */
export function scheduleClaimVerdict(facts: u32): u32 {
  return scheduleClaimVerdictOf(facts);
}
/** What becomes of a firing (`ScheduleFiringFact` bits, a
 * `StartAnswer`): a `ScheduleFiringVerdict` (docs/decisions/0087). */
export function scheduleFiringVerdict(facts: u32, answer: u32): u32 {
  return scheduleFiringVerdictOf(facts, answer);
}
/** How many calls of a tool batch to start now (`toolCallConcurrency`;
 * limit 0: none), or `ToolCallCount.Invalid` (docs/decisions/0087). */
export function toolCallsToStart(calls: u32, started: u32, settled: u32, limit: u32, finished: u32): u32 {
  return toolCallsToStartOf(calls, started, settled, limit, finished);
}
/** Whether a preparation may replace memory from an execution
 * (`ReplaceFact` bits): a `ReplaceVerdict` (docs/decisions/0087). */
export function replaceVerdict(facts: u32): u32 {
  return replaceVerdictOf(facts);
}
/** What becomes of one tool call of a model turn (`TurnCallFact` bits):
 * a `TurnCallVerdict` (docs/decisions/0087). */
export function turnCallVerdict(facts: u32): u32 {
  return turnCallVerdictOf(facts);
}
