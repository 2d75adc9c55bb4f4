// The agent table: one 16-byte record per interned agent (layout diagram in
// `abi.ts`, `AgentRecord`). It holds the admission table: at most one
// admission per agent, by construction, because the admission lives inside
// the agent's own record.
//
// Slots are handed out from a LIFO free list, else from the next never-used
// slot; a freed slot's generation is incremented so a handle to its previous
// tenant is refused.

import { AdmissionState, AgentLifecycle, AgentRecord, ResultCode } from "./abi";
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

@inline export function agentOwnerToken(slot: u32): u32 {
  return load<u32>(agentPointer(slot), AgentRecord.OwnerToken);
}
@inline export function agentExecutionPlusOne(slot: u32): u32 {
  return load<u32>(agentPointer(slot), AgentRecord.ExecutionSlotPlusOne);
}
@inline export function agentGeneration(slot: u32): u32 {
  return load<u32>(agentPointer(slot), AgentRecord.Generation);
}
@inline export function agentAdmission(slot: u32): u32 {
  return load<u8>(agentPointer(slot), AgentRecord.AdmissionState);
}
@inline export function agentLifecycle(slot: u32): u32 {
  return load<u8>(agentPointer(slot), AgentRecord.Lifecycle);
}
@inline export function setAgentLifecycle(slot: u32, lifecycle: u32): void {
  store<u8>(agentPointer(slot), <u8>lifecycle, AgentRecord.Lifecycle);
}

/** Sets the admission state of a held admission. `Admitting` is entered
 * only through `admitAgent`, so the reservation count stays exact. */
export function setAgentAdmission(slot: u32, state: u32): void {
  assert(state != AdmissionState.Admitting && state != AdmissionState.None, "use admitAgent / releaseAdmission");
  if (agentAdmission(slot) == AdmissionState.Admitting) admittingAgents -= 1;
  store<u8>(agentPointer(slot), <u8>state, AgentRecord.AdmissionState);
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
    agentFreeHeadPlusOne = agentExecutionPlusOne(slot);
  } else if (agentHighWater < agentsMax) {
    slot = agentHighWater++;
    store<u32>(agentPointer(slot), firstGeneration, AgentRecord.Generation);
  } else {
    return -1;
  }
  const pointer = agentPointer(slot);
  store<u32>(pointer, 0, AgentRecord.OwnerToken);
  store<u32>(pointer, 0, AgentRecord.ExecutionSlotPlusOne);
  store<u8>(pointer, AdmissionState.None, AgentRecord.AdmissionState);
  store<u8>(pointer, <u8>lifecycle, AgentRecord.Lifecycle);
  openConversation(slot);
  return slot;
}

export function freeAgent(slot: u32): void {
  assert(agentAdmission(slot) == AdmissionState.None, "a held admission is never freed");
  const pointer = agentPointer(slot);
  store<u32>(pointer, nextGeneration(agentGeneration(slot)), AgentRecord.Generation);
  store<u32>(pointer, 0, AgentRecord.OwnerToken);
  store<u32>(pointer, agentFreeHeadPlusOne, AgentRecord.ExecutionSlotPlusOne);
  store<u8>(pointer, AgentLifecycle.Free, AgentRecord.Lifecycle);
  clearConversation(slot);
  agentFreeHeadPlusOne = slot + 1;
}

// -- the admission table ----------------------------------------------------

export function admitAgent(slot: u32, ownerToken: u32): void {
  assert(agentAdmission(slot) == AdmissionState.None, "at most one admission per agent");
  const pointer = agentPointer(slot);
  store<u32>(pointer, ownerToken, AgentRecord.OwnerToken);
  store<u32>(pointer, 0, AgentRecord.ExecutionSlotPlusOne);
  store<u8>(pointer, AdmissionState.Admitting, AgentRecord.AdmissionState);
  admittingAgents += 1;
}

/** Binds a held admission (or a new recovery admission) to an execution. */
export function bindAdmission(slot: u32, executionSlot: u32, state: u32): void {
  const pointer = agentPointer(slot);
  if (agentAdmission(slot) == AdmissionState.Admitting) admittingAgents -= 1;
  store<u32>(pointer, executionSlot + 1, AgentRecord.ExecutionSlotPlusOne);
  store<u8>(pointer, <u8>state, AgentRecord.AdmissionState);
}

export function releaseAdmission(slot: u32): void {
  const pointer = agentPointer(slot);
  if (agentAdmission(slot) == AdmissionState.Admitting) admittingAgents -= 1;
  store<u32>(pointer, 0, AgentRecord.OwnerToken);
  store<u32>(pointer, 0, AgentRecord.ExecutionSlotPlusOne);
  store<u8>(pointer, AdmissionState.None, AgentRecord.AdmissionState);
}

/** Generations and counters skip 0, so 0 never names anything. */
@inline export function nextGeneration(value: u32): u32 {
  return value == 0xffff_ffff ? 1 : value + 1;
}
