// The one admission decision (docs/decisions/0062): every start — one made
// here, the head of the durable queue, one filed by another process — asks
// `Admit` what to do, and the answer comes from the conversation's phase,
// the admission an execution holds, the queue and the busy policy. The
// verdict is a pure function of those (`admissionVerdictOf`, exported so
// docs/fsm.md lists every case); `applyAdmit` adds what the verdict changes
// in the queue count. The queue's own messages (`MessageQueued`,
// `MessageWritten`, `MessageLeft`, `HeadSettled`, `HeadRetryDue`) live here
// too: each ends by offering the head when one is due, so the host starts a
// head only on the core's `StartHead`.

import {
  AdmissionFact, AdmissionSituation, AdmissionSource, AdmissionState, AdmissionVerdict, AgentLifecycle, BusyPolicy,
  ConversationFlag, ConversationPhase, ConversationPhaseLimit, EffectKind, HeadOutcome, Limit, MessageKind,
  Ownership, ResultCode,
} from "../abi";
import { agentAdmission, agentLifecycle, checkAgent } from "../agent-table";
import {
  conversationPhase, countFailure, headStarting, queuedMessages, retryDelayMs,
  setConversationFailures, setConversationFlag, setQueuedMessages,
} from "../conversation-table";
import { emit } from "../effects";
import { ownedElsewhere, startHeadIfDue, startHeadOrRelease } from "./conversation";
import { dropStale, failRequest, isFlag } from "./shared";

const BUSY: u32 = AdmissionSituation.AdmissionHeld | AdmissionSituation.Queued | AdmissionSituation.HeadStarting;

/** The verdict for a start, or `None` when an argument is out of range. */
export function admissionVerdictOf(phase: u32, source: u32, policy: u32, situation: u32): u32 {
  if (phase == ConversationPhase.None || phase >= <u32>ConversationPhaseLimit.End) return AdmissionVerdict.None;
  if (!isPolicy(policy) || situation >= <u32>AdmissionSituation.End) return AdmissionVerdict.None;
  if (source == AdmissionSource.Resume) return resumeVerdict(phase);
  if (!isSource(source)) return AdmissionVerdict.None;
  if ((situation & AdmissionSituation.Closed) != 0) return AdmissionVerdict.RefuseClosed;
  if (phase == ConversationPhase.OwnedElsewhere) return elsewhereVerdict(source, situation);
  if (source == AdmissionSource.QueueHead) return headVerdict(phase, situation);
  if (phase == ConversationPhase.Held) return AdmissionVerdict.RefuseHeld;
  if (phase != ConversationPhase.Ready) return AdmissionVerdict.WaitUntilReady;
  if ((situation & (AdmissionSituation.RecoveryHeld | AdmissionSituation.Queued)) == AdmissionSituation.RecoveryHeld) {
    return AdmissionVerdict.RefuseHeld;
  }
  if ((situation & BUSY) == 0) return AdmissionVerdict.RunHere;
  return busyVerdict(policy, situation);
}

export function applyAdmit(agent: u32, generation: u32, request: u32, source: u32, policy: u32, facts: u32, waiting: u32): i32 {
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return failRequest(request, check);
  if (!isSource(source) || !isPolicy(policy) || facts >= <u32>AdmissionFact.End) return failRequest(request, ResultCode.ArgumentOutOfRange);
  const queued = queuedMessages(agent);
  if (source == AdmissionSource.QueueHead && queued == 0) return failRequest(request, ResultCode.QueueEmpty);
  let verdict = admissionVerdictOf(conversationPhase(agent), source, policy, situationOf(agent, facts));
  // A limit, not a table entry (as `QueueFull`): too many starts wait on
  // this conversation already, and this one is refused as a held one is.
  if (verdict == AdmissionVerdict.WaitUntilReady && waiting >= <u32>Limit.WaitingStartsMax) verdict = AdmissionVerdict.RefuseHeld;
  const enqueues = verdict == AdmissionVerdict.EnqueueBack || verdict == AdmissionVerdict.EnqueueFront;
  if (enqueues && queued >= <u32>Limit.QueuedMax) return failRequest(request, ResultCode.QueueFull);
  if (enqueues) setQueuedMessages(agent, queued + 1);
  if (verdict == AdmissionVerdict.RunHere && source == AdmissionSource.QueueHead) {
    setQueuedMessages(agent, queued - 1);
    setConversationFlag(agent, ConversationFlag.HeadStarting, true);
  }
  const interrupt = verdict == AdmissionVerdict.EnqueueFront && agentAdmission(agent) != AdmissionState.None;
  emit(EffectKind.AdmissionDecided, request, verdict, agent, interrupt ? 1 : 0);
  return ResultCode.Ok;
}

