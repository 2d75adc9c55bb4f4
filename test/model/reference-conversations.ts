// The reference model of the conversation lifecycle (docs/decisions/0062),
// part of the reference core (`reference-core.ts`), which owns the agent
// records and hands this part what it needs. Written to be obviously right:
// the conversation table is a list of rows searched by linear scan, the
// admission decision is an ordered list of rules (the first that matches
// wins), records are plain objects. It follows docs/core.md and
// `assembly/abi.ts`, not the core's source.

import {
  AdmissionFact,
  AdmissionSource,
  AdmissionState,
  AdmissionVerdict,
  AgentLifecycle,
  BusyPolicy,
  ConversationEvent as Ev,
  ConversationFlag,
  ConversationPhase as P,
  EffectKind,
  ExecutionStatus,
  HeadOutcome,
  HoldCause,
  Limit,
  MessageKind,
  OwnerFact,
  Ownership,
  StartAnswer,
  QueuedRunVerdict,
  RecoveryCause,
  RecoveryFact,
  RecoveryFactMask,
  RecoveryOutcome,
  ResultCode,
  RowsPolicy,
} from "../../assembly/abi.js";
import type { ConversationRecordView } from "../../host/core/machine.js";

/** The conversation table: every defined `(phase, event) → next`. */
const CONVERSATION_TABLE: readonly { readonly phase: P; readonly event: Ev; readonly next: P }[] = [
  { phase: P.Registering, event: Ev.OwnedHere, next: P.Registering },
  { phase: P.Registering, event: Ev.OwnedElsewhere, next: P.OwnedElsewhere },
  { phase: P.Registering, event: Ev.RecoveryRequested, next: P.Recovering },
  { phase: P.Registering, event: Ev.Used, next: P.Registering },
  { phase: P.Recovering, event: Ev.OwnedHere, next: P.Recovering },
  { phase: P.Recovering, event: Ev.OwnedElsewhere, next: P.OwnedElsewhere },
  { phase: P.Recovering, event: Ev.RecoveryRequested, next: P.Recovering },
  { phase: P.Recovering, event: Ev.Recovered, next: P.Ready },
  { phase: P.Recovering, event: Ev.RecoveryFailed, next: P.Held },
  { phase: P.Recovering, event: Ev.Used, next: P.Recovering },
  { phase: P.Ready, event: Ev.OwnedHere, next: P.Ready },
  { phase: P.Ready, event: Ev.OwnedElsewhere, next: P.OwnedElsewhere },
  { phase: P.Ready, event: Ev.RecoveryRequested, next: P.Recovering },
  { phase: P.Ready, event: Ev.Held, next: P.Held },
  { phase: P.Ready, event: Ev.Idle, next: P.Releasing },
  { phase: P.Ready, event: Ev.Used, next: P.Ready },
  { phase: P.Held, event: Ev.OwnedHere, next: P.Held },
  { phase: P.Held, event: Ev.OwnedElsewhere, next: P.OwnedElsewhere },
  { phase: P.Held, event: Ev.RecoveryRequested, next: P.Recovering },
  { phase: P.Held, event: Ev.Used, next: P.Held },
  { phase: P.OwnedElsewhere, event: Ev.OwnedHere, next: P.Registering },
  { phase: P.OwnedElsewhere, event: Ev.OwnedElsewhere, next: P.OwnedElsewhere },
  { phase: P.OwnedElsewhere, event: Ev.RecoveryRequested, next: P.Recovering },
  { phase: P.OwnedElsewhere, event: Ev.Idle, next: P.Releasing },
  { phase: P.OwnedElsewhere, event: Ev.Used, next: P.OwnedElsewhere },
  { phase: P.Releasing, event: Ev.OwnedHere, next: P.Releasing },
  { phase: P.Releasing, event: Ev.OwnedElsewhere, next: P.OwnedElsewhere },
  { phase: P.Releasing, event: Ev.RecoveryRequested, next: P.Recovering },
  { phase: P.Releasing, event: Ev.Used, next: P.Ready },
];

/** The table's next phase, or undefined for an undefined pair. */
export function conversationNextOf(phase: number, event: number): P | undefined {
  return CONVERSATION_TABLE.find((row) => row.phase === phase && row.event === event)?.next;
}

/** Moves the conversation by the table. Releasing, it remembers whether
 * it was let go owned elsewhere (a takeover reported meanwhile forgets
 * it); any other phase forgets it. */
function enter(record: Conversation, event: Ev): void {
  const releasing = conversationNextOf(record.phase, event) === P.Releasing;
  record.releasedElsewhere = releasing && event !== Ev.OwnedHere && (record.phase === P.OwnedElsewhere || record.releasedElsewhere);
  record.phase = conversationNextOf(record.phase, event)!;
}

/** The phases in which a start is answered `WaitUntilReady`. */
function startsWaitIn(phase: number): boolean {
  return phase === P.Registering || phase === P.Recovering;
}

/** What an admission depends on. */
export interface AdmissionFacts {
  readonly phase: number;
  readonly source: number;
  readonly policy: number;
  readonly closed: boolean;
  readonly admissionHeld: boolean;
  readonly queued: boolean;
  readonly headStarting: boolean;
  readonly queueKept: boolean;
  readonly recoveryHeld: boolean;
  /** A start made here can be filed for the owner (`AdmissionFact.CanFile`). */
  readonly canFile: boolean;
  /** The store may move the conversation here (`AdmissionFact.CanTakeHere`, decision 0101). */
  readonly canTakeHere: boolean;
}

