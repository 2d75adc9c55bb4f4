// The agent table's own messages (docs/core.md: RegisterAgent, CloseAgent,
// PurgeAgent, SetDraining): interning an agent in a slot, closing it,
// purging it (refused while it holds an admission), LIFO slot reuse with a
// generation that refuses the previous tenant, and the draining switch.
// These refusals return their code and emit nothing: they are neither a
// request (no request handle) nor a dropped result.

import { expect } from "vitest";
import { AdmissionState, AgentLifecycle, EffectKind, MessageKind, OutcomeType, ResultCode, SessionEnding } from "../../assembly/abi.js";
import { describeDecisions, effect } from "./driver.js";

describeDecisions("RegisterAgent(closed)", ({ it, boot }) => {
  it("interns an open agent in the first never-used slot at generation 1", async () => {
    const core = await boot();
    expect(core.apply(MessageKind.RegisterAgent, 0)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.AgentRegistered(0, 1)]);
    expect(core.agentRecord(0)).toEqual({
      slot: 0,
      ownerToken: 0,
      executionSlotPlusOne: 0,
      generation: 1,
      admissionState: AdmissionState.None,
      lifecycle: AgentLifecycle.Open,
    });
  });

  it("interns a closed agent when closed = 1", async () => {
    const core = await boot();
    core.registerAgent();
    expect(core.apply(MessageKind.RegisterAgent, 1)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.AgentRegistered(1, 1)]);
    expect(core.agentRecord(1)).toMatchObject({ lifecycle: AgentLifecycle.Closed, admissionState: AdmissionState.None });
  });

  it("refuses closed outside {0, 1} with ArgumentOutOfRange and allocates nothing", async () => {
    const core = await boot();
    const before = core.snapshot();
    for (const closed of [2, 255, 0xffff_ffff]) {
      expect(core.apply(MessageKind.RegisterAgent, closed)).toBe(ResultCode.ArgumentOutOfRange);
      expect(core.effects()).toEqual([]);
    }
    expect(core.snapshot()).toEqual(before);
  });

  it("is accepted while the runtime drains (it is not an admission)", async () => {
    const core = await boot();
    core.apply(MessageKind.SetDraining, 1);
    expect(core.apply(MessageKind.RegisterAgent, 0)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.AgentRegistered(0, 1)]);
  });
});

