// The typed facade over one core.wasm instance: `apply` calls the export
// directly and the effects are read back through a typed view of the core's
// memory, derived from the layout constants in assembly/abi.ts. The host
// never writes core memory.

import {
  AdmissionState,
  AgentLifecycle,
  AgentRecord,
  EffectLayout,
  ExecutionBits,
  ExecutionRecord,
  Limit,
  Nibble,
  ReplaceFact,
  ResultCode,
} from "../../assembly/abi.js";
import { InvalidInputError } from "../errors.js";
import { instantiateCore, type CoreExports } from "./core-exports.js";
import { decodeEffect, type CoreEffect } from "./effects.js";
import { loadCoreModule } from "./load-core.js";
import { messageKindName } from "./names.js";
import { CoreFailureError } from "../errors.js";
import type { AgentRecordView, ControlMachine, ConversationRecordView, CoreLimits, CoreSnapshot, ExecutionRecordView } from "./machine.js";

export const DEFAULT_CORE_LIMITS: CoreLimits = {
  agentsMax: Limit.AgentsMaxDefault,
  executionsMax: Limit.ExecutionsMaxDefault,
};

/** Limits out of range: an `INVALID_INPUT` PhronomyError like every
 * other refused option. */
export class CoreLimitError extends InvalidInputError {
  constructor(limits: CoreLimits) {
    super(
      `phronomy core: limits out of range (agentsMax ${limits.agentsMax}, executionsMax ${limits.executionsMax}); `
        + `use 1..${Limit.AgentsMaxCeiling} agents and 1..${Limit.ExecutionsMaxCeiling} executions`,
    );
  }
}

export class ControlCore implements ControlMachine {
  readonly limits: CoreLimits;
  private readonly exports: CoreExports;
  private readonly effectBase: number;
  private words: Uint32Array;
  /** Set by the first apply that trapped. The core's memory may be
   * inconsistent after a trap, so it is never entered again: every later
   * apply throws this same error (docs/decisions/0023). */
  private failure: CoreFailureError | undefined;

  /** Creates a core with its own instance. Pass a compiled module to share
   * compilation between environments. */
  static async create(limits: Partial<CoreLimits> = {}, module?: WebAssembly.Module): Promise<ControlCore> {
    return new ControlCore(module ?? (await loadCoreModule()), { ...DEFAULT_CORE_LIMITS, ...limits });
  }

  constructor(module: WebAssembly.Module, limits: CoreLimits) {
    const valid =
      Number.isInteger(limits.agentsMax)
      && Number.isInteger(limits.executionsMax)
      && limits.agentsMax >= 1
      && limits.agentsMax <= Limit.AgentsMaxCeiling
      && limits.executionsMax >= 1
      && limits.executionsMax <= Limit.ExecutionsMaxCeiling;
    if (!valid) throw new CoreLimitError(limits);
    this.limits = limits;
    this.exports = instantiateCore(module);
    const code = this.exports.init(limits.agentsMax, limits.executionsMax);
    if (code !== ResultCode.Ok) throw new CoreLimitError(limits);
    this.effectBase = this.exports.effectBufferPointer() >>> 2;
    this.words = new Uint32Array(this.exports.memory.buffer);
  }

  /** Applies one control message; the effects are then readable until the
   * next apply. Arguments are truncated to unsigned 32 bits by WebAssembly. */
  apply(kind: number, a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0): number {
    if (this.failure) throw this.failure;
    try {
      return this.exports.apply(kind, a, b, c, d, e, f, g);
    } catch (trap) {
      this.failure = new CoreFailureError(messageKindName(kind), trap);
      throw this.failure;
    }
  }

  /** The trap that stopped this core, if one did. */
  get failed(): CoreFailureError | undefined {
    return this.failure;
  }

  /** Effects of the last apply. */
  get effectCount(): number {
    return this.view()[this.effectBase + EffectLayout.CountOffset]!;
  }

  /** The word `word` (0 = kind, 1..4 = a..d) of effect `index`. Reading
   * single words avoids allocating on the hot path. */
  effectWord(index: number, word: number): number {
    return this.view()[this.effectBase + 1 + index * EffectLayout.Words + word]!;
  }

  effect(index: number): CoreEffect {
    const base = this.effectBase + 1 + index * EffectLayout.Words;
    const view = this.view();
    return decodeEffect(view[base]!, view[base + 1]!, view[base + 2]!, view[base + 3]!, view[base + 4]!);
  }

  effects(): CoreEffect[] {
    const count = this.effectCount;
    const effects: CoreEffect[] = [];
    for (let index = 0; index < count; index += 1) effects.push(this.effect(index));
    return effects;
  }