/** The admission rules, in order: the first that matches decides. */
const ADMISSION_RULES: readonly { readonly when: (facts: AdmissionFacts) => boolean; readonly verdict: AdmissionVerdict }[] = [
  { when: (f) => f.source === AdmissionSource.Resume && f.phase === P.OwnedElsewhere, verdict: AdmissionVerdict.FileForOwner },
  { when: (f) => f.source === AdmissionSource.Resume, verdict: AdmissionVerdict.RunHere },
  { when: (f) => f.closed, verdict: AdmissionVerdict.RefuseClosed },
  {
    when: (f) =>
      f.phase === P.OwnedElsewhere
      && f.source === AdmissionSource.Direct
      && f.canFile
      && f.canTakeHere
      && !f.admissionHeld
      && !f.recoveryHeld
      && !f.queued
      && !f.headStarting,
    verdict: AdmissionVerdict.TakeHere,
  },
  {
    when: (f) => f.phase === P.OwnedElsewhere && (f.source === AdmissionSource.Direct || f.source === AdmissionSource.Retry) && f.canFile,
    verdict: AdmissionVerdict.FileForOwner,
  },
  {
    when: (f) => f.phase === P.OwnedElsewhere && (f.source === AdmissionSource.Direct || f.source === AdmissionSource.Retry),
    verdict: AdmissionVerdict.RefuseOwnedElsewhere,
  },
  { when: (f) => f.phase === P.OwnedElsewhere && f.source === AdmissionSource.Filed, verdict: AdmissionVerdict.LeaveFiled },
  { when: (f) => f.source === AdmissionSource.QueueHead && f.phase === P.Ready && !f.admissionHeld && !f.headStarting, verdict: AdmissionVerdict.RunHere },
  { when: (f) => f.source === AdmissionSource.QueueHead, verdict: AdmissionVerdict.StayQueued },
  { when: (f) => f.phase === P.Held, verdict: AdmissionVerdict.RefuseHeld },
  { when: (f) => f.phase !== P.Ready, verdict: AdmissionVerdict.WaitUntilReady },
  { when: (f) => f.recoveryHeld && !f.queued, verdict: AdmissionVerdict.RefuseHeld },
  { when: (f) => !f.admissionHeld && !f.queued && !f.headStarting, verdict: AdmissionVerdict.RunHere },
  { when: (f) => f.policy === BusyPolicy.Reject, verdict: AdmissionVerdict.RefuseBusy },
  { when: (f) => !f.queueKept, verdict: AdmissionVerdict.RefuseNoQueue },
  { when: (f) => f.policy === BusyPolicy.Enqueue, verdict: AdmissionVerdict.EnqueueBack },
  { when: () => true, verdict: AdmissionVerdict.EnqueueFront },
];

export function admissionVerdictFor(facts: AdmissionFacts): AdmissionVerdict {
  return ADMISSION_RULES.find((rule) => rule.when(facts))!.verdict;
}

/** What an operation by execution id depends on (docs/decisions/0062, "By id"). */
export interface ByIdFacts {
  readonly source: number;
  readonly visitor: boolean;
  readonly leasing: boolean;
  readonly heldHere: boolean;
  readonly heldElsewhere: boolean;
  readonly inboxKept: boolean;
  readonly conversationHere: boolean;
}

/** Another process runs the conversation. */
const runsElsewhere = (f: ByIdFacts): boolean => f.visitor || (f.leasing && !f.heldHere);

/** The by-id rules, in order: the first that matches decides. */
const BY_ID_RULES: readonly { readonly when: (facts: ByIdFacts) => boolean; readonly verdict: AdmissionVerdict }[] = [
  { when: (f) => (f.heldHere || f.heldElsewhere) && !f.leasing, verdict: AdmissionVerdict.None },
  { when: (f) => f.heldHere && f.heldElsewhere, verdict: AdmissionVerdict.None },
  { when: (f) => f.source === AdmissionSource.Observe && runsElsewhere(f), verdict: AdmissionVerdict.FileForOwner },
  { when: (f) => f.source === AdmissionSource.Observe, verdict: AdmissionVerdict.RunHere },
  { when: (f) => f.source === AdmissionSource.Cancel && runsElsewhere(f) && f.inboxKept, verdict: AdmissionVerdict.FileForOwner },
  { when: (f) => f.source === AdmissionSource.Cancel && f.conversationHere, verdict: AdmissionVerdict.RefuseNotInstalled },
  { when: (f) => f.source === AdmissionSource.Cancel, verdict: AdmissionVerdict.RunHere },
  { when: (f) => f.source === AdmissionSource.Resume && f.conversationHere, verdict: AdmissionVerdict.RunHere },
  { when: (f) => f.source === AdmissionSource.Resume && runsElsewhere(f) && f.inboxKept, verdict: AdmissionVerdict.FileForOwner },
  { when: (f) => f.source === AdmissionSource.Resume, verdict: AdmissionVerdict.RefuseNotDefined },
  { when: (f) => f.source === AdmissionSource.Retry && f.visitor && f.inboxKept, verdict: AdmissionVerdict.FileForOwner },
  {
    when: (f) => f.source === AdmissionSource.Retry && !f.visitor && f.leasing && !f.heldHere && f.heldElsewhere && f.inboxKept,
    verdict: AdmissionVerdict.FileForOwner,
  },
  { when: (f) => f.source === AdmissionSource.Retry && !f.visitor && f.leasing && !f.heldHere, verdict: AdmissionVerdict.RefuseOwnedElsewhere },
  { when: (f) => f.source === AdmissionSource.Retry && f.conversationHere, verdict: AdmissionVerdict.RunHere },
  { when: (f) => f.source === AdmissionSource.Retry, verdict: AdmissionVerdict.RefuseNotDefined },
  { when: () => true, verdict: AdmissionVerdict.None },
];

