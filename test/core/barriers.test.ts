// `ProviderDispatchReady` and `ToolDispatchReady`: the durable barrier
// written before a model call or tool batch answered (docs/core.md; seeds:
// apply_provider_dispatch_preparation_on_event_loop,
// apply_tool_dispatch_preparation_on_event_loop,
// authoritative_state_for_operation, mark_barrier_recovery_required).
// A result that no longer matches the live execution (slot tenant,
// revision, session, phase, in flight — in that order) is dropped. The
// barrier being written is an operation in flight (docs/decisions/0005):
// its result settles it first. Then `Committed` starts the operation under
// the new revision; `RehydrationRequired` marks the execution for recovery
// (which ends the live session); `StoreFailed` fails the session's setup;
// anything malformed returns its fact. A result whose session finished
// while the barrier was written (phase `Terminal`) is genuine: it is taken
// for its revision, nothing starts, and the deferred terminal goes ahead
// once it was the last operation in flight.

import { expect } from "vitest";
import {
  AdmissionState,
  CommitOutcome,
  ExecutionFlag,
  ExecutionStatus,
  Limit,
  MessageKind,
  OutcomeType,
  Phase,
  RecoveryScope,
  ResultCode,
  SessionEnding,
  SessionEventKind,
  SetupFailure,
} from "../../assembly/abi.js";
import { changedExecution, describeDecisions, effect, type Driver, type Run } from "./driver.js";

const PROVIDER = MessageKind.ProviderDispatchReady;
const TOOL = MessageKind.ToolDispatchReady;

/** An execution in `CallingLlm` with `Limit.InFlightMax` operations in
 * flight, its provider barrier among them: a batch of `InFlightMax - 1`
 * tools is still running, its results were recorded, and the next model
 * call's barrier is being written. */
function fullInFlightCallingModel(core: Driver): Run {
  return core
    .dispatchingTools()
    .commitToolBarrier(Limit.InFlightMax - 1)
    .event(SessionEventKind.ToolsCompleted)
    .event(SessionEventKind.StateCompleted);
}

