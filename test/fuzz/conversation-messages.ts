// The conversation lifecycle's messages for the differential fuzz
// (docs/decisions/0062), built from an intent and the conversation's record
// as the tables hold it now, so most of them are what a host would send in
// that phase: ownership, a recovery and its finish (sometimes of a stale
// epoch, sometimes duplicated), uses, the queue (a message written, a
// head's retry due), admissions, a retake on demand and an `env.recover()`
// of a conversation whose lease is not held here. One in
// about twenty is noise: a stale generation or an argument out of range.

import {
  AdmissionSource,
  ConversationFlag,
  ConversationPhase,
  HeadOutcome,
  MessageKind,
  Ownership,
  RecoveryCause,
  RecoveryCauseLimit,
  RecoveryFact,
  Limit,
  RecoveryOutcome,
} from "../../assembly/abi.js";
import type { ConversationRecordView } from "../../host/core/machine.js";
import type { Intent, Message } from "./message-stream.js";

interface Handle {
  readonly slot: number;
  readonly generation: number;
}

/** How many queued messages the streams let pile up: enough for a queue
 * with a head and a message behind it, few enough that purges succeed. */
const QUEUED_STREAM_MAX = 3;

export function conversationMessage(intent: Intent, agent: Handle, record: ConversationRecordView | undefined, request: number): Message {
  if (record === undefined || record.phase === ConversationPhase.None || intent.variant % 23 === 0) return noise(intent, agent, request);
  const { slot, generation } = agent;
  // A recovery abandoned by the owner's report: its pass ends some time
  // later, in whatever phase the conversation is in by then.
  if (record.abandonedEpoch !== 0 && intent.noise % 5 === 0) {
    return [MessageKind.RecoveryFinished, slot, generation, record.abandonedEpoch, 1 + (intent.pick % RecoveryOutcome.LeaseLapsed), 0, 0, 0];
  }
  // A head let start while ready whose start ends after the conversation
  // moved on (held, recovering, owned elsewhere): the core keeps it
  // without a timer, or follows the owner.
  const starting = (record.flags & ConversationFlag.HeadStarting) !== 0;
  if (starting && record.phase !== ConversationPhase.Ready && intent.noise % 4 === 1) return headSettled(intent, agent);
  switch (record.phase) {
    case ConversationPhase.Registering:
      if (intent.noise % 4 === 0) return [MessageKind.ConversationOwned, slot, generation, 1 + (intent.pick % 2), intent.variant % 3, 0, 0, 0];
      return [MessageKind.RecoveryRequested, slot, generation, 1 + (intent.pick % (RecoveryCauseLimit.End - 1)), intent.noise % 512, 0, 0, 0];
    case ConversationPhase.Recovering:
      // A start made meanwhile: it waits, unless too many wait already.
      if (intent.noise % 11 === 4) return [MessageKind.Admit, slot, generation, request, AdmissionSource.Direct, 1, 1, startsWaiting(intent)];
      return recovering(intent, agent, record);
    case ConversationPhase.Held:
      if (intent.noise % 6 === 0) return [MessageKind.ConversationOwned, slot, generation, Ownership.Elsewhere, 0, 0, 0, 0];
      // Taken back on demand while held: what a fenced write held is recovered.
      if (intent.noise % 6 === 1) return [MessageKind.ConversationRetaken, slot, generation, retakeCause(intent), 0, 0, 0, 0];
      // The retry's timer fires: at the hold's epoch, or a stale one.
      if (intent.noise % 3 === 0)
        return [MessageKind.RetryDue, slot, generation, record.recoveryEpoch - (intent.pick % 4 === 0 ? 1 : 0), intent.variant % 512, 0, 0, 0];
      return [MessageKind.RecoveryRequested, slot, generation, RecoveryCause.Retry, 0, 0, 0, 0];
    case ConversationPhase.OwnedElsewhere:
      return ownedElsewhere(intent, agent, record, request);
    case ConversationPhase.Releasing:
      if (intent.noise % 3 === 0) return [MessageKind.UseBegin, slot, generation, 0, 0, 0, 0, 0];
      return [MessageKind.PurgeAgent, slot, generation, 0, 0, 0, 0, 0];
    default:
      return ready(intent, agent, record, request);
  }
}

/** How a head's start ended, as the host reads the store's answer, with
 * the ownership it read: mostly here, elsewhere one in three, not read
 * one in six. */
