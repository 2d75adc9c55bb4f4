// Unit tests of the reference model itself, against expectations computed by
// hand from docs/core.md. They pin the model to the contract so that the
// differential fuzzing compares the core with something trustworthy.

import { describe, expect, it } from "vitest";
import {
  AdmissionState,
  AgentLifecycle,
  CommitOutcome,
  Continuation,
  EffectKind as E,
  ExecutionFlag,
  ExecutionStatus,
  Limit,
  MessageKind as M,
  MessageKindLimit,
  OutcomeType,
  Phase,
  PreparationOutcome,
  RecoveryCause,
  RecoveryScope,
  ResultCode as R,
  SessionEnding,
  SessionEventKind as Ev,
  SetupFailure,
  Submission,
} from "../../assembly/abi.js";
import { ReferenceCore } from "./reference-core.js";
import { unassignedMessageKinds } from "../fuzz/arbitraries.js";

type Effect = [number, number, number, number, number];

/** The last apply's effects as five-word tuples. */
function effects(core: ReferenceCore): Effect[] {
  const words = core.effectWords();
  const out: Effect[] = [];
  for (let i = 0; i < words.length; i += 5) {
    out.push(words.slice(i, i + 5) as Effect);
  }
  return out;
}

function fx(kind: number, a = 0, b = 0, c = 0, d = 0): Effect {
  return [kind, a, b, c, d];
}

function newCore(agentsMax = 8, executionsMax = 8): ReferenceCore {
  return new ReferenceCore({ agentsMax, executionsMax });
}

const REQ = 100;

/** Registers agent 0 (gen 1), starts it and installs its execution at slot 0
 * with revision 5 and session 1; its provider barrier is being written (one
 * operation in flight). */
function startedExecution(core: ReferenceCore, flags = 0): void {
  expect(core.apply(M.RegisterAgent, 0)).toBe(R.Ok);
  expect(core.apply(M.Start, 0, 1, REQ, 0)).toBe(R.Ok);
  expect(core.apply(M.InitialPreparationReady, 0, 1, 1, PreparationOutcome.Active, 5, flags, REQ)).toBe(R.Ok);
}

/** `startedExecution`, then the provider barrier committed (revision 6) and
 * the model call answered: phase calling_llm, nothing in flight. */
function answeredExecution(core: ReferenceCore): void {
  startedExecution(core);
  expect(core.apply(M.ProviderDispatchReady, 0, 1, 1, 5, CommitOutcome.Committed, 6)).toBe(R.Ok);
  expect(core.apply(M.OperationSettled, 0, 1)).toBe(R.Ok);
  expect(core.snapshot().executions[0]).toMatchObject({ revision: 6, inFlight: 0, phase: Phase.CallingLlm });
}

type Rand = (n: number) => number;

/** A message kind and its arguments. */
type Message = [kind: number, ...args: number[]];

/** A small deterministic generator: `rand(n)` is in [0, n). */
function mulberry32(seed: number): Rand {
  let state = seed >>> 0;
  return (n) => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) % n;
  };
}

/** Any kind (including unknown ones) with mostly small arguments. */
function randomMessage(rand: Rand): Message {
  const arg = (): number => (rand(16) === 0 ? rand(2 ** 32) : rand(4));
  return [rand(MessageKindLimit.End + 1), arg(), arg(), arg(), arg(), arg(), arg(), arg()];
}

/** A message aimed at a slot that exists, with its current values, and
 * mostly the outcome that lets the execution go on. */
function plausibleMessage(rand: Rand, s: ReturnType<ReferenceCore["snapshot"]>): Message {
  // One in four of any kind; else an execution's kinds (1..29), so the
  // conversation's messages (30 on) leave the walks as deep as before.
  const kind = 1 + rand(rand(4) === 0 ? MessageKindLimit.End - 1 : M.CancelCommitReady);
  const agent = s.agents.length > 0 ? s.agents[rand(s.agents.length)] : undefined;
  const exec = s.executions.length > 0 ? s.executions[rand(s.executions.length)] : undefined;
  const a = agent ?? { slot: 0, generation: 1, ownerToken: 0 };
  const x = exec ?? { slot: 0, generation: 1, session: 0, revision: 0, agentSlotPlusOne: 0 };
  const xAgent = (x.agentSlotPlusOne > 0 ? s.agents[x.agentSlotPlusOne - 1] : undefined) ?? a;
  const req = 1 + rand(1000);
  /** `good` two times in three, else anything in [0, n). */
  const mostly = (good: number, n: number): number => (rand(3) === 0 ? rand(n) : good);
  const newRev = (x.revision + mostly(1, 3)) >>> 0;
  const flags = [0, 0, 0, 4, 8, 16, 28, 1][rand(8)] ?? 0;
  switch (kind) {
    case M.RegisterAgent:
      return [kind, rand(4) === 0 ? 1 : 0];
    case M.CloseAgent:
      return [kind, a.slot, rand(8) === 0 ? a.generation : a.generation + 1];
    case M.PurgeAgent:
      return [kind, a.slot, a.generation];
    case M.Start:
      return [kind, a.slot, a.generation, req, rand(8) === 0 ? 1 : 0];
    case M.InitialPreparationReady:
      return [kind, a.slot, a.generation, a.ownerToken, mostly(PreparationOutcome.Active, 7), rand(10), flags, req];
    case M.ProviderDispatchReady:
      return [kind, x.slot, x.generation, x.session, x.revision, mostly(CommitOutcome.Committed, 4), newRev];
    case M.ToolDispatchReady:
      return [kind, x.slot, x.generation, x.session, x.revision, mostly(CommitOutcome.Committed, 4), newRev, rand(4)];
    case M.SessionEvent:
      return [kind, x.slot, x.generation, x.session, rand(8)];
    case M.OperationSettled:
      return [kind, x.slot, x.generation];
    case M.SessionFinished:
      return [kind, x.slot, x.generation, x.session, rand(9)];
    case M.DeferredTerminal:
      return [kind, x.slot, x.generation, x.session];
    case M.TerminalCommitReady:
      return [kind, x.slot, x.generation, x.session, x.revision, mostly(1 + rand(5), 7), newRev];
    case M.Resume:
      return [kind, x.slot, x.generation, xAgent.slot, xAgent.generation, req, rand(4) === 0 ? 0 : 1];
    case M.ResumeCommitReady:
      return [kind, x.slot, x.generation, x.revision, mostly(CommitOutcome.Committed, 4), newRev, rand(2), req];
    case M.RecoveryInstall:
      return [kind, a.slot, a.generation, rand(10), mostly(ExecutionStatus.Active, 5), rand(12), flags, req];
    // 16 and 17 are retired kinds (decision 0022): sent as they once were.
    case 16:
      return [kind, x.slot, x.generation, x.revision, req];
    case 17:
      return [kind, x.slot, x.generation, x.session, x.revision, mostly(PreparationOutcome.Active, 7), newRev, req];
    case M.ContinueRecovered:
      return [kind, x.slot, x.generation, x.revision, rand(9), mostly(0, 2), req];
    case M.CancelRequested:
      return [kind, x.slot, x.generation];
    case M.AttachWaiter:
      return [kind, x.slot, x.generation, req];
    case M.SubmissionRefused: {
      const submission = rand(7);
      return submission === Submission.Prepare
        ? [kind, submission, a.slot, a.generation, a.ownerToken, req]
        : [kind, submission, x.slot, x.generation, x.session, req];
    }
    case M.DischargeRecovery:
      return [kind, x.slot, x.generation];
    case M.DischargeAgentRecovery:
      return [kind, a.slot, a.generation];
    case M.CancelSuspended:
      return [kind, x.slot, x.generation, req];
    case M.CancelCommitReady:
      return [kind, x.slot, x.generation, x.revision, mostly(CommitOutcome.Committed, 4), newRev, req];
    case M.SetDraining:
      return [kind, rand(12) === 0 ? 1 : 0]; // mostly off
    default:
      return conversationMessage(kind, rand, s, a, req);
  }
}

