// The records' narrow fields (docs/decisions/0104): an agent record of 24
// bytes holds its conversation's fields too, with two values folded into a
// byte twice (admission and lifecycle, phase and cause); an execution record
// of 20 bytes keeps its agent slot + 1 in 24 bits, its waiters and in-flight
// count in another 24, its status and phase in a byte. Every value a fold
// holds fits its bits, a value past a limit is refused before it is stored,
// and two fields sharing a word never reach into each other.

import { expect, it as plainIt } from "vitest";
import {
  AdmissionStateLimit,
  AgentLifecycle,
  AgentRecord,
  ConversationPhaseLimit,
  ExecutionBits,
  ExecutionRecord,
  ExecutionStatus,
  ExecutionStatusLimit,
  HoldCauseLimit,
  Limit,
  MessageKind,
  Nibble,
  Phase,
  PhaseLimit,
  RecoveryCauseLimit,
  ResultCode,
  SessionEventKind,
} from "../../assembly/abi.js";
import { ControlCore, CoreLimitError } from "../../host/core/control-core.js";
import { instantiateCore } from "../../host/core/core-exports.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import { describeDecisions, effect } from "./driver.js";

plainIt("every value folded into a record fits the bits it is given", () => {
  const nibble = Nibble.LowMask + 1;
  for (const end of [
    AdmissionStateLimit.End,
    ConversationPhaseLimit.End,
    RecoveryCauseLimit.End,
    HoldCauseLimit.End,
    ExecutionStatusLimit.End,
    PhaseLimit.End,
  ]) {
    expect(end).toBeLessThanOrEqual(nibble);
  }
  expect(AgentLifecycle.Closed).toBeLessThan(nibble);
  expect(Limit.WaitersMax).toBeLessThanOrEqual(ExecutionBits.WaitersMask);
  expect(Limit.InFlightMax).toBeLessThanOrEqual(ExecutionBits.InFlightMask);
  expect(ExecutionBits.InFlightMask).toBe(ExecutionBits.Low24 >>> ExecutionBits.InFlightShift);
  // The largest agent slot + 1 an execution record keeps is the ceiling.
  expect(Limit.AgentsMaxCeiling).toBeLessThanOrEqual(ExecutionBits.Low24);
  expect([AgentRecord.Size, ExecutionRecord.Size]).toEqual([24, 20]);
});

plainIt("an agent table past the ceiling is refused, by the host's check and by the core's own", async () => {
  const module = await loadCoreModule();
  expect(() => new ControlCore(module, { agentsMax: Limit.AgentsMaxCeiling + 1, executionsMax: 1 })).toThrow(CoreLimitError);
  expect(instantiateCore(module).init(Limit.AgentsMaxCeiling + 1, 1)).toBe(ResultCode.ArgumentOutOfRange);
});

describeDecisions("the narrow fields", ({ it, boot }) => {
  it("an execution holds WaitersMax waiters and InFlightMax operations at once, each its own count", async () => {
    const core = await boot();
    const run = core.dispatchingTools().commitToolBarrier(Limit.InFlightMax);
    for (let index = run.record.waiters; index < Limit.WaitersMax; index += 1) run.attachWaiter();
    expect(run.record).toMatchObject({
      waiters: Limit.WaitersMax,
      inFlight: Limit.InFlightMax,
      status: ExecutionStatus.Active,
      phase: Phase.DispatchingTools,
      flags: 0,
      agentSlotPlusOne: run.agent + 1,
    });
    const request = core.request();
    expect(core.apply(MessageKind.AttachWaiter, run.exec, run.generation, request)).toBe(ResultCode.WaitersFull);
    expect(core.effects()).toEqual([effect.FailRequest(request, ResultCode.WaitersFull)]);
    run.event(SessionEventKind.ToolsCompleted).settle();
    expect(run.record).toMatchObject({ waiters: Limit.WaitersMax, inFlight: Limit.InFlightMax - 1, phase: Phase.RecordingToolResults });
  });

  it("closing an agent moves its lifecycle nibble, not the admission nor the execution bound beside it", async () => {
    const core = await boot();
    const run = core.callingModel();
    expect(core.apply(MessageKind.CloseAgent, run.agent, run.agentGeneration)).toBe(ResultCode.Ok);
    expect(run.agentRecord).toMatchObject({ lifecycle: AgentLifecycle.Closed, executionSlotPlusOne: run.exec + 1, ownerToken: 0 });
    expect(run.record).toMatchObject({ status: ExecutionStatus.Active, phase: Phase.CallingLlm, agentSlotPlusOne: run.agent + 1 });
  });
});
