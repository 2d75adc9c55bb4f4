// Discharging an execution that waits for recovery (docs/core.md:
// DischargeRecovery). An execution whose admission became
// `recovery_required` keeps its slot for inspection; once the operations of
// its abandoned session settled, the host releases it and installs it again
// from its durable row with `RecoveryInstall`. The message is
// administrative: a refusal returns its code, emits nothing and changes
// nothing, and draining does not refuse it.

import { expect } from "vitest";
import { AdmissionState, CommitOutcome, Continuation, ExecutionStatus, MessageKind, Phase, ResultCode, SessionEventKind } from "../../assembly/abi.js";
import { describeDecisions, effect, type Driver, type Run } from "./driver.js";

const DISCHARGE = MessageKind.DischargeRecovery;

/** A durable active execution reinstalled in phase `CallingLlm`, then
 * refused an invalid continuation (`FrameworkTools` does not fit
 * `CallingLlm`): admission `RecoveryRequired`, session 0, nothing in
 * flight, no waiters. */
function recoveryRequired(core: Driver): Run {
  const run = core.recovered({ status: ExecutionStatus.Active, phase: Phase.CallingLlm });
  expect(core.apply(MessageKind.ContinueRecovered, run.exec, run.generation, run.revision, Continuation.FrameworkTools, 0, core.request())).toBe(
    ResultCode.ContinuationInvalid,
  );
  expect(run.admission).toBe(AdmissionState.RecoveryRequired);
  expect(run.record).toMatchObject({ session: 0, inFlight: 0, waiters: 0 });
  return run;
}

/** A live session marked for recovery while its model call was still in
 * flight: the tool barrier lost its compare-and-set (one operation, the
 * model call, still in flight). */
function recoveryRequiredInFlight(core: Driver): Run {
  const run = core.callingModel().event(SessionEventKind.LlmCompletedWithTools);
  core.step(MessageKind.ToolDispatchReady, run.exec, run.generation, run.session, run.revision, CommitOutcome.RehydrationRequired, 0, 0);
  expect(run.admission).toBe(AdmissionState.RecoveryRequired);
  expect(run.record).toMatchObject({ session: 0, inFlight: 1 });
  return run;
}

/** An administrative refusal: the code, no effect, no table changed. */
function expectRefusedQuietly(core: Driver, code: ResultCode, exec: number, generation: number): void {
  const before = core.snapshot();
  expect(core.apply(DISCHARGE, exec, generation)).toBe(code);
  expect(core.effects()).toEqual([]);
  expect(core.snapshot()).toEqual(before);
}

