// The conversation lifecycle (docs/decisions/0062): ownership, the one
// recovery pipeline with its epoch, holds with the one backoff, the host
// operations using a conversation, and letting it go when idle. The phase
// follows the conversation table (`conversation-fsm.ts`); the guards are
// here. Every refusal is a `DropStale`: these messages report what the host
// saw, and a stale or malformed one changes nothing.

import {
  AdmissionState, ConversationEvent, ConversationFlag, ConversationPhase, EffectKind, ExecutionStatus, HoldCause,
  HoldCauseLimit, Limit, MessageKind, OwnerFact, OwnerFactMask, Ownership, RecoveryCause, RecoveryCauseLimit, RecoveryFact, RecoveryFactMask,
  RecoveryOutcome, RecoveryOutcomeLimit, ResultCode, RowsPolicy,
} from "../abi";
import { agentAdmission, agentExecutionPlusOne, agentGeneration, checkAgent, nextGeneration } from "../agent-table";
import { conversationNext } from "../conversation-fsm";
import {
  abandonedEpoch, conversationCause, conversationPhase, conversationUsers, countFailure, hasConversationFlag, headStarting, queuedMessages,
  recoveryEpoch, retryDelayMs, setConversationCause, setConversationFailures, setConversationFlag,
  setAbandonedEpoch, setConversationPhase, setConversationUsers, setRecoveryEpoch,
} from "../conversation-table";
import { emit } from "../effects";
import { executionGeneration, executionInFlight, executionStatus } from "../execution-table";
import { dropStale, isFlag } from "./shared";

/** Moves the conversation along the table; false (and nothing changed)
 * when the table has no entry for the pair. */
export function moveConversation(agent: u32, event: u32): bool {
  const phase = conversationPhase(agent);
  const next = conversationNext(phase, event);
  if (next == ConversationPhase.None) return false;
  setConversationPhase(agent, next);
  if (startsWaitIn(phase) && !startsWaitIn(next)) emit(EffectKind.ReadinessChanged, agent);
  // Let go owned elsewhere: remembered while releasing only (a takeover
  // reported meanwhile makes it owned here).
  const releasing = next == ConversationPhase.Releasing;
  const elsewhere = releasing && (phase == ConversationPhase.OwnedElsewhere || hasConversationFlag(agent, ConversationFlag.ReleasedElsewhere));
  setConversationFlag(agent, ConversationFlag.ReleasedElsewhere, elsewhere && event != ConversationEvent.OwnedHere);
  return true;
}

/** The phases in which `Admit` answers a start `WaitUntilReady` (a
 * conversation releasing is used again before any start asks). */
function startsWaitIn(phase: u32): bool {
  return phase == ConversationPhase.Registering || phase == ConversationPhase.Recovering;
}

export function applyConversationOwned(agent: u32, generation: u32, ownership: u32, facts: u32): i32 {
  const kind = MessageKind.ConversationOwned;
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  if (ownership != Ownership.Here && ownership != Ownership.Elsewhere) return dropStale(kind, ResultCode.ArgumentOutOfRange);
  if ((facts & ~(<u32>OwnerFactMask.All)) != 0) return dropStale(kind, ResultCode.ArgumentOutOfRange);
  if (ownership == Ownership.Elsewhere) return ownedElsewhere(agent) ? ResultCode.Ok : dropStale(kind, ResultCode.ConversationPhaseMustMatch);
  const registering = conversationPhase(agent) == ConversationPhase.Registering;
  if (!moveConversation(agent, ConversationEvent.OwnedHere)) return dropStale(kind, ResultCode.ConversationPhaseMustMatch);
  if (registering && pinnedAtRegistration(true, facts)) setConversationFlag(agent, ConversationFlag.Pinned, true);
  return ResultCode.Ok;
}

/** The store says another process (or nobody) holds the conversation: a
 * `ConversationOwned(elsewhere)`, or a head kept while the store said so
 * (`HeadSettled`). False, and nothing changed, when the table has no
 * entry for the phase. */
