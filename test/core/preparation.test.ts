// `InitialPreparationReady(agent, agentGen, token, outcome, revision, flags,
// request)`: the offloaded *prepare* answered (docs/core.md; seeds:
// apply_initial_preparation_on_event_loop, register_initial_session_on_event_loop,
// deliver_start_failure_on_event_loop). A result for an admission that is
// gone or was re-admitted is dropped; otherwise every outcome is decided:
// `Active` installs the execution with its first session and the start's
// waiter; `NotEstablished` / `Terminal` release the admission; the
// outcomes that leave the durable state unknown keep the admission as
// `RecoveryRequired`; a malformed result (unknown outcome, flags the host
// may not set) keeps it too and returns its fact.

import { expect } from "vitest";
import { AdmissionState, ExecutionFlag, ExecutionStatus, MessageKind, Phase, PreparationOutcome, RecoveryScope, ResultCode } from "../../assembly/abi.js";
import { describeDecisions, effect, PREPARED_REVISION } from "./driver.js";

const READY = MessageKind.InitialPreparationReady;

describeDecisions("InitialPreparationReady drops a stale result", ({ it, boot }) => {
  it("drops a result for an unknown agent slot (AgentSlotUnknown)", async () => {
    const core = await boot();
    const admission = core.admitted();
    core.expectDropped(
      READY,
      ResultCode.AgentSlotUnknown,
      admission.agent + 1,
      admission.agentGeneration,
      admission.token,
      PreparationOutcome.Active,
      10,
      0,
      admission.request,
    );
  });

  it("drops a result for another generation of the agent slot (AgentGenerationMustMatch)", async () => {
    const core = await boot();
    const admission = core.admitted();
    core.expectDropped(
      READY,
      ResultCode.AgentGenerationMustMatch,
      admission.agent,
      admission.agentGeneration + 1,
      admission.token,
      PreparationOutcome.Active,
      10,
      0,
      admission.request,
    );
  });

  it("drops a result for an agent that is not admitting (AdmissionStateMustMatch)", async () => {
    const core = await boot();
    const { agent, agentGeneration } = core.registerAgent();
    core.expectDropped(READY, ResultCode.AdmissionStateMustMatch, agent, agentGeneration, 1, PreparationOutcome.Active, 10, 0, core.request());
  });

  it("drops a duplicate result once the execution is installed (AdmissionStateMustMatch)", async () => {
    const core = await boot();
    const run = core.installed();
    core.expectDropped(
      READY,
      ResultCode.AdmissionStateMustMatch,
      run.agent,
      run.agentGeneration,
      1,
      PreparationOutcome.Active,
      PREPARED_REVISION,
      0,
      run.request,
    );
  });

  it("drops a result carrying another owner token (OwnerTokenMustMatch)", async () => {
    const core = await boot();
    const admission = core.admitted();
    core.expectDropped(
      READY,
      ResultCode.OwnerTokenMustMatch,
      admission.agent,
      admission.agentGeneration,
      admission.token + 1,
      PreparationOutcome.Active,
      10,
      0,
      admission.request,
    );
  });

  it("drops a result of an earlier admission of the same agent (its token is no longer the owner)", async () => {
    const core = await boot();
    const first = core.admitted();
    core.step(READY, first.agent, first.agentGeneration, first.token, PreparationOutcome.NotEstablished, 0, 0, first.request);
    const second = core.admitted(first);
    core.expectDropped(READY, ResultCode.OwnerTokenMustMatch, first.agent, first.agentGeneration, first.token, PreparationOutcome.Active, 10, 0, first.request);
    expect(core.agentRecord(second.agent)).toMatchObject({ admissionState: AdmissionState.Admitting, ownerToken: second.token });
  });

  it("checks the admission state before the token, and the malformed outcome only after both", async () => {
    const core = await boot();
    const { agent, agentGeneration } = core.registerAgent();
    core.expectDropped(READY, ResultCode.AdmissionStateMustMatch, agent, agentGeneration, 99, 0, 0, 0xff, core.request());
    const admission = core.admitted({ agent, agentGeneration });
    core.expectDropped(READY, ResultCode.OwnerTokenMustMatch, agent, agentGeneration, admission.token + 1, 0, 0, 0xff, core.request());
  });
});

describeDecisions("InitialPreparationReady Active", ({ it, boot }) => {
  it("installs the execution, binds the admission, registers the start's waiter and submits the provider barrier", async () => {
    const core = await boot();
    const admission = core.admitted();
    expect(core.apply(READY, admission.agent, admission.agentGeneration, admission.token, PreparationOutcome.Active, 42, 0, admission.request)).toBe(
      ResultCode.Ok,
    );
    expect(core.effects()).toEqual([
      effect.ExecutionInstalled(0, 1, admission.request),
      effect.RegisterWaiter(0, admission.request),
      effect.StartSession(0, 1),
      effect.SubmitProviderBarrier(0, 1, 42),
    ]);
    expect(core.executionRecord(0)).toEqual({
      // The provider barrier being written is in flight.
      slot: 0,
      agentSlotPlusOne: admission.agent + 1,
      revision: 42,
      session: 1,
      generation: 1,
      waiters: 1,
      inFlight: 1,
      status: ExecutionStatus.Active,
      phase: Phase.CallingLlm,
      flags: 0,
    });
    expect(core.agentRecord(admission.agent)).toMatchObject({
      admissionState: AdmissionState.Executing,
      executionSlotPlusOne: 1,
    });
    expect(core.snapshot()).toMatchObject({ admittingAgents: 0, liveExecutions: 1, nextSession: 2 });
  });

  it("gives every installed execution a new session", async () => {
    const core = await boot();
    const first = core.installed();
    const second = core.installed();
    expect([first.session, second.session]).toEqual([1, 2]);
    expect([first.exec, second.exec]).toEqual([0, 1]);
  });
});