describeDecisions("DischargeRecovery(exec, gen): accepted", ({ it, boot }) => {
  it("releases the execution: admission None, slot freed, ReleaseExecution with the generation it had", async () => {
    const core = await boot();
    const run = recoveryRequired(core);
    expect(core.apply(DISCHARGE, run.exec, run.generation)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.ReleaseExecution(run.exec, run.generation)]);
    expect(run.record).toEqual({
      slot: run.exec,
      agentSlotPlusOne: 0,
      revision: 0,
      session: 0,
      generation: run.generation + 1,
      waiters: 0,
      inFlight: 0,
      status: ExecutionStatus.None,
      phase: Phase.None,
      flags: 0,
    });
    expect(run.agentRecord).toMatchObject({ admissionState: AdmissionState.None, executionSlotPlusOne: 0, ownerToken: 0 });
    expect(core.snapshot()).toMatchObject({ liveExecutions: 0, admittingAgents: 0 });
  });

  it("releases a suspended execution whose durable row is at a later revision (decided at another process)", async () => {
    const core = await boot();
    const run = core.suspended();
    const revision = run.record.revision;
    expect(core.apply(DISCHARGE, run.exec, run.generation, revision + 1)).toBe(ResultCode.Ok);
    expect(core.effects().at(-1)).toEqual(effect.ReleaseExecution(run.exec, run.generation));
    expect(run.agentRecord).toMatchObject({ admissionState: AdmissionState.None, executionSlotPlusOne: 0 });
  });

  it("lets the agent admit a RecoveryInstall of the durable row again, in the freed slot's next generation", async () => {
    const core = await boot();
    const run = recoveryRequired(core);
    const refused = core.request();
    core.expectRefused(
      ResultCode.AgentAlreadyAdmitted,
      refused,
      MessageKind.RecoveryInstall,
      run.agent,
      run.agentGeneration,
      run.revision,
      ExecutionStatus.Active,
      Phase.CallingLlm,
      0,
      refused,
    );
    core.step(DISCHARGE, run.exec, run.generation);
    const request = core.request();
    expect(core.apply(MessageKind.RecoveryInstall, run.agent, run.agentGeneration, run.revision, ExecutionStatus.Active, Phase.CallingLlm, 0, request)).toBe(
      ResultCode.Ok,
    );
    expect(core.effects()).toEqual([effect.ExecutionInstalled(run.exec, run.generation + 1, request)]);
    expect(run.agentRecord).toMatchObject({ admissionState: AdmissionState.Executing, executionSlotPlusOne: run.exec + 1 });
    // The reinstalled execution continues as recovery meant it to.
    expect(core.apply(MessageKind.ContinueRecovered, run.exec, run.generation + 1, run.revision, Continuation.RecallModel, 0, core.request())).toBe(
      ResultCode.Ok,
    );
  });

  it("releases a session marked for recovery once its abandoned operations settled", async () => {
    const core = await boot();
    const run = recoveryRequiredInFlight(core);
    expectRefusedQuietly(core, ResultCode.NotQuiescent, run.exec, run.generation);
    core.step(MessageKind.OperationSettled, run.exec, run.generation);
    expect(core.apply(DISCHARGE, run.exec, run.generation)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.ReleaseExecution(run.exec, run.generation)]);
    expect(run.agentRecord.admissionState).toBe(AdmissionState.None);
  });

  it("fails the observers attached after recovery was required (RehydrationRequired) before releasing", async () => {
    const core = await boot();
    const run = recoveryRequired(core);
    run.attachWaiter();
    run.attachWaiter();
    expect(run.record.waiters).toBe(2);
    expect(core.apply(DISCHARGE, run.exec, run.generation)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.FailWaiters(run.exec, ResultCode.RehydrationRequired), effect.ReleaseExecution(run.exec, run.generation)]);
    expect(run.record).toMatchObject({ agentSlotPlusOne: 0, waiters: 0 });
  });

  it("is accepted while draining (it admits nothing), though the reinstall waits for the drain to end", async () => {
    const core = await boot();
    const run = recoveryRequired(core);
    core.step(MessageKind.SetDraining, 1);
    expect(core.apply(DISCHARGE, run.exec, run.generation)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.ReleaseExecution(run.exec, run.generation)]);
    const request = core.request();
    core.expectRefused(
      ResultCode.RuntimeDraining,
      request,
      MessageKind.RecoveryInstall,
      run.agent,
      run.agentGeneration,
      run.revision,
      ExecutionStatus.Active,
      Phase.CallingLlm,
      0,
      request,
    );
  });
});