/** The conversation lifecycle's messages (docs/decisions/0062), aimed at
 * the named agent's conversation: mostly in range, now and then not. */
function conversationMessage(
  kind: number,
  rand: Rand,
  s: ReturnType<ReferenceCore["snapshot"]>,
  a: { slot: number; generation: number },
  req: number,
): Message {
  const mostly = (good: number, n: number): number => (rand(3) === 0 ? rand(n) : good);
  const epoch = s.conversations[a.slot]?.recoveryEpoch ?? 0;
  switch (kind) {
    case M.ConversationOwned:
      return [kind, a.slot, a.generation, mostly(1 + rand(2), 4)];
    case M.RecoveryRequested:
      return [kind, a.slot, a.generation, mostly(1 + rand(10), 12), rand(4) === 0 ? rand(128) : rand(64)];
    case M.RecoveryFinished:
      return [kind, a.slot, a.generation, mostly(epoch, 4), mostly(1, 7)];
    case M.RetryDue:
      return [kind, a.slot, a.generation, mostly(epoch, 4), rand(4) === 0 ? rand(256) : rand(128)];
    case M.SetPinned:
      return [kind, a.slot, a.generation, rand(3)];
    case M.Admit:
      return [kind, a.slot, a.generation, req, mostly(1 + rand(3), 5), mostly(1 + rand(3), 5), mostly(1, 3)];
    case M.MessageQueued:
      return [kind, a.slot, a.generation, mostly(1 + rand(3), 5)];
    case M.HeadSettled:
      return [kind, a.slot, a.generation, mostly(1 + rand(6), 8), mostly(rand(3), 4)];
    case M.ConversationHeld:
      return [kind, a.slot, a.generation, mostly(1 + rand(4), 6)];
    case M.ConversationRetaken:
      return [kind, a.slot, a.generation, mostly(rand(2) === 0 ? RecoveryCause.Retake : RecoveryCause.FencedWrite, 12)];
    // UseBegin, UseEnd, MessageLeft, AdmissionReleased, and unknown kinds.
    default:
      return [kind, a.slot, a.generation];
  }
}

/** Every message kind number below the limit. */
const KIND_RANGE = Array.from({ length: MessageKindLimit.End - 1 }, (_, index) => index + 1);