export function byIdVerdictFor(facts: ByIdFacts): AdmissionVerdict {
  return BY_ID_RULES.find((rule) => rule.when(facts))!.verdict;
}

/** A message taken from the durable queue whose Run failed before it ran
 * (docs/decisions/0062, "A failed queued Run"): only a refusal for good
 * writes it terminal; every failure whose outcome is not known here, or
 * that is for now, leaves it queued in the store. */
/** Start answers that leave a queued message queued (0062, 0063, 0096):
 * refused for now (busy, whatever the reason), the outcome not known (the
 * store or the core failed, a rehydration first), the process stopping,
 * its id another start's. A full bound, an internal error and any other
 * refusal write it terminal. */
const KEEP_QUEUED: readonly StartAnswer[] = [
  StartAnswer.BusyByPolicy,
  StartAnswer.LeaseNotHeld,
  StartAnswer.BusyHeld,
  StartAnswer.StoreFailed,
  StartAnswer.CoreFailed,
  StartAnswer.RehydrationRequired,
  StartAnswer.Stopping,
  StartAnswer.ExecutionExists,
];
const WRITE_TERMINAL: readonly StartAnswer[] = [StartAnswer.Full, StartAnswer.Internal, StartAnswer.Refused];

export function queuedRunVerdictFor(answer: number): QueuedRunVerdict {
  if (KEEP_QUEUED.includes(answer)) return QueuedRunVerdict.KeepQueued;
  return WRITE_TERMINAL.includes(answer) ? QueuedRunVerdict.WriteTerminal : QueuedRunVerdict.None;
}

interface Conversation {
  recoveryEpoch: number;
  users: number;
  queued: number;
  phase: number;
  cause: number;
  pinned: boolean;
  headStarting: boolean;
  recoverAgain: boolean;
  readQueue: boolean;
  /** Releasing, let go while owned elsewhere: used again, it is that again. */
  releasedElsewhere: boolean;
  /** A hold is retried after the backoff, else it waits for env.recover(). */
  retriesHeld: boolean;
  /** Every decision filed for it is claimed here (`OpenInbox`..`CloseInbox`). */
  inboxOpen: boolean;
  /** Held for a start being prepared here: retried at once when the admission is released (0140). */
  heldForStart: boolean;
  failures: number;
  /** A recovery left by `ConversationOwned(elsewhere)` whose pass has not
   * reported its end (0: none): no head starts until it does. */
  abandonedEpoch: number;
}

/** What the reference core lends this part. */
export interface ConversationHost {
  emit(kind: EffectKind, a?: number, b?: number, c?: number, d?: number): void;
  drop(kind: MessageKind, code: ResultCode): ResultCode;
  refuse(request: number, code: ResultCode): ResultCode;
  checkAgent(slot: number, generation: number): ResultCode;
  agent(slot: number): { readonly generation: number; readonly admissionState: number; readonly lifecycle: number };
  /** The execution bound to the agent's admission, if one is. */
  admittedExecution(slot: number): { readonly slot: number; readonly generation: number; readonly status: number; readonly inFlight: number } | undefined;
}

const RECOVERY_CAUSES_WITH_NEW_FACTS = [RecoveryCause.LeaseTakeover, RecoveryCause.PartitionTaken, RecoveryCause.Retake, RecoveryCause.FencedWrite];

function emptyConversation(): Conversation {
  return {
    recoveryEpoch: 0,
    users: 0,
    queued: 0,
    phase: P.None,
    cause: 0,
    pinned: false,
    headStarting: false,
    recoverAgain: false,
    readQueue: false,
    releasedElsewhere: false,
    retriesHeld: false,
    inboxOpen: false,
    heldForStart: false,
    failures: 0,
    abandonedEpoch: 0,
  };
}

/** The one backoff: 250 ms doubling up to 5 s. */
export function retryDelayFor(failures: number): number {
  return Math.min(Limit.RetryMsMax, Limit.RetryMsFirst * 2 ** Math.min(failures - 1, 16));
}

export class ReferenceConversations {
  /** Index = agent slot. */
  private readonly records: Conversation[] = [];

  constructor(private readonly host: ConversationHost) {}

  /** A newly allocated agent slot (registering). */
  opened(slot: number): void {
    this.records[slot] = { ...emptyConversation(), phase: P.Registering };
  }

  /** A freed agent slot (all zero). */
  freed(slot: number): void {
    this.records[slot] = emptyConversation();
  }

  /** PurgeAgent frees the slot: an open inbox closes first. */
  purged(slot: number): void {
    this.closeInbox(slot);
  }

