// Properties of the conversation lifecycle (docs/decisions/0062) that must
// hold after every applied message. Each returns a sentence describing the
// violation, or undefined; they read the snapshots and effects only.

import {
  AdmissionState,
  AgentLifecycle,
  ConversationFlag,
  ConversationPhase,
  EffectKind,
  ExecutionStatus,
  HeadOutcome,
  Limit,
  MessageKind,
  Ownership,
  ResultCode,
} from "../../assembly/abi.js";
import type { CoreSnapshot } from "../../host/core/machine.js";
import { effectKindName } from "../../host/core/names.js";
import type { Step } from "./invariants.js";

export function checkConversationInvariants(step: Step): string | undefined {
  return (
    recordsFollowTheirAgents(step.after)
    ?? oneRecoveryAtATime(step)
    ?? readRowsNamesTheRunningEpoch(step)
    ?? retryWithinTheBackoff(step)
    ?? headStartsOnlyWhenFree(step)
    ?? releasedOnlyWhenIdle(step)
    ?? queuedFollowedOnlyElsewhere(step)
    ?? parkedFollowedWhenElsewhere(step)
    ?? holdRetriedOnlyWhenAsked(step)
    ?? failedHeadPlacedByTheCore(step)
    ?? inboxOpensAndClosesByEffects(step)
  );
}

/** A free agent slot's record is all zero; a live one has a phase. */
function recordsFollowTheirAgents(snapshot: CoreSnapshot): string | undefined {
  for (const agent of snapshot.agents) {
    const record = snapshot.conversations[agent.slot];
    if (record === undefined) return `agent ${agent.slot} has no conversation record`;
    const free = agent.lifecycle === AgentLifecycle.Free;
    const zero =
      record.phase === 0 && record.users === 0 && record.queued === 0 && record.flags === 0 && record.recoveryEpoch === 0 && record.abandonedEpoch === 0;
    if (free && !zero) return `free agent slot ${agent.slot} keeps a conversation record`;
    if (!free && record.phase === ConversationPhase.None) return `live agent ${agent.slot} has no conversation phase`;
    if (record.phase === ConversationPhase.Recovering && record.recoveryEpoch === 0) return `conversation ${agent.slot} recovers with epoch 0`;
  }
  return undefined;
}

/** A second trigger while a recovery runs joins it: no second read. */
function oneRecoveryAtATime(step: Step): string | undefined {
  if (step.message[0] !== MessageKind.RecoveryRequested) return undefined;
  const slot = step.message[1];
  if (step.before.conversations[slot]?.phase !== ConversationPhase.Recovering) return undefined;
  if (step.effects.some((effect) => effect.kind === EffectKind.ReadRows)) return `conversation ${slot} began a second recovery while one ran`;
  return undefined;
}

function readRowsNamesTheRunningEpoch(step: Step): string | undefined {
  for (const effect of step.effects) {
    if (effect.kind !== EffectKind.ReadRows) continue;
    const record = step.after.conversations[effect.agent];
    if (record?.phase !== ConversationPhase.Recovering || record.recoveryEpoch !== effect.epoch) {
      return `ReadRows for conversation ${effect.agent} epoch ${effect.epoch}, which is not its running recovery`;
    }
  }
  return undefined;
}

function retryWithinTheBackoff(step: Step): string | undefined {
  for (const effect of step.effects) {
    if (effect.kind !== EffectKind.RetryAfter && effect.kind !== EffectKind.RetryHeadAfter) continue;
    if (effect.delayMs < Limit.RetryMsFirst || effect.delayMs > Limit.RetryMsMax)
      return `${effectKindName(effect.kind)} ${effect.delayMs} ms is outside the backoff`;
  }
  return undefined;
}

function headStartsOnlyWhenFree(step: Step): string | undefined {
  for (const effect of step.effects) {
    if (effect.kind !== EffectKind.StartHead) continue;
    const record = step.after.conversations[effect.agent];
    const agent = step.after.agents[effect.agent];
    const free = agent?.admissionState === AdmissionState.None && (record!.flags & ConversationFlag.HeadStarting) === 0 && record!.abandonedEpoch === 0;
    if (record?.phase !== ConversationPhase.Ready || record.queued === 0 || !free) return `StartHead for conversation ${effect.agent}, which cannot start one`;
  }
  return undefined;
}

