// The reference model of the control core.
//
// This file decides every control message the same way the WebAssembly core
// (`assembly/`) must, following `docs/core.md` to the letter: same result
// code, same effects in the same order, same table state. It is the oracle
// that differential fuzzing compares the core against, so it is written to be
// obviously right rather than fast: records are plain objects in arrays, free
// lists are arrays used as stacks, the FSM and continuation tables are plain
// literals searched by linear scan, and every message is one method whose
// checks appear in the contract's order. It was written from the contract and
// `assembly/abi.ts` only, never from the core's source.
//
// Where the contract can be read more than one way, the literal reading was
// taken and the choice is written down next to the code as "READING:".

import {
  AdmissionState,
  AgentLifecycle,
  CommitOutcome,
  Continuation,
  EffectKind,
  ExecutionFlag,
  ExecutionFlagMask,
  ExecutionStatus,
  Limit,
  MessageKind,
  OutcomeType,
  Phase,
  PreparationOutcome,
  RecoveryScope,
  ResultCode,
  ResumeFact,
  SessionEnding,
  SessionEventKind,
  SetupFailure,
  Submission,
} from "../../assembly/abi.js";
import type { AgentRecordView, ControlMachine, CoreLimits, CoreSnapshot, ExecutionRecordView } from "../../host/core/machine.js";
import { ReferenceConversations } from "./reference-conversations.js";

// ---------------------------------------------------------------------------
// The FSM table (docs/core.md, "The FSM table"): phase × event → phase, with
// the effect emitted on entry (0 = none). Every pair not listed is undefined.

interface Transition {
  readonly phase: Phase;
  readonly event: SessionEventKind;
  readonly next: Phase;
  readonly onEntry: EffectKind | 0;
}

const FSM_TABLE: readonly Transition[] = [
  { phase: Phase.CallingLlm, event: SessionEventKind.LlmCompletedWithTools, next: Phase.DispatchingTools, onEntry: EffectKind.SubmitToolBarrier },
  { phase: Phase.CallingLlm, event: SessionEventKind.ApprovalRequired, next: Phase.Suspended, onEntry: 0 },
  { phase: Phase.CallingLlm, event: SessionEventKind.Finish, next: Phase.Terminal, onEntry: 0 },
  { phase: Phase.DispatchingTools, event: SessionEventKind.ToolsCompleted, next: Phase.RecordingToolResults, onEntry: 0 },
  { phase: Phase.DispatchingTools, event: SessionEventKind.Finish, next: Phase.Terminal, onEntry: 0 },
  { phase: Phase.RecordingToolResults, event: SessionEventKind.StateCompleted, next: Phase.CallingLlm, onEntry: EffectKind.SubmitProviderBarrier },
  { phase: Phase.RecordingToolResults, event: SessionEventKind.Finish, next: Phase.Terminal, onEntry: 0 },
  { phase: Phase.Suspended, event: SessionEventKind.Finish, next: Phase.Terminal, onEntry: 0 },
  { phase: Phase.Resuming, event: SessionEventKind.ApprovalGranted, next: Phase.DispatchingTools, onEntry: EffectKind.SubmitToolBarrier },
  { phase: Phase.Resuming, event: SessionEventKind.ApprovalRejected, next: Phase.RecordingToolResults, onEntry: 0 },
  { phase: Phase.Resuming, event: SessionEventKind.Finish, next: Phase.Terminal, onEntry: 0 },
];

function findTransition(phase: number, event: number): Transition | undefined {
  for (const row of FSM_TABLE) {
    if (row.phase === phase && row.event === event) return row;
  }
  return undefined;
}

// ---------------------------------------------------------------------------
// The continuation table (docs/core.md, `ContinueRecovered`).

interface FlagCondition {
  readonly flag: ExecutionFlag;
  /** true: the flag must be set; false: the flag must be clear. */
  readonly set: boolean;
}

interface ContinuationRow {
  readonly continuation: Continuation;
  readonly validPhases: readonly Phase[];
  readonly flagCondition: FlagCondition | null;
  readonly resumePhase: Phase;
  /** Effects emitted after *register waiter*. */
  readonly effects: readonly EffectKind[];
}

// Only continuations from durable states the stores write are listed; the
// retired ones (2–5: framework_calls, output, followup, failed_terminal)
// and `None` have no row, so the table says no (docs/decisions/0022).
const CONTINUATION_TABLE: readonly ContinuationRow[] = [
  {
    continuation: Continuation.FrameworkTools,
    validPhases: [Phase.DispatchingTools, Phase.Resuming],
    flagCondition: null,
    resumePhase: Phase.DispatchingTools,
    effects: [EffectKind.ContinueSession, EffectKind.SubmitToolBarrier],
  },
  {
    continuation: Continuation.ApprovalRejection,
    validPhases: [Phase.Resuming],
    flagCondition: { flag: ExecutionFlag.ApprovalGranted, set: false },
    resumePhase: Phase.Resuming,
    effects: [EffectKind.ContinueSession],
  },
  {
    continuation: Continuation.RecallModel,
    validPhases: [Phase.CallingLlm],
    flagCondition: null,
    resumePhase: Phase.CallingLlm,
    effects: [EffectKind.ContinueSession, EffectKind.SubmitProviderBarrier],
  },
];

function findContinuation(continuation: number): ContinuationRow | undefined {
  for (const row of CONTINUATION_TABLE) {
    if (row.continuation === continuation) return row;
  }
  return undefined;
}

// ---------------------------------------------------------------------------
// Records and small helpers.

interface Agent {
  ownerToken: number;
  executionSlotPlusOne: number;
  generation: number;
  admissionState: number;
  lifecycle: number;
}

interface Execution {
  agentSlotPlusOne: number;
  revision: number;
  session: number;
  generation: number;
  waiters: number;
  inFlight: number;
  status: number;
  phase: number;
  flags: number;
}

const U32_MAX = 0xffff_ffff;

/** Any input as an unsigned 32-bit value; never throws. */
function u32(x: unknown): number {
  if (typeof x === "number") return x >>> 0;
  try {
    return Number(x) >>> 0;
  } catch {
    return 0;
  }
}

/** The next value of a counter or generation: +1, skipping 0 on wrap. */
function nextNonZero(value: number): number {
  return value === U32_MAX ? 1 : value + 1;
}

function hasFlag(flags: number, flag: ExecutionFlag): boolean {
  return (flags & flag) !== 0;
}

/** Only bits of `HostSettable` are set. */
function isHostSettable(flags: number): boolean {
  return (flags & ~ExecutionFlagMask.HostSettable) === 0;
}

function isZeroOrOne(x: number): boolean {
  return x === 0 || x === 1;
}

function inRange(x: number, low: number, high: number): boolean {
  return x >= low && x <= high;
}

function freshExecution(generation: number): Execution {
  return {
    agentSlotPlusOne: 0,
    revision: 0,
    session: 0,
    generation,
    waiters: 0,
    inFlight: 0,
    status: ExecutionStatus.None,
    phase: Phase.None,
    flags: 0,
  };
}

function freshAgent(generation: number): Agent {
  return {
    ownerToken: 0,
    executionSlotPlusOne: 0,
    generation,
    admissionState: AdmissionState.None,
    lifecycle: AgentLifecycle.Free,
  };
}

// ---------------------------------------------------------------------------

export class ReferenceCore implements ControlMachine {
  private readonly agentsMax: number;
  private readonly executionsMax: number;

  private draining = 0;
  private nextOwnerToken = 1;
  private nextSession = 1;
  private admittingAgents = 0;
  private liveExecutions = 0;

