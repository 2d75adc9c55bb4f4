// Recovery (docs/core.md: RecoveryInstall, RecoverPreparation,
// InitialPreparationRecoveryReady, ContinueRecovered; SPEC §6.2; seeds:
// start_initial_preparation_recovery_on_event_loop,
// apply_initial_preparation_recovery_on_event_loop,
// settle_failed_preparation_recovery_on_event_loop,
// restart_prepared_execution_on_event_loop, continue_recovered_on_event_loop,
// recovered_execution_state!, validate_recovered_continuation!).
// Recovery installs a durable unfinished execution without a session, then
// either re-runs its preparation or continues it at the point its saved
// facts name, validated against the durable phase. A stale recovery message
// only fails its request; an invalid continuation leaves the execution
// untouched for inspection (admission `RecoveryRequired`) and returns its
// fact. A continuation that resumes in a barrier phase counts the barrier
// in flight; requiring recovery of a session ends it (session 0).

import { expect } from "vitest";
import {
  AdmissionState, CommitOutcome, Continuation, ExecutionFlag, ExecutionStatus, MessageKind, OutcomeType, Phase,
  PreparationOutcome, RecoveryScope, ResultCode, SessionEnding,
} from "../../assembly/abi.js";
import { describeDecisions, effect, PREPARED_REVISION, type Driver, type Run } from "./driver.js";

const INSTALL = MessageKind.RecoveryInstall;
const RECOVER = MessageKind.RecoverPreparation;
const READY = MessageKind.InitialPreparationRecoveryReady;
const CONTINUE = MessageKind.ContinueRecovered;

const INSTALLABLE_PHASES = [
  Phase.Preparing, Phase.CallingLlm, Phase.DispatchingTools, Phase.RecordingToolResults, Phase.Suspended, Phase.Resuming,
  Phase.RecoveryProviderCompleted, Phase.RecoveryTools, Phase.RecoveryToolsCompleted, Phase.RecoveryResolvedFailed,
];

