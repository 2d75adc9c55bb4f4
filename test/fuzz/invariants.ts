// Properties that must hold after every applied message, whatever the
// message was. Each returns a sentence describing the violation, or
// undefined. They read the snapshots and effects only: no implementation
// detail of either machine.

import { AdmissionState, AgentLifecycle, EffectKind, ExecutionStatus, MessageKind, OutcomeType } from "../../assembly/abi.js";
import { checkConversationInvariants } from "./conversation-invariants.js";
import type { CoreEffect } from "../../host/core/effects.js";
import type { CoreSnapshot } from "../../host/core/machine.js";
import type { Message } from "./message-stream.js";

export interface Step {
  readonly message: Message;
  readonly code: number;
  readonly effects: readonly CoreEffect[];
  readonly before: CoreSnapshot;
  readonly after: CoreSnapshot;
}

/** Revisions seen per `(slot, generation)`, to show they never decrease. */
export class RevisionHistory {
  private readonly seen = new Map<string, number>();

  check(snapshot: CoreSnapshot): string | undefined {
    for (const execution of snapshot.executions) {
      if (execution.agentSlotPlusOne === 0) continue;
      const key = `${execution.slot}:${execution.generation}`;
      const previous = this.seen.get(key);
      if (previous !== undefined && execution.revision < previous) {
        return `revision of execution ${key} decreased from ${previous} to ${execution.revision}`;
      }
      this.seen.set(key, execution.revision);
    }
    return undefined;
  }
}

export function checkInvariants(step: Step): string | undefined {
  return (
    atMostOneAdmissionPerAgent(step.after)
    ?? admissionsAndExecutionsAgree(step.after)
    ?? terminalCommitOnlyWhenQuiescent(step)
    ?? staleResultChangesNothing(step)
    ?? releasedGenerationRefused(step)
    ?? dischargeReleasesOnlyQuiescentRecovery(step)
    ?? agentDischargeReleasesOnlyAnUnboundHold(step)
    ?? releasedExecutionLeavesNoWaiter(step)
    ?? resumeWaitChangesNothing(step)
    ?? countersAgree(step.after)
    ?? checkConversationInvariants(step)
  );
}

/** A `Resume` answered with a wait (docs/decisions/0065) is its only
 * effect and changes no table: `RecoverBeforeResume` only for an execution
 * held for recovery, `AwaitSuspensionCommit` only for one not suspended. */
function resumeWaitChangesNothing(step: Step): string | undefined {
  const wait = step.effects.find((effect) => effect.kind === EffectKind.RecoverBeforeResume || effect.kind === EffectKind.AwaitSuspensionCommit);
  if (wait === undefined || (wait.kind !== EffectKind.RecoverBeforeResume && wait.kind !== EffectKind.AwaitSuspensionCommit)) return undefined;
  if (step.message[0] !== MessageKind.Resume || step.effects.length !== 1)
    return `a resume wait came with ${step.effects.length} effects of message ${step.message[0]}`;
  if (JSON.stringify(step.before) !== JSON.stringify(step.after)) return "a resume wait changed the tables";
  const execution = step.before.executions.find((candidate) => candidate.slot === wait.execution && candidate.agentSlotPlusOne !== 0);
  const agent = execution === undefined ? undefined : step.before.agents[execution.agentSlotPlusOne - 1];
  if (execution === undefined || agent === undefined) return `a resume wait named execution ${wait.execution}, which is not live`;
  const held = agent.admissionState === AdmissionState.RecoveryRequired;
  if (wait.kind === EffectKind.RecoverBeforeResume && !held) return `RecoverBeforeResume for execution ${wait.execution}, which is not held for recovery`;
  if (wait.kind === EffectKind.AwaitSuspensionCommit && (held || execution.status === ExecutionStatus.Suspended)) {
    return `AwaitSuspensionCommit for execution ${wait.execution}, which is suspended or held`;
  }
  return undefined;
}

/** Each execution is held by exactly one admission: its agent's. */
function atMostOneAdmissionPerAgent(snapshot: CoreSnapshot): string | undefined {
  const holders = new Map<number, number>();
  for (const agent of snapshot.agents) {
    if (agent.executionSlotPlusOne === 0) continue;
    const execution = agent.executionSlotPlusOne - 1;
    if (holders.has(execution)) return `execution ${execution} is admitted by agents ${holders.get(execution)} and ${agent.slot}`;
    holders.set(execution, agent.slot);
  }
  return undefined;
}

