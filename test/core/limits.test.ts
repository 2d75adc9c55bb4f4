// Capacity and hostile input (docs/core.md: "Slots", "Capacity", *register
// waiter*, the in-flight limit; SPEC §2.1–2.2). Every table has a named
// limit and a full table is a result code, never a crash: `AgentsFull`,
// `ExecutionsFull` (admissions reserve their slot, so installing an
// admitted execution can never fail), `WaitersFull`, `InFlightFull`. And
// whatever integers the host passes — unknown kinds, out-of-range enums,
// every argument 0xffffffff — an apply returns a code and never throws.

import { expect } from "vitest";
import {
  AdmissionState,
  CommitOutcome,
  ExecutionStatus,
  Limit,
  MessageKind,
  MessageKindLimit,
  OutcomeType,
  Phase,
  PreparationOutcome,
  ResultCode,
  SessionEnding,
  SessionEventKind,
  SetupFailure,
  Submission,
} from "../../assembly/abi.js";
import { decodeEffectWords } from "../../host/core/effects.js";
import { describeDecisions, effect, type Driver, type Run } from "./driver.js";
import { unassignedMessageKinds } from "../fuzz/arbitraries.js";

describeDecisions("AgentsFull", ({ it, boot }) => {
  it("refuses RegisterAgent when every agent slot is in use, and accepts it again after a purge", async () => {
    const core = await boot({ agentsMax: 2, executionsMax: 2 });
    const first = core.registerAgent();
    core.registerAgent();
    const before = core.snapshot();
    expect(core.apply(MessageKind.RegisterAgent, 0)).toBe(ResultCode.AgentsFull);
    expect(core.effects()).toEqual([]);
    expect(core.snapshot()).toEqual(before);

    core.step(MessageKind.PurgeAgent, first.agent, first.agentGeneration);
    expect(core.apply(MessageKind.RegisterAgent, 1)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.AgentRegistered(first.agent, first.agentGeneration + 1)]);
  });

  it("judges closed before the capacity", async () => {
    const core = await boot({ agentsMax: 1, executionsMax: 1 });
    core.registerAgent();
    expect(core.apply(MessageKind.RegisterAgent, 2)).toBe(ResultCode.ArgumentOutOfRange);
  });
});

