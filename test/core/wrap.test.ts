// Counters next to the u32 wrap (docs/core.md, "State"; `testingSeedCounters`
// in assembly/index.ts, for tests only): owner tokens, sessions and slot
// generations skip 0 when they wrap, so 0 never names anything. The seed is
// refused for 0 and once an agent is registered. The differential fuzz
// (test/fuzz) runs whole streams from such starts; these are the exact cases.

import { expect } from "vitest";
import { MessageKind, ResultCode } from "../../assembly/abi.js";
import type { ControlMachine } from "../../host/core/machine.js";
import { describeDecisions, effect } from "./driver.js";

const U32_MAX = 0xffff_ffff;

/** Both implementations carry the testing-only seed. */
function seed(machine: ControlMachine, ownerToken: number, session: number, generation: number): number {
  return (machine as ControlMachine & { seedCountersForTesting(a: number, b: number, c: number): number }).seedCountersForTesting(
    ownerToken,
    session,
    generation,
  );
}

describeDecisions("testingSeedCounters(ownerToken, session, generation)", ({ it, boot }) => {
  it("refuses 0 for any counter, and any seed once an agent is registered", async () => {
    const core = await boot();
    expect(seed(core.machine, 0, 5, 5)).toBe(ResultCode.ArgumentOutOfRange);
    expect(seed(core.machine, 5, 0, 5)).toBe(ResultCode.ArgumentOutOfRange);
    expect(seed(core.machine, 5, 5, 0)).toBe(ResultCode.ArgumentOutOfRange);
    core.registerAgent();
    expect(seed(core.machine, 5, 5, 5)).toBe(ResultCode.ArgumentOutOfRange);
    expect(core.snapshot()).toMatchObject({ nextOwnerToken: 1, nextSession: 1 });
  });

  it("owner tokens and sessions wrap from 0xffffffff to 1, skipping 0", async () => {
    const core = await boot();
    expect(seed(core.machine, U32_MAX, U32_MAX, 1)).toBe(ResultCode.Ok);
    const admission = core.admitted();
    expect(admission.token).toBe(U32_MAX);
    expect(core.snapshot().nextOwnerToken).toBe(1);
    const run = core.installed({ handle: core.registerAgent() });
    expect(run.session).toBe(U32_MAX);
    expect(core.snapshot().nextSession).toBe(1);
  });

  it("a slot's generation wraps from 0xffffffff to 1: the old handle is refused, the new one works", async () => {
    const core = await boot();
    expect(seed(core.machine, 1, 1, U32_MAX)).toBe(ResultCode.Ok);
    const { agent, agentGeneration } = core.registerAgent();
    expect(agentGeneration).toBe(U32_MAX);
    expect(core.apply(MessageKind.PurgeAgent, agent, agentGeneration)).toBe(ResultCode.Ok);
    const request = core.request();
    core.expectRefused(ResultCode.AgentSlotUnknown, request, MessageKind.Start, agent, agentGeneration, request, 0);
    expect(core.apply(MessageKind.RegisterAgent, 0)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.AgentRegistered(agent, 1)]);
    core.expectRefused(ResultCode.AgentGenerationMustMatch, request, MessageKind.Start, agent, U32_MAX, request, 0);
  });
});