function admissionsAndExecutionsAgree(snapshot: CoreSnapshot): string | undefined {
  for (const execution of snapshot.executions) {
    if (execution.agentSlotPlusOne === 0) continue;
    const agent = snapshot.agents[execution.agentSlotPlusOne - 1];
    if (!agent || agent.lifecycle === AgentLifecycle.Free) return `execution ${execution.slot} belongs to a free agent slot`;
    if (agent.executionSlotPlusOne !== execution.slot + 1) {
      return `execution ${execution.slot} is live but agent ${agent.slot} admits ${agent.executionSlotPlusOne - 1}`;
    }
    if (agent.admissionState === AdmissionState.None || agent.admissionState === AdmissionState.Admitting) {
      return `execution ${execution.slot} is live but its agent's admission is ${agent.admissionState}`;
    }
  }
  return undefined;
}

function terminalCommitOnlyWhenQuiescent(step: Step): string | undefined {
  for (const effect of step.effects) {
    if (effect.kind !== EffectKind.SubmitTerminalCommit) continue;
    const execution = step.after.executions[effect.execution];
    if (execution && execution.inFlight !== 0) {
      return `terminal commit of execution ${effect.execution} began with ${execution.inFlight} operations in flight`;
    }
  }
  return undefined;
}

function staleResultChangesNothing(step: Step): string | undefined {
  const dropped = step.effects.length === 1 && step.effects[0]!.kind === EffectKind.DropStale;
  if (!dropped) return undefined;
  if (JSON.stringify(step.before) !== JSON.stringify(step.after)) return `a dropped ${step.message[0]} changed the tables`;
  return undefined;
}

/** Messages that name an execution by `(slot, generation)` as their first
 * two arguments. */
const EXECUTION_MESSAGES = new Set<number>([
  MessageKind.ProviderDispatchReady,
  MessageKind.ToolDispatchReady,
  MessageKind.SessionEvent,
  MessageKind.OperationSettled,
  MessageKind.SessionFinished,
  MessageKind.DeferredTerminal,
  MessageKind.TerminalCommitReady,
  MessageKind.Resume,
  MessageKind.ResumeCommitReady,
  MessageKind.ContinueRecovered,
  MessageKind.CancelRequested,
  MessageKind.AttachWaiter,
  MessageKind.DischargeRecovery,
  MessageKind.CancelSuspended,
  MessageKind.CancelCommitReady,
]);

/** A message for a slot's previous tenant is refused and changes nothing. */
function releasedGenerationRefused(step: Step): string | undefined {
  const [kind, slot, generation] = step.message;
  if (!EXECUTION_MESSAGES.has(kind)) return undefined;
  const current = step.before.executions[slot];
  if (!current || current.generation === generation) return undefined;
  if (step.code === 0) return `message ${kind} for execution ${slot} generation ${generation} applied to generation ${current.generation}`;
  if (JSON.stringify(step.before) !== JSON.stringify(step.after)) return `message ${kind} for an old generation changed the tables`;
  return undefined;
}

/** An accepted `DischargeRecovery` released an execution that waited for
 * recovery (or a suspension superseded by its row) with nothing in flight, and nothing else; a refused one changed
 * nothing and emitted nothing. */