describeDecisions("RecoveryInstall(agent, agentGen, revision, status, phase, flags, request)", ({ it, boot }) => {
  for (const [status, phase, admission] of [
    [ExecutionStatus.Active, Phase.RecoveryTools, AdmissionState.Executing],
    [ExecutionStatus.Preparing, Phase.Preparing, AdmissionState.Executing],
    [ExecutionStatus.Suspended, Phase.Suspended, AdmissionState.Suspended],
  ] as const) {
    it(`installs status ${status} phase ${phase} without a session or waiter; admission ${admission === AdmissionState.Suspended ? "Suspended" : "Executing"}`, async () => {
      const core = await boot();
      const { agent, agentGeneration } = core.registerAgent();
      const request = core.request();
      expect(core.apply(INSTALL, agent, agentGeneration, 77, status, phase, ExecutionFlag.FrameworkCallsPending, request))
        .toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([effect.ExecutionInstalled(0, 1, request)]);
      expect(core.executionRecord(0)).toEqual({
        slot: 0, agentSlotPlusOne: agent + 1, revision: 77, session: 0, generation: 1, waiters: 0, inFlight: 0,
        status, phase, flags: ExecutionFlag.FrameworkCallsPending,
      });
      expect(core.agentRecord(agent)).toMatchObject({ admissionState: admission, executionSlotPlusOne: 1 });
      expect(core.snapshot()).toMatchObject({ liveExecutions: 1, admittingAgents: 0, nextSession: 1 });
    });
  }

  it("installs an execution of a closed agent (recovery does not check the lifecycle)", async () => {
    const core = await boot();
    const { agent, agentGeneration } = core.registerAgent(1);
    const request = core.request();
    expect(core.apply(INSTALL, agent, agentGeneration, 5, ExecutionStatus.Active, Phase.CallingLlm, 0, request)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.ExecutionInstalled(0, 1, request)]);
  });

  it("refuses with RuntimeDraining while draining, before any other check", async () => {
    const core = await boot();
    core.step(MessageKind.SetDraining, 1);
    const request = core.request();
    core.expectRefused(ResultCode.RuntimeDraining, request, INSTALL, 3, 3, 5, 0, 0, 0xff, request);
  });

  it("refuses an unknown agent or another generation, before judging the record", async () => {
    const core = await boot();
    const { agent, agentGeneration } = core.registerAgent();
    const request = core.request();
    core.expectRefused(ResultCode.AgentSlotUnknown, request, INSTALL, agent + 1, agentGeneration, 5, 0, 0, 0, request);
    core.expectRefused(ResultCode.AgentGenerationMustMatch, request, INSTALL, agent, agentGeneration + 1, 5, 0, 0, 0, request);
  });

  const invalid = [
    ["status None", ExecutionStatus.None, Phase.CallingLlm, 0],
    ["status Terminal", ExecutionStatus.Terminal, Phase.CallingLlm, 0],
    ["status 5", 5, Phase.CallingLlm, 0],
    ["phase None", ExecutionStatus.Active, Phase.None, 0],
    ["phase Terminal", ExecutionStatus.Active, Phase.Terminal, 0],
    ["phase 12", ExecutionStatus.Active, 12, 0],
    ["phase 0xffffffff", ExecutionStatus.Active, 0xffff_ffff, 0],
    ["status Suspended in phase CallingLlm", ExecutionStatus.Suspended, Phase.CallingLlm, 0],
    ["flags with CancelRequested", ExecutionStatus.Active, Phase.CallingLlm, ExecutionFlag.CancelRequested],
    ["flags with TerminalDeferred", ExecutionStatus.Active, Phase.CallingLlm, ExecutionFlag.TerminalDeferred],
    ["flags with an unknown bit", ExecutionStatus.Active, Phase.CallingLlm, 32],
  ] as const;
  for (const [name, status, phase, flags] of invalid) {
    it(`refuses ${name} with ArgumentOutOfRange`, async () => {
      const core = await boot();
      const { agent, agentGeneration } = core.registerAgent();
      const request = core.request();
      core.expectRefused(ResultCode.ArgumentOutOfRange, request, INSTALL, agent, agentGeneration, 5, status, phase, flags, request);
    });
  }

  it("refuses an agent that holds an admission with AgentAlreadyAdmitted, after judging the record", async () => {
    const core = await boot();
    const run = core.suspended();
    const request = core.request();
    core.expectRefused(ResultCode.AgentAlreadyAdmitted, request, INSTALL, run.agent, run.agentGeneration, 5, ExecutionStatus.Active, Phase.CallingLlm, 0, request);
    core.expectRefused(ResultCode.ArgumentOutOfRange, request, INSTALL, run.agent, run.agentGeneration, 5, ExecutionStatus.Terminal, Phase.CallingLlm, 0, request);
  });
});

