// The conversation table: one 16-byte record per agent slot (layout diagram
// in `abi.ts`, `ConversationRecord`), parallel to the agent table. It holds
// a conversation's lifecycle (docs/decisions/0062): its phase, the epoch and
// cause of its recovery or the cause of its hold, the host operations using
// it, the messages queued behind it, the backoff's failure count, and a
// recovery abandoned whose pass still runs.
//
// The record is written whole when its agent slot is allocated (phase
// `Registering`) and zeroed when the slot is freed, so a free slot's record
// is all zero and a stale handle is refused by the agent's generation.

import { ConversationFlag, ConversationPhase, ConversationRecord, Limit } from "./abi";
import { conversationTable } from "./memory-layout";

@inline function conversationPointer(slot: u32): usize {
  return conversationTable + (<usize>slot) * ConversationRecord.Size;
}

// -- field accessors, one per field -----------------------------------------

@inline export function recoveryEpoch(slot: u32): u32 {
  return load<u32>(conversationPointer(slot), ConversationRecord.RecoveryEpoch);
}
@inline export function setRecoveryEpoch(slot: u32, value: u32): void {
  store<u32>(conversationPointer(slot), value, ConversationRecord.RecoveryEpoch);
}
@inline export function conversationUsers(slot: u32): u32 {
  return load<u16>(conversationPointer(slot), ConversationRecord.Users);
}
@inline export function setConversationUsers(slot: u32, value: u32): void {
  store<u16>(conversationPointer(slot), <u16>value, ConversationRecord.Users);
}
@inline export function queuedMessages(slot: u32): u32 {
  return load<u16>(conversationPointer(slot), ConversationRecord.Queued);
}
@inline export function setQueuedMessages(slot: u32, value: u32): void {
  store<u16>(conversationPointer(slot), <u16>value, ConversationRecord.Queued);
}
@inline export function conversationPhase(slot: u32): u32 {
  return load<u8>(conversationPointer(slot), ConversationRecord.Phase);
}
@inline export function setConversationPhase(slot: u32, value: u32): void {
  store<u8>(conversationPointer(slot), <u8>value, ConversationRecord.Phase);
}
@inline export function conversationCause(slot: u32): u32 {
  return load<u8>(conversationPointer(slot), ConversationRecord.Cause);
}
@inline export function setConversationCause(slot: u32, value: u32): void {
  store<u8>(conversationPointer(slot), <u8>value, ConversationRecord.Cause);
}
@inline export function conversationFlags(slot: u32): u32 {
  return load<u8>(conversationPointer(slot), ConversationRecord.Flags);
}
@inline export function hasConversationFlag(slot: u32, flag: u32): bool {
  return (conversationFlags(slot) & flag) != 0;
}
@inline export function setConversationFlag(slot: u32, flag: u32, on: bool): void {
  const flags = conversationFlags(slot);
  store<u8>(conversationPointer(slot), <u8>(on ? flags | flag : flags & ~flag), ConversationRecord.Flags);
}
@inline export function conversationFailures(slot: u32): u32 {
  return load<u8>(conversationPointer(slot), ConversationRecord.Failures);
}
@inline export function setConversationFailures(slot: u32, value: u32): void {
  store<u8>(conversationPointer(slot), <u8>value, ConversationRecord.Failures);
}

@inline export function abandonedEpoch(slot: u32): u32 {
  return load<u32>(conversationPointer(slot), ConversationRecord.AbandonedEpoch);
}
@inline export function setAbandonedEpoch(slot: u32, value: u32): void {
  store<u32>(conversationPointer(slot), value, ConversationRecord.AbandonedEpoch);
}

// -- lifecycle of the record ------------------------------------------------

/** A newly allocated agent slot: a conversation registering. */
export function openConversation(slot: u32): void {
  clearConversation(slot);
  setConversationPhase(slot, ConversationPhase.Registering);
}

/** A freed agent slot: the record is all zero again. */
export function clearConversation(slot: u32): void {
  const pointer = conversationPointer(slot);
  store<u64>(pointer, 0, 0);
  store<u64>(pointer, 0, 8);
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