describeDecisions("InitialPreparationReady ends the start", ({ it, boot }) => {
  for (const outcome of [PreparationOutcome.NotEstablished, PreparationOutcome.Terminal]) {
    it(`releases the admission and delivers the start failure for outcome ${outcome} (${outcome === PreparationOutcome.Terminal ? "Terminal" : "NotEstablished"})`, async () => {
      const core = await boot();
      const admission = core.admitted();
      expect(core.apply(READY, admission.agent, admission.agentGeneration, admission.token, outcome, 10, 0, admission.request)).toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([effect.DeliverStartFailure(admission.request, outcome)]);
      expect(core.agentRecord(admission.agent)).toMatchObject({
        admissionState: AdmissionState.None,
        ownerToken: 0,
        executionSlotPlusOne: 0,
      });
      expect(core.snapshot()).toMatchObject({ admittingAgents: 0, liveExecutions: 0, executions: [] });
      // The agent is free to start again.
      core.admitted(admission);
    });
  }

  const keeps = [
    [PreparationOutcome.OutcomeUnknown, "OutcomeUnknown", ResultCode.RehydrationRequired],
    [PreparationOutcome.RecoveryRequired, "RecoveryRequired", ResultCode.RehydrationRequired],
    [PreparationOutcome.StoreFailed, "StoreFailed", ResultCode.StoreFailed],
  ] as const;
  for (const [outcome, name, code] of keeps) {
    it(`keeps the admission as RecoveryRequired (code ${code}) and delivers the start failure for outcome ${name}, returning Ok`, async () => {
      const core = await boot();
      const admission = core.admitted();
      expect(core.apply(READY, admission.agent, admission.agentGeneration, admission.token, outcome, 10, 0, admission.request)).toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([
        effect.RecoveryRequired(admission.agent, RecoveryScope.Agent, code),
        effect.DeliverStartFailure(admission.request, outcome),
      ]);
      expect(core.agentRecord(admission.agent).admissionState).toBe(AdmissionState.RecoveryRequired);
      expect(core.snapshot()).toMatchObject({ admittingAgents: 0, liveExecutions: 0, executions: [] });
    });
  }
});

describeDecisions("InitialPreparationReady malformed", ({ it, boot }) => {
  for (const outcome of [PreparationOutcome.None, 7, 0xffff_ffff]) {
    it(`keeps the admission for recovery and fails the start with OutcomeUnknown for outcome ${outcome}`, async () => {
      const core = await boot();
      const admission = core.admitted();
      expect(core.apply(READY, admission.agent, admission.agentGeneration, admission.token, outcome, 10, 0, admission.request)).toBe(ResultCode.OutcomeUnknown);
      expect(core.effects()).toEqual([
        effect.RecoveryRequired(admission.agent, RecoveryScope.Agent, ResultCode.OutcomeUnknown),
        effect.FailRequest(admission.request, ResultCode.OutcomeUnknown),
      ]);
      expect(core.agentRecord(admission.agent).admissionState).toBe(AdmissionState.RecoveryRequired);
      expect(core.snapshot()).toMatchObject({ admittingAgents: 0, liveExecutions: 0, executions: [] });
    });
  }

  for (const [value, name] of [
    [ExecutionFlag.CancelRequested, "CancelRequested"],
    [ExecutionFlag.TerminalDeferred, "TerminalDeferred"],
    [4, "retired bit 4 (was Reservation)"],
    [8, "retired bit 8 (was FrameworkCallsPending)"],
    [ExecutionFlag.ApprovalGranted, "ApprovalGranted"],
    [0xffff_ffff, "every bit"],
  ] as const) {
    it(`ignores the retired sixth argument (was flags; decision 0022) holding ${name}: installs with no flag`, async () => {
      const core = await boot();
      const admission = core.admitted();
      expect(core.apply(READY, admission.agent, admission.agentGeneration, admission.token, PreparationOutcome.Active, 10, value, admission.request)).toBe(
        ResultCode.Ok,
      );
      expect(core.effects()[0]).toEqual(effect.ExecutionInstalled(0, 1, admission.request));
      expect(core.executionRecord(0).flags).toBe(0);
    });
  }

  it("ignores the retired sixth argument on a NotEstablished result too: the admission is released", async () => {
    const core = await boot();
    const admission = core.admitted();
    expect(
      core.apply(
        READY,
        admission.agent,
        admission.agentGeneration,
        admission.token,
        PreparationOutcome.NotEstablished,
        10,
        ExecutionFlag.CancelRequested,
        admission.request,
      ),
    ).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.DeliverStartFailure(admission.request, PreparationOutcome.NotEstablished)]);
    expect(core.agentRecord(admission.agent).admissionState).toBe(AdmissionState.None);
  });

  it("leaves the agent unpurgeable and unstartable until recovery", async () => {
    const core = await boot();
    const admission = core.admitted();
    core.apply(READY, admission.agent, admission.agentGeneration, admission.token, 0, 10, 0, admission.request);
    expect(core.apply(MessageKind.PurgeAgent, admission.agent, admission.agentGeneration)).toBe(ResultCode.AgentAdmissionHeld);
    const request = core.request();
    expect(core.apply(MessageKind.Start, admission.agent, admission.agentGeneration, request, 0)).toBe(ResultCode.AgentAlreadyAdmitted);
  });
});