  /** Index = slot; length = high-water mark. */
  private readonly agents: Agent[] = [];
  private readonly executions: Execution[] = [];
  /** LIFO free lists: the last element is the most recently freed slot. */
  private readonly freeAgents: number[] = [];
  private readonly freeExecutions: number[] = [];

  private effects: number[] = [];
  /** The conversation lifecycle, one record per agent slot. */
  private readonly conversations = new ReferenceConversations({
    emit: (kind, a, b, c, d) => this.emit(kind, a, b, c, d),
    drop: (kind, code) => this.drop(kind, code),
    refuse: (request, code) => this.refuse(request, code),
    checkAgent: (slot, generation) => this.checkAgent(slot, generation),
    agent: (slot) => this.agentAt(slot),
    admittedExecution: (slot) => this.admittedExecution(slot),
  });
  /** The generation a never-used slot starts at (1 unless seeded). */
  private firstGeneration = 1;

  constructor(limits: CoreLimits) {
    this.agentsMax = u32(limits.agentsMax);
    this.executionsMax = u32(limits.executionsMax);
  }

  // --- ControlMachine -----------------------------------------------------

  apply(kind: number, a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0): number {
    this.effects = [];
    const k = u32(kind);
    const [A, B, C, D, E, F, G] = [u32(a), u32(b), u32(c), u32(d), u32(e), u32(f), u32(g)];
    switch (k) {
      case MessageKind.RegisterAgent:
        return this.registerAgent(A);
      case MessageKind.CloseAgent:
        return this.closeAgent(A, B);
      case MessageKind.PurgeAgent:
        return this.purgeAgent(A, B);
      case MessageKind.Start:
        return this.start(A, B, C, D);
      // F is retired (was flags), and so is E of ContinueRecovered (was
      // hasFailure): ignored, like unused arguments.
      case MessageKind.InitialPreparationReady:
        return this.initialPreparationReady(A, B, C, D, E, G);
      case MessageKind.ProviderDispatchReady:
        return this.providerDispatchReady(A, B, C, D, E, F);
      case MessageKind.ToolDispatchReady:
        return this.toolDispatchReady(A, B, C, D, E, F, G);
      case MessageKind.SessionEvent:
        return this.sessionEvent(A, B, C, D);
      case MessageKind.OperationSettled:
        return this.operationSettled(A, B);
      case MessageKind.SessionFinished:
        return this.sessionFinished(A, B, C, D);
      case MessageKind.DeferredTerminal:
        return this.deferredTerminal(A, B, C);
      case MessageKind.TerminalCommitReady:
        return this.terminalCommitReady(A, B, C, D, E, F);
      case MessageKind.Resume:
        return this.resume(A, B, C, D, E, F, G);
      case MessageKind.ResumeCommitReady:
        return this.resumeCommitReady(A, B, C, D, E, F, G);
      case MessageKind.RecoveryInstall:
        return this.recoveryInstall(A, B, C, D, E, F, G);
      case MessageKind.ContinueRecovered:
        return this.continueRecovered(A, B, C, D, F);
      case MessageKind.CancelRequested:
        return this.cancelRequested(A, B);
      case MessageKind.AttachWaiter:
        return this.attachWaiter(A, B, C);
      case MessageKind.SubmissionRefused:
        return this.submissionRefused(A, B, C, D, E);
      case MessageKind.SetDraining:
        return this.setDraining(A);
      case MessageKind.DischargeRecovery:
        return this.dischargeRecovery(A, B, C);
      case MessageKind.DischargeAgentRecovery:
        return this.dischargeAgentRecovery(A, B);
      case MessageKind.CancelSuspended:
        return this.cancelSuspended(A, B, C);
      case MessageKind.CancelCommitReady:
        return this.cancelCommitReady(A, B, C, D, E, F);
      // The conversation lifecycle, else retired kinds (16, 17) and unknown ones.
      default:
        return this.conversations.apply(k, A, B, C, D, E, F, G) ?? ResultCode.MessageKindUnknown;
    }
  }

  /** TESTING ONLY, as the core's `testingSeedCounters`: a fresh model
   * (no agent registered yet) starts its counters at the given values. */
  seedCountersForTesting(ownerToken: number, session: number, generation: number): number {
    const [token, next, first] = [u32(ownerToken), u32(session), u32(generation)];
    if (token === 0 || next === 0 || first === 0 || this.agents.length > 0) return ResultCode.ArgumentOutOfRange;
    this.nextOwnerToken = token;
    this.nextSession = next;
    this.firstGeneration = first;
    return ResultCode.Ok;
  }

  effectWords(): number[] {
    return this.effects.slice();
  }

  /** The execution in `slot` is held `recovery_required`: its agent's
   * admission is, bound to it (the core's `executionHeldForRecovery`). */
  executionHeldForRecovery(slot: number): boolean {
    const exec = this.executions[u32(slot)];
    if (exec === undefined || exec.agentSlotPlusOne === 0) return false;
    const agent = this.agents[exec.agentSlotPlusOne - 1];
    return agent?.admissionState === AdmissionState.RecoveryRequired && agent.executionSlotPlusOne === u32(slot) + 1;
  }

  /** The execution in `slot` is at rest: suspended, its agent's admission
   * suspended and bound to it, nothing in flight (the core's `executionAtRest`). */
  executionAtRest(slot: number): boolean {
    const exec = this.executions[u32(slot)];
    if (exec === undefined || exec.agentSlotPlusOne === 0) return false;
    if (exec.status !== ExecutionStatus.Suspended || exec.inFlight !== 0) return false;
    const agent = this.agents[exec.agentSlotPlusOne - 1];
    return agent?.admissionState === AdmissionState.Suspended && agent.executionSlotPlusOne === u32(slot) + 1;
  }

  /** The conversation in agent `slot` is at rest: ready, unused, nothing
   * queued, no head starting, its execution at rest (the core's
   * `conversationAtRest`). */
  conversationAtRest(slot: number): boolean {
    const agent = this.agents[u32(slot)];
    if (agent === undefined || agent.lifecycle === AgentLifecycle.Free || !this.conversations.readyAndUnused(u32(slot))) return false;
    return agent.executionSlotPlusOne !== 0 && this.executionAtRest(agent.executionSlotPlusOne - 1);
  }

  snapshot(): CoreSnapshot {
    const agents: AgentRecordView[] = this.agents.map((agent, slot) =>
      agent.lifecycle === AgentLifecycle.Free
        ? { slot, ownerToken: 0, executionSlotPlusOne: 0, generation: agent.generation, admissionState: 0, lifecycle: 0 }
        : { slot, ...agent, ownerToken: agent.admissionState === AdmissionState.Admitting ? agent.ownerToken : 0 },
    );
    const executions: ExecutionRecordView[] = this.executions.map((exec, slot) =>
      exec.agentSlotPlusOne === 0 ? { ...freshExecution(exec.generation), slot } : { slot, ...exec },
    );
    return {
      draining: this.draining,
      nextOwnerToken: this.nextOwnerToken,
      nextSession: this.nextSession,
      admittingAgents: this.admittingAgents,
      liveExecutions: this.liveExecutions,
      agents,
      conversations: this.conversations.views(this.agents.length),
      executions,
    };
  }

  // --- Effects and refusals -----------------------------------------------

  private emit(kind: EffectKind, a = 0, b = 0, c = 0, d = 0): void {
    this.effects.push(kind, a >>> 0, b >>> 0, c >>> 0, d >>> 0);
  }

  /** A refused result: `DropStale(kind, code)`, nothing changes. */
  private drop(kind: MessageKind, code: ResultCode): ResultCode {
    this.emit(EffectKind.DropStale, kind, code);
    return code;
  }