describeDecisions("ExecutionsFull", ({ it, boot }) => {
  it("refuses Start when live executions fill the table", async () => {
    const core = await boot({ agentsMax: 4, executionsMax: 2 });
    core.callingModel();
    core.suspended();
    const idle = core.registerAgent();
    const request = core.request();
    core.expectRefused(ResultCode.ExecutionsFull, request, MessageKind.Start, idle.agent, idle.agentGeneration, request, 0);
  });

  it("counts admissions still preparing: two admitting agents fill a table of two with no execution live", async () => {
    const core = await boot({ agentsMax: 4, executionsMax: 2 });
    core.admitted();
    core.admitted();
    expect(core.snapshot()).toMatchObject({ admittingAgents: 2, liveExecutions: 0 });
    const idle = core.registerAgent();
    const request = core.request();
    core.expectRefused(ResultCode.ExecutionsFull, request, MessageKind.Start, idle.agent, idle.agentGeneration, request, 0);
    core.expectRefused(
      ResultCode.ExecutionsFull,
      request,
      MessageKind.RecoveryInstall,
      idle.agent,
      idle.agentGeneration,
      5,
      ExecutionStatus.Active,
      Phase.CallingLlm,
      0,
      request,
    );
  });

  it("counts one live execution plus one admitting agent", async () => {
    const core = await boot({ agentsMax: 4, executionsMax: 2 });
    core.installed();
    core.admitted();
    const idle = core.registerAgent();
    const request = core.request();
    core.expectRefused(ResultCode.ExecutionsFull, request, MessageKind.Start, idle.agent, idle.agentGeneration, request, 0);
  });

  it("an admitted execution always installs, even when the table is full", async () => {
    const core = await boot({ agentsMax: 4, executionsMax: 1 });
    const admission = core.admitted();
    const idle = core.registerAgent();
    const request = core.request();
    core.expectRefused(ResultCode.ExecutionsFull, request, MessageKind.Start, idle.agent, idle.agentGeneration, request, 0);
    expect(
      core.apply(
        MessageKind.InitialPreparationReady,
        admission.agent,
        admission.agentGeneration,
        admission.token,
        PreparationOutcome.Active,
        10,
        0,
        admission.request,
      ),
    ).toBe(ResultCode.Ok);
    expect(core.effects()[0]).toEqual(effect.ExecutionInstalled(0, 1, admission.request));
    expect(core.snapshot()).toMatchObject({ admittingAgents: 0, liveExecutions: 1 });
  });

  const releases: ReadonlyArray<readonly [string, (core: Driver) => void]> = [
    [
      "preparation NotEstablished releases it",
      (core) => {
        const admission = core.admitted();
        core.step(
          MessageKind.InitialPreparationReady,
          admission.agent,
          admission.agentGeneration,
          admission.token,
          PreparationOutcome.NotEstablished,
          0,
          0,
          admission.request,
        );
      },
    ],
    [
      "a refused prepare submission releases it",
      (core) => {
        const admission = core.admitted();
        core.step(MessageKind.SubmissionRefused, Submission.Prepare, admission.agent, admission.agentGeneration, admission.token, admission.request);
      },
    ],
    [
      "a preparation leaving the outcome unknown keeps the admission but frees the reservation",
      (core) => {
        const admission = core.admitted();
        core.step(
          MessageKind.InitialPreparationReady,
          admission.agent,
          admission.agentGeneration,
          admission.token,
          PreparationOutcome.OutcomeUnknown,
          0,
          0,
          admission.request,
        );
      },
    ],
    [
      "a malformed preparation result keeps the admission but frees the reservation",
      (core) => {
        const admission = core.admitted();
        core.apply(MessageKind.InitialPreparationReady, admission.agent, admission.agentGeneration, admission.token, 0, 0, 0, admission.request);
      },
    ],
    [
      "a completed execution frees its slot",
      (core) => {
        core.terminalizing().commitTerminal(OutcomeType.Completed);
      },
    ],
  ];
  for (const [name, release] of releases) {
    it(`gives the capacity back: ${name}`, async () => {
      const core = await boot({ agentsMax: 4, executionsMax: 1 });
      release(core);
      expect(core.snapshot()).toMatchObject({ admittingAgents: 0, liveExecutions: 0 });
      core.admitted();
    });
  }

  it("a suspended execution and one marked for recovery keep their slots", async () => {
    const core = await boot({ agentsMax: 4, executionsMax: 2 });
    core.suspended();
    core.terminalizing().commitTerminal(OutcomeType.Completed);
    const run = core.installed();
    core.apply(MessageKind.ProviderDispatchReady, run.exec, run.generation, run.session, run.revision, CommitOutcome.RehydrationRequired, 0);
    expect(run.admission).toBe(AdmissionState.RecoveryRequired);
    const idle = core.registerAgent();
    const request = core.request();
    core.expectRefused(ResultCode.ExecutionsFull, request, MessageKind.Start, idle.agent, idle.agentGeneration, request, 0);
  });
});

describeDecisions("execution slots", ({ it, boot }) => {
  it("reuse the most recently freed slot first, at its incremented generation", async () => {
    const core = await boot({ agentsMax: 8, executionsMax: 8 });
    const first = core.terminalizing();
    const second = core.terminalizing();
    core.installed();
    first.commitTerminal(OutcomeType.Completed);
    second.commitTerminal(OutcomeType.Failed);
    const reused = core.installed();
    expect([reused.exec, reused.generation]).toEqual([second.exec, second.generation + 1]);
    const next = core.installed();
    expect([next.exec, next.generation]).toEqual([first.exec, first.generation + 1]);
    const fresh = core.installed();
    expect([fresh.exec, fresh.generation]).toEqual([3, 1]);
  });
});

describeDecisions("WaitersFull", ({ it, boot }) => {
  /** Attaches waiters until the execution holds `Limit.WaitersMax`. */
  function fillWaiters(core: Driver, run: Run): void {
    for (let index = run.record.waiters; index < Limit.WaitersMax; index += 1) run.attachWaiter();
    expect(run.record.waiters).toBe(Limit.WaitersMax);
  }

  it("refuses the waiter past WaitersMax with FailRequest(WaitersFull); the count stays at the limit", async () => {
    const core = await boot();
    const run = core.callingModel();
    fillWaiters(core, run);
    const before = core.snapshot();
    const request = core.request();
    expect(core.apply(MessageKind.AttachWaiter, run.exec, run.generation, request)).toBe(ResultCode.WaitersFull);
    expect(core.effects()).toEqual([effect.FailRequest(request, ResultCode.WaitersFull)]);
    expect(core.snapshot()).toEqual(before);
  });

  it("a resume into a full waiter list still resumes; only the resume request's waiter is refused", async () => {
    const core = await boot();
    const run = core.resuming();
    fillWaiters(core, run);
    const session = core.snapshot().nextSession;
    expect(
      core.apply(MessageKind.ResumeCommitReady, run.exec, run.generation, run.revision, CommitOutcome.Committed, run.revision + 1, 1, run.resumeRequest),
    ).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.FailRequest(run.resumeRequest, ResultCode.WaitersFull), effect.ResumeSession(run.exec, session, true)]);
    expect(run.record).toMatchObject({ waiters: Limit.WaitersMax, status: ExecutionStatus.Active, phase: Phase.Resuming });
  });

  it("require recovery empties the list, so waiters can attach again", async () => {
    const core = await boot();
    const run = core.installed();
    fillWaiters(core, run);
    core.apply(MessageKind.ProviderDispatchReady, run.exec, run.generation, run.session, run.revision, CommitOutcome.RehydrationRequired, 0);
    expect(run.record.waiters).toBe(0);
    run.attachWaiter();
    expect(run.record.waiters).toBe(1);
  });
});