  effectWords(): number[] {
    const count = this.effectCount;
    const start = this.effectBase + 1;
    return Array.from(this.view().subarray(start, start + count * EffectLayout.Words));
  }

  snapshot(): CoreSnapshot {
    const memory = new DataView(this.exports.memory.buffer);
    const agents: AgentRecordView[] = [];
    const agentBase = this.exports.agentTablePointer();
    for (let slot = 0; slot < this.exports.agentHighWater(); slot += 1) {
      agents.push(readAgent(memory, agentBase + slot * AgentRecord.Size, slot));
    }
    const conversations: ConversationRecordView[] = [];
    for (let slot = 0; slot < this.exports.agentHighWater(); slot += 1) {
      conversations.push(readConversation(memory, agentBase + slot * AgentRecord.Size, slot));
    }
    const executions: ExecutionRecordView[] = [];
    const executionBase = this.exports.executionTablePointer();
    for (let slot = 0; slot < this.exports.executionHighWater(); slot += 1) {
      executions.push(readExecution(memory, executionBase + slot * ExecutionRecord.Size, slot));
    }
    return {
      draining: this.exports.isDraining(),
      nextOwnerToken: this.exports.nextOwnerTokenValue() >>> 0,
      nextSession: this.exports.nextSessionValue() >>> 0,
      admittingAgents: this.exports.admittingAgentCount(),
      liveExecutions: this.exports.liveExecutionCount(),
      agents,
      conversations,
      executions,
    };
  }

  /** The conversation of one agent slot (docs/decisions/0062): a read of
   * its record, for the host's checks that its own counts (queued
   * messages, users) are the core's. */
  conversation(slot: number): ConversationRecordView {
    const at = this.exports.agentTablePointer() + slot * AgentRecord.Size;
    return readConversation(new DataView(this.exports.memory.buffer), at, slot);
  }

  /** Bytes of linear memory the core holds now. */
  get memoryBytes(): number {
    return this.exports.memory.buffer.byteLength;
  }

  get liveExecutions(): number {
    return this.exports.liveExecutionCount();
  }

  /** The FSM table entry for `(phase, event)`; 0 when undefined. */
  /** TESTING ONLY: starts the counters of a fresh core near the u32 wrap
   * for the differential fuzz (assembly/index.ts, `testingSeedCounters`).
   * The host never calls it. */
  seedCountersForTesting(ownerToken: number, session: number, generation: number): number {
    return this.exports.testingSeedCounters(ownerToken, session, generation);
  }

  fsmTransition(phase: number, event: number): number {
    return this.exports.fsmTransition(phase, event);
  }

  /** The continuation table entry; 0 when the continuation is invalid. */
  continuationPhase(continuation: number, phase: number): number {
    return this.exports.continuationPhase(continuation, phase);
  }

  /** The cause byte of the conversation in `slot`: its RecoveryCause
   * while recovering, its HoldCause while held (docs/decisions/0062). */
  conversationCause(slot: number): number {
    const at = this.exports.agentTablePointer() + slot * AgentRecord.Size + AgentRecord.PhaseCause;
    return new DataView(this.exports.memory.buffer).getUint8(at) >>> Nibble.HighShift;
  }

  /** Whether the agent in `slot` is itself held for recovery: its
   * admission `recovery_required` with no execution bound to it (a
   * preparation whose outcome could not be read back). A read of the
   * core's record: `DischargeAgentRecovery` releases it. */
  agentHeldForRecovery(slot: number): boolean {
    const memory = new DataView(this.exports.memory.buffer);
    const at = this.exports.agentTablePointer() + slot * AgentRecord.Size;
    const admission = memory.getUint8(at + AgentRecord.AdmissionLifecycle) & Nibble.LowMask;
    return admission === AdmissionState.RecoveryRequired && memory.getUint32(at + AgentRecord.TokenOrExecutionPlusOne, true) === 0;
  }

  /** Whether the agent in `slot` admits a start now (its admission
   * `admitting`: a start's preparation is on its way, not yet installed).
   * A read of the core's record. */
  agentAdmitting(slot: number): boolean {
    if (slot >= this.exports.agentHighWater()) return false;
    const memory = new DataView(this.exports.memory.buffer);
    const at = this.exports.agentTablePointer() + slot * AgentRecord.Size;
    return (memory.getUint8(at + AgentRecord.AdmissionLifecycle) & Nibble.LowMask) === AdmissionState.Admitting;
  }