  /** A refused request: `FailRequest(request, code)`. */
  private refuse(request: number, code: ResultCode): ResultCode {
    this.emit(EffectKind.FailRequest, request, code);
    return code;
  }

  // --- Slots --------------------------------------------------------------

  /** A slot from the free list (most recently freed first), else the next
   * never-used slot, else -1. */
  private allocateAgentSlot(): number {
    let slot = this.freeAgents.pop();
    if (slot === undefined) {
      if (this.agents.length >= this.agentsMax) return -1;
      this.agents.push(freshAgent(this.firstGeneration));
      slot = this.agents.length - 1;
    }
    this.conversations.opened(slot);
    return slot;
  }

  private freeAgentSlot(slot: number): void {
    const generation = nextNonZero(this.agentAt(slot).generation);
    this.agents[slot] = freshAgent(generation);
    this.conversations.freed(slot);
    this.freeAgents.push(slot);
  }

  /** Installing an admitted execution can never fail (the capacity rule
   * reserves the slot), so running out here is a bug in this model. */
  private allocateExecutionSlot(): number {
    let slot = this.freeExecutions.pop();
    if (slot === undefined) {
      if (this.executions.length >= this.executionsMax) {
        throw new Error("reference model invariant broken: no execution slot for an admitted execution");
      }
      this.executions.push(freshExecution(this.firstGeneration));
      slot = this.executions.length - 1;
    }
    this.liveExecutions += 1;
    return slot;
  }

  /** *free execution*: record cleared, generation incremented, slot pushed on
   * the free list, `liveExecutions -= 1`. Returns the generation it had. */
  private freeExecution(exec: number): number {
    const had = this.executionAt(exec).generation;
    this.executions[exec] = freshExecution(nextNonZero(had));
    this.freeExecutions.push(exec);
    this.liveExecutions -= 1;
    return had;
  }

  /** "agent check": `Ok`, `AgentSlotUnknown` or `AgentGenerationMustMatch`. */
  private checkAgent(slot: number, generation: number): ResultCode {
    if (slot >= this.agents.length) return ResultCode.AgentSlotUnknown;
    const agent = this.agentAt(slot);
    if (agent.lifecycle === AgentLifecycle.Free) return ResultCode.AgentSlotUnknown;
    if (agent.generation !== generation) return ResultCode.AgentGenerationMustMatch;
    return ResultCode.Ok;
  }

  /** "exec check": `Ok`, `ExecutionSlotUnknown` or
   * `ExecutionGenerationMustMatch`. */
  private checkExecution(slot: number, generation: number): ResultCode {
    if (slot >= this.executions.length) return ResultCode.ExecutionSlotUnknown;
    const exec = this.executionAt(slot);
    if (exec.agentSlotPlusOne === 0) return ResultCode.ExecutionSlotUnknown;
    if (exec.generation !== generation) return ResultCode.ExecutionGenerationMustMatch;
    return ResultCode.Ok;
  }

  /** The record of a slot below the high-water mark. Every caller has
   * checked the slot first, so a miss is a bug in this model. */
  private agentAt(slot: number): Agent {
    const agent = this.agents[slot];
    if (agent === undefined) throw new Error(`reference model bug: agent slot ${slot} read unchecked`);
    return agent;
  }

  private admittedExecution(slot: number): { slot: number; generation: number; status: number; inFlight: number } | undefined {
    const plusOne = this.agentAt(slot).executionSlotPlusOne;
    if (plusOne === 0) return undefined;
    const exec = this.executionAt(plusOne - 1);
    return { slot: plusOne - 1, generation: exec.generation, status: exec.status, inFlight: exec.inFlight };
  }

  private executionAt(slot: number): Execution {
    const exec = this.executions[slot];
    if (exec === undefined) throw new Error(`reference model bug: execution slot ${slot} read unchecked`);
    return exec;
  }

  /** The agent an execution belongs to. */
  private agentOf(exec: Execution): Agent {
    return this.agentAt(exec.agentSlotPlusOne - 1);
  }

  /** Messages from a live session: session 0 names none, never matches. */
  private liveSessionMatches(exec: Execution, session: number): boolean {
    return session !== 0 && exec.session === session;
  }

  private hasCapacity(): boolean {
    return this.liveExecutions + this.admittingAgents < this.executionsMax;
  }

  private takeOwnerToken(): number {
    const token = this.nextOwnerToken;
    this.nextOwnerToken = nextNonZero(token);
    return token;
  }

  private takeSession(): number {
    const session = this.nextSession;
    this.nextSession = nextNonZero(session);
    return session;
  }

  // --- Helpers named in the contract --------------------------------------

  /** *release admission*. */
  private releaseAdmission(agent: Agent): void {
    if (agent.admissionState === AdmissionState.Admitting) this.admittingAgents -= 1;
    agent.admissionState = AdmissionState.None;
    agent.ownerToken = 0;
    agent.executionSlotPlusOne = 0;
  }

  /** *register waiter*. Returns `WaitersFull` when the waiter was refused. */
  private registerWaiter(execSlot: number, request: number): ResultCode {
    const exec = this.executionAt(execSlot);
    if (exec.waiters >= Limit.WaitersMax) {
      this.emit(EffectKind.FailRequest, request, ResultCode.WaitersFull);
      return ResultCode.WaitersFull;
    }
    exec.waiters += 1;
    this.emit(EffectKind.RegisterWaiter, execSlot, request);
    return ResultCode.Ok;
  }

  /** *require recovery*. READING: `admittingAgents` is not touched (an agent
   * bound to an execution is never `Admitting`), and nothing else changes. */
  private requireRecovery(execSlot: number, code: ResultCode): void {
    const exec = this.executionAt(execSlot);
    this.agentOf(exec).admissionState = AdmissionState.RecoveryRequired;
    exec.session = 0;
    exec.flags &= ~ExecutionFlag.TerminalDeferred;
    this.emit(EffectKind.RecoveryRequired, execSlot, RecoveryScope.Execution, code);
    this.emit(EffectKind.FailWaiters, execSlot, code);
    exec.waiters = 0;
  }

  /** *enter phase*: a barrier phase counts its barrier as in flight. */
  private enterPhase(execSlot: number, phase: Phase): void {
    const exec = this.executionAt(execSlot);
    if (phase === Phase.CallingLlm) {
      exec.inFlight += 1;
      this.emit(EffectKind.SubmitProviderBarrier, execSlot, exec.session, exec.revision);
    } else if (phase === Phase.DispatchingTools) {
      exec.inFlight += 1;
      this.emit(EffectKind.SubmitToolBarrier, execSlot, exec.session, exec.revision);
    }
  }

  /** *settle operation*. */
  private settleOperation(execSlot: number): void {
    const exec = this.executionAt(execSlot);
    exec.inFlight -= 1;
    if (exec.inFlight === 0 && hasFlag(exec.flags, ExecutionFlag.TerminalDeferred)) {
      this.emit(EffectKind.PostDeferredTerminal, execSlot, exec.session);
    }
  }

  /** *begin terminal commit*. */
  private beginTerminalCommit(execSlot: number): void {
    const exec = this.executionAt(execSlot);
    this.agentOf(exec).admissionState = AdmissionState.Terminalizing;
    this.emit(EffectKind.SubmitTerminalCommit, execSlot, exec.session, exec.revision);
  }

