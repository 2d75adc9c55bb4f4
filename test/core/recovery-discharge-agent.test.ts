// Discharging an agent held for recovery with no execution (docs/core.md:
// DischargeAgentRecovery). A preparation whose durable outcome the host
// could not learn (`OutcomeUnknown`, `RecoveryRequired`, `StoreFailed`)
// leaves its agent `RecoveryRequired` and bound to nothing; once the host
// has read the durable rows it releases the agent, and installs the
// execution again with `RecoveryInstall` if it was written. The message is
// administrative: a refusal returns its code, emits nothing and changes
// nothing, and draining does not refuse it.

import { expect } from "vitest";
import { AdmissionState, Continuation, ExecutionStatus, MessageKind, Phase, PreparationOutcome, ResultCode } from "../../assembly/abi.js";
import { describeDecisions, type Admission, type Driver } from "./driver.js";

const DISCHARGE = MessageKind.DischargeAgentRecovery;

/** An admission whose preparation failed with `outcome`: the agent is held. */
function held(core: Driver, outcome: number = PreparationOutcome.StoreFailed): Admission {
  const admission = core.admitted();
  expect(core.apply(MessageKind.InitialPreparationReady, admission.agent, admission.agentGeneration, admission.token, outcome, 10, 0, admission.request)).toBe(
    ResultCode.Ok,
  );
  expect(core.agentRecord(admission.agent)).toMatchObject({ admissionState: AdmissionState.RecoveryRequired, executionSlotPlusOne: 0 });
  return admission;
}

describeDecisions("DischargeAgentRecovery", ({ it, boot }) => {
  for (const outcome of [PreparationOutcome.OutcomeUnknown, PreparationOutcome.RecoveryRequired, PreparationOutcome.StoreFailed]) {
    it(`releases an agent held after preparation outcome ${outcome}: no effect, and the agent admits again`, async () => {
      const core = await boot();
      const admission = held(core, outcome);
      expect(core.apply(DISCHARGE, admission.agent, admission.agentGeneration)).toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([]);
      expect(core.agentRecord(admission.agent)).toMatchObject({ admissionState: AdmissionState.None, ownerToken: 0, executionSlotPlusOne: 0 });
      expect(core.snapshot()).toMatchObject({ admittingAgents: 0, liveExecutions: 0 });
      const again = core.admitted(admission);
      expect(core.agentRecord(again.agent).admissionState).toBe(AdmissionState.Admitting);
    });
  }

  it("then lets the host install the execution the preparation did write (RecoveryInstall)", async () => {
    const core = await boot();
    const admission = held(core);
    expect(core.apply(DISCHARGE, admission.agent, admission.agentGeneration)).toBe(ResultCode.Ok);
    const run = core.recovered({ status: ExecutionStatus.Active, phase: Phase.CallingLlm, handle: admission });
    expect(run.admission).toBe(AdmissionState.Executing);
    expect(core.apply(MessageKind.ContinueRecovered, run.exec, run.generation, run.revision, Continuation.RecallModel, 0, core.request())).toBe(ResultCode.Ok);
  });

  it("is not refused while draining (it admits nothing)", async () => {
    const core = await boot();
    const admission = held(core);
    expect(core.apply(MessageKind.SetDraining, 1)).toBe(ResultCode.Ok);
    expect(core.apply(DISCHARGE, admission.agent, admission.agentGeneration)).toBe(ResultCode.Ok);
    expect(core.agentRecord(admission.agent).admissionState).toBe(AdmissionState.None);
  });

  const refusals: [string, (core: Driver) => { agent: number; generation: number }, ResultCode][] = [
    [
      "an agent with no admission",
      (core) => {
        const agent = core.registerAgent();
        return { agent: agent.agent, generation: agent.agentGeneration };
      },
      ResultCode.AdmissionStateMustMatch,
    ],
    [
      "an agent still admitting",
      (core) => {
        const admission = core.admitted();
        return { agent: admission.agent, generation: admission.agentGeneration };
      },
      ResultCode.AdmissionStateMustMatch,
    ],
    [
      "an agent running an execution",
      (core) => {
        const run = core.callingModel();
        return { agent: run.agent, generation: run.agentGeneration };
      },
      ResultCode.AdmissionStateMustMatch,
    ],
    [
      "an execution held for recovery (DischargeRecovery releases that one)",
      (core) => {
        const run = core.recovered({ status: ExecutionStatus.Active, phase: Phase.CallingLlm });
        core.apply(MessageKind.ContinueRecovered, run.exec, run.generation, run.revision, Continuation.None, 0, core.request());
        expect(run.admission).toBe(AdmissionState.RecoveryRequired);
        return { agent: run.agent, generation: run.agentGeneration };
      },
      ResultCode.AdmissionStateMustMatch,
    ],
    [
      "a stale agent generation",
      (core) => {
        const admission = held(core);
        return { agent: admission.agent, generation: admission.agentGeneration + 1 };
      },
      ResultCode.AgentGenerationMustMatch,
    ],
    ["an unknown agent slot", () => ({ agent: 3, generation: 1 }), ResultCode.AgentSlotUnknown],
  ];
  for (const [name, setUp, code] of refusals) {
    it(`refuses ${name} with code ${code}: no effect, nothing changed`, async () => {
      const core = await boot();
      const target = setUp(core);
      const before = core.snapshot();
      expect(core.apply(DISCHARGE, target.agent, target.generation)).toBe(code);
      expect(core.effects()).toEqual([]);
      expect(core.snapshot()).toEqual(before);
    });
  }
});