describe("ReferenceCore", () => {
  it("runs a full completed execution", () => {
    const core = newCore();

    expect(core.apply(M.RegisterAgent, 0)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.AgentRegistered, 0, 1)]);

    expect(core.apply(M.Start, 0, 1, REQ, 0)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.SubmitPrepare, 0, 1, REQ)]);
    let s = core.snapshot();
    expect(s.admittingAgents).toBe(1);
    expect(s.nextOwnerToken).toBe(2);
    expect(s.agents[0]).toMatchObject({ ownerToken: 1, admissionState: AdmissionState.Admitting });

    expect(core.apply(M.InitialPreparationReady, 0, 1, 1, PreparationOutcome.Active, 5, 0, REQ)).toBe(R.Ok);
    expect(effects(core)).toEqual([
      fx(E.ExecutionInstalled, 0, 1, REQ),
      fx(E.RegisterWaiter, 0, REQ),
      fx(E.StartSession, 0, 1),
      fx(E.SubmitProviderBarrier, 0, 1, 5),
    ]);
    s = core.snapshot();
    expect(s.admittingAgents).toBe(0);
    expect(s.liveExecutions).toBe(1);
    expect(s.nextSession).toBe(2);
    expect(s.agents[0]).toMatchObject({ admissionState: AdmissionState.Executing, executionSlotPlusOne: 1 });
    // The provider barrier being written is the one operation in flight.
    expect(s.executions[0]).toEqual({
      slot: 0,
      agentSlotPlusOne: 1,
      revision: 5,
      session: 1,
      generation: 1,
      waiters: 1,
      inFlight: 1,
      status: ExecutionStatus.Active,
      phase: Phase.CallingLlm,
      flags: 0,
    });

    // Provider barrier committed: it settles and the model call starts.
    expect(core.apply(M.ProviderDispatchReady, 0, 1, 1, 5, CommitOutcome.Committed, 6)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.StartProviderCall, 0, 1)]);
    expect(core.snapshot().executions[0]).toMatchObject({ revision: 6, inFlight: 1 });

    // The model answers with tools: the tool barrier joins the model call in flight.
    expect(core.apply(M.SessionEvent, 0, 1, 1, Ev.LlmCompletedWithTools)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.SubmitToolBarrier, 0, 1, 6)]);
    expect(core.snapshot().executions[0]?.inFlight).toBe(2);
    expect(core.apply(M.OperationSettled, 0, 1)).toBe(R.Ok);
    expect(effects(core)).toEqual([]);
    expect(core.snapshot().executions[0]?.inFlight).toBe(1);

    expect(core.apply(M.ToolDispatchReady, 0, 1, 1, 6, CommitOutcome.Committed, 7, 2)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.StartToolBatch, 0, 1, 2)]);
    expect(core.snapshot().executions[0]).toMatchObject({ revision: 7, inFlight: 2, phase: Phase.DispatchingTools });
    expect(core.apply(M.OperationSettled, 0, 1)).toBe(R.Ok);
    expect(core.apply(M.OperationSettled, 0, 1)).toBe(R.Ok);
    expect(core.apply(M.OperationSettled, 0, 1)).toBe(R.InFlightUnderflow);
    expect(effects(core)).toEqual([fx(E.DropStale, M.OperationSettled, R.InFlightUnderflow)]);

    expect(core.apply(M.SessionEvent, 0, 1, 1, Ev.ToolsCompleted)).toBe(R.Ok);
    expect(effects(core)).toEqual([]);
    expect(core.apply(M.SessionEvent, 0, 1, 1, Ev.StateCompleted)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.SubmitProviderBarrier, 0, 1, 7)]);
    expect(core.snapshot().executions[0]?.inFlight).toBe(1);

    expect(core.apply(M.ProviderDispatchReady, 0, 1, 1, 7, CommitOutcome.Committed, 8)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.StartProviderCall, 0, 1)]);
    expect(core.apply(M.OperationSettled, 0, 1)).toBe(R.Ok);

    expect(core.apply(M.SessionFinished, 0, 1, 1, SessionEnding.Completed)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.SubmitTerminalCommit, 0, 1, 8)]);
    s = core.snapshot();
    expect(s.agents[0]?.admissionState).toBe(AdmissionState.Terminalizing);
    expect(s.executions[0]?.phase).toBe(Phase.Terminal);

    expect(core.apply(M.TerminalCommitReady, 0, 1, 1, 8, OutcomeType.Completed, 9)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.DeliverOutcome, 0, OutcomeType.Completed), fx(E.ReleaseExecution, 0, 1)]);
    s = core.snapshot();
    expect(s.liveExecutions).toBe(0);
    expect(s.agents[0]).toEqual({
      slot: 0,
      ownerToken: 0,
      executionSlotPlusOne: 0,
      generation: 1,
      admissionState: AdmissionState.None,
      lifecycle: AgentLifecycle.Open,
    });
    expect(s.executions).toEqual([
      {
        slot: 0,
        agentSlotPlusOne: 0,
        revision: 0,
        session: 0,
        generation: 2,
        waiters: 0,
        inFlight: 0,
        status: 0,
        phase: 0,
        flags: 0,
      },
    ]);

    // A late duplicate of the terminal commit is dropped as stale.
    expect(core.apply(M.TerminalCommitReady, 0, 1, 1, 8, OutcomeType.Completed, 9)).toBe(R.ExecutionSlotUnknown);
    expect(effects(core)).toEqual([fx(E.DropStale, M.TerminalCommitReady, R.ExecutionSlotUnknown)]);
  });

  it("refuses a second start of a busy agent", () => {
    const core = newCore();
    startedExecution(core);
    expect(core.apply(M.Start, 0, 1, 200, 0)).toBe(R.AgentAlreadyAdmitted);
    expect(effects(core)).toEqual([fx(E.FailRequest, 200, R.AgentAlreadyAdmitted)]);
    expect(core.snapshot().nextOwnerToken).toBe(2);
  });

  it("checks Start in the contract's order", () => {
    const core = newCore();
    core.apply(M.RegisterAgent, 1); // closed agent at slot 0
    // cancelled out of range comes before cancelled = 1, both before Closed.
    expect(core.apply(M.Start, 0, 1, 7, 2)).toBe(R.ArgumentOutOfRange);
    expect(core.apply(M.Start, 0, 1, 7, 1)).toBe(R.StartCancelled);
    expect(core.apply(M.Start, 0, 1, 7, 0)).toBe(R.AgentClosed);
    expect(effects(core)).toEqual([fx(E.FailRequest, 7, R.AgentClosed)]);
    // The agent check comes before the arguments.
    expect(core.apply(M.Start, 0, 2, 7, 9)).toBe(R.AgentGenerationMustMatch);
    expect(core.apply(M.Start, 3, 1, 7, 9)).toBe(R.AgentSlotUnknown);
  });

  it("refuses requests while draining", () => {
    const core = newCore();
    core.apply(M.RegisterAgent, 0);
    expect(core.apply(M.SetDraining, 2)).toBe(R.ArgumentOutOfRange);
    expect(effects(core)).toEqual([]);
    expect(core.apply(M.SetDraining, 1)).toBe(R.Ok);
    expect(core.snapshot().draining).toBe(1);
    // Draining is checked before the agent.
    expect(core.apply(M.Start, 5, 5, 42, 0)).toBe(R.RuntimeDraining);
    expect(effects(core)).toEqual([fx(E.FailRequest, 42, R.RuntimeDraining)]);
    expect(core.apply(M.RecoveryInstall, 0, 1, 3, ExecutionStatus.Active, Phase.CallingLlm, 0, 43)).toBe(R.RuntimeDraining);
    expect(effects(core)).toEqual([fx(E.FailRequest, 43, R.RuntimeDraining)]);
    expect(core.apply(M.SetDraining, 0)).toBe(R.Ok);
    expect(core.apply(M.Start, 0, 1, 44, 0)).toBe(R.Ok);
  });

  it("drops a stale revision, session or phase and changes nothing", () => {
    const core = newCore();
    startedExecution(core);
    const before = core.snapshot();
    expect(core.apply(M.ProviderDispatchReady, 0, 1, 1, 4, CommitOutcome.Committed, 6)).toBe(R.RevisionMustMatch);
    expect(effects(core)).toEqual([fx(E.DropStale, M.ProviderDispatchReady, R.RevisionMustMatch)]);
    // Revision is checked before session.
    expect(core.apply(M.ProviderDispatchReady, 0, 1, 9, 4, CommitOutcome.Committed, 6)).toBe(R.RevisionMustMatch);
    expect(core.apply(M.ProviderDispatchReady, 0, 1, 9, 5, CommitOutcome.Committed, 6)).toBe(R.SessionMustMatch);
    expect(core.apply(M.ToolDispatchReady, 0, 1, 1, 5, CommitOutcome.Committed, 6, 1)).toBe(R.PhaseMustMatch);
    expect(effects(core)).toEqual([fx(E.DropStale, M.ToolDispatchReady, R.PhaseMustMatch)]);
    expect(core.apply(M.ProviderDispatchReady, 0, 2, 1, 5, CommitOutcome.Committed, 6)).toBe(R.ExecutionGenerationMustMatch);
    expect(core.snapshot()).toEqual(before);
  });

  it("requires recovery when a committed revision does not increase", () => {
    const core = newCore();
    startedExecution(core);
    expect(core.apply(M.ProviderDispatchReady, 0, 1, 1, 5, CommitOutcome.Committed, 5)).toBe(R.RevisionMustIncrease);
    expect(effects(core)).toEqual([fx(E.RecoveryRequired, 0, RecoveryScope.Execution, R.RevisionMustIncrease), fx(E.FailWaiters, 0, R.RevisionMustIncrease)]);
    const s = core.snapshot();
    expect(s.agents[0]?.admissionState).toBe(AdmissionState.RecoveryRequired);
    // The barrier settled; require recovery ended the live session.
    expect(s.executions[0]).toMatchObject({ waiters: 0, revision: 5, inFlight: 0, session: 0, agentSlotPlusOne: 1 });
    expect(core.apply(M.SessionEvent, 0, 1, 1, Ev.LlmCompletedWithTools)).toBe(R.SessionMustMatch);
    expect(effects(core)).toEqual([fx(E.DropStale, M.SessionEvent, R.SessionMustMatch)]);
  });

  it("compares revisions as unsigned 32-bit values", () => {
    const core = newCore();
    core.apply(M.RegisterAgent, 0);
    core.apply(M.Start, 0, 1, REQ, 0);
    // -2 is 0xFFFFFFFE.
    expect(core.apply(M.InitialPreparationReady, 0, 1, 1, PreparationOutcome.Active, -2, 0, REQ)).toBe(R.Ok);
    expect(core.snapshot().executions[0]?.revision).toBe(0xffff_fffe);
    expect(effects(core)[3]).toEqual(fx(E.SubmitProviderBarrier, 0, 1, 0xffff_fffe));
    // 1 < 0xFFFFFFFE as unsigned, so it does not increase.
    expect(core.apply(M.ProviderDispatchReady, 0, 1, 1, 0xffff_fffe, CommitOutcome.Committed, 1)).toBe(R.RevisionMustIncrease);
  });

  it("refuses tool batches that are empty or too large", () => {
    /** The model call still in flight and the tool barrier being written:
     * two operations in flight. Each probe gets its own core, because every
     * result settles the barrier. */
    const dispatching = (): ReferenceCore => {
      const core = newCore();
      startedExecution(core);
      expect(core.apply(M.ProviderDispatchReady, 0, 1, 1, 5, CommitOutcome.Committed, 6)).toBe(R.Ok);
      expect(core.apply(M.SessionEvent, 0, 1, 1, Ev.LlmCompletedWithTools)).toBe(R.Ok);
      expect(core.snapshot().executions[0]?.inFlight).toBe(2);
      return core;
    };
    for (const [toolCount, code] of [
      [0, R.ArgumentOutOfRange],
      [Limit.InFlightMax + 1, R.ArgumentOutOfRange],
      [Limit.InFlightMax, R.InFlightFull],
    ] as const) {
      const core = dispatching();
      expect(core.apply(M.ToolDispatchReady, 0, 1, 1, 6, CommitOutcome.Committed, 7, toolCount)).toBe(code);
      expect(effects(core)).toEqual([fx(E.SetupFailed, 0, 1, SetupFailure.Tool)]);
      // The barrier settled; the model call is left in flight.
      expect(core.snapshot().executions[0]).toMatchObject({ inFlight: 1, revision: 6 });
    }
    // The barrier's own count makes room for one more tool.
    const core = dispatching();
    expect(core.apply(M.ToolDispatchReady, 0, 1, 1, 6, CommitOutcome.Committed, 7, Limit.InFlightMax - 1)).toBe(R.Ok);
    expect(core.snapshot().executions[0]?.inFlight).toBe(Limit.InFlightMax);
  });

  it("defers the terminal until the execution is quiescent", () => {
    const core = newCore();
    startedExecution(core);
    core.apply(M.ProviderDispatchReady, 0, 1, 1, 5, CommitOutcome.Committed, 6);
    expect(core.apply(M.CancelRequested, 0, 1)).toBe(R.Ok);
    expect(core.apply(M.SessionFinished, 0, 1, 1, SessionEnding.Cancelled)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.DeferTerminal, 0, 1)]);
    let s = core.snapshot();
    expect(s.agents[0]?.admissionState).toBe(AdmissionState.Cancelling);
    expect(s.executions[0]?.flags).toBe(ExecutionFlag.CancelRequested | ExecutionFlag.TerminalDeferred);

    expect(core.apply(M.DeferredTerminal, 0, 1, 1)).toBe(R.NotQuiescent);
    expect(core.apply(M.SessionFinished, 0, 1, 1, SessionEnding.Completed)).toBe(R.TransitionUndefined);
    expect(core.apply(M.OperationSettled, 0, 1)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.PostDeferredTerminal, 0, 1)]);
    expect(core.apply(M.DeferredTerminal, 0, 1, 1)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.SubmitTerminalCommit, 0, 1, 6)]);
    s = core.snapshot();
    expect(s.agents[0]?.admissionState).toBe(AdmissionState.Terminalizing);
    expect(s.executions[0]?.flags).toBe(ExecutionFlag.CancelRequested);
    expect(core.apply(M.DeferredTerminal, 0, 1, 1)).toBe(R.TerminalNotDeferred);
  });

  it("counts a barrier in flight until its result, even after the session finished (decision 0005)", () => {
    const core = newCore();
    startedExecution(core);
    expect(core.snapshot().executions[0]?.inFlight).toBe(1);
    // Cancelled while the provider barrier is being written: deferred.
    expect(core.apply(M.SessionFinished, 0, 1, 1, SessionEnding.Cancelled)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.DeferTerminal, 0, 1)]);
    expect(core.apply(M.DeferredTerminal, 0, 1, 1)).toBe(R.NotQuiescent);
    // The barrier commits: its revision is taken, nothing starts, the terminal goes ahead.
    expect(core.apply(M.ProviderDispatchReady, 0, 1, 1, 5, CommitOutcome.Committed, 6)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.PostDeferredTerminal, 0, 1)]);
    expect(core.snapshot().executions[0]).toMatchObject({
      revision: 6,
      inFlight: 0,
      phase: Phase.Terminal,
      flags: ExecutionFlag.TerminalDeferred,
    });
    // A second result has nothing left to settle.
    expect(core.apply(M.ProviderDispatchReady, 0, 1, 1, 6, CommitOutcome.Committed, 7)).toBe(R.InFlightUnderflow);
    expect(effects(core)).toEqual([fx(E.DropStale, M.ProviderDispatchReady, R.InFlightUnderflow)]);
    // The terminal commit expects the revision the barrier wrote.
    expect(core.apply(M.DeferredTerminal, 0, 1, 1)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.SubmitTerminalCommit, 0, 1, 6)]);
    expect(core.apply(M.TerminalCommitReady, 0, 1, 1, 6, OutcomeType.Failed, 7)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.DeliverOutcome, 0, OutcomeType.Failed), fx(E.ReleaseExecution, 0, 1)]);

    // A refused barrier submission settles it too; in phase Terminal without SetupFailed.
    const refused = newCore();
    startedExecution(refused);
    expect(refused.apply(M.SubmissionRefused, Submission.ProviderBarrier, 0, 1, 1, 0)).toBe(R.Ok);
    expect(effects(refused)).toEqual([fx(E.SetupFailed, 0, 1, SetupFailure.Provider)]);
    expect(refused.snapshot().executions[0]?.inFlight).toBe(0);
    expect(refused.apply(M.SubmissionRefused, Submission.ProviderBarrier, 0, 1, 1, 0)).toBe(R.InFlightUnderflow);
    const finished = newCore();
    startedExecution(finished);
    finished.apply(M.SessionFinished, 0, 1, 1, SessionEnding.TimedOut);
    expect(finished.apply(M.SubmissionRefused, Submission.ProviderBarrier, 0, 1, 1, 0)).toBe(R.Ok);
    expect(effects(finished)).toEqual([fx(E.PostDeferredTerminal, 0, 1)]);
  });

  it("refuses to ask for a barrier past InFlightMax", () => {
    const core = newCore();
    answeredExecution(core);
    expect(core.apply(M.SessionEvent, 0, 1, 1, Ev.LlmCompletedWithTools)).toBe(R.Ok);
    expect(core.apply(M.ToolDispatchReady, 0, 1, 1, 6, CommitOutcome.Committed, 7, Limit.InFlightMax)).toBe(R.Ok);
    expect(core.apply(M.SessionEvent, 0, 1, 1, Ev.ToolsCompleted)).toBe(R.Ok);
    expect(core.snapshot().executions[0]?.inFlight).toBe(Limit.InFlightMax);
    expect(core.apply(M.SessionEvent, 0, 1, 1, Ev.StateCompleted)).toBe(R.InFlightFull);
    expect(effects(core)).toEqual([fx(E.DropStale, M.SessionEvent, R.InFlightFull)]);
    expect(core.snapshot().executions[0]?.phase).toBe(Phase.RecordingToolResults);
    expect(core.apply(M.OperationSettled, 0, 1)).toBe(R.Ok);
    expect(core.apply(M.SessionEvent, 0, 1, 1, Ev.StateCompleted)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.SubmitProviderBarrier, 0, 1, 7)]);
    expect(core.snapshot().executions[0]?.inFlight).toBe(Limit.InFlightMax);
  });

  it("suspends for approval and resumes", () => {
    const core = newCore();
    answeredExecution(core);
    expect(core.apply(M.SessionEvent, 0, 1, 1, Ev.ApprovalRequired)).toBe(R.Ok);
    expect(core.apply(M.SessionFinished, 0, 1, 1, SessionEnding.Suspended)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.SubmitTerminalCommit, 0, 1, 6)]);
    expect(core.apply(M.TerminalCommitReady, 0, 1, 1, 6, OutcomeType.Suspended, 7)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.DeliverOutcome, 0, OutcomeType.Suspended)]);
    let s = core.snapshot();
    expect(s.executions[0]).toMatchObject({
      status: ExecutionStatus.Suspended,
      phase: Phase.Suspended,
      session: 0,
      revision: 7,
      waiters: 1,
      inFlight: 0,
    });
    expect(s.agents[0]?.admissionState).toBe(AdmissionState.Suspended);

    expect(core.apply(M.Resume, 0, 1, 0, 1, 300, 0)).toBe(R.ApprovalMustMatch);
    expect(effects(core)).toEqual([fx(E.FailRequest, 300, R.ApprovalMustMatch)]);
    expect(core.apply(M.Resume, 0, 2, 0, 1, 300, 1)).toBe(R.RehydrationRequired);
    expect(core.apply(M.Resume, 0, 1, 0, 1, 300, 1)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.SubmitApprovalCommit, 0, 7, 300)]);
    expect(core.apply(M.Resume, 0, 1, 0, 1, 301, 1)).toBe(R.ResumeInProgress);
    // The same decision sent again while its commit is under way follows
    // it; a malformed flag is refused; nothing changes either way.
    expect(core.apply(M.Resume, 0, 1, 0, 1, 302, 1, 1)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.FollowResume, 0, 302)]);
    expect(core.apply(M.Resume, 0, 1, 0, 1, 303, 1, 0)).toBe(R.ResumeInProgress);
    expect(core.apply(M.Resume, 0, 1, 0, 1, 303, 0, 1)).toBe(R.ApprovalMustMatch);
    expect(core.apply(M.Resume, 0, 1, 0, 1, 304, 1, 2)).toBe(R.ArgumentOutOfRange);
    expect(core.snapshot().agents[0]?.admissionState).toBe(AdmissionState.Resuming);

    expect(core.apply(M.ResumeCommitReady, 0, 1, 7, CommitOutcome.Committed, 8, 1, 300)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.RegisterWaiter, 0, 300), fx(E.ResumeSession, 0, 2, 1)]);
    s = core.snapshot();
    expect(s.executions[0]).toMatchObject({
      status: ExecutionStatus.Active,
      phase: Phase.Resuming,
      session: 2,
      revision: 8,
      waiters: 2,
      flags: ExecutionFlag.ApprovalGranted,
    });
    expect(s.agents[0]?.admissionState).toBe(AdmissionState.Executing);

    expect(core.apply(M.SessionEvent, 0, 1, 2, Ev.ApprovalGranted)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.SubmitToolBarrier, 0, 2, 8)]);
    expect(core.snapshot().executions[0]?.inFlight).toBe(1);
  });

  it("gives a refused approval commit back to the suspended admission", () => {
    const core = newCore();
    answeredExecution(core);
    expect(core.apply(M.SessionEvent, 0, 1, 1, Ev.ApprovalRequired)).toBe(R.Ok);
    expect(core.apply(M.SessionFinished, 0, 1, 1, SessionEnding.Suspended)).toBe(R.Ok);
    expect(core.apply(M.TerminalCommitReady, 0, 1, 1, 6, OutcomeType.Suspended, 7)).toBe(R.Ok);
    expect(core.apply(M.Resume, 0, 1, 0, 1, 300, 1)).toBe(R.Ok);
    expect(core.apply(M.SubmissionRefused, Submission.ApprovalCommit, 0, 1, 0, 300)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.FailRequest, 300, R.OffloadFull)]);
    expect(core.snapshot().agents[0]?.admissionState).toBe(AdmissionState.Suspended);
    expect(core.apply(M.SubmissionRefused, Submission.ApprovalCommit, 0, 1, 0, 300)).toBe(R.AdmissionStateMustMatch);
    expect(effects(core)).toEqual([fx(E.DropStale, M.SubmissionRefused, R.AdmissionStateMustMatch)]);
  });

  it("reuses freed slots last-in first-out with a bumped generation", () => {
    const core = newCore();
    core.apply(M.RegisterAgent, 0);
    core.apply(M.RegisterAgent, 0);
    core.apply(M.RegisterAgent, 0);
    expect(core.apply(M.PurgeAgent, 1, 1)).toBe(R.Ok);
    expect(core.apply(M.PurgeAgent, 2, 1)).toBe(R.Ok);
    expect(effects(core)).toEqual([]);
    let s = core.snapshot();
    expect(s.agents[2]).toEqual({
      slot: 2,
      ownerToken: 0,
      executionSlotPlusOne: 0,
      generation: 2,
      admissionState: 0,
      lifecycle: AgentLifecycle.Free,
    });
    expect(core.apply(M.CloseAgent, 2, 1)).toBe(R.AgentSlotUnknown);
    expect(core.apply(M.RegisterAgent, 1)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.AgentRegistered, 2, 2)]);
    expect(core.apply(M.RegisterAgent, 0)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.AgentRegistered, 1, 2)]);
    expect(core.apply(M.CloseAgent, 1, 1)).toBe(R.AgentGenerationMustMatch);
    s = core.snapshot();
    expect(s.agents.map((a) => a.lifecycle)).toEqual([AgentLifecycle.Open, AgentLifecycle.Open, AgentLifecycle.Closed]);

    // Executions: finish one, then the next install reuses slot 0 at generation 2.
    expect(core.apply(M.Start, 0, 1, 1, 0)).toBe(R.Ok);
    expect(core.apply(M.InitialPreparationReady, 0, 1, 1, PreparationOutcome.Active, 5, 0, 1)).toBe(R.Ok);
    // The provider barrier could not be written: it settles, the session fails quiescent.
    expect(core.apply(M.ProviderDispatchReady, 0, 1, 1, 5, CommitOutcome.StoreFailed, 0)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.SetupFailed, 0, 1, SetupFailure.Provider)]);
    expect(core.apply(M.SessionFinished, 0, 1, 1, SessionEnding.Failed)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.SubmitTerminalCommit, 0, 1, 5)]);
    expect(core.apply(M.TerminalCommitReady, 0, 1, 1, 5, OutcomeType.Failed, 6)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.DeliverOutcome, 0, OutcomeType.Failed), fx(E.ReleaseExecution, 0, 1)]);
    core.apply(M.Start, 0, 1, 2, 0);
    expect(effects(core)).toEqual([fx(E.SubmitPrepare, 0, 2, 2)]);
    core.apply(M.InitialPreparationReady, 0, 1, 2, PreparationOutcome.Active, 1, 0, 2);
    expect(effects(core)[0]).toEqual(fx(E.ExecutionInstalled, 0, 2, 2));
    expect(core.apply(M.OperationSettled, 0, 1)).toBe(R.ExecutionGenerationMustMatch);
    expect(effects(core)).toEqual([fx(E.DropStale, M.OperationSettled, R.ExecutionGenerationMustMatch)]);
  });

  it("refuses a purge while the admission is held and registration when full", () => {
    const core = newCore(1, 1);
    core.apply(M.RegisterAgent, 0);
    // Administrative refusals return their code and emit nothing.
    expect(core.apply(M.RegisterAgent, 0)).toBe(R.AgentsFull);
    expect(effects(core)).toEqual([]);
    expect(core.apply(M.RegisterAgent, 2)).toBe(R.ArgumentOutOfRange);
    core.apply(M.Start, 0, 1, REQ, 0);
    expect(core.apply(M.PurgeAgent, 0, 1)).toBe(R.AgentAdmissionHeld);
    expect(effects(core)).toEqual([]);
  });

  it("reserves execution capacity at admission", () => {
    const core = newCore(4, 1);
    core.apply(M.RegisterAgent, 0);
    core.apply(M.RegisterAgent, 0);
    expect(core.apply(M.Start, 0, 1, 1, 0)).toBe(R.Ok);
    expect(core.apply(M.Start, 1, 1, 2, 0)).toBe(R.ExecutionsFull);
    expect(effects(core)).toEqual([fx(E.FailRequest, 2, R.ExecutionsFull)]);
    expect(core.apply(M.RecoveryInstall, 1, 1, 3, ExecutionStatus.Active, Phase.CallingLlm, 0, 3)).toBe(R.ExecutionsFull);
    // The prepare could not be submitted: the reservation is released.
    expect(core.apply(M.SubmissionRefused, Submission.Prepare, 0, 1, 1, 1)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.FailRequest, 1, R.OffloadFull)]);
    expect(core.snapshot().admittingAgents).toBe(0);
    expect(core.apply(M.Start, 1, 1, 2, 0)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.SubmitPrepare, 1, 2, 2)]);
  });

  it("settles failed preparations", () => {
    const core = newCore();
    core.apply(M.RegisterAgent, 0);
    core.apply(M.Start, 0, 1, REQ, 0);
    expect(core.apply(M.InitialPreparationReady, 0, 1, 2, PreparationOutcome.Active, 5, 0, REQ)).toBe(R.OwnerTokenMustMatch);
    expect(core.apply(M.InitialPreparationReady, 0, 1, 1, PreparationOutcome.NotEstablished, 5, 0, REQ)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.DeliverStartFailure, REQ, PreparationOutcome.NotEstablished)]);
    expect(core.snapshot().agents[0]).toMatchObject({ admissionState: AdmissionState.None, ownerToken: 0 });

    core.apply(M.Start, 0, 1, REQ, 0);
    expect(core.apply(M.InitialPreparationReady, 0, 1, 2, PreparationOutcome.StoreFailed, 5, 0, REQ)).toBe(R.Ok);
    expect(effects(core)).toEqual([
      fx(E.RecoveryRequired, 0, RecoveryScope.Agent, R.StoreFailed),
      fx(E.DeliverStartFailure, REQ, PreparationOutcome.StoreFailed),
    ]);
    expect(core.snapshot().agents[0]?.admissionState).toBe(AdmissionState.RecoveryRequired);
    expect(core.snapshot().admittingAgents).toBe(0);

    const other = newCore();
    other.apply(M.RegisterAgent, 0);
    other.apply(M.Start, 0, 1, REQ, 0);
    // The sixth argument is retired (was flags): ignored.
    expect(other.apply(M.InitialPreparationReady, 0, 1, 1, PreparationOutcome.Active, 5, ExecutionFlag.CancelRequested, REQ)).toBe(R.Ok);
    expect(other.snapshot().executions[0]?.flags).toBe(0);
  });

  it("recovers an installed execution with a continuation", () => {
    const core = newCore();
    core.apply(M.RegisterAgent, 0);
    expect(core.apply(M.RecoveryInstall, 0, 1, 40, ExecutionStatus.Active, Phase.CallingLlm, 0, 9)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.ExecutionInstalled, 0, 1, 9)]);
    expect(core.snapshot().agents[0]).toMatchObject({ admissionState: AdmissionState.Executing, executionSlotPlusOne: 1 });

    // FrameworkTools is not valid from calling_llm: recovery required.
    const probe = newCore();
    probe.apply(M.RegisterAgent, 0);
    probe.apply(M.RecoveryInstall, 0, 1, 40, ExecutionStatus.Active, Phase.CallingLlm, 0, 9);
    expect(probe.apply(M.ContinueRecovered, 0, 1, 40, Continuation.FrameworkTools, 0, 10)).toBe(R.ContinuationInvalid);
    expect(effects(probe)).toEqual([
      fx(E.RecoveryRequired, 0, RecoveryScope.Execution, R.ContinuationInvalid),
      fx(E.FailWaiters, 0, R.ContinuationInvalid),
      fx(E.FailRequest, 10, R.ContinuationInvalid),
    ]);

    expect(core.apply(M.ContinueRecovered, 0, 1, 41, Continuation.RecallModel, 0, 10)).toBe(R.RevisionMustMatch);
    expect(effects(core)).toEqual([fx(E.FailRequest, 10, R.RevisionMustMatch)]);
    expect(core.apply(M.ContinueRecovered, 0, 1, 40, Continuation.RecallModel, 0, 10)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.RegisterWaiter, 0, 10), fx(E.ContinueSession, 0, 1, Continuation.RecallModel), fx(E.SubmitProviderBarrier, 0, 1, 40)]);
    // The session is live now: a second continuation is stale.
    expect(core.apply(M.ContinueRecovered, 0, 1, 40, Continuation.RecallModel, 0, 11)).toBe(R.SessionMustMatch);

    // The continued session counts its barrier in flight: a finish now defers.
    expect(core.snapshot().executions[0]?.inFlight).toBe(1);
    expect(core.apply(M.ProviderDispatchReady, 0, 1, 1, 40, CommitOutcome.Committed, 41)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.StartProviderCall, 0, 1)]);
    expect(core.apply(M.OperationSettled, 0, 1)).toBe(R.Ok);

    // A terminal commit that fails keeps the execution for recovery.
    expect(core.apply(M.SessionFinished, 0, 1, 1, SessionEnding.Failed)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.SubmitTerminalCommit, 0, 1, 41)]);
    expect(core.apply(M.TerminalCommitReady, 0, 1, 1, 41, OutcomeType.StoreFailed, 0)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.RecoveryRequired, 0, RecoveryScope.Execution, R.StoreFailed), fx(E.FailWaiters, 0, R.StoreFailed)]);
    expect(core.snapshot().agents[0]?.admissionState).toBe(AdmissionState.RecoveryRequired);
  });

  it("knows no preparation recovery: a preparing row is refused, kinds 16 and 17 are unknown (decision 0022)", () => {
    const core = newCore();
    core.apply(M.RegisterAgent, 0);
    core.apply(M.RecoveryInstall, 0, 1, 3, ExecutionStatus.Preparing, Phase.Preparing, 0, 9);
    const before = core.snapshot();
    expect(core.apply(16, 0, 1, 3, 9)).toBe(R.MessageKindUnknown);
    expect(core.apply(17, 0, 1, 1, 3, PreparationOutcome.Active, 4, 9)).toBe(R.MessageKindUnknown);
    expect(effects(core)).toEqual([]);
    expect(core.snapshot()).toEqual(before);
    expect(core.apply(M.ContinueRecovered, 0, 1, 3, Continuation.None, 0, 10)).toBe(R.ContinuationInvalid);
    expect(effects(core)).toEqual([
      fx(E.RecoveryRequired, 0, RecoveryScope.Execution, R.ContinuationInvalid),
      fx(E.FailWaiters, 0, R.ContinuationInvalid),
      fx(E.FailRequest, 10, R.ContinuationInvalid),
    ]);
  });

  it("returns the fact of malformed input but Ok for reported failures", () => {
    // TerminalCommitReady: a quiescent session's terminal commit at
    // revision 6. Each case gets its own core: requiring recovery ends the
    // session, so a second result of it would be stale.
    const terminalizing = (): ReferenceCore => {
      const c = newCore();
      answeredExecution(c);
      expect(c.apply(M.SessionFinished, 0, 1, 1, SessionEnding.Completed)).toBe(R.Ok);
      expect(effects(c)).toEqual([fx(E.SubmitTerminalCommit, 0, 1, 6)]);
      return c;
    };
    // An invalid outcome is malformed input.
    let core = terminalizing();
    expect(core.apply(M.TerminalCommitReady, 0, 1, 1, 6, 0, 7)).toBe(R.OutcomeUnknown);
    expect(effects(core)).toEqual([fx(E.RecoveryRequired, 0, RecoveryScope.Execution, R.OutcomeUnknown), fx(E.FailWaiters, 0, R.OutcomeUnknown)]);
    expect(core.snapshot().executions[0]?.session).toBe(0);
    expect(core.apply(M.TerminalCommitReady, 0, 1, 1, 6, OutcomeType.StoreFailed, 7)).toBe(R.SessionMustMatch);
    // ... while a store failure is reported, so Ok.
    core = terminalizing();
    expect(core.apply(M.TerminalCommitReady, 0, 1, 1, 6, OutcomeType.StoreFailed, 7)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.RecoveryRequired, 0, RecoveryScope.Execution, R.StoreFailed), fx(E.FailWaiters, 0, R.StoreFailed)]);
    core = terminalizing();
    expect(core.apply(M.TerminalCommitReady, 0, 1, 1, 6, OutcomeType.Completed, 6)).toBe(R.RevisionMustIncrease);

    // ResumeCommitReady: a reported StoreFailed is Ok; a bad `approved` is not.
    const suspended = (): ReferenceCore => {
      const c = newCore();
      answeredExecution(c);
      expect(c.apply(M.SessionEvent, 0, 1, 1, Ev.ApprovalRequired)).toBe(R.Ok);
      expect(c.apply(M.SessionFinished, 0, 1, 1, SessionEnding.Suspended)).toBe(R.Ok);
      expect(c.apply(M.TerminalCommitReady, 0, 1, 1, 6, OutcomeType.Suspended, 7)).toBe(R.Ok);
      expect(c.apply(M.Resume, 0, 1, 0, 1, 300, 1)).toBe(R.Ok);
      return c;
    };
    core = suspended();
    // Nothing written: only the request fails; the suspension is given back.
    expect(core.apply(M.ResumeCommitReady, 0, 1, 7, CommitOutcome.StoreFailed, 8, 1, 300)).toBe(R.Ok);
    expect(effects(core)).toEqual([fx(E.FailRequest, 300, R.StoreFailed)]);
    expect(core.apply(M.Resume, 0, 1, 0, 1, 301, 1)).toBe(R.Ok);
    core = suspended();
    // Both malformed: the outcome is judged first.
    expect(core.apply(M.ResumeCommitReady, 0, 1, 7, 9, 8, 2, 300)).toBe(R.OutcomeUnknown);
    core = suspended();
    expect(core.apply(M.ResumeCommitReady, 0, 1, 7, CommitOutcome.StoreFailed, 8, 2, 300)).toBe(R.ArgumentOutOfRange);
    expect(effects(core)[2]).toEqual(fx(E.FailRequest, 300, R.ArgumentOutOfRange));

    // ContinueRecovered: a continuation past the enum is malformed; a
    // retired one (5, was FailedTerminal) just does not fit.
    core = newCore();
    core.apply(M.RegisterAgent, 0);
    core.apply(M.RecoveryInstall, 0, 1, 3, ExecutionStatus.Active, Phase.RecoveryResolvedFailed, 0, 9);
    expect(core.apply(M.ContinueRecovered, 0, 1, 3, 8, 0, 10)).toBe(R.ArgumentOutOfRange);
    core = newCore();
    core.apply(M.RegisterAgent, 0);
    core.apply(M.RecoveryInstall, 0, 1, 3, ExecutionStatus.Active, Phase.RecoveryResolvedFailed, 0, 9);
    expect(core.apply(M.ContinueRecovered, 0, 1, 3, 5, 1, 10)).toBe(R.ContinuationInvalid);
  });

  it("fails the waiter list when it is full", () => {
    const core = newCore();
    startedExecution(core);
    for (let i = 1; i < Limit.WaitersMax; i++) expect(core.apply(M.AttachWaiter, 0, 1, 1000 + i)).toBe(R.Ok);
    expect(core.snapshot().executions[0]?.waiters).toBe(Limit.WaitersMax);
    // AttachWaiter's whole request is the waiter: a full list refuses it.
    expect(core.apply(M.AttachWaiter, 0, 1, 7)).toBe(R.WaitersFull);
    expect(effects(core)).toEqual([fx(E.FailRequest, 7, R.WaitersFull)]);
    expect(core.apply(M.AttachWaiter, 0, 9, 8)).toBe(R.ExecutionGenerationMustMatch);
    expect(effects(core)).toEqual([fx(E.FailRequest, 8, R.ExecutionGenerationMustMatch)]);
  });

  it("treats unknown kinds and odd arguments without throwing", () => {
    const core = newCore(4, 4);
    expect(core.apply(0)).toBe(R.MessageKindUnknown);
    expect(core.apply(MessageKindLimit.End)).toBe(R.MessageKindUnknown);
    expect(core.apply(-1)).toBe(R.MessageKindUnknown);
    expect(effects(core)).toEqual([]);
    // 2^32 + 1 is 1 as an unsigned 32-bit value: RegisterAgent(open).
    expect(core.apply(2 ** 32 + 1, 0)).toBe(R.Ok);
    expect(core.apply(M.RegisterAgent, Number.NaN)).toBe(R.Ok);

    // Deterministic walks over every kind never throw and keep the counters
    // consistent with the tables. Half the messages are built from the
    // current snapshot (real slots, generations, tokens, sessions and
    // revisions) so that the walks reach deep states. A walk is short and
    // starts from a fresh core because a table whose agents all wait for
    // recovery stays that way until the host discharges and reinstalls
    // them, which these walks rarely do.
    // Whether one seed's walks reach every kind (ConversationHeld, four
    // live executions) hangs on the seed, and each new message kind shifts
    // the draws: the walks go on with the next seed (1, 2, …, at most 16)
    // until every kind was accepted, so coverage does not hang on one.
    const accepted = new Map<number, number>();
    let maxLive = 0;
    const expected = (kind: number): boolean =>
      !(kind === M.DeferredTerminal || kind === M.ResumeCommitReady || kind === M.CancelCommitReady || kind === M.HeadSettled)
      && !(kind === 16 || kind === 17 || unassignedMessageKinds.includes(kind));
    const covered = (): boolean => maxLive === 4 && KIND_RANGE.every((kind) => !expected(kind) || (accepted.get(kind) ?? 0) > 0);
    for (let seed = 1; seed <= 16 && !covered(); seed++) walkSeed(seed);
    function walkSeed(seed: number): void {
      const rand = mulberry32(seed);
      for (let walk = 0; walk < 300; walk++) {
        const walker = newCore(4, 4);
        for (let i = 0; i < 200; i++) {
          const [kind, ...args] = rand(5) === 0 ? randomMessage(rand) : plausibleMessage(rand, walker.snapshot());
          const code = walker.apply(kind, ...args);
          if (code === R.Ok) accepted.set(kind, (accepted.get(kind) ?? 0) + 1);
          expect(walker.effectWords().length % 5).toBe(0);
          const s = walker.snapshot();
          const admitting = s.agents.filter((a) => a.admissionState === AdmissionState.Admitting).length;
          const live = s.executions.filter((x) => x.agentSlotPlusOne !== 0).length;
          expect(s.admittingAgents).toBe(admitting);
          expect(s.liveExecutions).toBe(live);
          expect(live + admitting).toBeLessThanOrEqual(4);
          maxLive = Math.max(maxLive, live);
        }
      }
    }
    // The walks went deep: every kind was accepted somewhere. Two kinds
    // need a live session carried through several steps (DeferredTerminal:
    // finished with work in flight, then quiescent; ResumeCommitReady:
    // suspended by a terminal commit, then resumed), which these random
    // walks rarely reach; the differential fuzzing (test/fuzz), whose
    // streams follow the happy path, checks every kind is reached there.
    // HeadSettled needs a conversation recovered, ready, with a message
    // queued and its head let start: four steps in order.
    // Kinds 16 and 17 are retired (decision 0022): never accepted.
    for (let kind: number = M.RegisterAgent; kind < MessageKindLimit.End; kind++) {
      if (kind === M.DeferredTerminal || kind === M.ResumeCommitReady || kind === M.CancelCommitReady || kind === M.HeadSettled) continue;
      if (kind === 16 || kind === 17 || unassignedMessageKinds.includes(kind)) expect(accepted.get(kind) ?? 0, `retired or unassigned kind ${kind}`).toBe(0);
      else expect(accepted.get(kind) ?? 0, `kind ${kind}`).toBeGreaterThan(0);
    }
    expect(maxLive).toBe(4);
  });
});