  /** *finish execution* with outcome `t`. */
  private finishExecution(execSlot: number, outcome: OutcomeType): void {
    const exec = this.executionAt(execSlot);
    exec.status = ExecutionStatus.Terminal;
    this.emit(EffectKind.DeliverOutcome, execSlot, outcome);
    this.releaseAdmission(this.agentOf(exec));
    const had = this.freeExecution(execSlot);
    this.emit(EffectKind.ReleaseExecution, execSlot, had);
  }

  /** *fail attached waiters* with `code`: if `waiters ≠ 0`, emit
   * `FailWaiters(exec, code)` and `waiters = 0`; else nothing. */
  private failAttachedWaiters(execSlot: number, code: ResultCode): void {
    const exec = this.executionAt(execSlot);
    if (exec.waiters === 0) return;
    this.emit(EffectKind.FailWaiters, execSlot, code);
    exec.waiters = 0;
  }

  // --- Messages -----------------------------------------------------------
  //
  // Result codes of decided branches ("Which code a decided branch
  // returns"): a branch caused by malformed or invalid input returns its fact
  // (OutcomeUnknown, ArgumentOutOfRange, RevisionMustIncrease, InFlightFull,
  // ContinuationInvalid) although it also changed state; a
  // branch applying a failure the durable layer or the offload reported
  // (RehydrationRequired, StoreFailed, OffloadFull, a preparation outcome
  // other than Active) returns Ok.
  //
  // READING (waiters): a *register waiter* refused with WaitersFull inside
  // another decision leaves that decision's code as it is (Ok); only
  // AttachWaiter, whose whole request is the waiter, returns WaitersFull.
  //
  // Administrative messages (RegisterAgent, CloseAgent, PurgeAgent,
  // SetDraining, DischargeRecovery, DischargeAgentRecovery) return their refusal code and emit
  // nothing.

  private registerAgent(closed: number): ResultCode {
    if (!isZeroOrOne(closed)) return ResultCode.ArgumentOutOfRange;
    const slot = this.allocateAgentSlot();
    if (slot < 0) return ResultCode.AgentsFull;
    const agent = this.agentAt(slot);
    agent.lifecycle = closed === 1 ? AgentLifecycle.Closed : AgentLifecycle.Open;
    agent.admissionState = AdmissionState.None;
    agent.ownerToken = 0;
    agent.executionSlotPlusOne = 0;
    this.emit(EffectKind.AgentRegistered, slot, agent.generation);
    return ResultCode.Ok;
  }

  private closeAgent(slot: number, generation: number): ResultCode {
    const code = this.checkAgent(slot, generation);
    if (code !== ResultCode.Ok) return code;
    this.agentAt(slot).lifecycle = AgentLifecycle.Closed;
    // Its starts are refused in any phase now: those waiting ask again.
    this.emit(EffectKind.ReadinessChanged, slot);
    return ResultCode.Ok;
  }

  private purgeAgent(slot: number, generation: number): ResultCode {
    const code = this.checkAgent(slot, generation);
    if (code !== ResultCode.Ok) return code;
    if (this.agentAt(slot).admissionState !== AdmissionState.None) return ResultCode.AgentAdmissionHeld;
    if (this.conversations.inUse(slot)) return ResultCode.ConversationInUse;
    this.conversations.purged(slot);
    this.freeAgentSlot(slot);
    return ResultCode.Ok;
  }

  private setDraining(on: number): ResultCode {
    if (!isZeroOrOne(on)) return ResultCode.ArgumentOutOfRange;
    this.draining = on;
    return ResultCode.Ok;
  }

  private start(slot: number, generation: number, request: number, cancelled: number): ResultCode {
    if (this.draining === 1) return this.refuse(request, ResultCode.RuntimeDraining);
    const code = this.checkAgent(slot, generation);
    if (code !== ResultCode.Ok) return this.refuse(request, code);
    if (!isZeroOrOne(cancelled)) return this.refuse(request, ResultCode.ArgumentOutOfRange);
    if (cancelled === 1) return this.refuse(request, ResultCode.StartCancelled);
    const agent = this.agentAt(slot);
    if (agent.lifecycle === AgentLifecycle.Closed) return this.refuse(request, ResultCode.AgentClosed);
    if (agent.admissionState !== AdmissionState.None) return this.refuse(request, ResultCode.AgentAlreadyAdmitted);
    if (!this.hasCapacity()) return this.refuse(request, ResultCode.ExecutionsFull);

    agent.admissionState = AdmissionState.Admitting;
    agent.ownerToken = this.takeOwnerToken();
    this.admittingAgents += 1;
    this.emit(EffectKind.SubmitPrepare, slot, agent.ownerToken, request);
    return ResultCode.Ok;
  }

  private initialPreparationReady(slot: number, generation: number, token: number, outcome: number, revision: number, request: number): ResultCode {
    const K = MessageKind.InitialPreparationReady;
    const code = this.checkAgent(slot, generation);
    if (code !== ResultCode.Ok) return this.drop(K, code);
    const agent = this.agentAt(slot);
    if (agent.admissionState !== AdmissionState.Admitting) return this.drop(K, ResultCode.AdmissionStateMustMatch);
    if (token !== agent.ownerToken) return this.drop(K, ResultCode.OwnerTokenMustMatch);

    // READING: the owner token is kept (read only while `Admitting`; the view shows 0 after).
    if (!inRange(outcome, PreparationOutcome.Active, PreparationOutcome.StoreFailed)) {
      agent.admissionState = AdmissionState.RecoveryRequired;
      this.admittingAgents -= 1;
      this.emit(EffectKind.RecoveryRequired, slot, RecoveryScope.Agent, ResultCode.OutcomeUnknown);
      this.emit(EffectKind.FailRequest, request, ResultCode.OutcomeUnknown);
      return ResultCode.OutcomeUnknown;
    }

    switch (outcome) {
      case PreparationOutcome.NotEstablished:
      case PreparationOutcome.Terminal:
        this.releaseAdmission(agent);
        this.emit(EffectKind.DeliverStartFailure, request, outcome);
        return ResultCode.Ok;

      case PreparationOutcome.OutcomeUnknown:
      case PreparationOutcome.RecoveryRequired:
      case PreparationOutcome.StoreFailed: {
        const c = outcome === PreparationOutcome.StoreFailed ? ResultCode.StoreFailed : ResultCode.RehydrationRequired;
        agent.admissionState = AdmissionState.RecoveryRequired;
        this.admittingAgents -= 1;
        this.emit(EffectKind.RecoveryRequired, slot, RecoveryScope.Agent, c);
        this.emit(EffectKind.DeliverStartFailure, request, outcome);
        return ResultCode.Ok;
      }

      default: {
        // PreparationOutcome.Active
        this.admittingAgents -= 1;
        const execSlot = this.allocateExecutionSlot();
        const exec = this.executionAt(execSlot);
        exec.agentSlotPlusOne = slot + 1;
        exec.revision = revision;
        exec.session = this.takeSession();
        exec.status = ExecutionStatus.Active;
        exec.phase = Phase.CallingLlm;
        exec.flags = 0;
        exec.waiters = 0;
        exec.inFlight = 0;
        agent.admissionState = AdmissionState.Executing;
        agent.executionSlotPlusOne = execSlot + 1;
        this.emit(EffectKind.ExecutionInstalled, execSlot, exec.generation, request);
        this.registerWaiter(execSlot, request);
        this.emit(EffectKind.StartSession, execSlot, exec.session);
        this.enterPhase(execSlot, Phase.CallingLlm);
        return ResultCode.Ok;
      }
    }
  }