describeDecisions("ProviderDispatchReady(exec, gen, session, expectedRevision, outcome, newRevision)", ({ it, boot }) => {
  it("Committed: settles the barrier, moves to the new revision, counts the model call in flight, starts it", async () => {
    const core = await boot();
    const run = core.installed();
    expect(run.record.inFlight).toBe(1);
    expect(core.apply(PROVIDER, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 5)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.StartProviderCall(run.exec, run.session)]);
    // The barrier's count went to the model call: still one in flight.
    expect(run.record).toMatchObject({ revision: run.revision + 5, inFlight: 1, phase: Phase.CallingLlm, session: run.session });
    expect(run.admission).toBe(AdmissionState.Executing);
  });

  it("drops a result for an unknown or free execution slot (ExecutionSlotUnknown)", async () => {
    const core = await boot();
    const run = core.installed();
    core.expectDropped(
      PROVIDER,
      ResultCode.ExecutionSlotUnknown,
      run.exec + 1,
      run.generation,
      run.session,
      run.revision,
      CommitOutcome.Committed,
      run.revision + 1,
    );
  });

  it("drops a result for another generation of the slot (ExecutionGenerationMustMatch)", async () => {
    const core = await boot();
    const run = core.installed();
    core.expectDropped(
      PROVIDER,
      ResultCode.ExecutionGenerationMustMatch,
      run.exec,
      run.generation + 1,
      run.session,
      run.revision,
      CommitOutcome.Committed,
      run.revision + 1,
    );
  });

  it("drops a result computed against another revision (RevisionMustMatch), before the session check", async () => {
    const core = await boot();
    const run = core.installed();
    core.expectDropped(
      PROVIDER,
      ResultCode.RevisionMustMatch,
      run.exec,
      run.generation,
      run.session + 1,
      run.revision - 1,
      CommitOutcome.Committed,
      run.revision + 1,
    );
  });

  it("drops a duplicate of a result already applied (its revision moved on)", async () => {
    const core = await boot();
    const run = core.installed();
    const expected = run.revision;
    run.commitProviderBarrier();
    core.expectDropped(PROVIDER, ResultCode.RevisionMustMatch, run.exec, run.generation, run.session, expected, CommitOutcome.Committed, expected + 1);
  });

  it("drops a result of another session (SessionMustMatch), before the phase check", async () => {
    const core = await boot();
    const run = core.dispatchingTools();
    core.expectDropped(
      PROVIDER,
      ResultCode.SessionMustMatch,
      run.exec,
      run.generation,
      run.session + 1,
      run.revision,
      CommitOutcome.Committed,
      run.revision + 1,
    );
  });

  it("drops a result naming session 0, which names no live session (SessionMustMatch)", async () => {
    const core = await boot();
    // Installed by recovery in calling_llm: the execution's session is 0 too.
    const run = core.recovered({ status: ExecutionStatus.Active, phase: Phase.CallingLlm });
    core.expectDropped(PROVIDER, ResultCode.SessionMustMatch, run.exec, run.generation, 0, run.revision, CommitOutcome.Committed, run.revision + 1);
  });

  it("drops a result when the execution is no longer calling the model (PhaseMustMatch)", async () => {
    const core = await boot();
    const run = core.dispatchingTools();
    core.expectDropped(PROVIDER, ResultCode.PhaseMustMatch, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1);
  });

  it("drops every result, even a malformed one, before judging its outcome", async () => {
    const core = await boot();
    const run = core.dispatchingTools();
    core.expectDropped(PROVIDER, ResultCode.PhaseMustMatch, run.exec, run.generation, run.session, run.revision, 0, 0);
  });

  it("RehydrationRequired: marks the execution for recovery, fails its waiters, returns Ok", async () => {
    const core = await boot();
    const run = core.installed();
    core.apply(MessageKind.AttachWaiter, run.exec, run.generation, core.request());
    const before = run.record;
    expect(core.apply(PROVIDER, run.exec, run.generation, run.session, run.revision, CommitOutcome.RehydrationRequired, 0)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([
      effect.RecoveryRequired(run.exec, RecoveryScope.Execution, ResultCode.RehydrationRequired),
      effect.FailWaiters(run.exec, ResultCode.RehydrationRequired),
    ]);
    expect(run.admission).toBe(AdmissionState.RecoveryRequired);
    // The barrier settled; the record stays for inspection; the waiters and
    // the live session are gone.
    expect(run.record).toEqual({ ...before, waiters: 0, session: 0, inFlight: 0 });
  });

  it("StoreFailed: settles the barrier, fails the session's provider setup and changes nothing else, returns Ok", async () => {
    const core = await boot();
    const run = core.installed();
    const before = core.snapshot();
    expect(core.apply(PROVIDER, run.exec, run.generation, run.session, run.revision, CommitOutcome.StoreFailed, 0)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.SetupFailed(run.exec, run.session, SetupFailure.Provider)]);
    expect(core.snapshot()).toEqual(changedExecution(before, run.exec, { inFlight: 0 }));
  });

  for (const outcome of [CommitOutcome.None, 4, 0xffff_ffff]) {
    it(`an unknown outcome (${outcome}) marks the execution for recovery and returns OutcomeUnknown`, async () => {
      const core = await boot();
      const run = core.installed();
      const before = run.record;
      expect(core.apply(PROVIDER, run.exec, run.generation, run.session, run.revision, outcome, run.revision + 1)).toBe(ResultCode.OutcomeUnknown);
      expect(core.effects()).toEqual([
        effect.RecoveryRequired(run.exec, RecoveryScope.Execution, ResultCode.OutcomeUnknown),
        effect.FailWaiters(run.exec, ResultCode.OutcomeUnknown),
      ]);
      expect(run.admission).toBe(AdmissionState.RecoveryRequired);
      expect(run.record).toEqual({ ...before, waiters: 0, session: 0, inFlight: 0 });
    });
  }

  for (const [name, delta] of [
    ["equal to", 0],
    ["below", -1],
  ] as const) {
    it(`Committed with a new revision ${name} the current one marks the execution for recovery (RevisionMustIncrease)`, async () => {
      const core = await boot();
      const run = core.installed();
      const before = run.record;
      expect(core.apply(PROVIDER, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + delta)).toBe(
        ResultCode.RevisionMustIncrease,
      );
      expect(core.effects()).toEqual([
        effect.RecoveryRequired(run.exec, RecoveryScope.Execution, ResultCode.RevisionMustIncrease),
        effect.FailWaiters(run.exec, ResultCode.RevisionMustIncrease),
      ]);
      expect(run.admission).toBe(AdmissionState.RecoveryRequired);
      expect(run.record).toEqual({ ...before, waiters: 0, session: 0, inFlight: 0 });
    });
  }

  // The barrier held an in-flight count since it was asked for, and it
  // settles before the model call is counted: a provider barrier can never
  // be refused InFlightFull (the limit is enforced when the barrier is asked
  // for: SessionEvent into calling_llm, test/core/session.test.ts).
  it("Committed with InFlightMax in flight, its barrier among them: the barrier's count goes to the model call (Ok)", async () => {
    const core = await boot();
    const run = fullInFlightCallingModel(core);
    expect(run.record).toMatchObject({ phase: Phase.CallingLlm, inFlight: Limit.InFlightMax });
    expect(core.apply(PROVIDER, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.StartProviderCall(run.exec, run.session)]);
    expect(run.record).toMatchObject({ revision: run.revision + 1, inFlight: Limit.InFlightMax });
    expect(run.admission).toBe(AdmissionState.Executing);
  });

  it("with InFlightMax in flight, a non-increasing revision is still judged (RevisionMustIncrease), after the barrier settled", async () => {
    const core = await boot();
    const run = fullInFlightCallingModel(core);
    const before = run.record;
    expect(core.apply(PROVIDER, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision)).toBe(
      ResultCode.RevisionMustIncrease,
    );
    expect(core.effects()).toEqual([
      effect.RecoveryRequired(run.exec, RecoveryScope.Execution, ResultCode.RevisionMustIncrease),
      effect.FailWaiters(run.exec, ResultCode.RevisionMustIncrease),
    ]);
    expect(run.record).toEqual({ ...before, waiters: 0, session: 0, inFlight: Limit.InFlightMax - 1 });
    expect(run.admission).toBe(AdmissionState.RecoveryRequired);
  });

  it("drops a result when nothing is in flight (InFlightUnderflow): the barrier it would settle was already settled", async () => {
    const core = await boot();
    // The barrier committed and the model call settled: a second result at
    // the current revision has no barrier left to settle.
    const run = core.modelAnswered();
    core.expectDropped(PROVIDER, ResultCode.InFlightUnderflow, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1);
    core.expectDropped(PROVIDER, ResultCode.InFlightUnderflow, run.exec, run.generation, run.session, run.revision, 0, 0);
  });

  it("judges the phase before the in-flight count", async () => {
    const core = await boot();
    const run = core.recordingToolResults();
    expect(run.record.inFlight).toBe(0);
    core.expectDropped(PROVIDER, ResultCode.PhaseMustMatch, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1);
  });
});

