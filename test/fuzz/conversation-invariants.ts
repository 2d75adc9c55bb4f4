// Properties of the conversation lifecycle (docs/decisions/0062) that must
// hold after every applied message. Each returns a sentence describing the
// violation, or undefined; they read the snapshots and effects only.

import { AdmissionState, AgentLifecycle, ConversationFlag, ConversationPhase, EffectKind, Limit, MessageKind } from "../../assembly/abi.js";
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
      && (record.flags & ~ConversationFlag.ReleasedElsewhere) === 0
      && agent?.admissionState === AdmissionState.None
      && agent.generation === effect.generation;
    if (!idle) return `ReleaseConversation for conversation ${effect.agent}, which is not idle`;
  }
  return undefined;
}

/** `FollowQueued` only from a report of ownership elsewhere, for the
 * messages counted queued, which it leaves counted. */
function queuedFollowedOnlyElsewhere(step: Step): string | undefined {
  for (const effect of step.effects) {
    if (effect.kind !== EffectKind.FollowQueued) continue;
    const record = step.after.conversations[effect.agent];
    const reported = step.message[0] === MessageKind.ConversationOwned && step.message[1] === effect.agent;
    if (!reported || record?.phase !== ConversationPhase.OwnedElsewhere)
      return `FollowQueued for conversation ${effect.agent}, which was not reported owned elsewhere`;
    const before = step.before.conversations[effect.agent]?.queued;
    if (effect.queued === 0 || record.queued !== effect.queued || before !== effect.queued) {
      return `FollowQueued for conversation ${effect.agent} names ${effect.queued} message(s); ${record.queued} are counted queued`;
    }
  }
  return undefined;
}