describeDecisions("InFlightFull", ({ it, boot }) => {
  it("a tool batch may fill the in-flight count to InFlightMax, and not one operation more", async () => {
    const core = await boot();
    const run = core.dispatchingTools().commitToolBarrier(Limit.InFlightMax).event(SessionEventKind.ToolsCompleted);
    expect(run.record.inFlight).toBe(Limit.InFlightMax);
    // The next model call's barrier would be one operation more.
    expect(core.apply(MessageKind.SessionEvent, run.exec, run.generation, run.session, SessionEventKind.StateCompleted)).toBe(ResultCode.InFlightFull);
    expect(core.effects()).toEqual([effect.DropStale(MessageKind.SessionEvent, ResultCode.InFlightFull)]);
    expect(run.record).toMatchObject({ phase: Phase.RecordingToolResults, inFlight: Limit.InFlightMax });
    run.settle().event(SessionEventKind.StateCompleted);
    expect(run.record.inFlight).toBe(Limit.InFlightMax);
    // The barrier's count goes to the model call: the count stays full.
    expect(core.apply(MessageKind.ProviderDispatchReady, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1)).toBe(
      ResultCode.Ok,
    );
    expect(core.effects()).toEqual([effect.StartProviderCall(run.exec, run.session)]);
    expect(run.record.inFlight).toBe(Limit.InFlightMax);
  });

  it("a tool batch that would pass InFlightMax is refused InFlightFull and fails the tool setup", async () => {
    const core = await boot();
    // InFlightMax - 1 tools still running, the model call answered with more tools.
    const run = core
      .dispatchingTools()
      .commitToolBarrier(Limit.InFlightMax - 1)
      .event(SessionEventKind.ToolsCompleted)
      .event(SessionEventKind.StateCompleted)
      .commitProviderBarrier()
      .settle()
      .event(SessionEventKind.LlmCompletedWithTools);
    expect(run.record.inFlight).toBe(Limit.InFlightMax);
    expect(core.apply(MessageKind.ToolDispatchReady, run.exec, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1, 2)).toBe(
      ResultCode.InFlightFull,
    );
    expect(core.effects()).toEqual([effect.SetupFailed(run.exec, run.session, SetupFailure.Tool)]);
    expect(run.record.inFlight).toBe(Limit.InFlightMax - 1);
  });

  it("the session can still finish: the terminal waits for every one of them", async () => {
    const core = await boot();
    const run = core.dispatchingTools().commitToolBarrier(Limit.InFlightMax).finish(SessionEnding.TimedOut);
    for (let index = 1; index < Limit.InFlightMax; index += 1) run.settle();
    expect(core.effects()).toEqual([]);
    run.settle();
    expect(core.effects()).toEqual([effect.PostDeferredTerminal(run.exec, run.session)]);
  });
});

// -- hostile input ---------------------------------------------------------------

const ALL_ONES = 0xffff_ffff;
/** Every kind the core knows: the retired 16 and 17 are left out. */
const KINDS = Array.from({ length: MessageKindLimit.End - 1 }, (_, index) => index + 1).filter(
  (kind) => kind !== 16 && kind !== 17 && !unassignedMessageKinds.includes(kind),
);

/** What every kind decides when every argument is 0xffffffff, on a core
 * with one live execution (slot 0) and one agent (slot 0): no slot, enum or
 * flag of that value exists, so each message fails its first check. */
