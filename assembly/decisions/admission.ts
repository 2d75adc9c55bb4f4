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
  ResultCode,
} from "../abi";
import { agentAdmission, agentLifecycle, checkAgent } from "../agent-table";
import {
  conversationPhase, countFailure, headStarting, queuedMessages, retryDelayMs,
  setConversationFailures, setConversationFlag, setQueuedMessages,
} from "../conversation-table";
import { emit } from "../effects";
import { startHeadIfDue, startHeadOrRelease } from "./conversation";
import { dropStale, failRequest } from "./shared";

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

export function applyAdmit(agent: u32, generation: u32, request: u32, source: u32, policy: u32, facts: u32): i32 {
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return failRequest(request, check);
  if (!isSource(source) || !isPolicy(policy) || facts >= <u32>AdmissionFact.End) return failRequest(request, ResultCode.ArgumentOutOfRange);
  const queued = queuedMessages(agent);
  if (source == AdmissionSource.QueueHead && queued == 0) return failRequest(request, ResultCode.QueueEmpty);
  const verdict = admissionVerdictOf(conversationPhase(agent), source, policy, situationOf(agent, facts));
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

export function applyHeadSettled(agent: u32, generation: u32, outcome: u32): i32 {
  const kind = MessageKind.HeadSettled;
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  if (outcome == HeadOutcome.None || outcome > <u32>HeadOutcome.Failed) return dropStale(kind, ResultCode.ArgumentOutOfRange);
  if (!headStarting(agent)) return dropStale(kind, ResultCode.HeadNotStarting);
  const queued = queuedMessages(agent);
  if (outcome != HeadOutcome.Left && queued >= <u32>Limit.QueuedMax) return dropStale(kind, ResultCode.QueueFull);
  setConversationFlag(agent, ConversationFlag.HeadStarting, false);
  if (outcome == HeadOutcome.Left) {
    setConversationFailures(agent, 0);
    startHeadOrRelease(agent);
    return ResultCode.Ok;
  }
  setQueuedMessages(agent, queued + 1);
  // Failed: the store could not prepare it; tried again after the backoff.
  // Back: it could not start now (the conversation busy, or held
  // elsewhere); it waits for the admission's release or a recovery here,
  // and is not started again at once: a start the store refuses until the
  // conversation comes back would be asked for again and again.
  if (outcome == HeadOutcome.Failed) emit(EffectKind.RetryHeadAfter, agent, retryDelayMs(countFailure(agent)));
  return ResultCode.Ok;
}

// -- inside -----------------------------------------------------------------

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
  if (agentLifecycle(agent) == AgentLifecycle.Closed) situation |= AdmissionSituation.Closed;
  const admission = agentAdmission(agent);
  if (admission != AdmissionState.None) situation |= AdmissionSituation.AdmissionHeld;
  if (admission == AdmissionState.RecoveryRequired) situation |= AdmissionSituation.RecoveryHeld;
  if (queuedMessages(agent) != 0) situation |= AdmissionSituation.Queued;
  if (headStarting(agent)) situation |= AdmissionSituation.HeadStarting;
  return situation;
}

/** Owned elsewhere: a start (or retry) made here is filed for the owner
 * when it can be, else refused (owned elsewhere); one filed for this
 * process stays filed; a queue head waits (the owner runs it). */
function elsewhereVerdict(source: u32, situation: u32): u32 {
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