  private providerDispatchReady(
    execSlot: number,
    generation: number,
    session: number,
    expectedRevision: number,
    outcome: number,
    newRevision: number,
  ): ResultCode {
    return this.dispatchReady(
      MessageKind.ProviderDispatchReady,
      Phase.CallingLlm,
      SetupFailure.Provider,
      execSlot,
      generation,
      session,
      expectedRevision,
      outcome,
      newRevision,
      1,
    );
  }

  private toolDispatchReady(
    execSlot: number,
    generation: number,
    session: number,
    expectedRevision: number,
    outcome: number,
    newRevision: number,
    toolCount: number,
  ): ResultCode {
    return this.dispatchReady(
      MessageKind.ToolDispatchReady,
      Phase.DispatchingTools,
      SetupFailure.Tool,
      execSlot,
      generation,
      session,
      expectedRevision,
      outcome,
      newRevision,
      toolCount,
    );
  }

  /** `ProviderDispatchReady` and `ToolDispatchReady` (the latter is "as the
   * former, except" its phase, setup failure and tool count). For the
   * provider, `count` is the one model call. */
  private dispatchReady(
    K: MessageKind,
    phase: Phase,
    failure: SetupFailure,
    execSlot: number,
    generation: number,
    session: number,
    expectedRevision: number,
    outcome: number,
    newRevision: number,
    count: number,
  ): ResultCode {
    const code = this.checkExecution(execSlot, generation);
    if (code !== ResultCode.Ok) return this.drop(K, code);
    const exec = this.executionAt(execSlot);
    if (exec.revision !== expectedRevision) return this.drop(K, ResultCode.RevisionMustMatch);
    if (!this.liveSessionMatches(exec, session)) return this.drop(K, ResultCode.SessionMustMatch);
    if (exec.phase !== phase && exec.phase !== Phase.Terminal) return this.drop(K, ResultCode.PhaseMustMatch);
    if (exec.inFlight === 0) return this.drop(K, ResultCode.InFlightUnderflow);

    if (exec.phase === Phase.Terminal) {
      // The session finished while its barrier was written: take the
      // revision of a committed barrier, start nothing. The barrier
      // answered, so it settles, after the hold if it holds (issue 24 item 11).
      if (!inRange(outcome, CommitOutcome.Committed, CommitOutcome.StoreFailed)) {
        this.requireRecovery(execSlot, ResultCode.OutcomeUnknown);
        this.settleOperation(execSlot);
        return ResultCode.OutcomeUnknown;
      }
      if (outcome === CommitOutcome.RehydrationRequired) {
        this.requireRecovery(execSlot, ResultCode.RehydrationRequired);
        this.settleOperation(execSlot);
        return ResultCode.Ok;
      }
      if (outcome === CommitOutcome.Committed) {
        if (newRevision <= exec.revision) {
          this.requireRecovery(execSlot, ResultCode.RevisionMustIncrease);
          this.settleOperation(execSlot);
          return ResultCode.RevisionMustIncrease;
        }
        exec.revision = newRevision;
      }
      this.settleOperation(execSlot);
      return ResultCode.Ok;
    }

    this.settleOperation(execSlot);
    if (!inRange(outcome, CommitOutcome.Committed, CommitOutcome.StoreFailed)) {
      this.requireRecovery(execSlot, ResultCode.OutcomeUnknown);
      return ResultCode.OutcomeUnknown;
    }
    if (outcome === CommitOutcome.RehydrationRequired) {
      this.requireRecovery(execSlot, ResultCode.RehydrationRequired);
      return ResultCode.Ok;
    }
    if (outcome === CommitOutcome.StoreFailed) {
      this.emit(EffectKind.SetupFailed, execSlot, exec.session, failure);
      return ResultCode.Ok;
    }

    // CommitOutcome.Committed
    const isTool = K === MessageKind.ToolDispatchReady;
    if (isTool && !inRange(count, 1, Limit.InFlightMax)) {
      this.emit(EffectKind.SetupFailed, execSlot, exec.session, failure);
      return ResultCode.ArgumentOutOfRange;
    }
    if (exec.inFlight + count > Limit.InFlightMax) {
      this.emit(EffectKind.SetupFailed, execSlot, exec.session, failure);
      return ResultCode.InFlightFull;
    }
    if (newRevision <= exec.revision) {
      this.requireRecovery(execSlot, ResultCode.RevisionMustIncrease);
      return ResultCode.RevisionMustIncrease;
    }
    exec.revision = newRevision;
    exec.inFlight += count;
    if (isTool) this.emit(EffectKind.StartToolBatch, execSlot, exec.session, count);
    else this.emit(EffectKind.StartProviderCall, execSlot, exec.session);
    return ResultCode.Ok;
  }

  private sessionEvent(execSlot: number, generation: number, session: number, event: number): ResultCode {
    const K = MessageKind.SessionEvent;
    const code = this.checkExecution(execSlot, generation);
    if (code !== ResultCode.Ok) return this.drop(K, code);
    const exec = this.executionAt(execSlot);
    if (!this.liveSessionMatches(exec, session)) return this.drop(K, ResultCode.SessionMustMatch);
    if (!inRange(event, SessionEventKind.LlmCompletedWithTools, SessionEventKind.ApprovalRejected)) {
      return this.drop(K, ResultCode.ArgumentOutOfRange);
    }
    const row = findTransition(exec.phase, event);
    if (row === undefined) return this.drop(K, ResultCode.TransitionUndefined);
    if (row.onEntry !== 0 && exec.inFlight >= Limit.InFlightMax) return this.drop(K, ResultCode.InFlightFull);
    exec.phase = row.next;
    this.enterPhase(execSlot, row.next);
    return ResultCode.Ok;
  }

  private operationSettled(execSlot: number, generation: number): ResultCode {
    const K = MessageKind.OperationSettled;
    const code = this.checkExecution(execSlot, generation);
    if (code !== ResultCode.Ok) return this.drop(K, code);
    const exec = this.executionAt(execSlot);
    if (exec.inFlight === 0) return this.drop(K, ResultCode.InFlightUnderflow);
    this.settleOperation(execSlot);
    return ResultCode.Ok;
  }

  private cancelRequested(execSlot: number, generation: number): ResultCode {
    const code = this.checkExecution(execSlot, generation);
    if (code !== ResultCode.Ok) return this.drop(MessageKind.CancelRequested, code);
    this.executionAt(execSlot).flags |= ExecutionFlag.CancelRequested;
    return ResultCode.Ok;
  }

  private sessionFinished(execSlot: number, generation: number, session: number, ending: number): ResultCode {
    const K = MessageKind.SessionFinished;
    const code = this.checkExecution(execSlot, generation);
    if (code !== ResultCode.Ok) return this.drop(K, code);
    const exec = this.executionAt(execSlot);
    if (!this.liveSessionMatches(exec, session)) return this.drop(K, ResultCode.SessionMustMatch);
    if (!inRange(ending, SessionEnding.Completed, SessionEnding.CoordinationWait)) {
      return this.drop(K, ResultCode.ArgumentOutOfRange);
    }
    if (findTransition(exec.phase, SessionEventKind.Finish) === undefined) {
      return this.drop(K, ResultCode.TransitionUndefined);
    }
    exec.phase = Phase.Terminal;
    if (exec.inFlight > 0) {
      const cancelling = ending === SessionEnding.Cancelled || ending === SessionEnding.TimedOut;
      this.agentOf(exec).admissionState = cancelling ? AdmissionState.Cancelling : AdmissionState.Terminalizing;
      exec.flags |= ExecutionFlag.TerminalDeferred;
      this.emit(EffectKind.DeferTerminal, execSlot, exec.session);
    } else {
      this.beginTerminalCommit(execSlot);
    }
    return ResultCode.Ok;
  }

