// The conversation table: the conversation's fields of each agent record
// (bytes 8–23 but the admission's nibble; layout diagram in `abi.ts`,
// `AgentRecord`, docs/decisions/0104). It holds
// a conversation's lifecycle (docs/decisions/0062): its phase, the epoch and
// cause of its recovery or the cause of its hold, the host operations using
// it, the messages queued behind it, the backoff's failure count, and a
// recovery abandoned whose pass still runs.
//
// Its fields are written whole when the agent slot is allocated (phase
// `Registering`) and zeroed when the slot is freed, so a free slot's
// conversation is all zero and a stale handle is refused by the agent's
// generation.

import { AgentRecord, ConversationFlag, ConversationPhase, Limit, Nibble } from "./abi";
import { agentTable } from "./memory-layout";

@inline function conversationPointer(slot: u32): usize {
  return agentTable + (<usize>slot) * AgentRecord.Size;
}

// -- field accessors, one per field -----------------------------------------

@inline export function recoveryEpoch(slot: u32): u32 {
  return load<u32>(conversationPointer(slot), AgentRecord.RecoveryEpoch);
}
@inline export function setRecoveryEpoch(slot: u32, value: u32): void {
  store<u32>(conversationPointer(slot), value, AgentRecord.RecoveryEpoch);
}
@inline export function conversationUsers(slot: u32): u32 {
  return load<u16>(conversationPointer(slot), AgentRecord.Users);
}
@inline export function setConversationUsers(slot: u32, value: u32): void {
  store<u16>(conversationPointer(slot), <u16>value, AgentRecord.Users);
}
@inline export function queuedMessages(slot: u32): u32 {
  return load<u16>(conversationPointer(slot), AgentRecord.Queued);
}
@inline export function setQueuedMessages(slot: u32, value: u32): void {
  store<u16>(conversationPointer(slot), <u16>value, AgentRecord.Queued);
}
@inline function phaseCause(slot: u32): u32 {
  return load<u8>(conversationPointer(slot), AgentRecord.PhaseCause);
}
@inline export function conversationPhase(slot: u32): u32 {
  return phaseCause(slot) & Nibble.LowMask;
}
@inline export function setConversationPhase(slot: u32, value: u32): void {
  store<u8>(conversationPointer(slot), <u8>((phaseCause(slot) & ~Nibble.LowMask) | value), AgentRecord.PhaseCause);
}
@inline export function conversationCause(slot: u32): u32 {
  return phaseCause(slot) >>> Nibble.HighShift;
}
@inline export function setConversationCause(slot: u32, value: u32): void {
  store<u8>(conversationPointer(slot), <u8>((phaseCause(slot) & Nibble.LowMask) | (value << Nibble.HighShift)), AgentRecord.PhaseCause);
}
@inline export function conversationFlags(slot: u32): u32 {
  return load<u8>(conversationPointer(slot), AgentRecord.Flags);
}
@inline export function hasConversationFlag(slot: u32, flag: u32): bool {
  return (conversationFlags(slot) & flag) != 0;
}
@inline export function setConversationFlag(slot: u32, flag: u32, on: bool): void {
  const flags = conversationFlags(slot);
  store<u8>(conversationPointer(slot), <u8>(on ? flags | flag : flags & ~flag), AgentRecord.Flags);
}
@inline export function conversationFailures(slot: u32): u32 {
  return load<u8>(conversationPointer(slot), AgentRecord.Failures);
}
@inline export function setConversationFailures(slot: u32, value: u32): void {
  store<u8>(conversationPointer(slot), <u8>value, AgentRecord.Failures);
}

@inline export function abandonedEpoch(slot: u32): u32 {
  return load<u32>(conversationPointer(slot), AgentRecord.AbandonedEpoch);
}
@inline export function setAbandonedEpoch(slot: u32, value: u32): void {
  store<u32>(conversationPointer(slot), value, AgentRecord.AbandonedEpoch);
}

// -- lifecycle of the record ------------------------------------------------

/** A newly allocated agent slot: a conversation registering. */
export function openConversation(slot: u32): void {
  clearConversation(slot);
  setConversationPhase(slot, ConversationPhase.Registering);
}

/** A freed agent slot: the conversation's fields are all zero again (the
 * admission's byte is the agent table's). */
export function clearConversation(slot: u32): void {
  const pointer = conversationPointer(slot);
  store<u64>(pointer, 0, AgentRecord.RecoveryEpoch);
  store<u32>(pointer, 0, AgentRecord.Users);
  store<u8>(pointer, 0, AgentRecord.PhaseCause);
  store<u16>(pointer, 0, AgentRecord.Flags);
}

/** One more failure for the backoff; the count saturates at 255 (the
 * wait stopped growing long before). */
export function countFailure(slot: u32): u32 {
  const failures = conversationFailures(slot);
  const next = failures < 255 ? failures + 1 : failures;
  setConversationFailures(slot, next);
  return next;
}

/** The one backoff: `RetryMsFirst` doubling up to `RetryMsMax`, by the
 * number of failures so far (at least one). */
export function retryDelayMs(failures: u32): u32 {
  assert(failures >= 1, "a retry follows a failure");
  let delay: u32 = <u32>Limit.RetryMsFirst;
  for (let doubled: u32 = 1; doubled < failures && delay < <u32>Limit.RetryMsMax; doubled += 1) delay <<= 1;
  return delay < <u32>Limit.RetryMsMax ? delay : <u32>Limit.RetryMsMax;
}

/** True while a head `Admit` let start has not settled. */
@inline export function headStarting(slot: u32): bool {
  return hasConversationFlag(slot, ConversationFlag.HeadStarting);
}