  /** PurgeAgent's extra refusal. */
  inUse(slot: number): boolean {
    const record = this.at(slot);
    return record.users > 0 || record.queued > 0 || record.headStarting;
  }

  /** Ready, no use, nothing queued, no head starting: the conversation's
   * part of the core's `conversationAtRest`. */
  readyAndUnused(slot: number): boolean {
    const record = this.records[slot];
    return record !== undefined && record.phase === P.Ready && record.users === 0 && record.queued === 0 && !record.headStarting;
  }

  views(count: number): ConversationRecordView[] {
    return Array.from({ length: count }, (_unused, slot) => {
      const record = this.records[slot] ?? emptyConversation();
      const flags =
        (record.pinned ? ConversationFlag.Pinned : 0)
        | (record.headStarting ? ConversationFlag.HeadStarting : 0)
        | (record.recoverAgain ? ConversationFlag.RecoverAgain : 0)
        | (record.readQueue ? ConversationFlag.ReadQueue : 0)
        | (record.releasedElsewhere ? ConversationFlag.ReleasedElsewhere : 0)
        | (record.retriesHeld ? ConversationFlag.RetriesHeld : 0)
        | (record.inboxOpen ? ConversationFlag.InboxOpen : 0)
        | (record.heldForStart ? ConversationFlag.HeldForStart : 0);
      return {
        slot,
        recoveryEpoch: record.recoveryEpoch,
        users: record.users,
        queued: record.queued,
        phase: record.phase,
        cause: record.cause,
        flags,
        failures: record.failures,
        abandonedEpoch: record.abandonedEpoch,
      };
    });
  }

  apply(kind: number, a: number, b: number, c: number, d: number, e: number, f: number, g: number): ResultCode | undefined {
    switch (kind) {
      case MessageKind.ConversationOwned:
        return this.owned(a, b, c, d);
      case MessageKind.RecoveryRequested:
        return this.recoveryRequested(a, b, c, d);
      case MessageKind.RecoveryFinished:
        return this.recoveryFinished(a, b, c, d, e);
      case MessageKind.UseBegin:
        return this.useBegin(a, b);
      case MessageKind.UseEnd:
        return this.useEnd(a, b);
      case MessageKind.SetPinned:
        return this.setPinned(a, b, c);
      case MessageKind.Admit:
        return this.admit(a, b, c, d, e, f, g);
      case MessageKind.MessageQueued:
        return this.messageQueued(a, b, c);
      case MessageKind.MessageLeft:
        return this.messageLeft(a, b);
      case MessageKind.HeadSettled:
        return this.headSettled(a, b, c, d);
      case MessageKind.AdmissionReleased:
        return this.admissionReleased(a, b);
      case MessageKind.ConversationHeld:
        return this.held(a, b, c);
      case MessageKind.MessageWritten:
        return this.messageWritten(a, b);
      case MessageKind.HeadRetryDue:
        return this.headRetryDue(a, b);
      case MessageKind.RetryDue:
        return this.retryDue(a, b, c, d);
      case MessageKind.ConversationRetaken:
        return this.retaken(a, b, c);
      default:
        return undefined;
    }
  }

  // --- messages -------------------------------------------------------------

  private owned(slot: number, generation: number, ownership: number, facts: number): ResultCode {
    const K = MessageKind.ConversationOwned;
    const code = this.host.checkAgent(slot, generation);
    if (code !== ResultCode.Ok) return this.host.drop(K, code);
    if (ownership !== Ownership.Here && ownership !== Ownership.Elsewhere) return this.host.drop(K, ResultCode.ArgumentOutOfRange);
    if (facts < 0 || facts > OwnerFact.DefinedById) return this.host.drop(K, ResultCode.ArgumentOutOfRange);
    const record = this.at(slot);
    const event = ownership === Ownership.Here ? Ev.OwnedHere : Ev.OwnedElsewhere;
    if (conversationNextOf(record.phase, event) === undefined) return this.host.drop(K, ResultCode.ConversationPhaseMustMatch);
    const wasRegistering = record.phase === P.Registering;
    if (ownership === Ownership.Elsewhere) {
      this.ownedElsewhere(slot);
      return ResultCode.Ok;
    }
    this.enter(slot, record, event);
    // Kept registered when idle: defined by id (owned elsewhere: always).
    if (wasRegistering && (facts & OwnerFact.DefinedById) !== 0) record.pinned = true;
    return ResultCode.Ok;
  }

  /** The store says another process (or nobody) holds the conversation
   * (the caller checked the table has an entry). */
  private ownedElsewhere(slot: number): void {
    const record = this.at(slot);
    const wasRecovering = record.phase === P.Recovering;
    // Kept registered when idle: owned elsewhere at registration.
    if (record.phase === P.Registering) record.pinned = true;
    this.enter(slot, record, Ev.OwnedElsewhere);
    this.closeInbox(slot);
    // The recovery under way is abandoned; its pass runs on until it
    // reports its finish, and no head starts before that.
    if (wasRecovering) record.abandonedEpoch = record.recoveryEpoch;
    record.cause = 0;
    record.heldForStart = false;
    record.recoverAgain = false;
    record.readQueue = false;
    // The callers of the messages queued here follow them to the owner;
    // the messages stay counted (queued in the store, run here first if
    // the conversation comes back).
    if (record.queued > 0) this.host.emit(EffectKind.FollowQueued, slot, record.queued);
    this.followParked(slot);
  }