  private deferredTerminal(execSlot: number, generation: number, session: number): ResultCode {
    const K = MessageKind.DeferredTerminal;
    const code = this.checkExecution(execSlot, generation);
    if (code !== ResultCode.Ok) return this.drop(K, code);
    const exec = this.executionAt(execSlot);
    if (!this.liveSessionMatches(exec, session)) return this.drop(K, ResultCode.SessionMustMatch);
    if (!hasFlag(exec.flags, ExecutionFlag.TerminalDeferred)) return this.drop(K, ResultCode.TerminalNotDeferred);
    if (exec.inFlight > 0) return this.drop(K, ResultCode.NotQuiescent);
    exec.flags &= ~ExecutionFlag.TerminalDeferred;
    // READING: *begin terminal commit* sets `Terminalizing` even over `Cancelling`.
    this.beginTerminalCommit(execSlot);
    return ResultCode.Ok;
  }

  private terminalCommitReady(
    execSlot: number,
    generation: number,
    session: number,
    expectedRevision: number,
    outcome: number,
    newRevision: number,
  ): ResultCode {
    const K = MessageKind.TerminalCommitReady;
    const code = this.checkExecution(execSlot, generation);
    if (code !== ResultCode.Ok) return this.drop(K, code);
    const exec = this.executionAt(execSlot);
    if (exec.revision !== expectedRevision) return this.drop(K, ResultCode.RevisionMustMatch);
    if (!this.liveSessionMatches(exec, session)) return this.drop(K, ResultCode.SessionMustMatch);
    if (exec.phase !== Phase.Terminal) return this.drop(K, ResultCode.PhaseMustMatch);

    if (!inRange(outcome, OutcomeType.Completed, OutcomeType.StoreFailed)) {
      this.requireRecovery(execSlot, ResultCode.OutcomeUnknown);
      return ResultCode.OutcomeUnknown;
    }
    if (outcome === OutcomeType.StoreFailed) {
      this.requireRecovery(execSlot, ResultCode.StoreFailed);
      return ResultCode.Ok;
    }
    if (newRevision <= exec.revision) {
      this.requireRecovery(execSlot, ResultCode.RevisionMustIncrease);
      return ResultCode.RevisionMustIncrease;
    }
    exec.revision = newRevision;
    if (outcome === OutcomeType.Suspended) {
      exec.status = ExecutionStatus.Suspended;
      exec.phase = Phase.Suspended;
      exec.session = 0;
      this.agentOf(exec).admissionState = AdmissionState.Suspended;
      this.emit(EffectKind.DeliverOutcome, execSlot, OutcomeType.Suspended);
    } else {
      // Completed, Failed, HandedOff, CoordinationWait
      this.finishExecution(execSlot, outcome);
    }
    return ResultCode.Ok;
  }

  private resume(
    execSlot: number,
    generation: number,
    agentSlot: number,
    agentGeneration: number,
    request: number,
    facts: number,
    sameAsCommitting: number,
  ): ResultCode {
    if (facts >= ResumeFact.End || !isZeroOrOne(sameAsCommitting) || !resumeFactsConsistent(facts)) return this.refuse(request, ResultCode.ArgumentOutOfRange);
    // READING: both ways the exec check can fail give RehydrationRequired.
    if (this.checkExecution(execSlot, generation) !== ResultCode.Ok) {
      return this.refuse(request, ResultCode.RehydrationRequired);
    }
    const code = this.checkAgent(agentSlot, agentGeneration);
    if (code !== ResultCode.Ok) return this.refuse(request, code);
    const exec = this.executionAt(execSlot);
    if (exec.agentSlotPlusOne - 1 !== agentSlot) return this.refuse(request, ResultCode.AgentMustMatch);
    const agent = this.agentAt(agentSlot);
    const afterRecovery = (facts & ResumeFact.AfterRecovery) !== 0;
    // Held for recovery: recover first, once (decision 0065).
    if (agent.admissionState === AdmissionState.RecoveryRequired) {
      if (afterRecovery) return this.refuse(request, ResultCode.AgentAdmissionHeld);
      this.emit(EffectKind.RecoverBeforeResume, execSlot, request);
      return ResultCode.Ok;
    }
    const suspended = exec.status === ExecutionStatus.Suspended;
    // The suspension asking for it is being committed: wait for the commit.
    if (!suspended && !afterRecovery && (facts & ResumeFact.MatchesCommittingSuspension) !== 0) {
      this.emit(EffectKind.AwaitSuspensionCommit, execSlot, request);
      return ResultCode.Ok;
    }
    if (!suspended && afterRecovery) return this.refuse(request, ResultCode.StatusMustMatch);
    if (suspended && (facts & ResumeFact.MatchesPending) === 0) return this.refuse(request, ResultCode.ApprovalMustMatch);
    // A typed input wait takes only a value, an approval only a decision,
    // an event wait only a signal, a child's wait only its child's end;
    // a value that failed its schema decides nothing (decisions 0075, 0077, 0079).
    // The clock answers only a wait with a due time and gives nothing
    // else, and a timer only the clock (decision 0076).
    const clock = (facts & ResumeFact.ClockAnswers) !== 0;
    const answers = ResumeFact.GivesValue | ResumeFact.GivesSignal | ResumeFact.GivesChildOutcome;
    if (suspended && clock && ((facts & ResumeFact.PendingHasDeadline) === 0 || (facts & answers) !== 0)) {
      return this.refuse(request, ResultCode.WaitKindMustMatch);
    }
    if (suspended && !clock && (facts & ResumeFact.PendingWaitsForClock) !== 0) return this.refuse(request, ResultCode.WaitKindMustMatch);
    if (suspended && !clock && waitKindOf(facts) !== answerKindOf(facts)) return this.refuse(request, ResultCode.WaitKindMustMatch);
    if (suspended && !clock && (facts & ResumeFact.ValueRefused) !== 0) return this.refuse(request, ResultCode.ValueMustMatchSchema);
    if (this.draining === 1) return this.refuse(request, ResultCode.RuntimeDraining);
    if (!suspended) return this.refuse(request, ResultCode.StatusMustMatch);
    // The same decision sent again while its commit is under way follows it.
    if (agent.admissionState === AdmissionState.Resuming && sameAsCommitting === 1) {
      this.emit(EffectKind.FollowResume, execSlot, request);
      return ResultCode.Ok;
    }
    if (agent.admissionState !== AdmissionState.Suspended) return this.refuse(request, ResultCode.ResumeInProgress);

    agent.admissionState = AdmissionState.Resuming;
    this.emit(EffectKind.SubmitApprovalCommit, execSlot, exec.revision, request);
    return ResultCode.Ok;
  }