function releasedOnlyWhenIdle(step: Step): string | undefined {
  for (const effect of step.effects) {
    if (effect.kind !== EffectKind.ReleaseConversation) continue;
    const record = step.after.conversations[effect.agent];
    const agent = step.after.agents[effect.agent];
    const idle =
      record?.phase === ConversationPhase.Releasing
      && record.users === 0
      && record.queued === 0
      && (record.flags & ~(ConversationFlag.ReleasedElsewhere | ConversationFlag.RetriesHeld | ConversationFlag.InboxOpen)) === 0
      && agent?.admissionState === AdmissionState.None
      && agent.generation === effect.generation;
    if (!idle) return `ReleaseConversation for conversation ${effect.agent}, which is not idle`;
  }
  return undefined;
}

/** Whether the step reports `slot` owned elsewhere: a
 * `ConversationOwned(elsewhere)`, or a head kept while the store said
 * another process holds the conversation (`HeadSettled`), accepted. */
function reportsElsewhere(step: Step, slot: number): boolean {
  const [kind, target, , argument, ownership] = step.message;
  if (step.code !== ResultCode.Ok || target !== slot) return false;
  if (kind === MessageKind.ConversationOwned) return argument === Ownership.Elsewhere;
  return kind === MessageKind.HeadSettled && keepsHead(argument!) && ownership === Ownership.Elsewhere;
}

/** The store's answers after which a head is still queued there. */
function keepsHead(outcome: number): boolean {
  return outcome === HeadOutcome.StoreFailed || outcome === HeadOutcome.NotNow;
}

/** The inbox's state (`InboxOpen`) changes only with the effect that
 * tells the host: `OpenInbox` leaves it open on a conversation ready,
 * `CloseInbox` leaves it closed; a
 * conversation owned elsewhere never has it open. */
function inboxOpensAndClosesByEffects(step: Step): string | undefined {
  const open = (flags: number | undefined): boolean => ((flags ?? 0) & ConversationFlag.InboxOpen) !== 0;
  for (const [slot, after] of step.after.conversations.entries()) {
    const was = open(step.before.conversations[slot]?.flags);
    const is = open(after.flags);
    const told = step.effects.filter((effect) => (effect.kind === EffectKind.OpenInbox || effect.kind === EffectKind.CloseInbox) && effect.agent === slot);
    if (told.length > 1) return `conversation ${slot}'s inbox was opened or closed twice in one step`;
    const effect = told[0];
    if (effect?.kind === EffectKind.OpenInbox) {
      if (!is || after.phase !== ConversationPhase.Ready) return `OpenInbox for conversation ${slot}, which is not ready`;
    } else if (effect?.kind === EffectKind.CloseInbox) {
      if (is || !was) return `CloseInbox for conversation ${slot}, whose inbox was not open`;
    } else if (was !== is) {
      return `conversation ${slot}'s inbox ${is ? "opened" : "closed"} with no effect telling it`;
    }
    if (is && after.phase === ConversationPhase.OwnedElsewhere) return `conversation ${slot} is owned elsewhere with its inbox open`;
  }
  return undefined;
}

/** `FollowQueued` only from a report of ownership elsewhere, for the
 * messages counted queued, which it leaves counted (a head kept is
 * counted again first). */
function queuedFollowedOnlyElsewhere(step: Step): string | undefined {
  for (const effect of step.effects) {
    if (effect.kind !== EffectKind.FollowQueued) continue;
    const record = step.after.conversations[effect.agent];
    if (!reportsElsewhere(step, effect.agent) || record?.phase !== ConversationPhase.OwnedElsewhere)
      return `FollowQueued for conversation ${effect.agent}, which was not reported owned elsewhere`;
    const kept = step.message[0] === MessageKind.HeadSettled ? 1 : 0;
    const before = step.before.conversations[effect.agent]?.queued;
    if (effect.queued === 0 || record.queued !== effect.queued || before! + kept !== effect.queued) {
      return `FollowQueued for conversation ${effect.agent} names ${effect.queued} message(s); ${record.queued} are counted queued`;
    }
  }
  return undefined;
}

/** The execution holding the admission of `slot` when it is parked
 * (suspended, or held for recovery), as the snapshot shows it. */
function parkedExecution(snapshot: CoreSnapshot, slot: number): { readonly slot: number; readonly generation: number } | undefined {
  const agent = snapshot.agents[slot];
  if (agent === undefined || agent.executionSlotPlusOne === 0) return undefined;
  const execution = snapshot.executions[agent.executionSlotPlusOne - 1];
  if (execution === undefined) return undefined;
  const parked = agent.admissionState === AdmissionState.RecoveryRequired || execution.status === ExecutionStatus.Suspended;
  return parked ? { slot: execution.slot, generation: execution.generation } : undefined;
}