  /** The callers of the execution holding the admission follow it to the
   * owner when it is parked here: suspended (whatever commit is under way
   * on it) or held for recovery. One running here keeps them. */
  private followParked(slot: number): void {
    const execution = this.host.admittedExecution(slot);
    if (execution === undefined) return;
    const held = this.host.agent(slot).admissionState === AdmissionState.RecoveryRequired;
    if (held || execution.status === ExecutionStatus.Suspended) this.host.emit(EffectKind.FollowAdmitted, execution.slot, execution.generation);
  }

  /** Taken back (a retake on demand, a start that found the store holding
   * a conversation recorded owned elsewhere, a fenced write's retake): a
   * recovery of that cause is due when an execution bound to the
   * admission is held `recovery_required`, or the conversation is
   * recorded owned elsewhere. */
  private retaken(slot: number, generation: number, cause: number): ResultCode {
    const K = MessageKind.ConversationRetaken;
    const code = this.host.checkAgent(slot, generation);
    if (code !== ResultCode.Ok) return this.host.drop(K, code);
    if (cause !== RecoveryCause.Retake && cause !== RecoveryCause.FencedWrite && cause !== RecoveryCause.Moved)
      return this.host.drop(K, ResultCode.ArgumentOutOfRange);
    const held = this.host.agent(slot).admissionState === AdmissionState.RecoveryRequired && this.host.admittedExecution(slot) !== undefined;
    if (held || this.at(slot).phase === P.OwnedElsewhere) this.host.emit(EffectKind.RecoveryDue, slot, cause);
    return ResultCode.Ok;
  }

  /** A hold's retry is due: still held at that epoch, its recovery begins
   * with the cause the hold names. */
  private retryDue(slot: number, generation: number, epoch: number, facts: number): ResultCode {
    const K = MessageKind.RetryDue;
    const code = this.host.checkAgent(slot, generation);
    if (code !== ResultCode.Ok) return this.host.drop(K, code);
    if ((facts & ~RecoveryFactMask.All) !== 0) return this.host.drop(K, ResultCode.ArgumentOutOfRange);
    const record = this.at(slot);
    if (record.phase !== P.Held) return this.host.drop(K, ResultCode.ConversationPhaseMustMatch);
    if (record.recoveryEpoch !== epoch) return this.host.drop(K, ResultCode.RecoveryEpochMustMatch);
    const causes: Readonly<Record<number, RecoveryCause>> = {
      [HoldCause.StoreFault]: RecoveryCause.HealAfterStoreFault,
      [HoldCause.OutcomeUnknown]: RecoveryCause.HealAfterStoreFault,
      [HoldCause.NotQuiescent]: RecoveryCause.SessionSettling,
      [HoldCause.LeaseLapsed]: RecoveryCause.Retry,
    };
    return this.recoveryRequested(slot, generation, causes[record.cause] ?? RecoveryCause.Retry, facts);
  }

  private recoveryRequested(slot: number, generation: number, cause: number, facts: number): ResultCode {
    const K = MessageKind.RecoveryRequested;
    const code = this.host.checkAgent(slot, generation);
    if (code !== ResultCode.Ok) return this.host.drop(K, code);
    if (cause < RecoveryCause.OpenScan || cause > RecoveryCause.Moved || (facts & ~RecoveryFactMask.All) !== 0)
      return this.host.drop(K, ResultCode.ArgumentOutOfRange);
    // env.recover() of a conversation whose lease another process holds (or nobody does): refused.
    if (cause === RecoveryCause.RecoverCalled && (facts & RecoveryFact.LeaseNotHeldHere) !== 0) return this.host.drop(K, ResultCode.LeaseNotHeldHere);
    const record = this.at(slot);
    const newFacts = RECOVERY_CAUSES_WITH_NEW_FACTS.includes(cause);
    if (record.phase === P.Recovering) {
      if (newFacts) record.recoverAgain = true;
      this.host.emit(EffectKind.RecoveryJoined, slot, record.recoveryEpoch);
    } else {
      if (conversationNextOf(record.phase, Ev.RecoveryRequested) === undefined) return this.host.drop(K, ResultCode.ConversationPhaseMustMatch);
      this.enter(slot, record, Ev.RecoveryRequested);
      // Holds retry by themselves only on a leasing store where recovery runs by itself.
      record.retriesHeld = (facts & RecoveryFact.Leasing) !== 0 && (facts & RecoveryFact.RecoversByItself) !== 0;
      this.beginRecovery(slot, cause, facts);
    }
    // The lease changed hands: decisions wait for this recovery's end.
    if (newFacts) this.closeInbox(slot);
    return ResultCode.Ok;
  }