function headSettled(intent: Intent, agent: Handle): Message {
  const outcomes = [HeadOutcome.Left, HeadOutcome.Left, HeadOutcome.StoreFailed, HeadOutcome.NotNow, HeadOutcome.ExecutionExists, HeadOutcome.Refused];
  const outcome = outcomes[intent.pick % outcomes.length]!;
  const ownership = [Ownership.Here, Ownership.Here, Ownership.Here, Ownership.Elsewhere, Ownership.Elsewhere, Ownership.None][intent.variant % 6]!;
  return [MessageKind.HeadSettled, agent.slot, agent.generation, outcome, ownership, 0, 0, 0];
}

/** A recovery under way: mostly its finish, sometimes a second trigger
 * (joined), a finish of another epoch (stale), a failed one (held), or
 * the owner reported (abandoned). */
function recovering(intent: Intent, agent: Handle, record: ConversationRecordView): Message {
  const { slot, generation } = agent;
  // The lease lost mid-pass: the recovery is abandoned, its pass runs on.
  if (intent.noise % 9 === 3) return [MessageKind.ConversationOwned, slot, generation, Ownership.Elsewhere, 0, 0, 0, 0];
  if (intent.noise % 5 === 0) return [MessageKind.RecoveryRequested, slot, generation, 1 + (intent.pick % (RecoveryCauseLimit.End - 1)), 0, 0, 0, 0];
  const epoch = intent.noise % 7 === 1 ? (record.recoveryEpoch + 1 + (intent.pick % 2)) >>> 0 : record.recoveryEpoch;
  const outcome = intent.variant % 4 === 0 ? 1 + (intent.pick % RecoveryOutcome.LeaseLapsed) : RecoveryOutcome.Recovered;
  return [MessageKind.RecoveryFinished, slot, generation, epoch, outcome, passFacts(intent), 0, 0];
}

/** The facts a pass ends with: mostly none, sometimes a row left for a
 * start being prepared here, rarely a bit `RecoveryFinished` refuses. */
function passFacts(intent: Intent): number {
  if (intent.pick % 5 === 1) return RecoveryFact.StartPreparingHere;
  return intent.pick % 13 === 3 ? 1 << (intent.noise % 9) : 0;
}

/** Owned elsewhere: taken back, reported again (a head refused by the
 * owner's lease, a cancel not written, a queue read back while the lease
 * is another's), a message counted queued again, a recovery of what this
 * process still holds, or a start. */
function ownedElsewhere(intent: Intent, agent: Handle, record: ConversationRecordView, request: number): Message {
  const { slot, generation } = agent;
  const choice = intent.noise % 6;
  if (choice < 2) return [MessageKind.ConversationOwned, slot, generation, Ownership.Here, 0, 0, 0, 0];
  if (choice === 5) return [MessageKind.RecoveryRequested, slot, generation, RecoveryCause.HealAfterStoreFault, 0, 0, 0, 0];
  // The store holds it here again (a start placed elsewhere found it so, a
  // fenced write's retake): the core answers that a recovery is due.
  if (choice === 4 && intent.pick % 3 === 0) return [MessageKind.ConversationRetaken, slot, generation, retakeCause(intent), 0, 0, 0, 0];
  if (choice === 2) return [MessageKind.ConversationOwned, slot, generation, Ownership.Elsewhere, 0, 0, 0, 0];
  if (choice === 3 && record.queued < QUEUED_STREAM_MAX) return [MessageKind.MessageQueued, slot, generation, 1, 0, 0, 0, 0];
  // Facts: the queue kept, (2) whether a start made here can be filed, and
  // (4) whether the store may move the conversation here (decision 0101).
  return [
    MessageKind.Admit,
    slot,
    generation,
    request,
    1 + (intent.pick % 3),
    1 + (intent.variant % 3),
    1 | (intent.noise % 12 < 6 ? 2 : 0) | (intent.pick % 5 < 2 ? 4 : 0),
    startsWaiting(intent),
  ];
}

/** The cause a retake reports: mostly `Retake` or `FencedWrite`, now and
 * then one the core refuses (`ArgumentOutOfRange`). */
function retakeCause(intent: Intent): number {
  const causes = [
    RecoveryCause.Retake,
    RecoveryCause.FencedWrite,
    RecoveryCause.Moved,
    RecoveryCause.Retake,
    RecoveryCause.FencedWrite,
    RecoveryCause.None,
    RecoveryCause.LeaseTakeover,
  ];
  return causes[intent.variant % causes.length]!;
}

/** The starts the host says wait on the conversation, with `Admit`: mostly
 * none, sometimes just under, at and past `Limit.WaitingStartsMax`. */