export function ownedElsewhere(agent: u32): bool {
  const phase = conversationPhase(agent);
  if (!moveConversation(agent, ConversationEvent.OwnedElsewhere)) return false;
  if (phase == ConversationPhase.Registering && pinnedAtRegistration(false, 0)) setConversationFlag(agent, ConversationFlag.Pinned, true);
  closeInbox(agent);
  // A recovery under way here is abandoned (its finish no longer matches
  // the phase), and so is what it meant to read again. Its pass still
  // runs until it reports that finish, and may release and install again
  // what a fault held: no head starts until then, even once a later
  // recovery made the conversation ready.
  if (phase == ConversationPhase.Recovering) setAbandonedEpoch(agent, recoveryEpoch(agent));
  forgetRecovery(agent);
  // The messages queued here run where the conversation is held: their
  // callers follow them there (every report, not only the first: a
  // message counted queued again since — a head kept, a cancel not
  // written, a queue read back — is followed by the next).
  const queued = queuedMessages(agent);
  if (queued != 0) emit(EffectKind.FollowQueued, agent, queued);
  followParked(agent);
  return true;
}

export function applyRecoveryRequested(agent: u32, generation: u32, cause: u32, facts: u32): i32 {
  const kind = MessageKind.RecoveryRequested;
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  if (cause == RecoveryCause.None || cause >= <u32>RecoveryCauseLimit.End || (facts & ~(<u32>RecoveryFactMask.All)) != 0) {
    return dropStale(kind, ResultCode.ArgumentOutOfRange);
  }
  // The application's `env.recover()` of a conversation another process
  // holds (or nobody does) is that holder's to recover: refused here.
  if (cause == RecoveryCause.RecoverCalled && (facts & RecoveryFact.LeaseNotHeldHere) != 0) {
    return dropStale(kind, ResultCode.LeaseNotHeldHere);
  }
  if (conversationPhase(agent) == ConversationPhase.Recovering) {
    joinRecovery(agent, cause);
  } else {
    if (!moveConversation(agent, ConversationEvent.RecoveryRequested)) return dropStale(kind, ResultCode.ConversationPhaseMustMatch);
    setConversationFlag(agent, ConversationFlag.RetriesHeld, retriesHeld(facts));
    beginRecovery(agent, cause, facts);
  }
  // The lease changed hands: what was installed here may be out of date,
  // and a decision applied to it now would be judged on it. The inbox
  // waits for this recovery's end.
  if (bringsNewFacts(cause)) closeInbox(agent);
  return ResultCode.Ok;
}

/** Taken back: this process holds the conversation's lease again, at a
 * later epoch than the one it lost (a first use's acquire, a start that
 * found the store holding a conversation recorded owned elsewhere, a
 * write fenced at the lost epoch). `cause` says which retake it is
 * (`Retake`, or `FencedWrite` for the last). A recovery is due when what
 * is installed here may be out of date: an execution bound to the
 * admission held for recovery (a fencing refusal held it while the lease
 * was lost), or a conversation recorded owned elsewhere (the other
 * process may have moved its rows on). Else nothing: the first use's own
 * recovery reads the rows. The phase is not moved: the recovery, when the
 * host asks for it, reports the owner. */
export function applyConversationRetaken(agent: u32, generation: u32, cause: u32): i32 {
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return dropStale(MessageKind.ConversationRetaken, check);
  if (cause != RecoveryCause.Retake && cause != RecoveryCause.FencedWrite && cause != RecoveryCause.Moved) {
    return dropStale(MessageKind.ConversationRetaken, ResultCode.ArgumentOutOfRange);
  }
  const held = agentAdmission(agent) == AdmissionState.RecoveryRequired && agentExecutionPlusOne(agent) != 0;
  if (held || conversationPhase(agent) == ConversationPhase.OwnedElsewhere) emit(EffectKind.RecoveryDue, agent, cause);
  return ResultCode.Ok;
}

export function applyRetryDue(agent: u32, generation: u32, epoch: u32, facts: u32): i32 {
  const kind = MessageKind.RetryDue;
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  if ((facts & ~(<u32>RecoveryFactMask.All)) != 0) return dropStale(kind, ResultCode.ArgumentOutOfRange);
  if (conversationPhase(agent) != ConversationPhase.Held) return dropStale(kind, ResultCode.ConversationPhaseMustMatch);
  if (recoveryEpoch(agent) != epoch) return dropStale(kind, ResultCode.RecoveryEpochMustMatch);
  return applyRecoveryRequested(agent, generation, retryCauseOf(conversationCause(agent)), facts);
}

/** The execution held for recovery in the agent's admission still has
 * operations of its abandoned session in flight (`DischargeRecovery`
 * would answer `NotQuiescent`). */