describeDecisions("RecoverPreparation(exec, gen, expectedRevision, request)", ({ it, boot }) => {
  it("gives a preparing execution a session and submits the preparation recovery", async () => {
    const core = await boot();
    const run = core.recovered({ status: ExecutionStatus.Preparing, phase: Phase.Preparing });
    const request = core.request();
    expect(core.apply(RECOVER, run.exec, run.generation, run.revision, request)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.SubmitPreparationRecovery(run.exec, 1, run.revision, request)]);
    expect(run.record).toMatchObject({ session: 1, status: ExecutionStatus.Preparing, phase: Phase.Preparing, waiters: 0 });
    expect(run.admission).toBe(AdmissionState.Executing);
    expect(core.snapshot().nextSession).toBe(2);
  });

  it("refuses a stale message with the exec check's code, RevisionMustMatch or SessionMustMatch", async () => {
    const core = await boot();
    const run = core.recovered({ status: ExecutionStatus.Preparing, phase: Phase.Preparing });
    const request = core.request();
    core.expectRefused(ResultCode.ExecutionSlotUnknown, request, RECOVER, run.exec + 1, run.generation, run.revision, request);
    core.expectRefused(ResultCode.ExecutionGenerationMustMatch, request, RECOVER, run.exec, run.generation + 1, run.revision, request);
    core.expectRefused(ResultCode.RevisionMustMatch, request, RECOVER, run.exec, run.generation, run.revision + 1, request);
    run.recoverPreparation();
    core.expectRefused(ResultCode.SessionMustMatch, request, RECOVER, run.exec, run.generation, run.revision, request);
  });

  it("refuses an execution with a live session with SessionMustMatch, before judging its phase", async () => {
    const core = await boot();
    const run = core.modelAnswered();
    const request = core.request();
    core.expectRefused(ResultCode.SessionMustMatch, request, RECOVER, run.exec, run.generation, run.revision, request);
  });

  for (const [name, status, phase] of [
    ["status Active in phase Preparing", ExecutionStatus.Active, Phase.Preparing],
    ["status Preparing in phase CallingLlm", ExecutionStatus.Preparing, Phase.CallingLlm],
    ["status Active in phase RecoveryTools", ExecutionStatus.Active, Phase.RecoveryTools],
  ] as const) {
    it(`${name}: keeps the execution for recovery, fails the request, returns ContinuationInvalid`, async () => {
      const core = await boot();
      const run = core.recovered({ status, phase });
      const before = run.record;
      const request = core.request();
      expect(core.apply(RECOVER, run.exec, run.generation, run.revision, request)).toBe(ResultCode.ContinuationInvalid);
      expect(core.effects()).toEqual([
        effect.RecoveryRequired(run.exec, RecoveryScope.Execution, ResultCode.ContinuationInvalid),
        effect.FailWaiters(run.exec, ResultCode.ContinuationInvalid),
        effect.FailRequest(request, ResultCode.ContinuationInvalid),
      ]);
      expect(run.record).toEqual(before);
      expect(run.admission).toBe(AdmissionState.RecoveryRequired);
    });
  }
});

