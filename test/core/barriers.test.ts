// `ProviderDispatchReady` and `ToolDispatchReady`: the durable barrier
// written before a model call or tool batch answered (docs/core.md; seeds:
// apply_provider_dispatch_preparation_on_event_loop,
// apply_tool_dispatch_preparation_on_event_loop,
// authoritative_state_for_operation, mark_barrier_recovery_required).
// A result that no longer matches the live execution (slot tenant,
// revision, session, phase — in that order) is dropped. Otherwise:
// `Committed` starts the operation under the new revision;
// `RehydrationRequired` marks the execution for recovery; `StoreFailed`
// fails the session's setup; anything malformed returns its fact.

import { expect } from "vitest";
import {
  AdmissionState, CommitOutcome, ExecutionStatus, Limit, MessageKind, Phase, RecoveryScope, ResultCode, SessionEventKind,
  SetupFailure,
} from "../../assembly/abi.js";
import { describeDecisions, effect, type Driver, type Run } from "./driver.js";

const PROVIDER = MessageKind.ProviderDispatchReady;
const TOOL = MessageKind.ToolDispatchReady;

/** An execution in `CallingLlm` with `Limit.InFlightMax` operations in
 * flight and its provider barrier submitted: a full tool batch ran, its
 * results were recorded, and the next model call is due. */
function fullInFlightCallingModel(core: Driver): Run {
  return core.dispatchingTools()
    .commitToolBarrier(Limit.InFlightMax)
    .event(SessionEventKind.ToolsCompleted)
    .event(SessionEventKind.StateCompleted);
}