function heldExecutionSettling(agent: u32): bool {
  const execPlusOne = agentExecutionPlusOne(agent);
  return execPlusOne != 0 && executionInFlight(execPlusOne - 1) != 0;
}

/** The recovery a hold's retry asks for, by the cause it is held for: a
 * store fault or an unknown outcome heals, a session still settling
 * waits for it, a lapsed lease is tried again. */
function retryCauseOf(hold: u32): u32 {
  if (hold == HoldCause.StoreFault || hold == HoldCause.OutcomeUnknown) return RecoveryCause.HealAfterStoreFault;
  return hold == HoldCause.NotQuiescent ? RecoveryCause.SessionSettling : RecoveryCause.Retry;
}

/** Whether a hold is retried by itself: on a leasing store, where the
 * process holding the conversation is the one to heal it, when recovery
 * runs by itself here. On a store without leases one process owns the
 * file and its application decides (`env.recover()`); with `recover:
 * false` (or a visitor) the application recovers. */
function retriesHeld(facts: u32): bool {
  const both = RecoveryFact.Leasing | RecoveryFact.RecoversByItself;
  return (facts & both) == both;
}

export function applyRecoveryFinished(agent: u32, generation: u32, epoch: u32, outcome: u32, facts: u32): i32 {
  const kind = MessageKind.RecoveryFinished;
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  if (outcome == RecoveryOutcome.None || outcome >= <u32>RecoveryOutcomeLimit.End) return dropStale(kind, ResultCode.ArgumentOutOfRange);
  if ((facts & ~(<u32>RecoveryFactMask.PassEnd)) != 0) return dropStale(kind, ResultCode.ArgumentOutOfRange);
  if (abandonedPassEnded(agent, epoch)) return ResultCode.Ok;
  if (conversationPhase(agent) != ConversationPhase.Recovering) return dropStale(kind, ResultCode.ConversationPhaseMustMatch);
  if (recoveryEpoch(agent) != epoch) return dropStale(kind, ResultCode.RecoveryEpochMustMatch);
  if (outcome != RecoveryOutcome.Recovered) {
    // RecoveryOutcome 2..5 name the hold causes 1..4.
    holdConversation(agent, outcome - 1, ConversationEvent.RecoveryFailed);
  } else if (agentAdmission(agent) == AdmissionState.RecoveryRequired) {
    // The pass ran, but what a store fault held here is held still (its
    // rows could not say it ended, or it was held again meanwhile): the
    // conversation is held, and tried again after the backoff — for its
    // abandoned session to settle, when operations are still in flight.
    holdConversation(agent, heldExecutionSettling(agent) ? HoldCause.NotQuiescent : HoldCause.StoreFault, ConversationEvent.RecoveryFailed);
  } else if ((facts & RecoveryFact.StartPreparingHere) != 0) {
    // A row was left for a start still being prepared here (its own, or
    // another of the conversation's holding the admission, 0137): once
    // that preparation settles, the rows are read again — at once when its
    // admission is released (`applyAdmissionReleased`, 0140), else after
    // the backoff — and the row is installed.
    holdConversation(agent, HoldCause.NotQuiescent, ConversationEvent.RecoveryFailed);
    setConversationFlag(agent, ConversationFlag.HeldForStart, true);
  } else if (hasConversationFlag(agent, ConversationFlag.RecoverAgain)) {
    // Rows read before a takeover (or a fenced write) may be out of date:
    // they are read again under a new epoch.
    beginRecovery(agent, RecoveryCause.Retry, 0);
  } else {
    becomeReady(agent);
  }
  return ResultCode.Ok;
}

export function applyConversationHeld(agent: u32, generation: u32, cause: u32): i32 {
  const kind = MessageKind.ConversationHeld;
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  if (cause == HoldCause.None || cause >= <u32>HoldCauseLimit.End) return dropStale(kind, ResultCode.ArgumentOutOfRange);
  if (conversationNext(conversationPhase(agent), ConversationEvent.Held) == ConversationPhase.None) {
    return dropStale(kind, ResultCode.ConversationPhaseMustMatch);
  }
  holdConversation(agent, cause, ConversationEvent.Held);
  return ResultCode.Ok;
}