  private recoveryFinished(slot: number, generation: number, epoch: number, outcome: number, facts: number): ResultCode {
    const K = MessageKind.RecoveryFinished;
    const code = this.host.checkAgent(slot, generation);
    if (code !== ResultCode.Ok) return this.host.drop(K, code);
    if (outcome < RecoveryOutcome.Recovered || outcome > RecoveryOutcome.LeaseLapsed) return this.host.drop(K, ResultCode.ArgumentOutOfRange);
    if (facts !== 0 && facts !== RecoveryFact.StartPreparingHere) return this.host.drop(K, ResultCode.ArgumentOutOfRange);
    const record = this.at(slot);
    const running = record.phase === P.Recovering && record.recoveryEpoch === epoch;
    if (epoch !== 0 && record.abandonedEpoch === epoch && !running) {
      // The abandoned recovery's pass ended: heads may start again.
      record.abandonedEpoch = 0;
      this.startHeadIfDue(slot);
      return ResultCode.Ok;
    }
    if (record.phase !== P.Recovering) return this.host.drop(K, ResultCode.ConversationPhaseMustMatch);
    if (record.recoveryEpoch !== epoch) return this.host.drop(K, ResultCode.RecoveryEpochMustMatch);
    if (outcome !== RecoveryOutcome.Recovered) {
      const cause = [0, 0, HoldCause.StoreFault, HoldCause.OutcomeUnknown, HoldCause.NotQuiescent, HoldCause.LeaseLapsed][outcome]!;
      this.hold(slot, cause, Ev.RecoveryFailed);
    } else if (this.host.agent(slot).admissionState === AdmissionState.RecoveryRequired) {
      // Held still; for its abandoned session to settle while operations are in flight.
      const settling = (this.host.admittedExecution(slot)?.inFlight ?? 0) > 0;
      this.hold(slot, settling ? HoldCause.NotQuiescent : HoldCause.StoreFault, Ev.RecoveryFailed);
    } else if (facts === RecoveryFact.StartPreparingHere) {
      // A row left for a start still being prepared here: read again once
      // its admission is released (0140), else after the backoff.
      this.hold(slot, HoldCause.NotQuiescent, Ev.RecoveryFailed);
      record.heldForStart = true;
    } else if (record.recoverAgain) {
      this.beginRecovery(slot, RecoveryCause.Retry, 0);
    } else {
      this.enter(slot, record, Ev.Recovered);
      // Claimed at once when decisions may wait: something recovered
      // suspended, or the inbox was closed by a takeover (not a first use).
      const suspended = this.host.agent(slot).admissionState === AdmissionState.Suspended;
      // A conversation moved here (decision 0101) had nothing anywhere: nothing waits in its inbox.
      const firstUse = record.cause === RecoveryCause.OpenScan || record.cause === RecoveryCause.FirstUse || record.cause === RecoveryCause.Moved;
      const drain = suspended || (!record.inboxOpen && !firstUse);
      record.cause = 0;
      record.failures = 0;
      const readQueue = record.readQueue;
      record.readQueue = false;
      this.host.emit(EffectKind.OpenAdmissions, slot);
      this.openInbox(slot, drain);
      if (readQueue) this.host.emit(EffectKind.RestoreQueue, slot);
      this.startHeadIfDue(slot);
    }
    return ResultCode.Ok;
  }

  private held(slot: number, generation: number, cause: number): ResultCode {
    const K = MessageKind.ConversationHeld;
    const code = this.host.checkAgent(slot, generation);
    if (code !== ResultCode.Ok) return this.host.drop(K, code);
    if (cause < HoldCause.StoreFault || cause > HoldCause.LeaseLapsed) return this.host.drop(K, ResultCode.ArgumentOutOfRange);
    if (conversationNextOf(this.at(slot).phase, Ev.Held) === undefined) return this.host.drop(K, ResultCode.ConversationPhaseMustMatch);
    this.hold(slot, cause, Ev.Held);
    return ResultCode.Ok;
  }

  private useBegin(slot: number, generation: number): ResultCode {
    const K = MessageKind.UseBegin;
    const code = this.host.checkAgent(slot, generation);
    if (code !== ResultCode.Ok) return this.host.drop(K, code);
    const record = this.at(slot);
    if (record.users >= Limit.ConversationUsersMax) return this.host.drop(K, ResultCode.ConversationUsersFull);
    record.users += 1;
    const { releasedElsewhere } = record;
    this.enter(slot, record, Ev.Used);
    if (releasedElsewhere) record.phase = P.OwnedElsewhere;
    return ResultCode.Ok;
  }

  private useEnd(slot: number, generation: number): ResultCode {
    const K = MessageKind.UseEnd;
    const code = this.host.checkAgent(slot, generation);
    if (code !== ResultCode.Ok) return this.host.drop(K, code);
    const record = this.at(slot);
    if (record.users === 0) return this.host.drop(K, ResultCode.ConversationUsersUnderflow);
    record.users -= 1;
    this.releaseIfIdle(slot);
    return ResultCode.Ok;
  }

  private setPinned(slot: number, generation: number, pinned: number): ResultCode {
    const K = MessageKind.SetPinned;
    const code = this.host.checkAgent(slot, generation);
    if (code !== ResultCode.Ok) return this.host.drop(K, code);
    if (pinned !== 0 && pinned !== 1) return this.host.drop(K, ResultCode.ArgumentOutOfRange);
    this.at(slot).pinned = pinned === 1;
    if (pinned === 0) this.releaseIfIdle(slot);
    return ResultCode.Ok;
  }

  private admissionReleased(slot: number, generation: number): ResultCode {
    const code = this.host.checkAgent(slot, generation);
    if (code !== ResultCode.Ok) return this.host.drop(MessageKind.AdmissionReleased, code);
    const record = this.at(slot);
    if (record.phase === P.Held && record.heldForStart && this.host.agent(slot).admissionState === AdmissionState.None) {
      record.heldForStart = false;
      if (record.retriesHeld) this.host.emit(EffectKind.RetryAfter, slot, record.recoveryEpoch, 0);
    }
    this.startHeadOrRelease(slot);
    return ResultCode.Ok;
  }

