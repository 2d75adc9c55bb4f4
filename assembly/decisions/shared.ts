// State and helpers every decision shares: the runtime's draining flag, the
// owner-token and session counters, and the compound steps the contract
// names (docs/core.md, "Helpers"): require recovery, begin terminal commit,
// finish execution, fail attached waiters, register waiter.

import {
  AdmissionState, EffectKind, ExecutionFlag, ExecutionStatus, Limit, RecoveryScope, ResultCode,
} from "../abi";
import { nextGeneration, releaseAdmission, setAgentAdmission } from "../agent-table";
import { emit } from "../effects";
import {
  executionAgent, executionGeneration, executionRevision, executionSession, executionWaiters,
  freeExecution, setExecutionFlag, setExecutionSession, setExecutionStatus, setExecutionWaiters,
} from "../execution-table";

/** 1 while the environment drains for shutdown: admissions refused,
 * completions still accepted. */
export let draining: u32 = 0;
export let nextOwnerToken: u32 = 1;
export let nextSession: u32 = 1;

export function resetShared(): void {
  draining = 0;
  nextOwnerToken = 1;
  nextSession = 1;
}

/** TESTING ONLY: see `testingSeedCounters` in index.ts. */
export function seedCounters(ownerToken: u32, session: u32): void {
  nextOwnerToken = ownerToken;
  nextSession = session;
}

export function setDraining(on: u32): void {
  draining = on;
}

export function mintOwnerToken(): u32 {
  const token = nextOwnerToken;
  nextOwnerToken = nextGeneration(token);
  return token;
}

export function mintSession(): u32 {
  const session = nextSession;
  nextSession = nextGeneration(session);
  return session;
}

/** Messages from a live FSM session name it; session 0 names none (an
 * execution installed by recovery, or suspended), so it never matches. */
export function isLiveSession(exec: u32, session: u32): bool {
  return session != 0 && executionSession(exec) == session;
}

/** True for the 0/1 flags messages carry. */
@inline export function isFlag(value: u32): bool {
  return value <= 1;
}

/** The execution's agent admission becomes `recovery_required`; the host
 * warns, stops the live session and rejects every waiter. The record stays
 * for inspection and recovery. */
export function requireRecovery(exec: u32, code: i32): void {
  setAgentAdmission(executionAgent(exec), AdmissionState.RecoveryRequired);
  // The live session is over: nothing it still posts may apply, and no
  // deferred terminal of it will be committed.
  setExecutionSession(exec, 0);
  setExecutionFlag(exec, ExecutionFlag.TerminalDeferred, false);
  emit(EffectKind.RecoveryRequired, exec, RecoveryScope.Execution, code);
  emit(EffectKind.FailWaiters, exec, code);
  setExecutionWaiters(exec, 0);
}

export function beginTerminalCommit(exec: u32): void {
  setAgentAdmission(executionAgent(exec), AdmissionState.Terminalizing);
  emit(EffectKind.SubmitTerminalCommit, exec, executionSession(exec), executionRevision(exec));
}

/** Delivers a terminal outcome, then gives the agent and the slot back. */
export function finishExecution(exec: u32, outcome: u32): void {
  setExecutionStatus(exec, ExecutionStatus.Terminal);
  emit(EffectKind.DeliverOutcome, exec, outcome);
  releaseExecution(exec);
}

/** Fails the observers still attached (through `AttachWaiter`) to an
 * execution about to be released without an outcome, so every waiter
 * settles. Emits nothing when there are none. */
export function failAttachedWaiters(exec: u32, code: i32): void {
  if (executionWaiters(exec) == 0) return;
  emit(EffectKind.FailWaiters, exec, code);
  setExecutionWaiters(exec, 0);
}

/** Releases the admission and frees the slot; the host frees its side
 * tables on `ReleaseExecution`. */
export function releaseExecution(exec: u32): void {
  const generation = executionGeneration(exec);
  releaseAdmission(executionAgent(exec));
  freeExecution(exec);
  emit(EffectKind.ReleaseExecution, exec, generation);
}

/** False (and the request failed) when the waiter list is full. */
export function registerWaiter(exec: u32, request: u32): bool {
  const waiters = executionWaiters(exec);
  if (waiters >= <u32>Limit.WaitersMax) {
    emit(EffectKind.FailRequest, request, ResultCode.WaitersFull);
    return false;
  }
  setExecutionWaiters(exec, waiters + 1);
  emit(EffectKind.RegisterWaiter, exec, request);
  return true;
}

/** Refusal of a result message: log it, change nothing. */
export function dropStale(kind: u32, code: i32): i32 {
  emit(EffectKind.DropStale, kind, code);
  return code;
}

/** Refusal of a request: settle it with the typed error of `code`. */
export function failRequest(request: u32, code: i32): i32 {
  emit(EffectKind.FailRequest, request, code);
  return code;
}