export function applyUseBegin(agent: u32, generation: u32): i32 {
  const kind = MessageKind.UseBegin;
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  const users = conversationUsers(agent);
  if (users >= <u32>Limit.ConversationUsersMax) return dropStale(kind, ResultCode.ConversationUsersFull);
  setConversationUsers(agent, users + 1);
  const wasElsewhere = hasConversationFlag(agent, ConversationFlag.ReleasedElsewhere);
  // Every live phase has a `used` entry: a releasing one is ready again,
  // unless it was let go owned elsewhere — then it is that again.
  const moved = moveConversation(agent, ConversationEvent.Used);
  assert(moved, "every live conversation may be used");
  if (wasElsewhere) setConversationPhase(agent, ConversationPhase.OwnedElsewhere);
  return ResultCode.Ok;
}

export function applyUseEnd(agent: u32, generation: u32): i32 {
  const kind = MessageKind.UseEnd;
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  const users = conversationUsers(agent);
  if (users == 0) return dropStale(kind, ResultCode.ConversationUsersUnderflow);
  setConversationUsers(agent, users - 1);
  releaseIfIdle(agent);
  return ResultCode.Ok;
}

export function applySetPinned(agent: u32, generation: u32, pinned: u32): i32 {
  const kind = MessageKind.SetPinned;
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return dropStale(kind, check);
  if (!isFlag(pinned)) return dropStale(kind, ResultCode.ArgumentOutOfRange);
  setConversationFlag(agent, ConversationFlag.Pinned, pinned == 1);
  if (pinned == 0) releaseIfIdle(agent);
  return ResultCode.Ok;
}

export function applyAdmissionReleased(agent: u32, generation: u32): i32 {
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return dropStale(MessageKind.AdmissionReleased, check);
  // Held for a start being prepared here (0137), whose admission is now
  // released: its preparation settled, so the row left for it is read
  // again now — a retry due at once — instead of after the backoff, when
  // a decision on that row would have been refused meanwhile (0140).
  if (
    conversationPhase(agent) == ConversationPhase.Held
    && hasConversationFlag(agent, ConversationFlag.HeldForStart)
    && agentAdmission(agent) == AdmissionState.None
  ) {
    setConversationFlag(agent, ConversationFlag.HeldForStart, false);
    if (hasConversationFlag(agent, ConversationFlag.RetriesHeld)) emit(EffectKind.RetryAfter, agent, recoveryEpoch(agent), 0);
  }
  startHeadOrRelease(agent);
  return ResultCode.Ok;
}

// -- steps shared with the admission decisions --------------------------------

/** What follows a change of the queue or the admission: the head starts
 * when it can, else an idle conversation is let go. */
export function startHeadOrRelease(agent: u32): void {
  if (!startHeadIfDue(agent)) releaseIfIdle(agent);
}

/** Holds the conversation with its cause and, when holds are retried by
 * themselves (`RetriesHeld`), asks for a retry after the one backoff;
 * else it waits for `env.recover()` (a `RecoveryRequested`). The failure
 * is counted either way. */
export function holdConversation(agent: u32, cause: u32, event: u32): void {
  const moved = moveConversation(agent, event);
  assert(moved, "the caller checked the table");
  setConversationCause(agent, cause);
  setConversationFlag(agent, ConversationFlag.HeldForStart, false);
  setConversationFlag(agent, ConversationFlag.RecoverAgain, false);
  setConversationFlag(agent, ConversationFlag.ReadQueue, false);
  const delayMs = retryDelayMs(countFailure(agent));
  if (hasConversationFlag(agent, ConversationFlag.RetriesHeld)) emit(EffectKind.RetryAfter, agent, recoveryEpoch(agent), delayMs);
}

// -- inside -----------------------------------------------------------------

/** A second trigger while a recovery runs joins it; one that brings new
 * facts (the lease or partition changed hands, a write was fenced) makes
 * the recovery read again when it ends. */
function joinRecovery(agent: u32, cause: u32): void {
  if (bringsNewFacts(cause)) setConversationFlag(agent, ConversationFlag.RecoverAgain, true);
  emit(EffectKind.RecoveryJoined, agent, recoveryEpoch(agent));
}

function bringsNewFacts(cause: u32): bool {
  return cause == RecoveryCause.LeaseTakeover || cause == RecoveryCause.PartitionTaken ||
    cause == RecoveryCause.Retake || cause == RecoveryCause.FencedWrite;
}

/** A new epoch; the host reads the rows the policy names. The caller moved
 * the conversation to `Recovering`. */