  /** Whether the execution in `slot` is held `recovery_required` (its
   * session abandoned, recovery owns it): the core's state, asked with no
   * copy kept in the host. One export call, no allocation. */
  executionHeldForRecovery(slot: number): boolean {
    return this.exports.executionHeldForRecovery(slot) === 1;
  }

  /** The execution slot bound to the agent in `slot` (its admission's),
   * if any: a read of its record. */
  agentExecutionSlot(slot: number): number | undefined {
    if (slot >= this.exports.agentHighWater()) return undefined;
    const view = readAgent(new DataView(this.exports.memory.buffer), this.exports.agentTablePointer() + slot * AgentRecord.Size, slot);
    return view.executionSlotPlusOne === 0 ? undefined : view.executionSlotPlusOne - 1;
  }

  /** Whether the execution in `slot` is at rest (suspended for approval,
   * nothing under way for it): the host may let go of its objects and read
   * them back from the store when asked (docs/decisions/0066). */
  executionAtRest(slot: number): boolean {
    return this.exports.executionAtRest(slot) === 1;
  }

  /** Whether the conversation in agent `slot` is at rest (ready, unused,
   * nothing queued, its execution at rest): the host may let go of its
   * record too and rebuild it when the conversation is named again
   * (docs/decisions/0092). */
  conversationAtRest(slot: number): boolean {
    return this.exports.conversationAtRest(slot) === 1;
  }

  /** The generation of the registered agent in `slot` (a read of its
   * record): what a conversation let go of is rebuilt with; undefined for
   * a free or never-used slot. */
  agentGeneration(slot: number): number | undefined {
    if (slot >= this.exports.agentHighWater()) return undefined;
    const view = readAgent(new DataView(this.exports.memory.buffer), this.exports.agentTablePointer() + slot * AgentRecord.Size, slot);
    return view.lifecycle === AgentLifecycle.Free ? undefined : view.generation;
  }

  /** The agent slot, generation and revision of the live execution in
   * `slot` (a read of its record): what a suspended execution let go of
   * here is rebuilt around (docs/decisions/0066). */
  executionIdentity(slot: number): { readonly agentSlot: number; readonly generation: number; readonly revision: number } | undefined {
    if (slot >= this.exports.executionHighWater()) return undefined;
    const at = this.exports.executionTablePointer() + slot * ExecutionRecord.Size;
    const view = readExecution(new DataView(this.exports.memory.buffer), at, slot);
    if (view.agentSlotPlusOne === 0) return undefined;
    return { agentSlot: view.agentSlotPlusOne - 1, generation: view.generation, revision: view.revision };
  }

  /** The conversation table entry for `(phase, event)`; 0 when undefined. */
  conversationTransition(phase: number, event: number): number {
    return this.exports.conversationTransition(phase, event);
  }

  /** The admission verdict for a phase, source, policy and situation
   * bits; 0 when an argument is out of range. */
  admissionVerdict(phase: number, source: number, policy: number, situation: number): number {
    return this.exports.admissionVerdict(phase, source, policy, situation);
  }

  /** Where an operation by execution id goes with no conversation here to
   * ask (`AdmissionSource`, `ByIdFact` bits): an `AdmissionVerdict`; 0 for
   * an unknown source or facts that cannot hold together. */
  byIdVerdict(source: number, facts: number): number {
    return this.exports.byIdVerdict(source, facts);
  }

  /** What becomes of a message taken from the durable queue whose Run
   * failed before it ran (its `StartAnswer`): a `QueuedRunVerdict`; 0 for
   * an answer that is not a failure. */
  queuedRunVerdict(answer: number): number {
    return this.exports.queuedRunVerdict(answer);
  }

  /** The next step of a parent's child start (its `StartAnswer`, the
   * `ChildFact` bits read since; 0 before a read): a `ChildStartVerdict`;
   * 0 for an answer or facts that cannot hold together. */
  childStartVerdict(answer: number, facts: number): number {
    return this.exports.childStartVerdict(answer, facts);
  }

  /** A start filed for this process: its fate in the inbox (its
   * `StartAnswer`, `FiledStartFact` bits): a `FiledStartVerdict`; 0 for an
   * answer or facts that cannot hold together. */
  filedStartVerdict(answer: number, facts: number): number {
    return this.exports.filedStartVerdict(answer, facts);
  }

  /** The outer Run of a keyed start whose inner Run was refused (its
   * `StartAnswer`, `KeyedStartFact` bits): a `KeyedStartVerdict`; 0 for an
   * answer or facts that cannot hold together. */
  keyedStartVerdict(answer: number, facts: number): number {
    return this.exports.keyedStartVerdict(answer, facts);
  }