/** `FollowAdmitted` exactly when an accepted report of ownership elsewhere
 * finds the conversation's admission held by a parked execution, naming
 * that execution; it changes nothing of the execution. */
function parkedFollowedWhenElsewhere(step: Step): string | undefined {
  const follows = step.effects.filter((effect) => effect.kind === EffectKind.FollowAdmitted);
  const slot = step.message[1];
  const reported = reportsElsewhere(step, slot!);
  const parked = reported ? parkedExecution(step.after, slot!) : undefined;
  if (parked === undefined) return follows.length === 0 ? undefined : "FollowAdmitted without a report of ownership elsewhere finding a parked execution";
  const effect = follows[0];
  if (follows.length !== 1 || effect?.kind !== EffectKind.FollowAdmitted)
    return `conversation ${slot} reported owned elsewhere with execution ${parked.slot} parked: no FollowAdmitted`;
  if (effect.execution !== parked.slot || effect.generation !== parked.generation) {
    return `FollowAdmitted names execution ${effect.execution}/${effect.generation}; ${parked.slot}/${parked.generation} is parked`;
  }
  const before = step.before.executions[parked.slot];
  if (before?.status !== step.after.executions[parked.slot]?.status) return `FollowAdmitted changed execution ${parked.slot}`;
  return undefined;
}

/** A hold asks for a retry (`RetryAfter`) exactly when holds retry by
 * themselves here (`RetriesHeld`: a leasing store, recovery by itself);
 * else the conversation waits for `env.recover()`. A queue head the store
 * failed (`HeadSettled`) is retried either way: that is the queue's wait. */
function holdRetriedOnlyWhenAsked(step: Step): string | undefined {
  const [kind, slot] = step.message;
  if (kind === MessageKind.HeadSettled) return undefined;
  const retries = step.effects.filter((effect) => effect.kind === EffectKind.RetryAfter);
  const before = step.before.conversations[slot!];
  const after = step.after.conversations[slot!];
  const held = step.code === ResultCode.Ok && after?.phase === ConversationPhase.Held && before?.phase !== ConversationPhase.Held;
  const asked = after !== undefined && (after.flags & ConversationFlag.RetriesHeld) !== 0;
  if (retries.length > (held && asked ? 1 : 0) || (held && asked && retries.length === 0)) {
    return `conversation ${slot} ${held ? "held" : "not held"} with${asked ? "" : "out"} RetriesHeld emitted ${retries.length} RetryAfter`;
  }
  return undefined;
}

/** What becomes of a head whose start ended is the core's, from the facts
 * `HeadSettled` carries: a head the store still queues is kept (`HeadKept`,
 * once, counted queued again) and offered again after the backoff only
 * while the conversation is ready here (`RetryHeadAfter`: none when the
 * store says another process holds it, none while recovering or held —
 * the recovery's end offers it); one another process prepared is taken
 * (`HeadTaken`); every other leaves. No other message emits these. */
function failedHeadPlacedByTheCore(step: Step): string | undefined {
  const [kind, slot, , outcome, ownership] = step.message;
  const settled = kind === MessageKind.HeadSettled && step.code === ResultCode.Ok;
  const count = (effectKind: EffectKind): number => step.effects.filter((effect) => effect.kind === effectKind).length;
  const kept = settled && keepsHead(outcome!);
  if (count(EffectKind.HeadKept) !== (kept ? 1 : 0)) return `HeadSettled ${String(outcome)} emitted ${count(EffectKind.HeadKept)} HeadKept`;
  const taken = settled && outcome === HeadOutcome.ExecutionExists;
  if (count(EffectKind.HeadTaken) !== (taken ? 1 : 0)) return `HeadSettled ${String(outcome)} emitted ${count(EffectKind.HeadTaken)} HeadTaken`;
  if (!settled) return undefined;
  const before = step.before.conversations[slot!]!;
  const after = step.after.conversations[slot!]!;
  if (after.queued !== before.queued + (kept ? 1 : 0)) return `HeadSettled ${outcome} changed the count ${before.queued} → ${after.queued}`;
  const retried = kept && ownership !== Ownership.Elsewhere && before.phase === ConversationPhase.Ready;
  if (count(EffectKind.RetryHeadAfter) !== (retried ? 1 : 0)) {
    return `HeadSettled ${outcome} (ownership ${ownership}) in phase ${before.phase} emitted ${count(EffectKind.RetryHeadAfter)} RetryHeadAfter`;
  }
  return undefined;
}