function beginRecovery(agent: u32, cause: u32, facts: u32): void {
  const epoch = nextGeneration(recoveryEpoch(agent));
  setRecoveryEpoch(agent, epoch);
  setConversationCause(agent, cause);
  setConversationFlag(agent, ConversationFlag.RecoverAgain, false);
  setConversationFlag(agent, ConversationFlag.HeldForStart, false);
  const policy = rowsPolicy(cause, facts);
  const readQueue = readsQueue(cause, facts);
  setConversationFlag(agent, ConversationFlag.ReadQueue, readQueue);
  emit(EffectKind.ReadRows, agent, epoch, policy, readQueue ? 1 : 0);
}

/** Which rows to read. Only the open scan, a first use and a partition
 * taken in the background (its conversations' first recovery here) can
 * trust their facts: without leases nobody else writes; with them, a
 * partition held since before the scan was read has not been written
 * since (decision 0049), and a conversation nobody could have written
 * (its partition's rows read when taken, or its lease at epoch 1) has
 * nothing to read (decision 0030). The settling of this process's own
 * lease reads nothing: nobody else wrote while it held the partition (a
 * takeover it ends in joins with its own read). Every other trigger reads
 * the store. */
function rowsPolicy(cause: u32, facts: u32): u32 {
  if (cause == RecoveryCause.LeaseSettling) return RowsPolicy.Nothing;
  if (!trustsFacts(cause)) return RowsPolicy.FromStore;
  if ((facts & RecoveryFact.Leasing) == 0 || (facts & RecoveryFact.HeldSinceBeforeScan) != 0) {
    return (facts & RecoveryFact.InScan) != 0 ? RowsPolicy.FromScan : RowsPolicy.Nothing;
  }
  return nothingWritten(facts) ? RowsPolicy.Nothing : RowsPolicy.FromStore;
}

/** The durable queue is read with the rows: always for a trigger after
 * the open, else when the scan found messages queued, or under a lease
 * someone may have written under before; never for the settling of this
 * process's own lease (nothing moved). */
function readsQueue(cause: u32, facts: u32): bool {
  if (cause == RecoveryCause.LeaseSettling) return false;
  if (!trustsFacts(cause)) return true;
  if ((facts & RecoveryFact.QueuedAtOpen) != 0) return true;
  return (facts & RecoveryFact.Leasing) != 0 && !nothingWritten(facts);
}

/** The triggers whose facts say what to read: the others read the store. */
function trustsFacts(cause: u32): bool {
  return cause == RecoveryCause.OpenScan || cause == RecoveryCause.FirstUse || cause == RecoveryCause.PartitionTaken || cause == RecoveryCause.Moved;
}

function nothingWritten(facts: u32): bool {
  const untouched = (facts & (RecoveryFact.PartitionScanned | RecoveryFact.LeaseEpochOne)) != 0;
  return untouched && (facts & (RecoveryFact.InScan | RecoveryFact.QueuedAtOpen)) == 0;
}

/** The recovery ended well: the gate and the inbox open, the queue is
 * read (when the recovery was to read it), and its head started when one
 * is due — the host reads the queue inside the recovery's pass, before it
 * reports the end, so the messages it found are counted by now. */
function becomeReady(agent: u32): void {
  const moved = moveConversation(agent, ConversationEvent.Recovered);
  assert(moved, "a recovering conversation may become ready");
  const readQueue = hasConversationFlag(agent, ConversationFlag.ReadQueue);
  const drain = inboxMayHoldDecisions(agent);
  setConversationCause(agent, 0);
  setConversationFailures(agent, 0);
  setConversationFlag(agent, ConversationFlag.ReadQueue, false);
  emit(EffectKind.OpenAdmissions, agent);
  openInbox(agent, drain);
  if (readQueue) emit(EffectKind.RestoreQueue, agent);
  startHeadIfDue(agent);
}

/** Whether decisions may wait for a conversation becoming ready, so its
 * inbox is claimed at once: an execution it recovered suspended holds its
 * admission, or its inbox was closed (the lease changed hands) and not
 * by a first recovery. A first use finding nothing suspended claims
 * nothing now (docs/decisions/0024: no claim per conversation used), nor
 * does a recovery of a conversation whose inbox stayed open (what is
 * filed meanwhile woke it). */
function inboxMayHoldDecisions(agent: u32): bool {
  if (agentAdmission(agent) == AdmissionState.Suspended) return true;
  if (hasConversationFlag(agent, ConversationFlag.InboxOpen)) return false;
  const cause = conversationCause(agent);
  return cause != RecoveryCause.OpenScan && cause != RecoveryCause.FirstUse && cause != RecoveryCause.Moved;
}

