// The conversation table, `phase × event → phase` (docs/decisions/0062): a
// dense byte matrix in static memory, as the execution FSM (`fsm.ts`). A
// zero entry is an undefined pair: the message is dropped with
// `ConversationPhaseMustMatch` and nothing changes. `docs/fsm.md` renders
// it by walking every pair through `conversationNext`.
//
// The guards beside the table (a recovery's epoch, users and queued counts,
// the admission an execution holds) are checked in
// `decisions/conversation.ts`; the table says only which phase follows.

import { ConversationEventLimit, ConversationPhase, ConversationPhaseLimit } from "./abi";

// Table entries as byte constants (enum members are i32 in AssemblyScript).
const G: u8 = <u8>ConversationPhase.Registering;
const V: u8 = <u8>ConversationPhase.Recovering;
const Y: u8 = <u8>ConversationPhase.Ready;
const H: u8 = <u8>ConversationPhase.Held;
const E: u8 = <u8>ConversationPhase.OwnedElsewhere;
const L: u8 = <u8>ConversationPhase.Releasing;

// Rows: phases 0..6. Columns: events 0..8 (none, owned_here,
// owned_elsewhere, recovery_requested, recovered, recovery_failed, held,
// idle, used). A recovery asked for while another process holds the
// conversation runs too: it lets go of what this process still holds (an
// execution a store fault left held here, a decision on it), and the
// queue it reads back reports the owner again (docs/decisions/0062,
// "Owned elsewhere"); a held one is not held twice (one retry is pending);
// a ready or owned-elsewhere one is let go when idle (one that is not kept
// costs a slot: 65,536 of them refuse CAPACITY), not a held one (its retry
// is what recovers it); any phase but none may be used (a releasing one is
// ready again — or owned elsewhere, as it was when let go: the guard in
// `applyUseBegin`).
const TRANSITIONS: usize = memory.data<u8>([
  /* none            */ 0, 0, 0, 0, 0, 0, 0, 0, 0,
  /* registering     */ 0, G, E, V, 0, 0, 0, 0, G,
  /* recovering      */ 0, V, E, V, Y, H, 0, 0, V,
  /* ready           */ 0, Y, E, V, 0, 0, H, L, Y,
  /* held            */ 0, H, E, V, 0, 0, 0, 0, H,
  /* owned_elsewhere */ 0, G, E, V, 0, 0, 0, L, E,
  /* releasing       */ 0, L, E, V, 0, 0, 0, 0, Y,
]);

/** The next phase for `event` in `phase`, or `ConversationPhase.None` when
 * the pair is undefined or either value is out of range. */
export function conversationNext(phase: u32, event: u32): u32 {
  if (phase >= <u32>ConversationPhaseLimit.End || event >= <u32>ConversationEventLimit.End) return ConversationPhase.None;
  return load<u8>(TRANSITIONS + <usize>(phase * <u32>ConversationEventLimit.End + event));
}
