// The FSM transition table, `phase × event → phase`, and the recovery
// continuation table, `continuation × durable phase → resume phase`.
// Both are dense byte matrices in static memory; a zero entry is an
// undefined pair. `docs/fsm.md` is generated from the compiled table by
// walking every pair through `fsmNext` (scripts/generate-fsm-doc.ts), so the
// document can never drift from what runs.

import { ContinuationLimit, Phase, PhaseLimit, SessionEventLimit } from "./abi";

// Table entries as byte constants (enum members are i32 in AssemblyScript).
const C: u8 = <u8>Phase.CallingLlm;
const D: u8 = <u8>Phase.DispatchingTools;
const R: u8 = <u8>Phase.RecordingToolResults;
const S: u8 = <u8>Phase.Suspended;
const U: u8 = <u8>Phase.Resuming;
const T: u8 = <u8>Phase.Terminal;

// Rows: phases 0..11. Columns: events 0..7 (none, llm_completed_with_tools,
// tools_completed, state_completed, approval_required, approval_granted,
// approval_rejected, finish).
const TRANSITIONS: usize = memory.data<u8>([
  /* none                       */ 0, 0, 0, 0, 0, 0, 0, 0,
  /* preparing                  */ 0, 0, 0, 0, 0, 0, 0, 0,
  /* calling_llm                */ 0, D, 0, 0, S, 0, 0, T,
  /* dispatching_tools          */ 0, 0, R, 0, 0, 0, 0, T,
  /* recording_tool_results     */ 0, 0, 0, C, 0, 0, 0, T,
  /* suspended                  */ 0, 0, 0, 0, 0, 0, 0, T,
  /* resuming                   */ 0, 0, 0, 0, 0, D, R, T,
  /* terminal                   */ 0, 0, 0, 0, 0, 0, 0, 0,
  /* recovery_provider_completed*/ 0, 0, 0, 0, 0, 0, 0, 0,
  /* recovery_tools             */ 0, 0, 0, 0, 0, 0, 0, 0,
  /* recovery_tools_completed   */ 0, 0, 0, 0, 0, 0, 0, 0,
  /* recovery_resolved_failed   */ 0, 0, 0, 0, 0, 0, 0, 0,
]);

// Rows: continuations 0..7. Columns: durable phases 0..11 (none, preparing,
// calling_llm, dispatching_tools, recording_tool_results, suspended,
// resuming, terminal, recovery_provider_completed, recovery_tools,
// recovery_tools_completed, recovery_resolved_failed). The entry is the
// phase the execution resumes in (SPEC §6.2); the approval condition is
// checked in `decisions/recovery.ts`. Only phases the stores write have an
// entry; the rows of the retired continuations (2–5) stay empty
// (docs/decisions/0022).
const CONTINUATIONS: usize = memory.data<u8>([
  /* none               */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  /* framework_tools    */ 0, 0, 0, D, 0, 0, D, 0, 0, 0, 0, 0,
  /* 2 retired          */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  /* 3 retired          */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  /* 4 retired          */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  /* 5 retired          */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  /* approval_rejection */ 0, 0, 0, 0, 0, 0, U, 0, 0, 0, 0, 0,
  /* recall_model       */ 0, 0, C, 0, 0, 0, 0, 0, 0, 0, 0, 0,
]);

/** The next phase for `event` in `phase`, or `Phase.None` when the pair is
 * undefined or either value is out of range. */
export function fsmNext(phase: u32, event: u32): u32 {
  if (phase >= <u32>PhaseLimit.End || event >= <u32>SessionEventLimit.End) return Phase.None;
  return load<u8>(TRANSITIONS + <usize>(phase * <u32>SessionEventLimit.End + event));
}

/** The phase a recovered execution resumes in, or `Phase.None` when the
 * continuation is not valid for the durable phase. */
export function continuationResumePhase(continuation: u32, phase: u32): u32 {
  if (continuation >= <u32>ContinuationLimit.End || phase >= <u32>PhaseLimit.End) return Phase.None;
  return load<u8>(CONTINUATIONS + <usize>(continuation * <u32>PhaseLimit.End + phase));
}