export function applyMessageQueued(agent: u32, generation: u32, count: u32): i32 {
  const kind = MessageKind.MessageQueued;
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  if (count == 0 || count > <u32>Limit.QueuedMax) return dropStale(kind, ResultCode.ArgumentOutOfRange);
  const queued = queuedMessages(agent);
  if (count > <u32>Limit.QueuedMax - queued) return dropStale(kind, ResultCode.QueueFull);
  setQueuedMessages(agent, queued + count);
  // Messages read back from the store are durable: the head may start
  // (one `StartHead` for the whole count the host reads at once).
  startHeadIfDue(agent);
  return ResultCode.Ok;
}

/** A message `Admit` counted queued is durable: the host can start it now,
 * so the head is offered if one is due (it may be this message, or one
 * that waited behind a head still being written). */
export function applyMessageWritten(agent: u32, generation: u32): i32 {
  const kind = MessageKind.MessageWritten;
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  if (queuedMessages(agent) == 0) return dropStale(kind, ResultCode.QueueEmpty);
  startHeadIfDue(agent);
  return ResultCode.Ok;
}

/** The backoff of a head the store failed is over: offered again if due
 * (a head may have started or left meanwhile: then nothing). */
export function applyHeadRetryDue(agent: u32, generation: u32): i32 {
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return dropStale(MessageKind.HeadRetryDue, check);
  startHeadIfDue(agent);
  return ResultCode.Ok;
}

export function applyMessageLeft(agent: u32, generation: u32): i32 {
  const kind = MessageKind.MessageLeft;
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  const queued = queuedMessages(agent);
  if (queued == 0) return dropStale(kind, ResultCode.QueueEmpty);
  setQueuedMessages(agent, queued - 1);
  startHeadOrRelease(agent);
  return ResultCode.Ok;
}

export function applyHeadSettled(agent: u32, generation: u32, outcome: u32, ownership: u32): i32 {
  const kind = MessageKind.HeadSettled;
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  if (!isHeadOutcome(outcome) || ownership > <u32>Ownership.Elsewhere) return dropStale(kind, ResultCode.ArgumentOutOfRange);
  if (!headStarting(agent)) return dropStale(kind, ResultCode.HeadNotStarting);
  const queued = queuedMessages(agent);
  const kept = outcome == HeadOutcome.StoreFailed || outcome == HeadOutcome.NotNow;
  if (kept && queued >= <u32>Limit.QueuedMax) return dropStale(kind, ResultCode.QueueFull);
  setConversationFlag(agent, ConversationFlag.HeadStarting, false);
  if (!kept) {
    headLeft(agent, outcome);
    return ResultCode.Ok;
  }
  // Still queued in the store (a preparation removes it only when it
  // commits): the head again, counted queued again.
  setQueuedMessages(agent, queued + 1);
  emit(EffectKind.HeadKept, agent);
  keepHead(agent, ownership);
  return ResultCode.Ok;
}

// -- inside -----------------------------------------------------------------

function isHeadOutcome(value: u32): bool {
  return value == HeadOutcome.Left || (value >= <u32>HeadOutcome.StoreFailed && value <= <u32>HeadOutcome.Refused);
}

/** The head left the queue: installed, refused, ended for good, or taken
 * by the process that prepared its execution (its Run follows that one).
 * The backoff starts again, and the next head is offered. */
function headLeft(agent: u32, outcome: u32): void {
  setConversationFailures(agent, 0);
  if (outcome == HeadOutcome.ExecutionExists) emit(EffectKind.HeadTaken, agent);
  startHeadOrRelease(agent);
}

/** Where a kept head waits. The store says another process (or nobody)
 * holds the conversation: that is reported as `ConversationOwned
 * (elsewhere)` is, so its Run follows it to the owner (`FollowQueued`) and
 * it is not started again here (the store would refuse it again and
 * again). Held here and ready: offered again after the one backoff
 * (`RetryHeadAfter`). Not ready (recovering, held, owned elsewhere by the
 * core's record): no timer — the recovery's end offers it (`StartHead`),
 * and a retry before would be answered nothing. */