/** The inbox opens: every decision filed for the conversation is claimed
 * here; `drain`: claim now. */
function openInbox(agent: u32, drain: bool): void {
  setConversationFlag(agent, ConversationFlag.InboxOpen, true);
  emit(EffectKind.OpenInbox, agent, drain ? 1 : 0);
}

/** The inbox closes, if open: decisions filed for the conversation wait
 * (a claim the host holds of the epoch before is claimed again later). */
export function closeInbox(agent: u32): void {
  if (!hasConversationFlag(agent, ConversationFlag.InboxOpen)) return;
  setConversationFlag(agent, ConversationFlag.InboxOpen, false);
  emit(EffectKind.CloseInbox, agent);
}

/** The callers of the execution holding the admission follow it to the
 * owner when it is parked here: suspended (status, not admission: a
 * decision or a cancel being committed on it keeps it suspended until the
 * store answers, and that write is fenced now) or held for recovery.
 * Nothing here would tell them when it moves on. One that runs keeps its
 * callers: its next write is fenced and tells them at once (0010). The
 * admission table holds one execution per conversation, so there is at
 * most one; an admission held for recovery with no execution bound (a
 * preparation whose outcome was not read back) has no callers. Every
 * report, not only the first: a suspension that lands after the first
 * report is followed by the next. */
function followParked(agent: u32): void {
  const executionPlusOne = agentExecutionPlusOne(agent);
  if (executionPlusOne == 0) return;
  const exec = executionPlusOne - 1;
  const held = agentAdmission(agent) == AdmissionState.RecoveryRequired;
  if (!held && executionStatus(exec) != ExecutionStatus.Suspended) return;
  emit(EffectKind.FollowAdmitted, exec, executionGeneration(exec));
}

/** The finish of the recovery `ConversationOwned(elsewhere)` abandoned:
 * its pass ended, so the head may start again (if due). Not the running
 * recovery's own finish (an epoch counted round to the same number). */
function abandonedPassEnded(agent: u32, epoch: u32): bool {
  if (epoch == 0 || abandonedEpoch(agent) != epoch) return false;
  if (conversationPhase(agent) == ConversationPhase.Recovering && recoveryEpoch(agent) == epoch) return false;
  setAbandonedEpoch(agent, 0);
  startHeadIfDue(agent);
  return true;
}

/** The pin a registration's report decides (`OwnerFact`): owned
 * elsewhere then — the store keeps asking for its lease and takes it
 * over, recovering it here — or defined by id: one conversation per
 * definition, kept while defined (registering it again around every run
 * cost a first use per run). Lifted by `SetPinned(0)` (`agent.release()`). */
function pinnedAtRegistration(here: bool, facts: u32): bool {
  return !here || (facts & OwnerFact.DefinedById) != 0;
}

function forgetRecovery(agent: u32): void {
  setConversationCause(agent, 0);
  setConversationFlag(agent, ConversationFlag.HeldForStart, false);
  setConversationFlag(agent, ConversationFlag.RecoverAgain, false);
  setConversationFlag(agent, ConversationFlag.ReadQueue, false);
}

/** Emits `StartHead` when a head waits, the conversation is ready, no
 * execution holds its admission, no head is starting, and no abandoned
 * recovery's pass still runs. */
export function startHeadIfDue(agent: u32): bool {
  if (conversationPhase(agent) != ConversationPhase.Ready || queuedMessages(agent) == 0) return false;
  if (abandonedEpoch(agent) != 0) return false;
  if (agentAdmission(agent) != AdmissionState.None || headStarting(agent)) return false;
  emit(EffectKind.StartHead, agent);
  return true;
}

/** Lets an idle conversation go: nobody uses it, it is not pinned, no
 * message waits, no execution holds its admission, and it is ready or
 * owned elsewhere (the table's `idle` entries): its next use registers it
 * again. A held one stays: its retry is what recovers it. */
function releaseIfIdle(agent: u32): void {
  if (conversationUsers(agent) != 0 || hasConversationFlag(agent, ConversationFlag.Pinned)) return;
  if (queuedMessages(agent) != 0 || headStarting(agent) || agentAdmission(agent) != AdmissionState.None) return;
  if (!moveConversation(agent, ConversationEvent.Idle)) return;
  emit(EffectKind.ReleaseConversation, agent, agentGeneration(agent));
}