  /** The due sweep's fire of one wait (`DueFireFact` bits): a
   * `DueFireVerdict`; 0 for facts that cannot hold together. */
  dueFireVerdict(facts: number): number {
    return this.exports.dueFireVerdict(facts);
  }

  /** A signal stored for an event wait's key, offered to the wait
   * (`StoredSignalFact` bits): a `StoredSignalVerdict`; 0 for facts that
   * cannot hold together. */
  storedSignalVerdict(facts: number): number {
    return this.exports.storedSignalVerdict(facts);
  }

  /** A decision claimed in the approval inbox (its `ClaimAnswer`,
   * `ClaimFact` bits): a `ClaimVerdict`; 0 for arguments that cannot hold
   * together. */
  claimedDecisionVerdict(answer: number, facts: number): number {
    return this.exports.claimedDecisionVerdict(answer, facts);
  }

  /** A start claimed in the approval inbox (its fate, a
   * `FiledStartVerdict`, 0 before it ran; `ClaimFact` bits): a
   * `ClaimVerdict`; 0 for arguments that cannot hold together. */
  claimedStartVerdict(fate: number, facts: number): number {
    return this.exports.claimedStartVerdict(fate, facts);
  }

  /** A refused enqueue (its `StartAnswer`, `EnqueueRefusalFact` bits): an
   * `EnqueueRefusalVerdict`; 0 for an answer or facts that cannot hold
   * together. */
  enqueueRefusalVerdict(answer: number, facts: number): number {
    return this.exports.enqueueRefusalVerdict(answer, facts);
  }

  /** A start whose preparation the store refused (its `StartAnswer`,
   * `RefusedStartFact` bits): a `RefusedStartVerdict`; 0 for an answer or
   * facts out of range (docs/decisions/0112). */
  refusedStartVerdict(answer: number, facts: number): number {
    return this.exports.refusedStartVerdict(answer, facts);
  }

  /** A cancel by id whose wait settled (its `CancelAnswer`,
   * `CancelRoundFact` bits, the round from 0): a `CancelRoundVerdict`; 0
   * for arguments that cannot hold together. */
  cancelRoundVerdict(answer: number, facts: number, round: number): number {
    return this.exports.cancelRoundVerdict(answer, facts, round);
  }

  /** A decision filed for another process, as its filer read it
   * (`FiledDecisionFact` bits): a `FiledFollowVerdict`; 0 for facts that
   * cannot hold together. */
  filedDecisionVerdict(facts: number): number {
    return this.exports.filedDecisionVerdict(facts);
  }

  /** A start filed for another process, as its filer (or an observer)
   * read it (`FiledStartFollowFact` bits): a `FiledFollowVerdict`; 0 for
   * facts that cannot hold together. */
  filedStartFollowVerdict(facts: number): number {
    return this.exports.filedStartFollowVerdict(facts);
  }

  /** `env.wait` on an execution not live here, its row read
   * (`ObservedRowFact` bits): an `ObservedRowVerdict`; 0 for facts that
   * cannot hold together. */
  observedRowVerdict(facts: number): number {
    return this.exports.observedRowVerdict(facts);
  }

  /** A durable watch's read of its row (`DurableWatchFact` bits): a
   * `DurableWatchVerdict`; 0 for facts that cannot hold together. */
  durableWatchVerdict(facts: number): number {
    return this.exports.durableWatchVerdict(facts);
  }

  /** A failed attempt of a model call or a tool (`FailedAttemptFact` bits,
   * the attempt from 1, the retries allowed): a `FailedAttemptVerdict`; 0
   * for arguments that cannot hold together. */
  failedAttemptVerdict(facts: number, number: number, maxRetries: number): number {
    return this.exports.failedAttemptVerdict(facts, number, maxRetries);
  }

  /** Which slot a schedule row fires (`ScheduleFact` bits): a
   * `ScheduleClaimVerdict`; 0 for facts that cannot hold together. */
  scheduleClaimVerdict(facts: number): number {
    return this.exports.scheduleClaimVerdict(facts);
  }

  /** What becomes of a firing (`ScheduleFiringFact` bits, a
   * `StartAnswer`): a `ScheduleFiringVerdict`; 0 when out of range. */
  scheduleFiringVerdict(facts: number, answer: number): number {
    return this.exports.scheduleFiringVerdict(facts, answer);
  }