describeDecisions("InitialPreparationRecoveryReady(exec, gen, session, expectedRevision, outcome, newRevision, request)", ({ it, boot }) => {
  /** A preparing execution whose preparation recovery is in flight. */
  function recovering(core: Driver): Run {
    return core.recovered({ status: ExecutionStatus.Preparing, phase: Phase.Preparing }).recoverPreparation();
  }

  it("Active: restarts the prepared execution as a new session calling the model", async () => {
    const core = await boot();
    const run = recovering(core);
    const request = run.preparationRequest;
    expect(core.apply(READY, run.exec, run.generation, run.session, run.revision, PreparationOutcome.Active, run.revision + 1, request))
      .toBe(ResultCode.Ok);
    const restarted = run.session + 1;
    expect(core.effects()).toEqual([
      effect.RegisterWaiter(run.exec, request),
      effect.StartSession(run.exec, restarted),
      effect.SubmitProviderBarrier(run.exec, restarted, run.revision + 1),
    ]);
    expect(run.record).toMatchObject({
      revision: run.revision + 1, session: restarted, status: ExecutionStatus.Active, phase: Phase.CallingLlm, waiters: 1,
      inFlight: 1,
    });
    expect(run.admission).toBe(AdmissionState.Executing);
  });

  it("Terminal: settles the execution as failed and frees it", async () => {
    const core = await boot();
    const run = recovering(core);
    const request = run.preparationRequest;
    expect(core.apply(READY, run.exec, run.generation, run.session, run.revision, PreparationOutcome.Terminal, run.revision + 1, request))
      .toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([
      effect.RegisterWaiter(run.exec, request),
      effect.DeliverOutcome(run.exec, OutcomeType.Failed),
      effect.ReleaseExecution(run.exec, run.generation),
    ]);
    run.expectReleased();
  });

  for (const [outcome, name, code] of [
    [PreparationOutcome.NotEstablished, "NotEstablished", ResultCode.RehydrationRequired],
    [PreparationOutcome.OutcomeUnknown, "OutcomeUnknown", ResultCode.RehydrationRequired],
    [PreparationOutcome.RecoveryRequired, "RecoveryRequired", ResultCode.RehydrationRequired],
    [PreparationOutcome.StoreFailed, "StoreFailed", ResultCode.StoreFailed],
  ] as const) {
    it(`${name}: releases the live state, fails the request with code ${code}, returns Ok (no waiter: no FailWaiters)`, async () => {
      const core = await boot();
      const run = recovering(core);
      const request = run.preparationRequest;
      // A non-increasing revision does not matter: the outcome is judged first.
      expect(core.apply(READY, run.exec, run.generation, run.session, run.revision, outcome, run.revision, request))
        .toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([
        effect.FailRequest(request, code),
        effect.ReleaseExecution(run.exec, run.generation),
      ]);
      run.expectReleased();
    });
  }

  for (const [outcome, name, code, returned] of [
    [PreparationOutcome.NotEstablished, "NotEstablished", ResultCode.RehydrationRequired, ResultCode.Ok],
    [PreparationOutcome.OutcomeUnknown, "OutcomeUnknown", ResultCode.RehydrationRequired, ResultCode.Ok],
    [PreparationOutcome.RecoveryRequired, "RecoveryRequired", ResultCode.RehydrationRequired, ResultCode.Ok],
    [PreparationOutcome.StoreFailed, "StoreFailed", ResultCode.StoreFailed, ResultCode.Ok],
    [PreparationOutcome.None, "an unknown outcome (0)", ResultCode.OutcomeUnknown, ResultCode.OutcomeUnknown],
    [7, "an unknown outcome (7)", ResultCode.OutcomeUnknown, ResultCode.OutcomeUnknown],
  ] as const) {
    it(`${name}: fails the observers attached meanwhile with code ${code} before releasing`, async () => {
      const core = await boot();
      // One observer attached to the installed execution, one while its
      // preparation recovery was in flight.
      const run = core.recovered({ status: ExecutionStatus.Preparing, phase: Phase.Preparing });
      run.recoverPreparationObserved();
      const request = run.preparationRequest;
      expect(core.apply(READY, run.exec, run.generation, run.session, run.revision, outcome, run.revision + 1, request))
        .toBe(returned);
      expect(core.effects()).toEqual([
        effect.FailRequest(request, code),
        effect.FailWaiters(run.exec, code),
        effect.ReleaseExecution(run.exec, run.generation),
      ]);
      run.expectReleased();
    });
  }

  it("Terminal with observers attached meanwhile: the failed outcome reaches them, no FailWaiters", async () => {
    const core = await boot();
    const run = recovering(core);
    run.attachWaiter();
    const request = run.preparationRequest;
    expect(core.apply(READY, run.exec, run.generation, run.session, run.revision, PreparationOutcome.Terminal, run.revision + 1, request))
      .toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([
      effect.RegisterWaiter(run.exec, request),
      effect.DeliverOutcome(run.exec, OutcomeType.Failed),
      effect.ReleaseExecution(run.exec, run.generation),
    ]);
  });

  for (const outcome of [PreparationOutcome.None, 7, 0xffff_ffff]) {
    it(`an unknown outcome (${outcome}) releases the live state, fails the request, returns OutcomeUnknown`, async () => {
      const core = await boot();
      const run = recovering(core);
      const request = run.preparationRequest;
      expect(core.apply(READY, run.exec, run.generation, run.session, run.revision, outcome, run.revision + 1, request))
        .toBe(ResultCode.OutcomeUnknown);
      expect(core.effects()).toEqual([
        effect.FailRequest(request, ResultCode.OutcomeUnknown),
        effect.ReleaseExecution(run.exec, run.generation),
      ]);
      expect(run.agentRecord.admissionState).toBe(AdmissionState.None);
      expect(core.snapshot().liveExecutions).toBe(0);
    });
  }

  for (const outcome of [PreparationOutcome.Active, PreparationOutcome.Terminal]) {
    it(`${outcome === PreparationOutcome.Active ? "Active" : "Terminal"} with a new revision not above the current one: recovery, RevisionMustIncrease`, async () => {
      const core = await boot();
      const run = recovering(core);
      const before = run.record;
      const request = run.preparationRequest;
      expect(core.apply(READY, run.exec, run.generation, run.session, run.revision, outcome, run.revision, request))
        .toBe(ResultCode.RevisionMustIncrease);
      expect(core.effects()).toEqual([
        effect.RecoveryRequired(run.exec, RecoveryScope.Execution, ResultCode.RevisionMustIncrease),
        effect.FailWaiters(run.exec, ResultCode.RevisionMustIncrease),
        effect.FailRequest(request, ResultCode.RevisionMustIncrease),
      ]);
      // The preparation recovery's session is over.
      expect(run.record).toEqual({ ...before, session: 0 });
      expect(run.admission).toBe(AdmissionState.RecoveryRequired);
      // A retried result of that session is stale.
      const retry = core.request();
      core.expectRefused(ResultCode.SessionMustMatch, retry, READY,
        run.exec, run.generation, run.session, run.revision, outcome, run.revision + 1, retry);
    });
  }

  it("refuses a stale result with the exec check's code, SessionMustMatch (before the revision), RevisionMustMatch", async () => {
    const core = await boot();
    const run = recovering(core);
    const request = run.preparationRequest;
    const { exec, generation, session, revision } = run;
    core.expectRefused(ResultCode.ExecutionSlotUnknown, request, READY, exec + 1, generation, session, revision, PreparationOutcome.Active, revision + 1, request);
    core.expectRefused(ResultCode.ExecutionGenerationMustMatch, request, READY, exec, generation + 1, session, revision, PreparationOutcome.Active, revision + 1, request);
    core.expectRefused(ResultCode.SessionMustMatch, request, READY, exec, generation, session + 1, revision + 1, PreparationOutcome.Active, revision + 2, request);
    core.expectRefused(ResultCode.RevisionMustMatch, request, READY, exec, generation, session, revision + 1, PreparationOutcome.Active, revision + 2, request);
  });

  it("refuses session 0, which names no live session, even before any preparation recovery (SessionMustMatch)", async () => {
    const core = await boot();
    const run = core.recovered({ status: ExecutionStatus.Preparing, phase: Phase.Preparing });
    const request = core.request();
    core.expectRefused(ResultCode.SessionMustMatch, request, READY, run.exec, run.generation, 0, run.revision, PreparationOutcome.Active, run.revision + 1, request);
  });

  it("refuses a duplicate after the execution restarted with SessionMustMatch", async () => {
    const core = await boot();
    const run = recovering(core);
    const request = run.preparationRequest;
    const { session, revision } = run;
    core.step(READY, run.exec, run.generation, session, revision, PreparationOutcome.Active, revision + 1, request);
    core.expectRefused(ResultCode.SessionMustMatch, request, READY, run.exec, run.generation, session, revision, PreparationOutcome.Active, revision + 1, request);
  });

  it("refuses a result for an execution that is not preparing with StatusMustMatch", async () => {
    const core = await boot();
    const run = core.modelAnswered();
    const request = core.request();
    core.expectRefused(ResultCode.StatusMustMatch, request, READY, run.exec, run.generation, run.session, run.revision, PreparationOutcome.Active, run.revision + 1, request);
  });
});