function dischargeReleasesOnlyQuiescentRecovery(step: Step): string | undefined {
  const [kind, slot, generation] = step.message;
  if (kind !== MessageKind.DischargeRecovery) return undefined;
  if (step.code !== 0) {
    if (step.effects.length !== 0) return `a refused discharge of execution ${slot} emitted effects`;
    if (JSON.stringify(step.before) !== JSON.stringify(step.after)) return `a refused discharge of execution ${slot} changed the tables`;
    return undefined;
  }
  const execution = step.before.executions[slot];
  const agent = execution ? step.before.agents[execution.agentSlotPlusOne - 1] : undefined;
  if (!execution || !agent) return `discharge of execution ${slot} accepted for a slot that was not live`;
  // Or suspended, its row read at a later revision (docs/decisions/0063).
  const superseded = agent.admissionState === AdmissionState.Suspended && (step.message[3] ?? 0) > execution.revision;
  if (agent.admissionState !== AdmissionState.RecoveryRequired && !superseded) {
    return `discharge of execution ${slot} accepted with admission ${agent.admissionState}`;
  }
  if (execution.inFlight !== 0) return `discharge of execution ${slot} accepted with ${execution.inFlight} operations in flight`;
  const released = step.effects.at(-1);
  if (released?.kind !== EffectKind.ReleaseExecution || released.execution !== slot || released.generation !== generation) {
    return `discharge of execution ${slot} did not end with its ReleaseExecution`;
  }
  if (step.after.executions[slot]?.agentSlotPlusOne !== 0) return `discharged execution ${slot} still holds its slot`;
  if (step.after.agents[agent.slot]?.admissionState !== AdmissionState.None) return `agent ${agent.slot} still admitted after discharge`;
  return undefined;
}

/** An accepted `DischargeAgentRecovery` released an agent held for
 * recovery with no execution bound, and changed nothing else; a refused
 * one changed nothing. Neither emits anything. */
function agentDischargeReleasesOnlyAnUnboundHold(step: Step): string | undefined {
  const [kind, slot] = step.message;
  if (kind !== MessageKind.DischargeAgentRecovery) return undefined;
  if (step.effects.length !== 0) return `a discharge of agent ${slot} emitted effects`;
  if (step.code !== 0) {
    if (JSON.stringify(step.before) !== JSON.stringify(step.after)) return `a refused discharge of agent ${slot} changed the tables`;
    return undefined;
  }
  const before = step.before.agents[slot];
  if (before?.admissionState !== AdmissionState.RecoveryRequired || before.executionSlotPlusOne !== 0) {
    return `discharge of agent ${slot} accepted with admission ${before?.admissionState} bound to ${before?.executionSlotPlusOne}`;
  }
  const after = step.after.agents[slot];
  if (after?.admissionState !== AdmissionState.None || after.ownerToken !== 0) return `agent ${slot} still held after its discharge`;
  if (JSON.stringify(step.before.executions) !== JSON.stringify(step.after.executions)) return `discharge of agent ${slot} changed an execution`;
  return undefined;
}

/** Every waiter is settled: an execution released in a step had each of
 * its waiters (those it had before the step and those the step registered)
 * failed (`FailWaiters`) or given a final outcome (`DeliverOutcome` other
 * than `Suspended`, after which waiters stay) before its
 * `ReleaseExecution`. Otherwise the host drops a waiter that never settles. */
function releasedExecutionLeavesNoWaiter(step: Step): string | undefined {
  const waiters = new Map<number, number>();
  const waitersOf = (slot: number): number => waiters.get(slot) ?? step.before.executions[slot]?.waiters ?? 0;
  for (const effect of step.effects) {
    if (effect.kind === EffectKind.RegisterWaiter) waiters.set(effect.execution, waitersOf(effect.execution) + 1);
    else if (effect.kind === EffectKind.FailWaiters) waiters.set(effect.execution, 0);
    else if (effect.kind === EffectKind.DeliverOutcome && effect.outcome !== OutcomeType.Suspended) waiters.set(effect.execution, 0);
    else if (effect.kind === EffectKind.ReleaseExecution) {
      const unsettled = waitersOf(effect.execution);
      if (unsettled !== 0) return `execution ${effect.execution} was released with ${unsettled} waiters neither failed nor given an outcome`;
      waiters.set(effect.execution, 0);
    }
  }
  return undefined;
}

function countersAgree(snapshot: CoreSnapshot): string | undefined {
  const live = snapshot.executions.filter((execution) => execution.agentSlotPlusOne !== 0).length;
  if (live !== snapshot.liveExecutions) return `liveExecutions ${snapshot.liveExecutions} but ${live} slots in use`;
  const admitting = snapshot.agents.filter((agent) => agent.admissionState === AdmissionState.Admitting).length;
  if (admitting !== snapshot.admittingAgents) return `admittingAgents ${snapshot.admittingAgents} but ${admitting} admitting`;
  return undefined;
}