  private resumeCommitReady(
    execSlot: number,
    generation: number,
    expectedRevision: number,
    outcome: number,
    newRevision: number,
    approved: number,
    request: number,
  ): ResultCode {
    const code = this.checkExecution(execSlot, generation);
    if (code !== ResultCode.Ok) return this.refuse(request, code);
    const exec = this.executionAt(execSlot);
    if (exec.revision !== expectedRevision) return this.refuse(request, ResultCode.RevisionMustMatch);
    if (exec.status !== ExecutionStatus.Suspended) return this.refuse(request, ResultCode.StatusMustMatch);
    const agent = this.agentOf(exec);
    if (agent.admissionState !== AdmissionState.Resuming) {
      return this.refuse(request, ResultCode.AdmissionStateMustMatch);
    }

    // A store failure wrote nothing: the suspension is given back (decision 0057).
    if (outcome === CommitOutcome.StoreFailed && isZeroOrOne(approved)) {
      agent.admissionState = AdmissionState.Suspended;
      this.emit(EffectKind.FailRequest, request, ResultCode.StoreFailed);
      return ResultCode.Ok;
    }
    // READING: outcome judged before `approved` (both bad → OutcomeUnknown).
    let failure: ResultCode = ResultCode.Ok;
    if (!inRange(outcome, CommitOutcome.Committed, CommitOutcome.StoreFailed)) failure = ResultCode.OutcomeUnknown;
    else if (!isZeroOrOne(approved)) failure = ResultCode.ArgumentOutOfRange;
    else if (outcome === CommitOutcome.RehydrationRequired) failure = ResultCode.RehydrationRequired;
    else if (newRevision <= exec.revision) failure = ResultCode.RevisionMustIncrease;
    if (failure !== ResultCode.Ok) {
      this.requireRecovery(execSlot, failure);
      this.emit(EffectKind.FailRequest, request, failure);
      // A reported failure is decided (Ok); malformed input returns its fact.
      return failure === ResultCode.RehydrationRequired ? ResultCode.Ok : failure;
    }

    exec.revision = newRevision;
    exec.status = ExecutionStatus.Active;
    exec.phase = Phase.Resuming;
    exec.session = this.takeSession();
    agent.admissionState = AdmissionState.Executing;
    if (approved === 1) exec.flags |= ExecutionFlag.ApprovalGranted;
    else exec.flags &= ~ExecutionFlag.ApprovalGranted;
    this.registerWaiter(execSlot, request);
    this.emit(EffectKind.ResumeSession, execSlot, exec.session, approved);
    return ResultCode.Ok;
  }

  /** `CancelSuspended` (docs/decisions/0026): a suspended execution's
   * admission goes `Terminalizing` while its cancel commit is written. */
  private cancelSuspended(execSlot: number, generation: number, request: number): ResultCode {
    if (this.draining === 1) return this.refuse(request, ResultCode.RuntimeDraining);
    const code = this.checkExecution(execSlot, generation);
    if (code !== ResultCode.Ok) return this.refuse(request, code);
    const exec = this.executionAt(execSlot);
    if (exec.status !== ExecutionStatus.Suspended) return this.refuse(request, ResultCode.StatusMustMatch);
    const agent = this.agentOf(exec);
    if (agent.admissionState !== AdmissionState.Suspended) return this.refuse(request, ResultCode.ResumeInProgress);
    agent.admissionState = AdmissionState.Terminalizing;
    this.emit(EffectKind.SubmitCancelCommit, execSlot, exec.revision, request);
    return ResultCode.Ok;
  }

  /** `CancelCommitReady`: committed → finished `Failed` (the cancel request
   * registered as a waiter first); a store failure gives the suspension
   * back; anything else requires recovery. */
  private cancelCommitReady(execSlot: number, generation: number, expectedRevision: number, outcome: number, newRevision: number, request: number): ResultCode {
    const code = this.checkExecution(execSlot, generation);
    if (code !== ResultCode.Ok) return this.refuse(request, code);
    const exec = this.executionAt(execSlot);
    if (exec.revision !== expectedRevision) return this.refuse(request, ResultCode.RevisionMustMatch);
    if (exec.status !== ExecutionStatus.Suspended) return this.refuse(request, ResultCode.StatusMustMatch);
    const agent = this.agentOf(exec);
    if (agent.admissionState !== AdmissionState.Terminalizing) return this.refuse(request, ResultCode.AdmissionStateMustMatch);
    if (outcome === CommitOutcome.StoreFailed) {
      agent.admissionState = AdmissionState.Suspended;
      return this.refuse(request, ResultCode.StoreFailed);
    }
    let failure: ResultCode = ResultCode.Ok;
    if (!inRange(outcome, CommitOutcome.Committed, CommitOutcome.StoreFailed)) failure = ResultCode.OutcomeUnknown;
    else if (outcome === CommitOutcome.RehydrationRequired) failure = ResultCode.RehydrationRequired;
    else if (newRevision <= exec.revision) failure = ResultCode.RevisionMustIncrease;
    if (failure !== ResultCode.Ok) {
      this.requireRecovery(execSlot, failure);
      this.emit(EffectKind.FailRequest, request, failure);
      return failure === ResultCode.RehydrationRequired ? ResultCode.Ok : failure;
    }
    exec.revision = newRevision;
    exec.phase = Phase.Terminal;
    this.registerWaiter(execSlot, request);
    this.finishExecution(execSlot, OutcomeType.Failed);
    return ResultCode.Ok;
  }

  private recoveryInstall(
    agentSlot: number,
    agentGeneration: number,
    revision: number,
    status: number,
    phase: number,
    flags: number,
    request: number,
  ): ResultCode {
    if (this.draining === 1) return this.refuse(request, ResultCode.RuntimeDraining);
    const code = this.checkAgent(agentSlot, agentGeneration);
    if (code !== ResultCode.Ok) return this.refuse(request, code);
    const statusValid = status === ExecutionStatus.Preparing || status === ExecutionStatus.Active || status === ExecutionStatus.Suspended;
    const phaseValid = inRange(phase, Phase.Preparing, Phase.RecoveryResolvedFailed) && phase !== Phase.Terminal;
    const suspendedMismatch = status === ExecutionStatus.Suspended && phase !== Phase.Suspended;
    if (!statusValid || !phaseValid || suspendedMismatch || !isHostSettable(flags)) {
      return this.refuse(request, ResultCode.ArgumentOutOfRange);
    }
    const agent = this.agentAt(agentSlot);
    if (agent.admissionState !== AdmissionState.None) return this.refuse(request, ResultCode.AgentAlreadyAdmitted);
    if (!this.hasCapacity()) return this.refuse(request, ResultCode.ExecutionsFull);

    // READING: no lifecycle check (a closed agent may be recovered) and no
    // owner token is taken (the token stays 0).
    const execSlot = this.allocateExecutionSlot();
    const exec = this.executionAt(execSlot);
    exec.agentSlotPlusOne = agentSlot + 1;
    exec.revision = revision;
    exec.session = 0;
    exec.status = status;
    exec.phase = phase;
    exec.flags = flags;
    exec.waiters = 0;
    exec.inFlight = 0;
    agent.admissionState = status === ExecutionStatus.Suspended ? AdmissionState.Suspended : AdmissionState.Executing;
    agent.executionSlotPlusOne = execSlot + 1;
    this.emit(EffectKind.ExecutionInstalled, execSlot, exec.generation, request);
    return ResultCode.Ok;
  }

  private continueRecovered(execSlot: number, generation: number, expectedRevision: number, continuation: number, request: number): ResultCode {
    const code = this.checkExecution(execSlot, generation);
    if (code !== ResultCode.Ok) return this.refuse(request, code);
    const exec = this.executionAt(execSlot);
    if (exec.revision !== expectedRevision) return this.refuse(request, ResultCode.RevisionMustMatch);
    if (exec.session !== 0) return this.refuse(request, ResultCode.SessionMustMatch);
    if (exec.inFlight !== 0) return this.refuse(request, ResultCode.NotQuiescent);

    // READING: a number past the enum is malformed; None and the retired
    // numbers are within it but have no row, so they do not fit.
    const row = findContinuation(continuation);
    let invalid: ResultCode = ResultCode.Ok;
    if (continuation > Continuation.RecallModel) invalid = ResultCode.ArgumentOutOfRange;
    else if (row === undefined || exec.status !== ExecutionStatus.Active || !this.continuationAllowed(row, exec)) invalid = ResultCode.ContinuationInvalid;
    if (row === undefined || invalid !== ResultCode.Ok) {
      this.requireRecovery(execSlot, invalid);
      this.emit(EffectKind.FailRequest, request, invalid);
      return invalid;
    }

    exec.phase = row.resumePhase;
    exec.session = this.takeSession();
    this.agentOf(exec).admissionState = AdmissionState.Executing;
    this.registerWaiter(execSlot, request);
    for (const effect of row.effects) {
      if (effect === EffectKind.ContinueSession) {
        this.emit(EffectKind.ContinueSession, execSlot, exec.session, row.continuation);
      } else {
        // The barrier of the resume phase (*enter phase*).
        this.enterPhase(execSlot, exec.phase);
      }
    }
    return ResultCode.Ok;
  }