const ALL_ONES_DECISIONS: Record<number, readonly [ResultCode, "none" | "drop" | "fail request"]> = {
  [MessageKind.RegisterAgent]: [ResultCode.ArgumentOutOfRange, "none"],
  [MessageKind.CloseAgent]: [ResultCode.AgentSlotUnknown, "none"],
  [MessageKind.PurgeAgent]: [ResultCode.AgentSlotUnknown, "none"],
  [MessageKind.Start]: [ResultCode.AgentSlotUnknown, "fail request"],
  [MessageKind.InitialPreparationReady]: [ResultCode.AgentSlotUnknown, "drop"],
  [MessageKind.ProviderDispatchReady]: [ResultCode.ExecutionSlotUnknown, "drop"],
  [MessageKind.ToolDispatchReady]: [ResultCode.ExecutionSlotUnknown, "drop"],
  [MessageKind.SessionEvent]: [ResultCode.ExecutionSlotUnknown, "drop"],
  [MessageKind.OperationSettled]: [ResultCode.ExecutionSlotUnknown, "drop"],
  [MessageKind.SessionFinished]: [ResultCode.ExecutionSlotUnknown, "drop"],
  [MessageKind.DeferredTerminal]: [ResultCode.ExecutionSlotUnknown, "drop"],
  [MessageKind.TerminalCommitReady]: [ResultCode.ExecutionSlotUnknown, "drop"],
  [MessageKind.Resume]: [ResultCode.ArgumentOutOfRange, "fail request"],
  [MessageKind.ResumeCommitReady]: [ResultCode.ExecutionSlotUnknown, "fail request"],
  [MessageKind.RecoveryInstall]: [ResultCode.AgentSlotUnknown, "fail request"],
  [MessageKind.ContinueRecovered]: [ResultCode.ExecutionSlotUnknown, "fail request"],
  [MessageKind.CancelRequested]: [ResultCode.ExecutionSlotUnknown, "drop"],
  [MessageKind.AttachWaiter]: [ResultCode.ExecutionSlotUnknown, "fail request"],
  [MessageKind.SubmissionRefused]: [ResultCode.ArgumentOutOfRange, "drop"],
  [MessageKind.SetDraining]: [ResultCode.ArgumentOutOfRange, "none"],
  [MessageKind.DischargeRecovery]: [ResultCode.ExecutionSlotUnknown, "none"],
  [MessageKind.DischargeAgentRecovery]: [ResultCode.AgentSlotUnknown, "none"],
  [MessageKind.CancelSuspended]: [ResultCode.ExecutionSlotUnknown, "fail request"],
  [MessageKind.CancelCommitReady]: [ResultCode.ExecutionSlotUnknown, "fail request"],
  [MessageKind.ConversationOwned]: [ResultCode.AgentSlotUnknown, "drop"],
  [MessageKind.RecoveryRequested]: [ResultCode.AgentSlotUnknown, "drop"],
  [MessageKind.RecoveryFinished]: [ResultCode.AgentSlotUnknown, "drop"],
  [MessageKind.UseBegin]: [ResultCode.AgentSlotUnknown, "drop"],
  [MessageKind.UseEnd]: [ResultCode.AgentSlotUnknown, "drop"],
  [MessageKind.SetPinned]: [ResultCode.AgentSlotUnknown, "drop"],
  [MessageKind.Admit]: [ResultCode.AgentSlotUnknown, "fail request"],
  [MessageKind.MessageQueued]: [ResultCode.AgentSlotUnknown, "drop"],
  [MessageKind.MessageLeft]: [ResultCode.AgentSlotUnknown, "drop"],
  [MessageKind.HeadSettled]: [ResultCode.AgentSlotUnknown, "drop"],
  [MessageKind.AdmissionReleased]: [ResultCode.AgentSlotUnknown, "drop"],
  [MessageKind.ConversationHeld]: [ResultCode.AgentSlotUnknown, "drop"],
  [MessageKind.MessageWritten]: [ResultCode.AgentSlotUnknown, "drop"],
  [MessageKind.HeadRetryDue]: [ResultCode.AgentSlotUnknown, "drop"],
  [MessageKind.RetryDue]: [ResultCode.AgentSlotUnknown, "drop"],
  [MessageKind.ConversationRetaken]: [ResultCode.AgentSlotUnknown, "drop"],
};