function keepHead(agent: u32, ownership: u32): void {
  if (ownership == Ownership.Elsewhere) {
    const moved = ownedElsewhere(agent);
    assert(moved, "every phase a head starts in may be owned elsewhere");
    return;
  }
  if (conversationPhase(agent) != ConversationPhase.Ready) return;
  emit(EffectKind.RetryHeadAfter, agent, retryDelayMs(countFailure(agent)));
}

/** The sources an `Admit` carries (a resume asks the verdict only). */
function isSource(value: u32): bool {
  return (value >= <u32>AdmissionSource.Direct && value <= <u32>AdmissionSource.Filed) || value == AdmissionSource.Retry;
}

function isPolicy(value: u32): bool {
  return value >= <u32>BusyPolicy.Reject && value <= <u32>BusyPolicy.Interrupt;
}

function situationOf(agent: u32, facts: u32): u32 {
  let situation: u32 = (facts & AdmissionFact.QueueKept) != 0 ? AdmissionSituation.QueueKept : 0;
  if ((facts & AdmissionFact.CanFile) != 0) situation |= AdmissionSituation.CanFile;
  if ((facts & AdmissionFact.CanTakeHere) != 0) situation |= AdmissionSituation.CanTakeHere;
  if (agentLifecycle(agent) == AgentLifecycle.Closed) situation |= AdmissionSituation.Closed;
  const admission = agentAdmission(agent);
  if (admission != AdmissionState.None) situation |= AdmissionSituation.AdmissionHeld;
  if (admission == AdmissionState.RecoveryRequired) situation |= AdmissionSituation.RecoveryHeld;
  if (queuedMessages(agent) != 0) situation |= AdmissionSituation.Queued;
  if (headStarting(agent)) situation |= AdmissionSituation.HeadStarting;
  return situation;
}

const LIVE_HERE: u32 = AdmissionSituation.AdmissionHeld | AdmissionSituation.RecoveryHeld | AdmissionSituation.Queued | AdmissionSituation.HeadStarting;

/** Owned elsewhere: a start made here may first ask to move the
 * conversation here (`TakeHere`: the store can, and nothing of it is live
 * here; docs/decisions/0101); else a start (or retry) made here is filed
 * for the owner when it can be, else refused (owned elsewhere); one filed
 * for this process stays filed; a queue head waits (the owner runs it). */
function elsewhereVerdict(source: u32, situation: u32): u32 {
  const takes = AdmissionSituation.CanTakeHere | AdmissionSituation.CanFile;
  if (source == AdmissionSource.Direct && (situation & takes) == takes && (situation & LIVE_HERE) == 0) {
    return AdmissionVerdict.TakeHere;
  }
  if (source == AdmissionSource.Direct || source == AdmissionSource.Retry) {
    return (situation & AdmissionSituation.CanFile) != 0 ? AdmissionVerdict.FileForOwner : AdmissionVerdict.RefuseOwnedElsewhere;
  }
  return source == AdmissionSource.Filed ? AdmissionVerdict.LeaveFiled : AdmissionVerdict.StayQueued;
}

/** A decision on an execution not live here goes to the process that holds
 * the conversation; here, the `Resume` message decides the rest (closed,
 * suspended, held for recovery). */
function resumeVerdict(phase: u32): u32 {
  return phase == ConversationPhase.OwnedElsewhere ? AdmissionVerdict.FileForOwner : AdmissionVerdict.RunHere;
}

/** A queue head starts only when the conversation is ready, no execution
 * holds its admission and no other head is starting. */
function headVerdict(phase: u32, situation: u32): u32 {
  const blocked = (situation & (AdmissionSituation.AdmissionHeld | AdmissionSituation.HeadStarting)) != 0;
  return phase == ConversationPhase.Ready && !blocked ? AdmissionVerdict.RunHere : AdmissionVerdict.StayQueued;
}

/** A ready conversation that is busy (running, or messages queued): the
 * busy policy decides (decision 0025). */
function busyVerdict(policy: u32, situation: u32): u32 {
  if (policy == BusyPolicy.Reject) return AdmissionVerdict.RefuseBusy;
  if ((situation & AdmissionSituation.QueueKept) == 0) return AdmissionVerdict.RefuseNoQueue;
  return policy == BusyPolicy.Enqueue ? AdmissionVerdict.EnqueueBack : AdmissionVerdict.EnqueueFront;
}