describeDecisions("ToolDispatchReady(exec, gen, session, expectedRevision, outcome, newRevision, toolCount)", ({ it, boot }) => {
  it("Committed: settles the barrier, moves to the new revision, counts the batch in flight, starts it", async () => {
    const core = await boot();
    const run = core.dispatchingTools();
    expect(run.record.inFlight).toBe(1);
    expect(core.apply(TOOL, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1, 3)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.StartToolBatch(run.exec, run.session, 3)]);
    expect(run.record).toMatchObject({ revision: run.revision + 1, inFlight: 3, phase: Phase.DispatchingTools });
  });

  it("accepts a batch of exactly InFlightMax tools", async () => {
    const core = await boot();
    const run = core.dispatchingTools();
    expect(core.apply(TOOL, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1, Limit.InFlightMax)).toBe(
      ResultCode.Ok,
    );
    expect(core.effects()).toEqual([effect.StartToolBatch(run.exec, run.session, Limit.InFlightMax)]);
    expect(run.record.inFlight).toBe(Limit.InFlightMax);
  });

  it("drops a result for an unknown slot, another generation, revision or session", async () => {
    const core = await boot();
    const run = core.dispatchingTools();
    const { exec, generation, session, revision } = run;
    core.expectDropped(TOOL, ResultCode.ExecutionSlotUnknown, exec + 1, generation, session, revision, CommitOutcome.Committed, revision + 1, 1);
    core.expectDropped(TOOL, ResultCode.ExecutionGenerationMustMatch, exec, generation + 1, session, revision, CommitOutcome.Committed, revision + 1, 1);
    core.expectDropped(TOOL, ResultCode.RevisionMustMatch, exec, generation, session + 1, revision + 1, CommitOutcome.Committed, revision + 2, 1);
    core.expectDropped(TOOL, ResultCode.SessionMustMatch, exec, generation, session + 1, revision, CommitOutcome.Committed, revision + 1, 1);
  });

  it("drops a result naming session 0, which names no live session (SessionMustMatch)", async () => {
    const core = await boot();
    const run = core.recovered({ status: ExecutionStatus.Active, phase: Phase.DispatchingTools });
    core.expectDropped(TOOL, ResultCode.SessionMustMatch, run.exec, run.generation, 0, run.revision, CommitOutcome.Committed, run.revision + 1, 1);
  });

  it("drops a result when the execution is not dispatching tools (PhaseMustMatch)", async () => {
    const core = await boot();
    const run = core.modelAnswered();
    core.expectDropped(TOOL, ResultCode.PhaseMustMatch, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1, 1);
  });

  it("RehydrationRequired: marks the execution for recovery, fails its waiters, returns Ok", async () => {
    const core = await boot();
    const run = core.dispatchingTools();
    const before = run.record;
    expect(core.apply(TOOL, run.exec, run.generation, run.session, run.revision, CommitOutcome.RehydrationRequired, 0, 0)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([
      effect.RecoveryRequired(run.exec, RecoveryScope.Execution, ResultCode.RehydrationRequired),
      effect.FailWaiters(run.exec, ResultCode.RehydrationRequired),
    ]);
    expect(run.admission).toBe(AdmissionState.RecoveryRequired);
    expect(run.record).toEqual({ ...before, waiters: 0, session: 0, inFlight: 0 });
  });

  it("StoreFailed: settles the barrier, fails the session's tool setup whatever the tool count, changes nothing else, returns Ok", async () => {
    const core = await boot();
    const run = core.dispatchingTools();
    const before = core.snapshot();
    expect(core.apply(TOOL, run.exec, run.generation, run.session, run.revision, CommitOutcome.StoreFailed, 0, 0)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.SetupFailed(run.exec, run.session, SetupFailure.Tool)]);
    expect(core.snapshot()).toEqual(changedExecution(before, run.exec, { inFlight: 0 }));
  });

  it("an unknown outcome marks the execution for recovery and returns OutcomeUnknown", async () => {
    const core = await boot();
    const run = core.dispatchingTools();
    const before = run.record;
    expect(core.apply(TOOL, run.exec, run.generation, run.session, run.revision, 9, run.revision + 1, 1)).toBe(ResultCode.OutcomeUnknown);
    expect(core.effects()).toEqual([
      effect.RecoveryRequired(run.exec, RecoveryScope.Execution, ResultCode.OutcomeUnknown),
      effect.FailWaiters(run.exec, ResultCode.OutcomeUnknown),
    ]);
    expect(run.admission).toBe(AdmissionState.RecoveryRequired);
    expect(run.record).toEqual({ ...before, waiters: 0, session: 0, inFlight: 0 });
  });

  for (const toolCount of [0, Limit.InFlightMax + 1, 0xffff_ffff]) {
    it(`Committed with toolCount ${toolCount} settles the barrier, fails the tool setup and returns ArgumentOutOfRange`, async () => {
      const core = await boot();
      const run = core.dispatchingTools();
      const before = core.snapshot();
      expect(core.apply(TOOL, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1, toolCount)).toBe(
        ResultCode.ArgumentOutOfRange,
      );
      expect(core.effects()).toEqual([effect.SetupFailed(run.exec, run.session, SetupFailure.Tool)]);
      expect(core.snapshot()).toEqual(changedExecution(before, run.exec, { inFlight: 0 }));
    });
  }

  it("Committed with a batch that would pass InFlightMax settles the barrier, fails the setup and returns InFlightFull", async () => {
    const core = await boot();
    // The model call is still in flight when the tools are dispatched.
    const run = core.callingModel().event(SessionEventKind.LlmCompletedWithTools);
    const before = core.snapshot();
    expect(run.record.inFlight).toBe(2);
    expect(core.apply(TOOL, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1, Limit.InFlightMax)).toBe(
      ResultCode.InFlightFull,
    );
    expect(core.effects()).toEqual([effect.SetupFailed(run.exec, run.session, SetupFailure.Tool)]);
    // Only the model call is left in flight.
    expect(core.snapshot()).toEqual(changedExecution(before, run.exec, { inFlight: 1 }));
  });

  it("the barrier's own count makes room: with the model call in flight, InFlightMax - 1 tools fill the count exactly", async () => {
    const core = await boot();
    const run = core.callingModel().event(SessionEventKind.LlmCompletedWithTools);
    expect(core.apply(TOOL, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1, Limit.InFlightMax - 1)).toBe(
      ResultCode.Ok,
    );
    expect(core.effects()).toEqual([effect.StartToolBatch(run.exec, run.session, Limit.InFlightMax - 1)]);
    expect(run.record.inFlight).toBe(Limit.InFlightMax);
  });

  // Each probe on its own machine: every accepted result settles the
  // barrier, so a second result on the same machine would find another
  // in-flight count.
  for (const [name, toolCount, code] of [
    ["the tool count before the in-flight limit and the revision", 0, ResultCode.ArgumentOutOfRange],
    ["the in-flight limit before the revision", Limit.InFlightMax, ResultCode.InFlightFull],
  ] as const) {
    it(`checks ${name}`, async () => {
      const core = await boot();
      const run = core.callingModel().event(SessionEventKind.LlmCompletedWithTools);
      const { exec, generation, session, revision } = run;
      expect(core.apply(TOOL, exec, generation, session, revision, CommitOutcome.Committed, revision, toolCount)).toBe(code);
      expect(core.effects()).toEqual([effect.SetupFailed(exec, session, SetupFailure.Tool)]);
      expect(run.admission).toBe(AdmissionState.Executing);
      expect(run.record).toMatchObject({ revision, session, inFlight: 1 });
    });
  }

  it("checks the revision increase last: a valid batch with a non-increasing revision marks the execution for recovery", async () => {
    const core = await boot();
    const run = core.callingModel().event(SessionEventKind.LlmCompletedWithTools);
    const { exec, generation, session, revision } = run;
    expect(core.apply(TOOL, exec, generation, session, revision, CommitOutcome.Committed, revision, 1)).toBe(ResultCode.RevisionMustIncrease);
    expect(core.effects()).toEqual([
      effect.RecoveryRequired(exec, RecoveryScope.Execution, ResultCode.RevisionMustIncrease),
      effect.FailWaiters(exec, ResultCode.RevisionMustIncrease),
    ]);
    expect(run.admission).toBe(AdmissionState.RecoveryRequired);
    // The barrier settled; the model call is still counted.
    expect(run.record).toMatchObject({ revision, session: 0, inFlight: 1 });
  });

  it("drops a result when nothing is in flight (InFlightUnderflow), and judges the phase first", async () => {
    const core = await boot();
    // Every tool settled, the batch not yet reported complete.
    const run = core.toolsSettled();
    core.expectDropped(TOOL, ResultCode.InFlightUnderflow, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1, 1);
    run.event(SessionEventKind.ToolsCompleted);
    core.expectDropped(TOOL, ResultCode.PhaseMustMatch, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1, 1);
  });
});

