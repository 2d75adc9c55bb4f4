// `Start(agent, agentGen, request, cancelled)`: admission of a new execution
// (docs/core.md; seeds: begin_start_on_event_loop). One admission per agent;
// an admitted start mints the owner token, reserves an execution slot and
// asks the offload to prepare. Every refusal settles the request with
// `FailRequest(request, code)` and changes nothing, and the checks run in
// the contract's order: draining, agent, cancelled, lifecycle, admission,
// capacity.

import { expect } from "vitest";
import { AdmissionState, MessageKind, OutcomeType, PreparationOutcome, ResultCode } from "../../assembly/abi.js";
import { describeDecisions, effect } from "./driver.js";

describeDecisions("Start admits", ({ it, boot }) => {
  it("admits an open agent: Admitting with a fresh owner token, one reservation, SubmitPrepare", async () => {
    const core = await boot();
    const { agent, agentGeneration } = core.registerAgent();
    const request = core.request();
    expect(core.apply(MessageKind.Start, agent, agentGeneration, request, 0)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.SubmitPrepare(agent, 1, request)]);
    expect(core.agentRecord(agent)).toMatchObject({
      admissionState: AdmissionState.Admitting,
      ownerToken: 1,
      executionSlotPlusOne: 0,
    });
    expect(core.snapshot()).toMatchObject({ admittingAgents: 1, liveExecutions: 0, nextOwnerToken: 2, executions: [] });
  });

  it("mints a new owner token for every admission", async () => {
    const core = await boot();
    const first = core.admitted();
    const second = core.admitted();
    expect([first.token, second.token]).toEqual([1, 2]);
    expect(core.snapshot()).toMatchObject({ admittingAgents: 2, nextOwnerToken: 3 });
  });

  it("admits the same agent again once its previous execution ended", async () => {
    const core = await boot();
    const run = core.terminalizing();
    run.commitTerminal(OutcomeType.Completed);
    const request = core.request();
    expect(core.apply(MessageKind.Start, run.agent, run.agentGeneration, request, 0)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.SubmitPrepare(run.agent, 2, request)]);
  });
});

describeDecisions("Start refuses", ({ it, boot }) => {
  it("refuses with RuntimeDraining while draining, before any other check", async () => {
    const core = await boot();
    core.step(MessageKind.SetDraining, 1);
    const request = core.request();
    // Even a start naming no agent and a bad cancel flag is refused as draining.
    core.expectRefused(ResultCode.RuntimeDraining, request, MessageKind.Start, 3, 9, request, 7);
  });

  it("refuses an unknown agent slot with AgentSlotUnknown", async () => {
    const core = await boot();
    core.registerAgent();
    const request = core.request();
    core.expectRefused(ResultCode.AgentSlotUnknown, request, MessageKind.Start, 1, 1, request, 0);
  });

  it("refuses a purged agent with AgentSlotUnknown", async () => {
    const core = await boot();
    const { agent, agentGeneration } = core.registerAgent();
    core.step(MessageKind.PurgeAgent, agent, agentGeneration);
    const request = core.request();
    core.expectRefused(ResultCode.AgentSlotUnknown, request, MessageKind.Start, agent, agentGeneration + 1, request, 0);
  });

  it("refuses another generation of the agent slot with AgentGenerationMustMatch", async () => {
    const core = await boot();
    const { agent, agentGeneration } = core.registerAgent();
    const request = core.request();
    core.expectRefused(ResultCode.AgentGenerationMustMatch, request, MessageKind.Start, agent, agentGeneration + 1, request, 0);
  });

  it("checks the agent before the cancel flag", async () => {
    const core = await boot();
    const request = core.request();
    core.expectRefused(ResultCode.AgentSlotUnknown, request, MessageKind.Start, 0, 1, request, 1);
  });

  it("refuses cancelled outside {0, 1} with ArgumentOutOfRange, before StartCancelled and AgentClosed", async () => {
    const core = await boot();
    const { agent, agentGeneration } = core.registerAgent(1);
    const request = core.request();
    core.expectRefused(ResultCode.ArgumentOutOfRange, request, MessageKind.Start, agent, agentGeneration, request, 2);
    core.expectRefused(ResultCode.ArgumentOutOfRange, request, MessageKind.Start, agent, agentGeneration, request, 0xffff_ffff);
  });

  it("refuses a start cancelled before admission with StartCancelled, before AgentClosed", async () => {
    const core = await boot();
    const { agent, agentGeneration } = core.registerAgent(1);
    const request = core.request();
    core.expectRefused(ResultCode.StartCancelled, request, MessageKind.Start, agent, agentGeneration, request, 1);
  });

  it("refuses a closed agent with AgentClosed", async () => {
    const core = await boot();
    const { agent, agentGeneration } = core.registerAgent(1);
    const request = core.request();
    core.expectRefused(ResultCode.AgentClosed, request, MessageKind.Start, agent, agentGeneration, request, 0);
  });

  it("refuses an agent closed after registration with AgentClosed, before AgentAlreadyAdmitted", async () => {
    const core = await boot();
    const run = core.callingModel();
    core.step(MessageKind.CloseAgent, run.agent, run.agentGeneration);
    const request = core.request();
    core.expectRefused(ResultCode.AgentClosed, request, MessageKind.Start, run.agent, run.agentGeneration, request, 0);
  });

  it("refuses a second start of an agent with AgentAlreadyAdmitted, in every held admission state", async () => {
    const core = await boot();
    const admitting = core.admitted();
    const executing = core.callingModel();
    const suspended = core.suspended();
    const terminalizing = core.terminalizing();
    for (const held of [admitting, executing, suspended, terminalizing]) {
      const request = core.request();
      core.expectRefused(ResultCode.AgentAlreadyAdmitted, request, MessageKind.Start, held.agent, held.agentGeneration, request, 0);
    }
  });

  it("refuses an agent whose admission is RecoveryRequired with AgentAlreadyAdmitted", async () => {
    const core = await boot();
    const admission = core.admitted();
    core.step(
      MessageKind.InitialPreparationReady,
      admission.agent,
      admission.agentGeneration,
      admission.token,
      PreparationOutcome.OutcomeUnknown,
      10,
      0,
      admission.request,
    );
    expect(core.agentRecord(admission.agent).admissionState).toBe(AdmissionState.RecoveryRequired);
    const request = core.request();
    core.expectRefused(ResultCode.AgentAlreadyAdmitted, request, MessageKind.Start, admission.agent, admission.agentGeneration, request, 0);
  });

  it("refuses with ExecutionsFull when live executions and reservations fill the table, after the admission check", async () => {
    const core = await boot({ agentsMax: 4, executionsMax: 2 });
    core.callingModel();
    const admission = core.admitted();
    const idle = core.registerAgent();
    const request = core.request();
    core.expectRefused(ResultCode.ExecutionsFull, request, MessageKind.Start, idle.agent, idle.agentGeneration, request, 0);
    // A start that is also a duplicate is refused as the duplicate.
    core.expectRefused(ResultCode.AgentAlreadyAdmitted, request, MessageKind.Start, admission.agent, admission.agentGeneration, request, 0);
  });
});