// -- ContinueRecovered ---------------------------------------------------------

/** The continuation table of docs/core.md: valid phases, the flags that must
 * be set or clear, the resume phase and the effects after *register waiter*. */
interface ContinuationRow {
  readonly continuation: Continuation;
  readonly name: string;
  readonly phases: readonly Phase[];
  readonly required: number;
  readonly forbidden: number;
  readonly resume: Phase;
  readonly barrier: "tool" | "provider" | null;
}

const TABLE: readonly ContinuationRow[] = [
  { continuation: Continuation.FrameworkTools, name: "FrameworkTools", phases: [Phase.DispatchingTools, Phase.Resuming, Phase.RecoveryTools], required: 0, forbidden: 0, resume: Phase.DispatchingTools, barrier: "tool" },
  { continuation: Continuation.FrameworkCalls, name: "FrameworkCalls", phases: [Phase.RecoveryProviderCompleted, Phase.RecoveryToolsCompleted], required: ExecutionFlag.FrameworkCallsPending, forbidden: 0, resume: Phase.CallingLlm, barrier: null },
  { continuation: Continuation.Output, name: "Output", phases: [Phase.RecoveryProviderCompleted], required: 0, forbidden: ExecutionFlag.FrameworkCallsPending, resume: Phase.CallingLlm, barrier: null },
  { continuation: Continuation.Followup, name: "Followup", phases: [Phase.RecoveryToolsCompleted], required: 0, forbidden: ExecutionFlag.FrameworkCallsPending, resume: Phase.RecordingToolResults, barrier: null },
  { continuation: Continuation.ApprovalRejection, name: "ApprovalRejection", phases: [Phase.Resuming], required: 0, forbidden: ExecutionFlag.ApprovalGranted, resume: Phase.Resuming, barrier: null },
  { continuation: Continuation.RecallModel, name: "RecallModel", phases: [Phase.CallingLlm], required: 0, forbidden: 0, resume: Phase.CallingLlm, barrier: "provider" },
  { continuation: Continuation.FailedTerminal, name: "FailedTerminal", phases: [Phase.RecoveryResolvedFailed], required: 0, forbidden: 0, resume: Phase.Terminal, barrier: null },
];

