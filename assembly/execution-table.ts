// The execution registry: one 20-byte record per live execution (layout
// diagram in `abi.ts`, `ExecutionRecord`): its agent, revision, FSM session,
// status, phase, flags, in-flight operation count and waiter count.
//
// Slots come from a LIFO free list, else from the next never-used slot; the
// table doubles (memory.grow) up to `executionsMax`. Admissions reserve
// their slot before they are granted (see `reserveForAdmission`), so
// installing an admitted execution never fails.

import { ExecutionBits, ExecutionRecord, Nibble, ResultCode } from "./abi";
import { admittingAgents, firstGeneration, nextGeneration } from "./agent-table";
import { executionTable, reserveExecutionCapacity } from "./memory-layout";

let executionsMax: u32 = 0;
let executionHighWater: u32 = 0;
let executionFreeHeadPlusOne: u32 = 0;
export let liveExecutions: u32 = 0;

export function resetExecutionTable(limit: u32): void {
  executionsMax = limit;
  executionHighWater = 0;
  executionFreeHeadPlusOne = 0;
  liveExecutions = 0;
}

export function executionSlotsUsed(): u32 {
  return executionHighWater;
}

@inline function executionPointer(slot: u32): usize {
  return executionTable + (<usize>slot) * ExecutionRecord.Size;
}

// -- field accessors, one per field -----------------------------------------
// Two 24-bit fields are the low three bytes of a little-endian word whose
// high byte is the next field (`StatusPhase`, `Flags`): read masked, written
// keeping that byte.

@inline function lowWord(slot: u32, offset: usize): u32 {
  return load<u32>(executionPointer(slot) + offset) & ExecutionBits.Low24;
}
@inline function setLowWord(slot: u32, offset: usize, value: u32): void {
  const pointer = executionPointer(slot) + offset;
  store<u32>(pointer, (load<u32>(pointer) & ~(<u32>ExecutionBits.Low24)) | value);
}
@inline function statusPhase(slot: u32): u32 {
  return load<u8>(executionPointer(slot), ExecutionRecord.StatusPhase);
}

@inline export function executionAgentPlusOne(slot: u32): u32 {
  return lowWord(slot, ExecutionRecord.AgentSlotPlusOne);
}
@inline export function executionRevision(slot: u32): u32 {
  return load<u32>(executionPointer(slot), ExecutionRecord.Revision);
}
@inline export function setExecutionRevision(slot: u32, value: u32): void {
  store<u32>(executionPointer(slot), value, ExecutionRecord.Revision);
}
@inline export function executionSession(slot: u32): u32 {
  return load<u32>(executionPointer(slot), ExecutionRecord.Session);
}
@inline export function setExecutionSession(slot: u32, value: u32): void {
  store<u32>(executionPointer(slot), value, ExecutionRecord.Session);
}
@inline export function executionGeneration(slot: u32): u32 {
  return load<u32>(executionPointer(slot), ExecutionRecord.Generation);
}
@inline export function executionWaiters(slot: u32): u32 {
  return lowWord(slot, ExecutionRecord.WaitersInFlight) & ExecutionBits.WaitersMask;
}
/** `value` ≤ `Limit.WaitersMax` (the caller refused more); masked all the
 * same, so a count never reaches the bits beside it. */
@inline export function setExecutionWaiters(slot: u32, value: u32): void {
  const kept = lowWord(slot, ExecutionRecord.WaitersInFlight) & ~(<u32>ExecutionBits.WaitersMask);
  setLowWord(slot, ExecutionRecord.WaitersInFlight, kept | (value & ExecutionBits.WaitersMask));
}
@inline export function executionInFlight(slot: u32): u32 {
  return lowWord(slot, ExecutionRecord.WaitersInFlight) >>> ExecutionBits.InFlightShift;
}
/** `value` ≤ `Limit.InFlightMax` (the caller refused more, and an
 * underflow); masked all the same. */