  /** How many calls of a tool batch to start now: of `calls`, `started`
   * started and `settled` settled, under `limit` (0: none); `finished`
   * 1 once the session ended. `ToolCallCount.Invalid` for counts that
   * cannot hold together. */
  toolCallsToStart(calls: number, started: number, settled: number, limit: number, finished: number): number {
    return this.exports.toolCallsToStart(calls, started, settled, limit, finished);
  }

  /** Whether a preparation may replace memory from an execution
   * (`ReplaceFact` bits): a `ReplaceVerdict`; 0 for facts that cannot
   * hold together. */
  replaceVerdict(facts: number): number {
    return this.exports.replaceVerdict(facts);
  }

  /** The core's `replaceVerdict` for every fact, indexed by the facts:
   * what a replacing preparation carries to its transaction. */
  replaceVerdicts(): number[] {
    return Array.from({ length: ReplaceFact.End }, (_, facts) => this.exports.replaceVerdict(facts));
  }

  /** What becomes of one tool call of a model turn (`TurnCallFact` bits):
   * a `TurnCallVerdict`; 0 for facts that cannot hold together. */
  turnCallVerdict(facts: number): number {
    return this.exports.turnCallVerdict(facts);
  }

  /** The memory view, renewed after the core grew its memory (growing
   * detaches the old buffer, which then reads as length 0). */
  private view(): Uint32Array {
    if (this.words.length === 0) this.words = new Uint32Array(this.exports.memory.buffer);
    return this.words;
  }
}

/** The agent's fields of its record (`AgentRecord`): the owner token and
 * the execution slot + 1 share a word, told apart by the admission state. */
function readAgent(memory: DataView, at: number, slot: number): AgentRecordView {
  const generation = memory.getUint32(at + AgentRecord.Generation, true);
  const admissionLifecycle = memory.getUint8(at + AgentRecord.AdmissionLifecycle);
  const lifecycle = admissionLifecycle >>> Nibble.HighShift;
  if (lifecycle === AgentLifecycle.Free) {
    return { slot, ownerToken: 0, executionSlotPlusOne: 0, generation, admissionState: 0, lifecycle };
  }
  const admissionState = admissionLifecycle & Nibble.LowMask;
  const word = memory.getUint32(at + AgentRecord.TokenOrExecutionPlusOne, true);
  const admitting = admissionState === AdmissionState.Admitting;
  return { slot, ownerToken: admitting ? word : 0, executionSlotPlusOne: admitting ? 0 : word, generation, admissionState, lifecycle };
}

/** The conversation's fields of an agent record. */
function readConversation(memory: DataView, at: number, slot: number): ConversationRecordView {
  const phaseCause = memory.getUint8(at + AgentRecord.PhaseCause);
  return {
    slot,
    recoveryEpoch: memory.getUint32(at + AgentRecord.RecoveryEpoch, true),
    users: memory.getUint16(at + AgentRecord.Users, true),
    queued: memory.getUint16(at + AgentRecord.Queued, true),
    phase: phaseCause & Nibble.LowMask,
    cause: phaseCause >>> Nibble.HighShift,
    flags: memory.getUint8(at + AgentRecord.Flags),
    failures: memory.getUint8(at + AgentRecord.Failures),
    abandonedEpoch: memory.getUint32(at + AgentRecord.AbandonedEpoch, true),
  };
}

/** An execution record (`ExecutionRecord`): two 24-bit fields, each the
 * low three bytes of a little-endian word. */
function readExecution(memory: DataView, at: number, slot: number): ExecutionRecordView {
  const generation = memory.getUint32(at + ExecutionRecord.Generation, true);
  const agentSlotPlusOne = memory.getUint32(at + ExecutionRecord.AgentSlotPlusOne, true) & ExecutionBits.Low24;
  if (agentSlotPlusOne === 0) {
    return { slot, agentSlotPlusOne, revision: 0, session: 0, generation, waiters: 0, inFlight: 0, status: 0, phase: 0, flags: 0 };
  }
  const statusPhase = memory.getUint8(at + ExecutionRecord.StatusPhase);
  const counts = memory.getUint32(at + ExecutionRecord.WaitersInFlight, true) & ExecutionBits.Low24;
  return {
    slot,
    agentSlotPlusOne,
    revision: memory.getUint32(at + ExecutionRecord.Revision, true),
    session: memory.getUint32(at + ExecutionRecord.Session, true),
    generation,
    waiters: counts & ExecutionBits.WaitersMask,
    inFlight: counts >>> ExecutionBits.InFlightShift,
    status: statusPhase & Nibble.LowMask,
    phase: statusPhase >>> Nibble.HighShift,
    flags: memory.getUint8(at + ExecutionRecord.Flags),
  };
}