  private admit(slot: number, generation: number, request: number, source: number, policy: number, facts: number, waiting: number): ResultCode {
    const code = this.host.checkAgent(slot, generation);
    if (code !== ResultCode.Ok) return this.host.refuse(request, code);
    const sourceKnown = (source >= AdmissionSource.Direct && source <= AdmissionSource.Filed) || source === AdmissionSource.Retry;
    const policyKnown = policy >= BusyPolicy.Reject && policy <= BusyPolicy.Interrupt;
    if (!sourceKnown || !policyKnown || facts < 0 || facts >= AdmissionFact.End) return this.host.refuse(request, ResultCode.ArgumentOutOfRange);
    const record = this.at(slot);
    if (source === AdmissionSource.QueueHead && record.queued === 0) return this.host.refuse(request, ResultCode.QueueEmpty);
    const agent = this.host.agent(slot);
    const admissionHeld = agent.admissionState !== AdmissionState.None;
    const tableVerdict = admissionVerdictFor({
      phase: record.phase,
      source,
      policy,
      closed: agent.lifecycle === AgentLifecycle.Closed,
      admissionHeld,
      queued: record.queued > 0,
      headStarting: record.headStarting,
      queueKept: (facts & AdmissionFact.QueueKept) !== 0,
      recoveryHeld: agent.admissionState === AdmissionState.RecoveryRequired,
      canFile: (facts & AdmissionFact.CanFile) !== 0,
      canTakeHere: (facts & AdmissionFact.CanTakeHere) !== 0,
    });
    // Too many starts wait on it already: refused as a held conversation refuses one.
    const full = tableVerdict === AdmissionVerdict.WaitUntilReady && waiting >= Limit.WaitingStartsMax;
    const verdict = full ? AdmissionVerdict.RefuseHeld : tableVerdict;
    const enqueues = verdict === AdmissionVerdict.EnqueueBack || verdict === AdmissionVerdict.EnqueueFront;
    if (enqueues && record.queued >= Limit.QueuedMax) return this.host.refuse(request, ResultCode.QueueFull);
    if (enqueues) record.queued += 1;
    if (verdict === AdmissionVerdict.RunHere && source === AdmissionSource.QueueHead) {
      record.queued -= 1;
      record.headStarting = true;
    }
    const interrupt = verdict === AdmissionVerdict.EnqueueFront && admissionHeld ? 1 : 0;
    this.host.emit(EffectKind.AdmissionDecided, request, verdict, slot, interrupt);
    return ResultCode.Ok;
  }

  private messageQueued(slot: number, generation: number, count: number): ResultCode {
    const K = MessageKind.MessageQueued;
    const code = this.host.checkAgent(slot, generation);
    if (code !== ResultCode.Ok) return this.host.drop(K, code);
    if (count === 0 || count > Limit.QueuedMax) return this.host.drop(K, ResultCode.ArgumentOutOfRange);
    const record = this.at(slot);
    if (record.queued + count > Limit.QueuedMax) return this.host.drop(K, ResultCode.QueueFull);
    record.queued += count;
    this.startHeadIfDue(slot);
    return ResultCode.Ok;
  }

  private messageWritten(slot: number, generation: number): ResultCode {
    const K = MessageKind.MessageWritten;
    const code = this.host.checkAgent(slot, generation);
    if (code !== ResultCode.Ok) return this.host.drop(K, code);
    if (this.at(slot).queued === 0) return this.host.drop(K, ResultCode.QueueEmpty);
    this.startHeadIfDue(slot);
    return ResultCode.Ok;
  }

  private headRetryDue(slot: number, generation: number): ResultCode {
    const code = this.host.checkAgent(slot, generation);
    if (code !== ResultCode.Ok) return this.host.drop(MessageKind.HeadRetryDue, code);
    this.startHeadIfDue(slot);
    return ResultCode.Ok;
  }

  private messageLeft(slot: number, generation: number): ResultCode {
    const K = MessageKind.MessageLeft;
    const code = this.host.checkAgent(slot, generation);
    if (code !== ResultCode.Ok) return this.host.drop(K, code);
    const record = this.at(slot);
    if (record.queued === 0) return this.host.drop(K, ResultCode.QueueEmpty);
    record.queued -= 1;
    this.startHeadOrRelease(slot);
    return ResultCode.Ok;
  }