  /** The table's "valid phases" and "flag condition" columns. */
  private continuationAllowed(row: ContinuationRow, exec: Execution): boolean {
    if (!row.validPhases.includes(exec.phase)) return false;
    if (row.flagCondition !== null && hasFlag(exec.flags, row.flagCondition.flag) !== row.flagCondition.set) {
      return false;
    }
    return true;
  }

  /** Administrative: no draining check (it admits nothing). */
  private dischargeRecovery(execSlot: number, generation: number, rowRevision: number): ResultCode {
    const code = this.checkExecution(execSlot, generation);
    if (code !== ResultCode.Ok) return code;
    const exec = this.executionAt(execSlot);
    const agent = this.agentOf(exec);
    if (agent.executionSlotPlusOne !== execSlot + 1) return ResultCode.AdmissionStateMustMatch;
    // A suspension here whose durable row moved on (docs/decisions/0063).
    const superseded = agent.admissionState === AdmissionState.Suspended && rowRevision > exec.revision;
    if (agent.admissionState !== AdmissionState.RecoveryRequired && !superseded) return ResultCode.AdmissionStateMustMatch;
    if (exec.inFlight !== 0) return ResultCode.NotQuiescent;
    this.failAttachedWaiters(execSlot, ResultCode.RehydrationRequired);
    this.releaseAdmission(agent);
    const had = this.freeExecution(execSlot);
    this.emit(EffectKind.ReleaseExecution, execSlot, had);
    return ResultCode.Ok;
  }

  /** Administrative: releases an agent held `RecoveryRequired` with no
   * execution bound (a preparation whose outcome the host could not learn). */
  private dischargeAgentRecovery(slot: number, generation: number): ResultCode {
    const code = this.checkAgent(slot, generation);
    if (code !== ResultCode.Ok) return code;
    const agent = this.agentAt(slot);
    if (agent.admissionState !== AdmissionState.RecoveryRequired || agent.executionSlotPlusOne !== 0) {
      return ResultCode.AdmissionStateMustMatch;
    }
    this.releaseAdmission(agent);
    return ResultCode.Ok;
  }

  private attachWaiter(execSlot: number, generation: number, request: number): ResultCode {
    const code = this.checkExecution(execSlot, generation);
    if (code !== ResultCode.Ok) return this.refuse(request, code);
    // READING: registering the waiter is the whole of this request, so a
    // full waiter list refuses it and the code is WaitersFull.
    return this.registerWaiter(execSlot, request);
  }

  private submissionRefused(submission: number, slot: number, generation: number, tokenOrSession: number, request: number): ResultCode {
    const K = MessageKind.SubmissionRefused;
    // 5 is retired (was PreparationRecovery): as unknown as 0 or 7.
    const known = [Submission.Prepare, Submission.ProviderBarrier, Submission.ToolBarrier, Submission.ApprovalCommit, Submission.TerminalCommit];
    if (!known.includes(submission)) return this.drop(K, ResultCode.ArgumentOutOfRange);

    if (submission === Submission.Prepare) {
      const code = this.checkAgent(slot, generation);
      if (code !== ResultCode.Ok) return this.drop(K, code);
      const agent = this.agentAt(slot);
      if (agent.admissionState !== AdmissionState.Admitting || agent.ownerToken !== tokenOrSession) {
        return this.drop(K, ResultCode.OwnerTokenMustMatch);
      }
      this.releaseAdmission(agent);
      this.emit(EffectKind.FailRequest, request, ResultCode.OffloadFull);
      return ResultCode.Ok;
    }

    // Every other submission names an execution.
    const code = this.checkExecution(slot, generation);
    if (code !== ResultCode.Ok) return this.drop(K, code);
    const exec = this.executionAt(slot);

    if (submission === Submission.ApprovalCommit) {
      const agent = this.agentOf(exec);
      if (agent.admissionState !== AdmissionState.Resuming) return this.drop(K, ResultCode.AdmissionStateMustMatch);
      agent.admissionState = AdmissionState.Suspended;
      this.emit(EffectKind.FailRequest, request, ResultCode.OffloadFull);
      return ResultCode.Ok;
    }

    if (!this.liveSessionMatches(exec, tokenOrSession)) return this.drop(K, ResultCode.SessionMustMatch);

    switch (submission) {
      case Submission.ProviderBarrier:
      case Submission.ToolBarrier: {
        const provider = submission === Submission.ProviderBarrier;
        const barrierPhase = provider ? Phase.CallingLlm : Phase.DispatchingTools;
        if (exec.phase !== barrierPhase && exec.phase !== Phase.Terminal) return this.drop(K, ResultCode.PhaseMustMatch);
        if (exec.inFlight === 0) return this.drop(K, ResultCode.InFlightUnderflow);
        const inBarrierPhase = exec.phase === barrierPhase;
        const sessionNow = exec.session;
        this.settleOperation(slot);
        if (inBarrierPhase) this.emit(EffectKind.SetupFailed, slot, sessionNow, provider ? SetupFailure.Provider : SetupFailure.Tool);
        return ResultCode.Ok;
      }
      default:
        // Submission.TerminalCommit
        if (exec.phase !== Phase.Terminal) return this.drop(K, ResultCode.PhaseMustMatch);
        this.requireRecovery(slot, ResultCode.OffloadFull);
        return ResultCode.Ok;
    }
  }
}

/** A wait is of one kind, an answer of one kind; a stored signal is a
 * signal (docs/decisions/0077). */
function resumeFactsConsistent(facts: number): boolean {
  const waits = [ResumeFact.PendingWaitsForInput, ResumeFact.PendingWaitsForEvent, ResumeFact.PendingWaitsForChild].filter((bit) => (facts & bit) !== 0);
  const answers = [ResumeFact.GivesValue, ResumeFact.GivesSignal, ResumeFact.GivesChildOutcome].filter((bit) => (facts & bit) !== 0);
  const storedNotSignal = (facts & ResumeFact.SignalStored) !== 0 && (facts & ResumeFact.GivesSignal) === 0;
  return waits.length <= 1 && answers.length <= 1 && !storedNotSignal;
}

/** The pending wait's kind: an approval, a typed input wait, an event wait, a child's wait. */
function waitKindOf(facts: number): "approval" | "input" | "event" | "child" {
  if ((facts & ResumeFact.PendingWaitsForInput) !== 0) return "input";
  if ((facts & ResumeFact.PendingWaitsForEvent) !== 0) return "event";
  return (facts & ResumeFact.PendingWaitsForChild) !== 0 ? "child" : "approval";
}

function answerKindOf(facts: number): "approval" | "input" | "event" | "child" {
  if ((facts & ResumeFact.GivesValue) !== 0) return "input";
  if ((facts & ResumeFact.GivesSignal) !== 0) return "event";
  return (facts & ResumeFact.GivesChildOutcome) !== 0 ? "child" : "approval";
}