describeDecisions("DischargeRecovery(exec, gen): refused, emitting nothing", ({ it, boot }) => {
  it("refuses an unknown slot or another generation with the exec check's code", async () => {
    const core = await boot();
    const run = recoveryRequired(core);
    expectRefusedQuietly(core, ResultCode.ExecutionSlotUnknown, run.exec + 1, run.generation);
    expectRefusedQuietly(core, ResultCode.ExecutionSlotUnknown, 0xffff_ffff, run.generation);
    expectRefusedQuietly(core, ResultCode.ExecutionGenerationMustMatch, run.exec, run.generation + 1);
  });

  it("refuses a duplicate: the freed slot is unknown, and once reused its generation differs", async () => {
    const core = await boot();
    const run = recoveryRequired(core);
    core.step(DISCHARGE, run.exec, run.generation);
    expectRefusedQuietly(core, ResultCode.ExecutionSlotUnknown, run.exec, run.generation);
    core.recovered({ status: ExecutionStatus.Active, phase: Phase.CallingLlm, handle: run });
    expectRefusedQuietly(core, ResultCode.ExecutionGenerationMustMatch, run.exec, run.generation);
  });

  for (const [name, walk, admission] of [
    ["executing with a live session", (core: Driver) => core.modelAnswered(), AdmissionState.Executing],
    [
      "installed by recovery, not yet continued",
      (core: Driver) => core.recovered({ status: ExecutionStatus.Active, phase: Phase.CallingLlm }),
      AdmissionState.Executing,
    ],
    ["suspended", (core: Driver) => core.suspended(), AdmissionState.Suspended],
    ["resuming", (core: Driver) => core.resuming(), AdmissionState.Resuming],
    ["terminalizing", (core: Driver) => core.terminalizing(), AdmissionState.Terminalizing],
  ] as const) {
    it(`refuses an execution ${name} (admission ${admission}) with AdmissionStateMustMatch`, async () => {
      const core = await boot();
      const run = walk(core);
      expect(run.admission).toBe(admission);
      expectRefusedQuietly(core, ResultCode.AdmissionStateMustMatch, run.exec, run.generation);
    });
  }

  it("refuses a suspended execution whose durable row is at its own revision (or none was read)", async () => {
    const core = await boot();
    const run = core.suspended();
    const before = core.snapshot();
    expect(core.apply(DISCHARGE, run.exec, run.generation, run.record.revision)).toBe(ResultCode.AdmissionStateMustMatch);
    expect(core.effects()).toEqual([]);
    expect(core.snapshot()).toEqual(before);
  });

  it("judges the admission before quiescence: an executing execution with work in flight is AdmissionStateMustMatch", async () => {
    const core = await boot();
    const run = core.callingModel();
    expect(run.record.inFlight).toBe(1);
    expectRefusedQuietly(core, ResultCode.AdmissionStateMustMatch, run.exec, run.generation);
  });

  it("refuses NotQuiescent while an operation of the abandoned session is in flight", async () => {
    const core = await boot();
    const run = recoveryRequiredInFlight(core);
    expectRefusedQuietly(core, ResultCode.NotQuiescent, run.exec, run.generation);
    // Draining changes nothing about the refusal.
    core.step(MessageKind.SetDraining, 1);
    expectRefusedQuietly(core, ResultCode.NotQuiescent, run.exec, run.generation);
  });
});

describeDecisions("executionHeldForRecovery(exec): the hold the host asks about, not copies", ({ it, boot }) => {
  it("is true from the moment recovery is required until the discharge releases the execution", async () => {
    const core = await boot();
    const run = core.callingModel().event(SessionEventKind.LlmCompletedWithTools);
    expect(core.machine.executionHeldForRecovery(run.exec)).toBe(false);
    core.step(MessageKind.ToolDispatchReady, run.exec, run.generation, run.session, run.revision, CommitOutcome.RehydrationRequired, 0, 0);
    expect(core.machine.executionHeldForRecovery(run.exec)).toBe(true);
    core.step(MessageKind.OperationSettled, run.exec, run.generation);
    expect(core.machine.executionHeldForRecovery(run.exec)).toBe(true);
    expect(core.apply(DISCHARGE, run.exec, run.generation)).toBe(ResultCode.Ok);
    expect(core.machine.executionHeldForRecovery(run.exec)).toBe(false);
  });

  it("is false for a free slot, a slot never used and one out of range", async () => {
    const core = await boot();
    expect(core.machine.executionHeldForRecovery(0)).toBe(false);
    expect(core.machine.executionHeldForRecovery(0xffff_ffff)).toBe(false);
    const run = recoveryRequired(core);
    expect(core.machine.executionHeldForRecovery(run.exec)).toBe(true);
    expect(core.machine.executionHeldForRecovery(run.exec + 1)).toBe(false);
  });
});