  private headSettled(slot: number, generation: number, outcome: number, ownership: number): ResultCode {
    const K = MessageKind.HeadSettled;
    const code = this.host.checkAgent(slot, generation);
    if (code !== ResultCode.Ok) return this.host.drop(K, code);
    const outcomes = [HeadOutcome.Left, HeadOutcome.StoreFailed, HeadOutcome.NotNow, HeadOutcome.ExecutionExists, HeadOutcome.Refused];
    if (!outcomes.includes(outcome) || ownership < 0 || ownership > Ownership.Elsewhere) return this.host.drop(K, ResultCode.ArgumentOutOfRange);
    const record = this.at(slot);
    if (!record.headStarting) return this.host.drop(K, ResultCode.HeadNotStarting);
    const kept = outcome === HeadOutcome.StoreFailed || outcome === HeadOutcome.NotNow;
    if (kept && record.queued >= Limit.QueuedMax) return this.host.drop(K, ResultCode.QueueFull);
    record.headStarting = false;
    if (!kept) {
      // It left (taken: its Run follows the execution prepared elsewhere).
      record.failures = 0;
      if (outcome === HeadOutcome.ExecutionExists) this.host.emit(EffectKind.HeadTaken, slot);
      this.startHeadOrRelease(slot);
      return ResultCode.Ok;
    }
    // Still queued in the store: the head again.
    record.queued += 1;
    this.host.emit(EffectKind.HeadKept, slot);
    if (ownership === Ownership.Elsewhere) {
      // Held elsewhere: as a report of that; it waits for the owner.
      this.ownedElsewhere(slot);
    } else if (record.phase === P.Ready) {
      record.failures = Math.min(255, record.failures + 1);
      this.host.emit(EffectKind.RetryHeadAfter, slot, retryDelayFor(record.failures));
    }
    // Not ready: no timer; the recovery's end offers it.
    return ResultCode.Ok;
  }

  // --- helpers --------------------------------------------------------------

  private at(slot: number): Conversation {
    const record = this.records[slot];
    if (record === undefined) throw new Error(`reference model bug: conversation ${slot} read unchecked`);
    return record;
  }

  /** READING: the epoch counts like a generation (+1, skipping 0). */
  private openInbox(slot: number, drain: boolean): void {
    this.at(slot).inboxOpen = true;
    this.host.emit(EffectKind.OpenInbox, slot, drain ? 1 : 0);
  }

  private closeInbox(slot: number): void {
    const record = this.at(slot);
    if (!record.inboxOpen) return;
    record.inboxOpen = false;
    this.host.emit(EffectKind.CloseInbox, slot);
  }

  private beginRecovery(slot: number, cause: number, facts: number): void {
    const record = this.at(slot);
    record.recoveryEpoch = record.recoveryEpoch === 0xffff_ffff ? 1 : record.recoveryEpoch + 1;
    record.cause = cause;
    record.heldForStart = false;
    record.recoverAgain = false;
    const has = (fact: RecoveryFact): boolean => (facts & fact) !== 0;
    const fromScan =
      cause === RecoveryCause.OpenScan || cause === RecoveryCause.FirstUse || cause === RecoveryCause.PartitionTaken || cause === RecoveryCause.Moved;
    const nothingWritten =
      (has(RecoveryFact.PartitionScanned) || has(RecoveryFact.LeaseEpochOne)) && !has(RecoveryFact.InScan) && !has(RecoveryFact.QueuedAtOpen);
    const settling = cause === RecoveryCause.LeaseSettling;
    let rows: RowsPolicy;
    if (settling) rows = RowsPolicy.Nothing;
    else if (!fromScan) rows = RowsPolicy.FromStore;
    else if (!has(RecoveryFact.Leasing) || has(RecoveryFact.HeldSinceBeforeScan)) rows = has(RecoveryFact.InScan) ? RowsPolicy.FromScan : RowsPolicy.Nothing;
    else rows = nothingWritten ? RowsPolicy.Nothing : RowsPolicy.FromStore;
    record.readQueue = !settling && (!fromScan || has(RecoveryFact.QueuedAtOpen) || (has(RecoveryFact.Leasing) && !nothingWritten));
    this.host.emit(EffectKind.ReadRows, slot, record.recoveryEpoch, rows, record.readQueue ? 1 : 0);
  }

  /** Moves the conversation; one that leaves registering or recovering
   * wakes the starts told to wait (`ReadinessChanged`). */
  private enter(slot: number, record: Conversation, event: Ev): void {
    const before = record.phase;
    enter(record, event);
    if (startsWaitIn(before) && !startsWaitIn(record.phase)) this.host.emit(EffectKind.ReadinessChanged, slot);
  }

  private hold(slot: number, cause: number, event: Ev): void {
    const record = this.at(slot);
    this.enter(slot, record, event);
    record.cause = cause;
    record.heldForStart = false;
    record.recoverAgain = false;
    record.readQueue = false;
    record.failures = Math.min(255, record.failures + 1);
    if (record.retriesHeld) this.host.emit(EffectKind.RetryAfter, slot, record.recoveryEpoch, retryDelayFor(record.failures));
  }

  private startHeadOrRelease(slot: number): void {
    if (!this.startHeadIfDue(slot)) this.releaseIfIdle(slot);
  }

  private startHeadIfDue(slot: number): boolean {
    const record = this.at(slot);
    const free = this.host.agent(slot).admissionState === AdmissionState.None;
    if (record.phase !== P.Ready || record.queued === 0 || !free || record.headStarting || record.abandonedEpoch !== 0) return false;
    this.host.emit(EffectKind.StartHead, slot);
    return true;
  }

  private releaseIfIdle(slot: number): void {
    const record = this.at(slot);
    const agent = this.host.agent(slot);
    const idle = record.users === 0 && !record.pinned && record.queued === 0 && !record.headStarting && agent.admissionState === AdmissionState.None;
    if (!idle || conversationNextOf(record.phase, Ev.Idle) === undefined) return;
    this.enter(slot, record, Ev.Idle);
    this.host.emit(EffectKind.ReleaseConversation, slot, agent.generation);
  }
}
