// The shape every implementation of the control decisions presents: the
// WebAssembly core (`control-core.ts`) and the reference model
// (`test/model/`). Differential tests drive both through this interface and
// compare what they return after every message.

/** One agent slot as the tables hold it. A free slot reports only its
 * generation (its other fields belong to the free list). */
export interface AgentRecordView {
  readonly slot: number;
  /** The token of an admission being prepared (`Admitting`); 0 in any
   * other state (the record keeps it in the execution's word). */
  readonly ownerToken: number;
  readonly executionSlotPlusOne: number;
  readonly generation: number;
  readonly admissionState: number;
  readonly lifecycle: number;
}

/** One execution slot. A free slot reports only its generation. */
export interface ExecutionRecordView {
  readonly slot: number;
  readonly agentSlotPlusOne: number;
  readonly revision: number;
  readonly session: number;
  readonly generation: number;
  readonly waiters: number;
  readonly inFlight: number;
  readonly status: number;
  readonly phase: number;
  readonly flags: number;
}

/** One conversation record (the slot of its agent). A free agent slot's
 * record is all zero. */
export interface ConversationRecordView {
  readonly slot: number;
  readonly recoveryEpoch: number;
  readonly users: number;
  readonly queued: number;
  readonly phase: number;
  readonly cause: number;
  readonly flags: number;
  readonly failures: number;
  /** A recovery abandoned by `ConversationOwned(elsewhere)` whose pass has
   * not reported its end (0: none); no head starts meanwhile. */
  readonly abandonedEpoch: number;
}

/** Everything the decisions depend on, in comparable plain values. Slots
 * are listed from 0 up to the high-water mark (every slot ever used). */
export interface CoreSnapshot {
  readonly draining: number;
  readonly nextOwnerToken: number;
  readonly nextSession: number;
  readonly admittingAgents: number;
  readonly liveExecutions: number;
  readonly agents: readonly AgentRecordView[];
  /** One per agent slot, in slot order. */
  readonly conversations: readonly ConversationRecordView[];
  readonly executions: readonly ExecutionRecordView[];
}

/** The raw message interface: integers in, a result code and effect words
 * out. `effectWords` returns the last apply's effects, five words each. */
export interface ControlMachine {
  apply(kind: number, a?: number, b?: number, c?: number, d?: number, e?: number, f?: number, g?: number): number;
  effectWords(): number[];
  snapshot(): CoreSnapshot;
  /** Whether the execution in `slot` is held `recovery_required`: its
   * agent's admission is, bound to it. False for a free slot. */
  executionHeldForRecovery(slot: number): boolean;
  /** Whether the execution in `slot` is at rest: suspended, its agent's
   * admission suspended and bound to it, nothing in flight. False for a
   * free slot. */
  executionAtRest(slot: number): boolean;
  /** Whether the conversation in agent `slot` is at rest: ready, no use,
   * no message queued, no head starting, its admission bound to an
   * execution at rest. False for a free slot. */
  conversationAtRest(slot: number): boolean;
}

/** Sizes an environment's core is created with. */
export interface CoreLimits {
  /** Agent slots (16 bytes each, allocated up front). */
  readonly agentsMax: number;
  /** Live execution slots (24 bytes each, grown by doubling). */
  readonly executionsMax: number;
}