describeDecisions("ProviderDispatchReady(exec, gen, session, expectedRevision, outcome, newRevision)", ({ it, boot }) => {
  it("Committed: moves to the new revision, counts the model call in flight, starts it", async () => {
    const core = await boot();
    const run = core.installed();
    expect(core.apply(PROVIDER, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 5))
      .toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.StartProviderCall(run.exec, run.session)]);
    expect(run.record).toMatchObject({ revision: run.revision + 5, inFlight: 1, phase: Phase.CallingLlm, session: run.session });
    expect(run.admission).toBe(AdmissionState.Executing);
  });

  it("drops a result for an unknown or free execution slot (ExecutionSlotUnknown)", async () => {
    const core = await boot();
    const run = core.installed();
    core.expectDropped(PROVIDER, ResultCode.ExecutionSlotUnknown,
      run.exec + 1, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1);
  });

  it("drops a result for another generation of the slot (ExecutionGenerationMustMatch)", async () => {
    const core = await boot();
    const run = core.installed();
    core.expectDropped(PROVIDER, ResultCode.ExecutionGenerationMustMatch,
      run.exec, run.generation + 1, run.session, run.revision, CommitOutcome.Committed, run.revision + 1);
  });

  it("drops a result computed against another revision (RevisionMustMatch), before the session check", async () => {
    const core = await boot();
    const run = core.installed();
    core.expectDropped(PROVIDER, ResultCode.RevisionMustMatch,
      run.exec, run.generation, run.session + 1, run.revision - 1, CommitOutcome.Committed, run.revision + 1);
  });

  it("drops a duplicate of a result already applied (its revision moved on)", async () => {
    const core = await boot();
    const run = core.installed();
    const expected = run.revision;
    run.commitProviderBarrier();
    core.expectDropped(PROVIDER, ResultCode.RevisionMustMatch,
      run.exec, run.generation, run.session, expected, CommitOutcome.Committed, expected + 1);
  });

  it("drops a result of another session (SessionMustMatch), before the phase check", async () => {
    const core = await boot();
    const run = core.dispatchingTools();
    core.expectDropped(PROVIDER, ResultCode.SessionMustMatch,
      run.exec, run.generation, run.session + 1, run.revision, CommitOutcome.Committed, run.revision + 1);
  });

  it("drops a result naming session 0, which names no live session (SessionMustMatch)", async () => {
    const core = await boot();
    // Installed by recovery in calling_llm: the execution's session is 0 too.
    const run = core.recovered({ status: ExecutionStatus.Active, phase: Phase.CallingLlm });
    core.expectDropped(PROVIDER, ResultCode.SessionMustMatch,
      run.exec, run.generation, 0, run.revision, CommitOutcome.Committed, run.revision + 1);
  });

  it("drops a result when the execution is no longer calling the model (PhaseMustMatch)", async () => {
    const core = await boot();
    const run = core.dispatchingTools();
    core.expectDropped(PROVIDER, ResultCode.PhaseMustMatch,
      run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1);
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
    expect(core.apply(PROVIDER, run.exec, run.generation, run.session, run.revision, CommitOutcome.RehydrationRequired, 0))
      .toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([
      effect.RecoveryRequired(run.exec, RecoveryScope.Execution, ResultCode.RehydrationRequired),
      effect.FailWaiters(run.exec, ResultCode.RehydrationRequired),
    ]);
    expect(run.admission).toBe(AdmissionState.RecoveryRequired);
    // The record stays for inspection; only the waiters are gone.
    expect(run.record).toEqual({ ...before, waiters: 0 });
  });

  it("StoreFailed: fails the session's provider setup and changes nothing, returns Ok", async () => {
    const core = await boot();
    const run = core.installed();
    const before = core.snapshot();
    expect(core.apply(PROVIDER, run.exec, run.generation, run.session, run.revision, CommitOutcome.StoreFailed, 0))
      .toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.SetupFailed(run.exec, run.session, SetupFailure.Provider)]);
    expect(core.snapshot()).toEqual(before);
  });

  for (const outcome of [CommitOutcome.None, 4, 0xffff_ffff]) {
    it(`an unknown outcome (${outcome}) marks the execution for recovery and returns OutcomeUnknown`, async () => {
      const core = await boot();
      const run = core.installed();
      const before = run.record;
      expect(core.apply(PROVIDER, run.exec, run.generation, run.session, run.revision, outcome, run.revision + 1))
        .toBe(ResultCode.OutcomeUnknown);
      expect(core.effects()).toEqual([
        effect.RecoveryRequired(run.exec, RecoveryScope.Execution, ResultCode.OutcomeUnknown),
        effect.FailWaiters(run.exec, ResultCode.OutcomeUnknown),
      ]);
      expect(run.admission).toBe(AdmissionState.RecoveryRequired);
      expect(run.record).toEqual({ ...before, waiters: 0 });
    });
  }

  for (const [name, delta] of [["equal to", 0], ["below", -1]] as const) {
    it(`Committed with a new revision ${name} the current one marks the execution for recovery (RevisionMustIncrease)`, async () => {
      const core = await boot();
      const run = core.installed();
      const before = run.record;
      expect(core.apply(PROVIDER, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + delta))
        .toBe(ResultCode.RevisionMustIncrease);
      expect(core.effects()).toEqual([
        effect.RecoveryRequired(run.exec, RecoveryScope.Execution, ResultCode.RevisionMustIncrease),
        effect.FailWaiters(run.exec, ResultCode.RevisionMustIncrease),
      ]);
      expect(run.admission).toBe(AdmissionState.RecoveryRequired);
      expect(run.record).toEqual({ ...before, waiters: 0 });
    });
  }

  it("Committed with InFlightMax operations already in flight fails the setup and returns InFlightFull", async () => {
    const core = await boot();
    const run = fullInFlightCallingModel(core);
    const before = core.snapshot();
    expect(run.record).toMatchObject({ phase: Phase.CallingLlm, inFlight: Limit.InFlightMax });
    expect(core.apply(PROVIDER, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1))
      .toBe(ResultCode.InFlightFull);
    expect(core.effects()).toEqual([effect.SetupFailed(run.exec, run.session, SetupFailure.Provider)]);
    expect(core.snapshot()).toEqual(before);
  });

  it("checks the in-flight limit before the revision increase", async () => {
    const core = await boot();
    const run = fullInFlightCallingModel(core);
    expect(core.apply(PROVIDER, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision))
      .toBe(ResultCode.InFlightFull);
    expect(core.effects()).toEqual([effect.SetupFailed(run.exec, run.session, SetupFailure.Provider)]);
    expect(run.admission).toBe(AdmissionState.Executing);
  });
});