describeDecisions("host input never traps", ({ it, boot }) => {
  // 16 and 17 are retired (decision 0022): unknown like any other number.
  for (const kind of [0, 16, 17, MessageKindLimit.End, 255, 0x8000_0000, ALL_ONES]) {
    it(`kind ${kind} is MessageKindUnknown: no effect, no change`, async () => {
      const core = await boot();
      core.callingModel();
      const before = core.snapshot();
      expect(core.apply(kind, ALL_ONES, ALL_ONES, ALL_ONES, ALL_ONES, ALL_ONES, ALL_ONES, ALL_ONES)).toBe(ResultCode.MessageKindUnknown);
      expect(core.effects()).toEqual([]);
      expect(core.snapshot()).toEqual(before);
    });
  }

  for (const kind of KINDS) {
    const [code, family] = ALL_ONES_DECISIONS[kind]!;
    it(`kind ${kind} with every argument 0xffffffff is refused with code ${code} (${family}) and changes nothing`, async () => {
      const core = await boot();
      core.callingModel();
      const before = core.snapshot();
      expect(core.apply(kind, ALL_ONES, ALL_ONES, ALL_ONES, ALL_ONES, ALL_ONES, ALL_ONES, ALL_ONES)).toBe(code);
      const expected = family === "drop" ? [effect.DropStale(kind, code)] : family === "fail request" ? [effect.FailRequest(ALL_ONES, code)] : [];
      expect(core.effects()).toEqual(expected);
      expect(core.snapshot()).toEqual(before);
    });
  }

  it("every kind with valid handles and every other argument at an extreme value returns a code and emits decodable effects", async () => {
    const extremes = [0, 1, 2, 7, 8, 255, 256, 1024, 1025, 4096, 65535, 65536, 0x7fff_ffff, 0x8000_0000, ALL_ONES];
    for (const kind of KINDS) {
      for (const value of extremes) {
        const core = await boot();
        const run = core.callingModel();
        // Handles first where the message takes them, so the checks behind them run.
        const args = [value, value, value, value, value, value, value];
        const takesExecution =
          (kind >= MessageKind.ProviderDispatchReady && kind <= MessageKind.TerminalCommitReady)
          || kind === MessageKind.ResumeCommitReady
          || kind === MessageKind.ContinueRecovered
          || kind === MessageKind.CancelRequested
          || kind === MessageKind.AttachWaiter
          || kind === MessageKind.Resume
          || kind === MessageKind.DischargeRecovery;
        if (takesExecution) [args[0], args[1]] = [run.exec, run.generation];
        if (kind === MessageKind.Resume) [args[2], args[3]] = [run.agent, run.agentGeneration];
        if (kind === MessageKind.SubmissionRefused) [args[1], args[2]] = [run.exec, run.generation];
        if (
          kind === MessageKind.Start
          || kind === MessageKind.RecoveryInstall
          || kind === MessageKind.InitialPreparationReady
          || kind === MessageKind.CloseAgent
          || kind === MessageKind.PurgeAgent
          || kind === MessageKind.DischargeAgentRecovery
          || kind >= MessageKind.ConversationOwned
        )
          [args[0], args[1]] = [run.agent, run.agentGeneration];
        let code: number | undefined;
        expect(() => {
          code = core.apply(kind, ...args);
        }).not.toThrow();
        expect(Number.isInteger(code)).toBe(true);
        expect(code).toBeGreaterThanOrEqual(ResultCode.Ok);
        expect(code).toBeLessThanOrEqual(ResultCode.LeaseNotHeldHere);
        expect(() => core.effects()).not.toThrow();
        expect(() => core.snapshot()).not.toThrow();
      }
    }
  });

  it("numbers outside u32 (negative, past 2^32, fractional, NaN) never throw", async () => {
    const odd = [-1, -0x8000_0000, 2 ** 32, 2 ** 32 + 1, 2 ** 53, 1.5, Number.NaN, Number.POSITIVE_INFINITY];
    const core = await boot();
    const run = core.callingModel();
    for (const kind of [...KINDS, 0, 99]) {
      for (const value of odd) {
        let code: number | undefined;
        expect(() => {
          code = core.apply(kind, value, value, value, value, value, value, value);
        }).not.toThrow();
        expect(Number.isInteger(code)).toBe(true);
        expect(() => decodeEffectWords(core.machine.effectWords())).not.toThrow();
        // The handles still work afterwards.
        expect(core.apply(MessageKind.AttachWaiter, run.exec, run.generation, core.request())).not.toBe(ResultCode.MessageKindUnknown);
      }
    }
  });

  it("truncates arguments to u32 the way WebAssembly does: -1 is 0xffffffff, 2^32 + 1 is 1", async () => {
    const core = await boot();
    const request = core.request();
    expect(core.apply(MessageKind.Start, -1, -1, request, 0)).toBe(ResultCode.AgentSlotUnknown);
    expect(core.effects()).toEqual([effect.FailRequest(request, ResultCode.AgentSlotUnknown)]);
    expect(core.apply(MessageKind.SetDraining, 2 ** 32 + 1)).toBe(ResultCode.Ok);
    expect(core.snapshot().draining).toBe(1);
  });
});