function invalidFact(core: Driver, run: Run, code: ResultCode, request: number): void {
  expect(core.effects()).toEqual([
    effect.RecoveryRequired(run.exec, RecoveryScope.Execution, code),
    effect.FailWaiters(run.exec, code),
    effect.FailRequest(request, code),
  ]);
}

describeDecisions("ContinueRecovered(exec, gen, expectedRevision, continuation, hasFailure, request): valid", ({ it, boot }) => {
  for (const row of TABLE.filter((candidate) => candidate.continuation !== Continuation.FailedTerminal)) {
    for (const phase of row.phases) {
      it(`${row.name} from phase ${phase}: new session in phase ${row.resume}, admission Executing${row.barrier ? `, ${row.barrier} barrier` : ""}`, async () => {
        const core = await boot();
        const run = core.recovered({ status: ExecutionStatus.Active, phase, flags: row.required | ExecutionFlag.Reservation });
        const before = run.record;
        const request = core.request();
        expect(core.apply(CONTINUE, run.exec, run.generation, run.revision, row.continuation, 0, request)).toBe(ResultCode.Ok);
        const session = 1;
        const barrier = row.barrier === "tool" ? [effect.SubmitToolBarrier(run.exec, session, run.revision)]
          : row.barrier === "provider" ? [effect.SubmitProviderBarrier(run.exec, session, run.revision)] : [];
        expect(core.effects()).toEqual([
          effect.RegisterWaiter(run.exec, request),
          effect.ContinueSession(run.exec, session, row.continuation),
          ...barrier,
        ]);
        expect(run.record).toEqual({ ...before, phase: row.resume, session, waiters: 1, inFlight: row.barrier ? 1 : 0 });
        expect(run.admission).toBe(AdmissionState.Executing);
      });
    }
  }

  for (const [name, continuation, phase, kind, toolCount] of [
    ["RecallModel", Continuation.RecallModel, Phase.CallingLlm, MessageKind.ProviderDispatchReady, 0],
    ["FrameworkTools", Continuation.FrameworkTools, Phase.RecoveryTools, MessageKind.ToolDispatchReady, 2],
  ] as const) {
    it(`${name}: the continued session's barrier is in flight until its result, which settles it`, async () => {
      const core = await boot();
      const run = core.recovered({ status: ExecutionStatus.Active, phase });
      core.step(CONTINUE, run.exec, run.generation, run.revision, continuation, 0, core.request());
      const session = run.record.session;
      expect(run.record.inFlight).toBe(1);
      // A finish before the barrier's result waits for it.
      core.step(MessageKind.SessionFinished, run.exec, run.generation, session, SessionEnding.Cancelled);
      expect(core.effects()).toEqual([effect.DeferTerminal(run.exec, session)]);
      expect(core.apply(kind, run.exec, run.generation, session, run.revision, CommitOutcome.Committed, run.revision + 1, toolCount))
        .toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([effect.PostDeferredTerminal(run.exec, session)]);
      expect(run.record).toMatchObject({ revision: run.revision + 1, inFlight: 0, phase: Phase.Terminal });
    });
  }

  it("FailedTerminal with a failure: registers the waiter and begins the terminal commit with session 0", async () => {
    const core = await boot();
    const run = core.recovered({ status: ExecutionStatus.Active, phase: Phase.RecoveryResolvedFailed });
    const before = run.record;
    const request = core.request();
    expect(core.apply(CONTINUE, run.exec, run.generation, run.revision, Continuation.FailedTerminal, 1, request)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([
      effect.RegisterWaiter(run.exec, request),
      effect.SubmitTerminalCommit(run.exec, 0, run.revision),
    ]);
    expect(run.record).toEqual({ ...before, phase: Phase.Terminal, session: 0, waiters: 1 });
    expect(run.admission).toBe(AdmissionState.Terminalizing);
    expect(core.snapshot().nextSession).toBe(1);
  });

  it("FailedTerminal's commit carries session 0 and settles the execution as failed", async () => {
    const core = await boot();
    const run = core.recovered({ status: ExecutionStatus.Active, phase: Phase.RecoveryResolvedFailed });
    const request = core.request();
    core.step(CONTINUE, run.exec, run.generation, run.revision, Continuation.FailedTerminal, 1, request);
    expect(core.apply(MessageKind.TerminalCommitReady, run.exec, run.generation, 0, run.revision, OutcomeType.Failed, run.revision + 1))
      .toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([
      effect.DeliverOutcome(run.exec, OutcomeType.Failed),
      effect.ReleaseExecution(run.exec, run.generation),
    ]);
  });
});

describeDecisions("ContinueRecovered(exec, gen, expectedRevision, continuation, hasFailure, request): invalid", ({ it, boot }) => {
  for (const row of TABLE) {
    it(`${row.name} from every phase the table does not list: ContinuationInvalid, execution untouched`, async () => {
      const core = await boot({ agentsMax: 16, executionsMax: 16 });
      for (const phase of INSTALLABLE_PHASES) {
        if (row.phases.includes(phase)) continue;
        const status = phase === Phase.Preparing ? ExecutionStatus.Preparing
          : phase === Phase.Suspended ? ExecutionStatus.Suspended : ExecutionStatus.Active;
        const run = core.recovered({ status, phase, flags: row.required });
        const before = run.record;
        const request = core.request();
        expect(core.apply(CONTINUE, run.exec, run.generation, run.revision, row.continuation, 1, request)).toBe(ResultCode.ContinuationInvalid);
        invalidFact(core, run, ResultCode.ContinuationInvalid, request);
        expect(run.record).toEqual(before);
        expect(run.admission).toBe(AdmissionState.RecoveryRequired);
      }
    });
  }

  for (const row of TABLE.filter((candidate) => candidate.required !== 0 || candidate.forbidden !== 0)) {
    it(`${row.name} when its flag condition fails: ContinuationInvalid`, async () => {
      const core = await boot();
      for (const phase of row.phases) {
        // Required flag clear, or forbidden flag set.
        const run = core.recovered({ status: ExecutionStatus.Active, phase, flags: row.forbidden });
        const request = core.request();
        expect(core.apply(CONTINUE, run.exec, run.generation, run.revision, row.continuation, 0, request)).toBe(ResultCode.ContinuationInvalid);
        invalidFact(core, run, ResultCode.ContinuationInvalid, request);
        expect(run.record.phase).toBe(phase);
      }
    });
  }

  it("a continuation for an execution whose status is not Active (reinstalled as suspended): ContinuationInvalid", async () => {
    const core = await boot();
    const run = core.recovered({ status: ExecutionStatus.Suspended, phase: Phase.Suspended });
    const request = core.request();
    expect(core.apply(CONTINUE, run.exec, run.generation, run.revision, Continuation.FrameworkTools, 0, request)).toBe(ResultCode.ContinuationInvalid);
    invalidFact(core, run, ResultCode.ContinuationInvalid, request);
  });

  it("a preparing execution in a phase the table lists is still refused on its status: ContinuationInvalid", async () => {
    const core = await boot();
    const run = core.recovered({ status: ExecutionStatus.Preparing, phase: Phase.CallingLlm });
    const request = core.request();
    expect(core.apply(CONTINUE, run.exec, run.generation, run.revision, Continuation.RecallModel, 0, request)).toBe(ResultCode.ContinuationInvalid);
    invalidFact(core, run, ResultCode.ContinuationInvalid, request);
  });

  it("FailedTerminal without a failure: FailureRequired", async () => {
    const core = await boot();
    const run = core.recovered({ status: ExecutionStatus.Active, phase: Phase.RecoveryResolvedFailed });
    const before = run.record;
    const request = core.request();
    expect(core.apply(CONTINUE, run.exec, run.generation, run.revision, Continuation.FailedTerminal, 0, request)).toBe(ResultCode.FailureRequired);
    invalidFact(core, run, ResultCode.FailureRequired, request);
    expect(run.record).toEqual(before);
  });

  it("judges the phase before the failure: FailedTerminal without a failure from another phase is ContinuationInvalid", async () => {
    const core = await boot();
    const run = core.recovered({ status: ExecutionStatus.Active, phase: Phase.CallingLlm });
    const request = core.request();
    expect(core.apply(CONTINUE, run.exec, run.generation, run.revision, Continuation.FailedTerminal, 0, request)).toBe(ResultCode.ContinuationInvalid);
    invalidFact(core, run, ResultCode.ContinuationInvalid, request);
  });

  for (const [name, continuation, hasFailure] of [
    ["continuation 0", Continuation.None, 0],
    ["continuation 8", 8, 0],
    ["continuation 0xffffffff", 0xffff_ffff, 0],
    ["hasFailure 2", Continuation.RecallModel, 2],
  ] as const) {
    it(`${name}: ArgumentOutOfRange, judged before the status and the table`, async () => {
      const core = await boot();
      const run = core.recovered({ status: ExecutionStatus.Suspended, phase: Phase.Suspended });
      const before = run.record;
      const request = core.request();
      expect(core.apply(CONTINUE, run.exec, run.generation, run.revision, continuation, hasFailure, request)).toBe(ResultCode.ArgumentOutOfRange);
      invalidFact(core, run, ResultCode.ArgumentOutOfRange, request);
      expect(run.record).toEqual(before);
      expect(run.admission).toBe(AdmissionState.RecoveryRequired);
    });
  }

  it("refuses a stale message with the exec check's code or RevisionMustMatch, changing nothing", async () => {
    const core = await boot();
    const run = core.recovered({ status: ExecutionStatus.Active, phase: Phase.CallingLlm, revision: PREPARED_REVISION });
    const request = core.request();
    core.expectRefused(ResultCode.ExecutionSlotUnknown, request, CONTINUE, run.exec + 1, run.generation, run.revision, Continuation.RecallModel, 0, request);
    core.expectRefused(ResultCode.ExecutionGenerationMustMatch, request, CONTINUE, run.exec, run.generation + 1, run.revision, Continuation.RecallModel, 0, request);
    core.expectRefused(ResultCode.RevisionMustMatch, request, CONTINUE, run.exec, run.generation, run.revision - 1, Continuation.RecallModel, 0, request);
    // A malformed stale message is refused as stale, not judged.
    core.expectRefused(ResultCode.RevisionMustMatch, request, CONTINUE, run.exec, run.generation, run.revision - 1, 0, 9, request);
  });

  it("refuses a duplicate once the continuation started (the execution has a session) with SessionMustMatch", async () => {
    const core = await boot();
    const run = core.recovered({ status: ExecutionStatus.Active, phase: Phase.CallingLlm });
    core.step(CONTINUE, run.exec, run.generation, run.revision, Continuation.RecallModel, 0, core.request());
    const request = core.request();
    core.expectRefused(ResultCode.SessionMustMatch, request, CONTINUE, run.exec, run.generation, run.revision, Continuation.RecallModel, 0, request);
  });
});