describeDecisions("ToolDispatchReady(exec, gen, session, expectedRevision, outcome, newRevision, toolCount)", ({ it, boot }) => {
  it("Committed: moves to the new revision, counts the batch in flight, starts it", async () => {
    const core = await boot();
    const run = core.dispatchingTools();
    expect(core.apply(TOOL, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1, 3))
      .toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.StartToolBatch(run.exec, run.session, 3)]);
    expect(run.record).toMatchObject({ revision: run.revision + 1, inFlight: 3, phase: Phase.DispatchingTools });
  });

  it("accepts a batch of exactly InFlightMax tools", async () => {
    const core = await boot();
    const run = core.dispatchingTools();
    expect(core.apply(TOOL, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1, Limit.InFlightMax))
      .toBe(ResultCode.Ok);
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
    core.expectDropped(TOOL, ResultCode.SessionMustMatch,
      run.exec, run.generation, 0, run.revision, CommitOutcome.Committed, run.revision + 1, 1);
  });

  it("drops a result when the execution is not dispatching tools (PhaseMustMatch)", async () => {
    const core = await boot();
    const run = core.modelAnswered();
    core.expectDropped(TOOL, ResultCode.PhaseMustMatch,
      run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1, 1);
  });

  it("RehydrationRequired: marks the execution for recovery, fails its waiters, returns Ok", async () => {
    const core = await boot();
    const run = core.dispatchingTools();
    const before = run.record;
    expect(core.apply(TOOL, run.exec, run.generation, run.session, run.revision, CommitOutcome.RehydrationRequired, 0, 0))
      .toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([
      effect.RecoveryRequired(run.exec, RecoveryScope.Execution, ResultCode.RehydrationRequired),
      effect.FailWaiters(run.exec, ResultCode.RehydrationRequired),
    ]);
    expect(run.admission).toBe(AdmissionState.RecoveryRequired);
    expect(run.record).toEqual({ ...before, waiters: 0 });
  });

  it("StoreFailed: fails the session's tool setup whatever the tool count, changes nothing, returns Ok", async () => {
    const core = await boot();
    const run = core.dispatchingTools();
    const before = core.snapshot();
    expect(core.apply(TOOL, run.exec, run.generation, run.session, run.revision, CommitOutcome.StoreFailed, 0, 0))
      .toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.SetupFailed(run.exec, run.session, SetupFailure.Tool)]);
    expect(core.snapshot()).toEqual(before);
  });

  it("an unknown outcome marks the execution for recovery and returns OutcomeUnknown", async () => {
    const core = await boot();
    const run = core.dispatchingTools();
    expect(core.apply(TOOL, run.exec, run.generation, run.session, run.revision, 9, run.revision + 1, 1))
      .toBe(ResultCode.OutcomeUnknown);
    expect(core.effects()).toEqual([
      effect.RecoveryRequired(run.exec, RecoveryScope.Execution, ResultCode.OutcomeUnknown),
      effect.FailWaiters(run.exec, ResultCode.OutcomeUnknown),
    ]);
    expect(run.admission).toBe(AdmissionState.RecoveryRequired);
  });

  for (const toolCount of [0, Limit.InFlightMax + 1, 0xffff_ffff]) {
    it(`Committed with toolCount ${toolCount} fails the tool setup and returns ArgumentOutOfRange`, async () => {
      const core = await boot();
      const run = core.dispatchingTools();
      const before = core.snapshot();
      expect(core.apply(TOOL, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1, toolCount))
        .toBe(ResultCode.ArgumentOutOfRange);
      expect(core.effects()).toEqual([effect.SetupFailed(run.exec, run.session, SetupFailure.Tool)]);
      expect(core.snapshot()).toEqual(before);
    });
  }

  it("Committed with a batch that would pass InFlightMax fails the setup and returns InFlightFull", async () => {
    const core = await boot();
    // The model call is still in flight when the tools are dispatched.
    const run = core.callingModel().event(SessionEventKind.LlmCompletedWithTools);
    const before = core.snapshot();
    expect(core.apply(TOOL, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1, Limit.InFlightMax))
      .toBe(ResultCode.InFlightFull);
    expect(core.effects()).toEqual([effect.SetupFailed(run.exec, run.session, SetupFailure.Tool)]);
    expect(core.snapshot()).toEqual(before);
  });

  it("checks the tool count, then the in-flight limit, then the revision increase", async () => {
    const core = await boot();
    const run = core.callingModel().event(SessionEventKind.LlmCompletedWithTools);
    const { exec, generation, session, revision } = run;
    expect(core.apply(TOOL, exec, generation, session, revision, CommitOutcome.Committed, revision, 0)).toBe(ResultCode.ArgumentOutOfRange);
    expect(core.apply(TOOL, exec, generation, session, revision, CommitOutcome.Committed, revision, Limit.InFlightMax)).toBe(ResultCode.InFlightFull);
    expect(run.admission).toBe(AdmissionState.Executing);
    expect(core.apply(TOOL, exec, generation, session, revision, CommitOutcome.Committed, revision, 1)).toBe(ResultCode.RevisionMustIncrease);
    expect(core.effects()).toEqual([
      effect.RecoveryRequired(exec, RecoveryScope.Execution, ResultCode.RevisionMustIncrease),
      effect.FailWaiters(exec, ResultCode.RevisionMustIncrease),
    ]);
    expect(run.admission).toBe(AdmissionState.RecoveryRequired);
    expect(run.record).toMatchObject({ revision, inFlight: 1 });
  });
});