function startsWaiting(intent: Intent): number {
  return [0, 0, 0, 1, Limit.WaitingStartsMax - 1, Limit.WaitingStartsMax, 0xffff_ffff][intent.noise % 7]!;
}

/** A ready conversation: starts of every source and policy, uses, the
 * queue's messages, holds and triggers. */
function ready(intent: Intent, agent: Handle, record: ConversationRecordView, request: number): Message {
  const { slot, generation } = agent;
  const choice = intent.noise % 13;
  if ((record.flags & ConversationFlag.HeadStarting) !== 0 && choice < 4) {
    return headSettled(intent, agent);
  }
  if (record.users > 0 && choice < 6) return [MessageKind.UseEnd, slot, generation, 0, 0, 0, 0, 0];
  switch (choice) {
    case 0:
    case 1:
    case 2: {
      const source = [AdmissionSource.Filed, AdmissionSource.Direct, AdmissionSource.Direct, AdmissionSource.Retry][intent.pick % 4]!;
      return [
        MessageKind.Admit,
        slot,
        generation,
        request,
        source,
        1 + (intent.variant % 3),
        (intent.variant % 7 === 0 ? 0 : 1) | (intent.noise % 2 === 0 ? 2 : 0) | (intent.pick % 5 === 1 ? 4 : 0),
        startsWaiting(intent),
      ];
    }
    case 3:
      if (record.queued > 0 && intent.pick % 3 === 0) return [MessageKind.MessageWritten, slot, generation, 0, 0, 0, 0, 0];
      if (record.queued > 0) return [MessageKind.Admit, slot, generation, request, AdmissionSource.QueueHead, 2, 1, 0];
      return [MessageKind.MessageQueued, slot, generation, 1 + (intent.pick % 2), 0, 0, 0, 0];
    case 4:
      return [MessageKind.UseBegin, slot, generation, 0, 0, 0, 0, 0];
    case 5:
      return [MessageKind.SetPinned, slot, generation, intent.pick % 2, 0, 0, 0, 0];
    case 6:
      if (record.queued < QUEUED_STREAM_MAX) return [MessageKind.MessageQueued, slot, generation, 1 + (intent.pick % 2), 0, 0, 0, 0];
      return [MessageKind.MessageLeft, slot, generation, 0, 0, 0, 0, 0];
    case 7:
      return [MessageKind.MessageLeft, slot, generation, 0, 0, 0, 0, 0];
    case 8:
      if (intent.pick % 4 === 0) return [MessageKind.HeadRetryDue, slot, generation, 0, 0, 0, 0, 0];
      return [MessageKind.AdmissionReleased, slot, generation, 0, 0, 0, 0, 0];
    case 9:
      // A retake on demand (the core recovers what a fenced write held), or a hold.
      if (intent.pick % 5 === 0) return [MessageKind.ConversationRetaken, slot, generation, retakeCause(intent), 0, 0, 0, 0];
      return [MessageKind.ConversationHeld, slot, generation, 1 + (intent.pick % 4), 0, 0, 0, 0];
    case 10:
      // Every cause, `env.recover()` among them, with every fact (the lease not held here included).
      return [MessageKind.RecoveryRequested, slot, generation, 1 + (intent.pick % (RecoveryCauseLimit.End - 1)), intent.variant % 512, 0, 0, 0];
    case 11:
      return [MessageKind.ConversationOwned, slot, generation, intent.pick % 5 === 0 ? Ownership.Elsewhere : Ownership.Here, 0, 0, 0, 0];
    default:
      return [MessageKind.UseBegin, slot, generation, 0, 0, 0, 0, 0];
  }
}

/** A conversation message of any kind with a stale generation, or with
 * its other arguments anywhere in u32. */
function noise(intent: Intent, agent: Handle, request: number): Message {
  const kind = MessageKind.ConversationOwned + (intent.pick % (MessageKind.ConversationRetaken - MessageKind.ConversationOwned + 1));
  const generation = intent.noise % 2 === 0 ? (agent.generation + 1) >>> 0 : agent.generation;
  const wild = [intent.noise, 0xffff_ffff, intent.variant, 0, intent.noise >>> 5][intent.variant % 5]!;
  if (kind === MessageKind.Admit) return [kind, agent.slot, generation, request, wild, intent.variant % 5, intent.pick % 5, 0];
  return [kind, agent.slot, generation, wild, intent.noise >>> 3, 0, 0, 0];
}