@inline export function setExecutionInFlight(slot: u32, value: u32): void {
  const kept = lowWord(slot, ExecutionRecord.WaitersInFlight) & ExecutionBits.WaitersMask;
  setLowWord(slot, ExecutionRecord.WaitersInFlight, kept | ((value & ExecutionBits.InFlightMask) << ExecutionBits.InFlightShift));
}
@inline export function executionStatus(slot: u32): u32 {
  return statusPhase(slot) & Nibble.LowMask;
}
@inline export function setExecutionStatus(slot: u32, value: u32): void {
  store<u8>(executionPointer(slot), <u8>((statusPhase(slot) & ~Nibble.LowMask) | value), ExecutionRecord.StatusPhase);
}
@inline export function executionPhase(slot: u32): u32 {
  return statusPhase(slot) >>> Nibble.HighShift;
}
@inline export function setExecutionPhase(slot: u32, value: u32): void {
  store<u8>(executionPointer(slot), <u8>((statusPhase(slot) & Nibble.LowMask) | (value << Nibble.HighShift)), ExecutionRecord.StatusPhase);
}
@inline export function executionFlags(slot: u32): u32 {
  return load<u8>(executionPointer(slot), ExecutionRecord.Flags);
}
@inline export function hasExecutionFlag(slot: u32, flag: u32): bool {
  return (executionFlags(slot) & flag) != 0;
}
@inline export function setExecutionFlag(slot: u32, flag: u32, on: bool): void {
  const flags = executionFlags(slot);
  store<u8>(executionPointer(slot), <u8>(on ? flags | flag : flags & ~flag), ExecutionRecord.Flags);
}

/** The agent slot of a live execution. */
@inline export function executionAgent(slot: u32): u32 {
  return executionAgentPlusOne(slot) - 1;
}

// -- checks -------------------------------------------------------------------

/** `Ok` when `(slot, generation)` names a live execution. */
export function checkExecution(slot: u32, generation: u32): i32 {
  if (slot >= executionHighWater || executionAgentPlusOne(slot) == 0) return ResultCode.ExecutionSlotUnknown;
  if (executionGeneration(slot) != generation) return ResultCode.ExecutionGenerationMustMatch;
  return ResultCode.Ok;
}

/** Makes sure one more admission can later install its execution: counts
 * every admission not yet installed and grows the table for it now. */
export function reserveForAdmission(): bool {
  const needed = liveExecutions + admittingAgents + 1;
  if (needed > executionsMax) return false;
  return reserveExecutionCapacity(needed, executionsMax);
}

// -- allocation ---------------------------------------------------------------

/** Installs an execution record and returns its slot. The caller reserved
 * the capacity (`reserveForAdmission`), so this cannot fail. */
export function allocateExecution(
  agent: u32, revision: u32, session: u32, status: u32, phase: u32, flags: u32,
): u32 {
  let slot: u32;
  if (executionFreeHeadPlusOne != 0) {
    slot = executionFreeHeadPlusOne - 1;
    executionFreeHeadPlusOne = executionRevision(slot);
  } else {
    slot = executionHighWater++;
    store<u32>(executionPointer(slot), firstGeneration, ExecutionRecord.Generation);
  }
  const pointer = executionPointer(slot);
  store<u32>(pointer, revision, ExecutionRecord.Revision);
  store<u32>(pointer, session, ExecutionRecord.Session);
  const statusPhase = status | (phase << Nibble.HighShift);
  store<u32>(pointer, (agent + 1) | (statusPhase << ExecutionBits.HighByteShift), ExecutionRecord.AgentSlotPlusOne);
  store<u32>(pointer, flags << ExecutionBits.HighByteShift, ExecutionRecord.WaitersInFlight);
  liveExecutions += 1;
  return slot;
}

/** Frees a slot: clears the record, bumps the generation, pushes the slot
 * on the free list (its revision word holds the link). */
export function freeExecution(slot: u32): void {
  const pointer = executionPointer(slot);
  store<u32>(pointer, nextGeneration(executionGeneration(slot)), ExecutionRecord.Generation);
  store<u32>(pointer, executionFreeHeadPlusOne, ExecutionRecord.Revision);
  store<u32>(pointer, 0, ExecutionRecord.Session);
  // The agent slot + 1, status and phase; the waiters, in flight and flags.
  store<u32>(pointer, 0, ExecutionRecord.AgentSlotPlusOne);
  store<u32>(pointer, 0, ExecutionRecord.WaitersInFlight);
  executionFreeHeadPlusOne = slot + 1;
  liveExecutions -= 1;
}