// -- a barrier result after the session finished ---------------------------------

interface BarrierKind {
  readonly name: string;
  readonly kind: MessageKind;
  /** A live session whose barrier is being written and is the only
   * operation in flight. */
  readonly writing: (core: Driver) => Run;
  /** A live session whose barrier is being written while other operations
   * are in flight too (`inFlight` = 1 + `others`). */
  readonly writingBusy: (core: Driver) => Run;
  readonly others: number;
}

const BARRIER_KINDS: readonly BarrierKind[] = [
  {
    name: "ProviderDispatchReady",
    kind: PROVIDER,
    writing: (core) => core.installed(),
    // Two tools still running when the results were recorded.
    writingBusy: (core) => core.dispatchingTools().commitToolBarrier(2).event(SessionEventKind.ToolsCompleted).event(SessionEventKind.StateCompleted),
    others: 2,
  },
  {
    name: "ToolDispatchReady",
    kind: TOOL,
    writing: (core) => core.dispatchingTools(),
    // The model call still in flight when the tools were asked for.
    writingBusy: (core) => core.callingModel().event(SessionEventKind.LlmCompletedWithTools),
    others: 1,
  },
];

for (const barrier of BARRIER_KINDS) {
  describeDecisions(`${barrier.name} after the session finished (phase Terminal)`, ({ it, boot }) => {
    /** The barrier result; `toolCount` 2 (ignored by ProviderDispatchReady). */
    function result(core: Driver, run: Run, outcome: number, newRevision: number, toolCount = 2): number {
      return core.apply(barrier.kind, run.exec, run.generation, run.session, run.revision, outcome, newRevision, toolCount);
    }

    it("a finish while the barrier is written defers the terminal: the barrier is in flight", async () => {
      const core = await boot();
      const run = barrier.writing(core);
      expect(core.apply(MessageKind.SessionFinished, run.exec, run.generation, run.session, SessionEnding.Cancelled)).toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([effect.DeferTerminal(run.exec, run.session)]);
      expect(run.record).toMatchObject({ phase: Phase.Terminal, inFlight: 1, flags: ExecutionFlag.TerminalDeferred });
      expect(run.admission).toBe(AdmissionState.Cancelling);
    });

    it("Committed: takes the new revision, settles the barrier, posts the deferred terminal; nothing starts", async () => {
      const core = await boot();
      const run = barrier.writing(core).finish(SessionEnding.Cancelled);
      const before = run.record;
      expect(result(core, run, CommitOutcome.Committed, run.revision + 3)).toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([effect.PostDeferredTerminal(run.exec, run.session)]);
      expect(run.record).toEqual({ ...before, revision: run.revision + 3, inFlight: 0 });
      expect(run.admission).toBe(AdmissionState.Cancelling);
    });

    it("the whole cancelled path: the terminal commit expects the revision the barrier wrote (docs/decisions/0005)", async () => {
      const core = await boot();
      const run = barrier.writing(core).finish(SessionEnding.Cancelled);
      core.step(barrier.kind, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1, 2);
      expect(core.effects()).toEqual([effect.PostDeferredTerminal(run.exec, run.session)]);
      expect(core.apply(MessageKind.DeferredTerminal, run.exec, run.generation, run.session)).toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([effect.SubmitTerminalCommit(run.exec, run.session, run.revision + 1)]);
      expect(core.apply(MessageKind.TerminalCommitReady, run.exec, run.generation, run.session, run.revision + 1, OutcomeType.Failed, run.revision + 2)).toBe(
        ResultCode.Ok,
      );
      expect(core.effects()).toEqual([effect.DeliverOutcome(run.exec, OutcomeType.Failed), effect.ReleaseExecution(run.exec, run.generation)]);
      expect(core.snapshot()).toMatchObject({ liveExecutions: 0 });
    });

    it("Committed with other operations still in flight: settles the barrier only, the terminal stays deferred", async () => {
      const core = await boot();
      const run = barrier.writingBusy(core).finish(SessionEnding.TimedOut);
      const before = run.record;
      expect(before.inFlight).toBe(1 + barrier.others);
      expect(result(core, run, CommitOutcome.Committed, run.revision + 1)).toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([]);
      expect(run.record).toEqual({ ...before, revision: run.revision + 1, inFlight: barrier.others });
      // The last of the others lets the terminal go ahead.
      run.revision += 1;
      run.inFlight = barrier.others;
      for (let index = 1; index < barrier.others; index += 1) run.settle();
      expect(core.apply(MessageKind.OperationSettled, run.exec, run.generation)).toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([effect.PostDeferredTerminal(run.exec, run.session)]);
    });

    it("StoreFailed: settles the barrier and posts the deferred terminal; no setup to fail, the revision stays", async () => {
      const core = await boot();
      const run = barrier.writing(core).finish(SessionEnding.Cancelled);
      const before = run.record;
      expect(result(core, run, CommitOutcome.StoreFailed, 0)).toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([effect.PostDeferredTerminal(run.exec, run.session)]);
      expect(run.record).toEqual({ ...before, inFlight: 0 });
      expect(run.admission).toBe(AdmissionState.Cancelling);
    });

    it("RehydrationRequired: holds the execution for recovery (ending the session), returns Ok; the barrier settles (issue 24 item 11)", async () => {
      const core = await boot();
      const run = barrier.writing(core).finish(SessionEnding.Cancelled);
      const before = run.record;
      expect(result(core, run, CommitOutcome.RehydrationRequired, 0)).toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([
        effect.RecoveryRequired(run.exec, RecoveryScope.Execution, ResultCode.RehydrationRequired),
        effect.FailWaiters(run.exec, ResultCode.RehydrationRequired),
      ]);
      // Recovery also drops the deferred terminal of the abandoned session;
      // the barrier answered, so it is no longer in flight.
      expect(run.record).toEqual({ ...before, waiters: 0, session: 0, inFlight: 0, flags: before.flags & ~ExecutionFlag.TerminalDeferred });
      expect(run.admission).toBe(AdmissionState.RecoveryRequired);
      // Quiescent: env.recover() can release it (it refused NotQuiescent for good before).
      expect(core.apply(MessageKind.DischargeRecovery, run.exec, run.generation)).toBe(ResultCode.Ok);
    });

    for (const outcome of [CommitOutcome.None, 4, 0xffff_ffff]) {
      it(`an unknown outcome (${outcome}) marks the execution for recovery and returns OutcomeUnknown`, async () => {
        const core = await boot();
        const run = barrier.writing(core).finish(SessionEnding.Completed);
        const before = run.record;
        expect(result(core, run, outcome, run.revision + 1)).toBe(ResultCode.OutcomeUnknown);
        expect(core.effects()).toEqual([
          effect.RecoveryRequired(run.exec, RecoveryScope.Execution, ResultCode.OutcomeUnknown),
          effect.FailWaiters(run.exec, ResultCode.OutcomeUnknown),
        ]);
        // Recovery also drops the deferred terminal of the abandoned session;
        // the barrier answered, so it is no longer in flight.
        expect(run.record).toEqual({ ...before, waiters: 0, session: 0, inFlight: 0, flags: before.flags & ~ExecutionFlag.TerminalDeferred });
        expect(run.admission).toBe(AdmissionState.RecoveryRequired);
      });
    }

    for (const [name, delta] of [
      ["equal to", 0],
      ["below", -1],
    ] as const) {
      it(`Committed with a new revision ${name} the current one marks the execution for recovery (RevisionMustIncrease)`, async () => {
        const core = await boot();
        const run = barrier.writing(core).finish(SessionEnding.Completed);
        const before = run.record;
        expect(result(core, run, CommitOutcome.Committed, run.revision + delta)).toBe(ResultCode.RevisionMustIncrease);
        expect(core.effects()).toEqual([
          effect.RecoveryRequired(run.exec, RecoveryScope.Execution, ResultCode.RevisionMustIncrease),
          effect.FailWaiters(run.exec, ResultCode.RevisionMustIncrease),
        ]);
        // Recovery also drops the deferred terminal of the abandoned session;
        // the barrier answered, so it is no longer in flight.
        expect(run.record).toEqual({ ...before, waiters: 0, session: 0, inFlight: 0, flags: before.flags & ~ExecutionFlag.TerminalDeferred });
        expect(run.admission).toBe(AdmissionState.RecoveryRequired);
      });
    }

    it("judges no tool count and no in-flight limit: nothing starts", async () => {
      const core = await boot();
      const run = barrier.writing(core).finish(SessionEnding.Cancelled);
      expect(result(core, run, CommitOutcome.Committed, run.revision + 1, 0)).toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([effect.PostDeferredTerminal(run.exec, run.session)]);
      expect(run.record).toMatchObject({ revision: run.revision + 1, inFlight: 0 });
    });

    it("drops a result once nothing is in flight (InFlightUnderflow): a quiescent finish, or a second result", async () => {
      const core = await boot();
      const quiescent = core.terminalizing();
      core.expectDropped(
        barrier.kind,
        ResultCode.InFlightUnderflow,
        quiescent.exec,
        quiescent.generation,
        quiescent.session,
        quiescent.revision,
        CommitOutcome.Committed,
        quiescent.revision + 1,
        1,
      );
      const run = barrier.writing(core).finish(SessionEnding.Cancelled);
      core.step(barrier.kind, run.exec, run.generation, run.session, run.revision, CommitOutcome.StoreFailed, 0, 1);
      core.expectDropped(
        barrier.kind,
        ResultCode.InFlightUnderflow,
        run.exec,
        run.generation,
        run.session,
        run.revision,
        CommitOutcome.Committed,
        run.revision + 1,
        1,
      );
    });

    it("still drops a result of another revision or session first", async () => {
      const core = await boot();
      const run = barrier.writing(core).finish(SessionEnding.Cancelled);
      core.expectDropped(
        barrier.kind,
        ResultCode.RevisionMustMatch,
        run.exec,
        run.generation,
        run.session,
        run.revision + 1,
        CommitOutcome.Committed,
        run.revision + 2,
        1,
      );
      core.expectDropped(
        barrier.kind,
        ResultCode.SessionMustMatch,
        run.exec,
        run.generation,
        run.session + 1,
        run.revision,
        CommitOutcome.Committed,
        run.revision + 1,
        1,
      );
    });
  });
}
