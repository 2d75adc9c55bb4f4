// The agent table: one 24-byte record per interned agent (layout diagram in
// `abi.ts`, `AgentRecord`), which holds its conversation's fields too
// (`conversation-table.ts`). It holds the admission table: at most one
// admission per agent, by construction, because the admission lives inside
// the agent's own record.
//
// Slots are handed out from a LIFO free list, else from the next never-used
// slot; a freed slot's generation is incremented so a handle to its previous
// tenant is refused.

import { AdmissionState, AgentLifecycle, AgentRecord, Nibble, ResultCode } from "./abi";
import { clearConversation, openConversation } from "./conversation-table";
import { agentTable } from "./memory-layout";

let agentsMax: u32 = 0;
let agentHighWater: u32 = 0;
let agentFreeHeadPlusOne: u32 = 0;
/** Admissions in state `Admitting`: each one reserves an execution slot. */
export let admittingAgents: u32 = 0;

/** The generation a never-used agent or execution slot starts at: 1,
 * except in a core the differential fuzz seeded near the u32 wrap
 * (`testingSeedCounters` in index.ts). */
export let firstGeneration: u32 = 1;

export function resetAgentTable(limit: u32): void {
  agentsMax = limit;
  agentHighWater = 0;
  agentFreeHeadPlusOne = 0;
  admittingAgents = 0;
  firstGeneration = 1;
}

/** TESTING ONLY: see `testingSeedCounters` in index.ts. */
export function seedFirstGeneration(value: u32): void {
  firstGeneration = value;
}

export function agentSlotsUsed(): u32 {
  return agentHighWater;
}

@inline function agentPointer(slot: u32): usize {
  return agentTable + (<usize>slot) * AgentRecord.Size;
}

// -- field accessors, one per field --------------------------------------

// The owner token and the execution slot + 1 share a word: the token
// matters only while the admission is `Admitting` (its preparation's
// answer names it), and no execution is bound until it leaves that state.

@inline function tokenOrExecution(slot: u32): u32 {
  return load<u32>(agentPointer(slot), AgentRecord.TokenOrExecutionPlusOne);
}
@inline export function agentAdmission(slot: u32): u32 {
  return load<u8>(agentPointer(slot), AgentRecord.AdmissionLifecycle) & Nibble.LowMask;
}
@inline export function agentLifecycle(slot: u32): u32 {
  return load<u8>(agentPointer(slot), AgentRecord.AdmissionLifecycle) >>> Nibble.HighShift;
}
/** The owner token of an admission being prepared; 0 in any other state. */
@inline export function agentOwnerToken(slot: u32): u32 {
  return agentAdmission(slot) == AdmissionState.Admitting ? tokenOrExecution(slot) : 0;
}
/** The execution slot + 1 bound to the admission; 0 when none is. */
@inline export function agentExecutionPlusOne(slot: u32): u32 {
  return agentAdmission(slot) == AdmissionState.Admitting ? 0 : tokenOrExecution(slot);
}
@inline export function agentGeneration(slot: u32): u32 {
  return load<u32>(agentPointer(slot), AgentRecord.Generation);
}
@inline function storeAdmissionLifecycle(slot: u32, admission: u32, lifecycle: u32): void {
  store<u8>(agentPointer(slot), <u8>(admission | (lifecycle << Nibble.HighShift)), AgentRecord.AdmissionLifecycle);
}
@inline function storeTokenOrExecution(slot: u32, value: u32): void {
  store<u32>(agentPointer(slot), value, AgentRecord.TokenOrExecutionPlusOne);
}
@inline export function setAgentLifecycle(slot: u32, lifecycle: u32): void {
  storeAdmissionLifecycle(slot, agentAdmission(slot), lifecycle);
}

/** Sets the admission state of a held admission. `Admitting` is entered
 * only through `admitAgent`, so the reservation count stays exact; leaving
 * it forgets the owner token (no execution is bound yet: 0). */
export function setAgentAdmission(slot: u32, state: u32): void {
  assert(state != AdmissionState.Admitting && state != AdmissionState.None, "use admitAgent / releaseAdmission");
  if (agentAdmission(slot) == AdmissionState.Admitting) {
    admittingAgents -= 1;
    storeTokenOrExecution(slot, 0);
  }
  storeAdmissionLifecycle(slot, state, agentLifecycle(slot));
}

// -- checks -----------------------------------------------------------------

/** `Ok` when `(slot, generation)` names a live agent. */
export function checkAgent(slot: u32, generation: u32): i32 {
  if (slot >= agentHighWater || agentLifecycle(slot) == AgentLifecycle.Free) return ResultCode.AgentSlotUnknown;
  if (agentGeneration(slot) != generation) return ResultCode.AgentGenerationMustMatch;
  return ResultCode.Ok;
}

// -- allocation ---------------------------------------------------------------

/** Returns the new slot, or -1 when every slot is in use. */
export function allocateAgent(lifecycle: u32): i64 {
  let slot: u32;
  if (agentFreeHeadPlusOne != 0) {
    slot = agentFreeHeadPlusOne - 1;
    agentFreeHeadPlusOne = tokenOrExecution(slot);
  } else if (agentHighWater < agentsMax) {
    slot = agentHighWater++;
    store<u32>(agentPointer(slot), firstGeneration, AgentRecord.Generation);
  } else {
    return -1;
  }
  storeTokenOrExecution(slot, 0);
  openConversation(slot);
  storeAdmissionLifecycle(slot, AdmissionState.None, lifecycle);
  return slot;
}

export function freeAgent(slot: u32): void {
  assert(agentAdmission(slot) == AdmissionState.None, "a held admission is never freed");
  store<u32>(agentPointer(slot), nextGeneration(agentGeneration(slot)), AgentRecord.Generation);
  storeTokenOrExecution(slot, agentFreeHeadPlusOne);
  storeAdmissionLifecycle(slot, AdmissionState.None, AgentLifecycle.Free);
  clearConversation(slot);
  agentFreeHeadPlusOne = slot + 1;
}

// -- the admission table ----------------------------------------------------

export function admitAgent(slot: u32, ownerToken: u32): void {
  assert(agentAdmission(slot) == AdmissionState.None, "at most one admission per agent");
  storeTokenOrExecution(slot, ownerToken);
  storeAdmissionLifecycle(slot, AdmissionState.Admitting, agentLifecycle(slot));
  admittingAgents += 1;
}

/** Binds a held admission (or a new recovery admission) to an execution. */
export function bindAdmission(slot: u32, executionSlot: u32, state: u32): void {
  if (agentAdmission(slot) == AdmissionState.Admitting) admittingAgents -= 1;
  storeTokenOrExecution(slot, executionSlot + 1);
  storeAdmissionLifecycle(slot, state, agentLifecycle(slot));
}

export function releaseAdmission(slot: u32): void {
  if (agentAdmission(slot) == AdmissionState.Admitting) admittingAgents -= 1;
  storeTokenOrExecution(slot, 0);
  storeAdmissionLifecycle(slot, AdmissionState.None, agentLifecycle(slot));
}

/** Generations and counters skip 0, so 0 never names anything. */
@inline export function nextGeneration(value: u32): u32 {
  return value == 0xffff_ffff ? 1 : value + 1;
}