describeDecisions("CloseAgent(agent, agentGen)", ({ it, boot }) => {
  it("closes the agent and wakes the starts told to wait (a closed agent's are refused in any phase)", async () => {
    const core = await boot();
    const { agent, agentGeneration } = core.registerAgent();
    expect(core.apply(MessageKind.CloseAgent, agent, agentGeneration)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([{ kind: EffectKind.ReadinessChanged, agent }]);
    expect(core.agentRecord(agent)).toMatchObject({ lifecycle: AgentLifecycle.Closed, generation: agentGeneration });
  });

  it("closes an agent that holds an admission and keeps the admission", async () => {
    const core = await boot();
    const run = core.callingModel();
    expect(core.apply(MessageKind.CloseAgent, run.agent, run.agentGeneration)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([{ kind: EffectKind.ReadinessChanged, agent: run.agent }]);
    expect(run.agentRecord).toMatchObject({
      lifecycle: AgentLifecycle.Closed,
      admissionState: AdmissionState.Executing,
      executionSlotPlusOne: run.exec + 1,
    });
  });

  it("refuses a slot never used with AgentSlotUnknown", async () => {
    const core = await boot();
    core.registerAgent();
    const before = core.snapshot();
    expect(core.apply(MessageKind.CloseAgent, 1, 1)).toBe(ResultCode.AgentSlotUnknown);
    expect(core.effects()).toEqual([]);
    expect(core.snapshot()).toEqual(before);
  });

  it("refuses a free (purged) slot with AgentSlotUnknown", async () => {
    const core = await boot();
    const { agent, agentGeneration } = core.registerAgent();
    core.step(MessageKind.PurgeAgent, agent, agentGeneration);
    const before = core.snapshot();
    expect(core.apply(MessageKind.CloseAgent, agent, agentGeneration + 1)).toBe(ResultCode.AgentSlotUnknown);
    expect(core.effects()).toEqual([]);
    expect(core.snapshot()).toEqual(before);
  });

  it("refuses another generation of the slot with AgentGenerationMustMatch", async () => {
    const core = await boot();
    const { agent, agentGeneration } = core.registerAgent();
    const before = core.snapshot();
    expect(core.apply(MessageKind.CloseAgent, agent, agentGeneration + 1)).toBe(ResultCode.AgentGenerationMustMatch);
    expect(core.effects()).toEqual([]);
    expect(core.snapshot()).toEqual(before);
  });
});

describeDecisions("PurgeAgent(agent, agentGen)", ({ it, boot }) => {
  it("frees the slot: lifecycle Free, generation incremented, no effects", async () => {
    const core = await boot();
    const { agent, agentGeneration } = core.registerAgent();
    expect(core.apply(MessageKind.PurgeAgent, agent, agentGeneration)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([]);
    expect(core.agentRecord(agent)).toEqual({
      slot: agent,
      ownerToken: 0,
      executionSlotPlusOne: 0,
      generation: agentGeneration + 1,
      admissionState: AdmissionState.None,
      lifecycle: AgentLifecycle.Free,
    });
  });

  it("purges a closed agent", async () => {
    const core = await boot();
    const { agent, agentGeneration } = core.registerAgent(1);
    expect(core.apply(MessageKind.PurgeAgent, agent, agentGeneration)).toBe(ResultCode.Ok);
    expect(core.agentRecord(agent).lifecycle).toBe(AgentLifecycle.Free);
  });

  it("purges an agent whose execution ended (admission released)", async () => {
    const core = await boot();
    const run = core.terminalizing();
    run.commitTerminal(OutcomeType.Completed);
    expect(core.apply(MessageKind.PurgeAgent, run.agent, run.agentGeneration)).toBe(ResultCode.Ok);
    expect(core.agentRecord(run.agent)).toMatchObject({ lifecycle: AgentLifecycle.Free, generation: run.agentGeneration + 1 });
  });

  it("refuses an agent that holds an admission with AgentAdmissionHeld, in every held state", async () => {
    const core = await boot({ agentsMax: 4, executionsMax: 4 });
    const admitting = core.admitted();
    const executing = core.callingModel();
    const suspended = core.suspended();
    for (const held of [admitting, executing, suspended]) {
      const before = core.snapshot();
      expect(core.apply(MessageKind.PurgeAgent, held.agent, held.agentGeneration)).toBe(ResultCode.AgentAdmissionHeld);
      expect(core.effects()).toEqual([]);
      expect(core.snapshot()).toEqual(before);
    }
  });

  it("refuses an unknown slot with AgentSlotUnknown and a stale generation with AgentGenerationMustMatch", async () => {
    const core = await boot();
    const { agent, agentGeneration } = core.registerAgent();
    const before = core.snapshot();
    expect(core.apply(MessageKind.PurgeAgent, agent + 1, agentGeneration)).toBe(ResultCode.AgentSlotUnknown);
    expect(core.effects()).toEqual([]);
    expect(core.apply(MessageKind.PurgeAgent, agent, agentGeneration + 1)).toBe(ResultCode.AgentGenerationMustMatch);
    expect(core.effects()).toEqual([]);
    expect(core.snapshot()).toEqual(before);
  });

  it("checks the agent before the admission", async () => {
    const core = await boot();
    const admission = core.admitted();
    expect(core.apply(MessageKind.PurgeAgent, admission.agent, admission.agentGeneration + 1)).toBe(ResultCode.AgentGenerationMustMatch);
  });
});

describeDecisions("agent slots", ({ it, boot }) => {
  it("reuses the most recently freed slot first, at its incremented generation", async () => {
    const core = await boot({ agentsMax: 4, executionsMax: 4 });
    const first = core.registerAgent();
    core.registerAgent();
    const third = core.registerAgent();
    core.step(MessageKind.PurgeAgent, first.agent, first.agentGeneration);
    core.step(MessageKind.PurgeAgent, third.agent, third.agentGeneration);

    expect(core.apply(MessageKind.RegisterAgent, 0)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.AgentRegistered(2, 2)]);
    expect(core.apply(MessageKind.RegisterAgent, 0)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.AgentRegistered(0, 2)]);
    expect(core.apply(MessageKind.RegisterAgent, 0)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.AgentRegistered(3, 1)]);
  });

  it("refuses the previous tenant's handle after the slot is reused", async () => {
    const core = await boot();
    const previous = core.registerAgent();
    core.step(MessageKind.PurgeAgent, previous.agent, previous.agentGeneration);
    const tenant = core.registerAgent();
    expect(tenant).toEqual({ agent: previous.agent, agentGeneration: previous.agentGeneration + 1 });

    const request = core.request();
    expect(core.apply(MessageKind.Start, previous.agent, previous.agentGeneration, request, 0)).toBe(ResultCode.AgentGenerationMustMatch);
    expect(core.effects()).toEqual([effect.FailRequest(request, ResultCode.AgentGenerationMustMatch)]);
    expect(core.agentRecord(tenant.agent).admissionState).toBe(AdmissionState.None);
  });
});

describeDecisions("SetDraining(on)", ({ it, boot }) => {
  it("sets and clears draining, emitting nothing", async () => {
    const core = await boot();
    expect(core.apply(MessageKind.SetDraining, 1)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([]);
    expect(core.snapshot().draining).toBe(1);
    expect(core.apply(MessageKind.SetDraining, 0)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([]);
    expect(core.snapshot().draining).toBe(0);
  });

  it("refuses on outside {0, 1} with ArgumentOutOfRange and keeps the flag", async () => {
    const core = await boot();
    core.step(MessageKind.SetDraining, 1);
    const before = core.snapshot();
    for (const on of [2, 0xffff_ffff]) {
      expect(core.apply(MessageKind.SetDraining, on)).toBe(ResultCode.ArgumentOutOfRange);
      expect(core.effects()).toEqual([]);
    }
    expect(core.snapshot()).toEqual(before);
  });

  it("refuses admissions but still accepts completions while draining (SPEC §3)", async () => {
    const core = await boot();
    const run = core.installed();
    const idle = core.registerAgent();
    core.step(MessageKind.SetDraining, 1);

    const request = core.request();
    expect(core.apply(MessageKind.Start, idle.agent, idle.agentGeneration, request, 0)).toBe(ResultCode.RuntimeDraining);
    expect(core.effects()).toEqual([effect.FailRequest(request, ResultCode.RuntimeDraining)]);

    run.commitProviderBarrier().settle().finish(SessionEnding.Completed).commitTerminal(OutcomeType.Completed);
    expect(core.effects()).toEqual([effect.DeliverOutcome(run.exec, OutcomeType.Completed), effect.ReleaseExecution(run.exec, run.generation)]);
  });
});
