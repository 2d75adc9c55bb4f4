// Recovery (docs/core.md: RecoveryInstall, ContinueRecovered; SPEC §6.2;
// seeds: continue_recovered_on_event_loop, recovered_execution_state!,
// validate_recovered_continuation!).
// Recovery installs a durable unfinished execution without a session, then
// continues it at the point its saved facts name, validated against the
// durable phase. A stale recovery message only fails its request; an
// invalid continuation leaves the execution untouched for inspection
// (admission `RecoveryRequired`) and returns its fact. A continuation that
// resumes in a barrier phase counts the barrier in flight; requiring
// recovery of a session ends it (session 0). Preparation recovery and the
// continuations from the recovery phases are retired (decision 0022): their
// message kinds are unknown and a row in such a state is refused.

import { expect } from "vitest";
import {
  AdmissionState,
  CommitOutcome,
  Continuation,
  ExecutionFlag,
  ExecutionStatus,
  MessageKind,
  Phase,
  RecoveryScope,
  ResultCode,
  SessionEnding,
} from "../../assembly/abi.js";
import { describeDecisions, effect, PREPARED_REVISION, type Driver, type Run } from "./driver.js";

const INSTALL = MessageKind.RecoveryInstall;
/** Retired message kinds (decision 0022): 16 was RecoverPreparation, 17
 * InitialPreparationRecoveryReady. */
const RETIRED_KINDS = [16, 17] as const;
const CONTINUE = MessageKind.ContinueRecovered;

const INSTALLABLE_PHASES = [
  Phase.Preparing,
  Phase.CallingLlm,
  Phase.DispatchingTools,
  Phase.RecordingToolResults,
  Phase.Suspended,
  Phase.Resuming,
  Phase.RecoveryProviderCompleted,
  Phase.RecoveryTools,
  Phase.RecoveryToolsCompleted,
  Phase.RecoveryResolvedFailed,
];

describeDecisions("RecoveryInstall(agent, agentGen, revision, status, phase, flags, request)", ({ it, boot }) => {
  for (const [status, phase, admission] of [
    [ExecutionStatus.Active, Phase.RecoveryTools, AdmissionState.Executing],
    [ExecutionStatus.Active, Phase.Resuming, AdmissionState.Executing],
    [ExecutionStatus.Preparing, Phase.Preparing, AdmissionState.Executing],
    [ExecutionStatus.Suspended, Phase.Suspended, AdmissionState.Suspended],
  ] as const) {
    it(`installs status ${status} phase ${phase} without a session or waiter; admission ${admission === AdmissionState.Suspended ? "Suspended" : "Executing"}`, async () => {
      const core = await boot();
      const { agent, agentGeneration } = core.registerAgent();
      const request = core.request();
      expect(core.apply(INSTALL, agent, agentGeneration, 77, status, phase, ExecutionFlag.ApprovalGranted, request)).toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([effect.ExecutionInstalled(0, 1, request)]);
      expect(core.executionRecord(0)).toEqual({
        slot: 0,
        agentSlotPlusOne: agent + 1,
        revision: 77,
        session: 0,
        generation: 1,
        waiters: 0,
        inFlight: 0,
        status,
        phase,
        flags: ExecutionFlag.ApprovalGranted,
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
    ["flags with retired bit 4 (was Reservation)", ExecutionStatus.Active, Phase.CallingLlm, 4],
    ["flags with retired bit 8 (was FrameworkCallsPending)", ExecutionStatus.Active, Phase.CallingLlm, 8],
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
    core.expectRefused(
      ResultCode.AgentAlreadyAdmitted,
      request,
      INSTALL,
      run.agent,
      run.agentGeneration,
      5,
      ExecutionStatus.Active,
      Phase.CallingLlm,
      0,
      request,
    );
    core.expectRefused(
      ResultCode.ArgumentOutOfRange,
      request,
      INSTALL,
      run.agent,
      run.agentGeneration,
      5,
      ExecutionStatus.Terminal,
      Phase.CallingLlm,
      0,
      request,
    );
  });
});

describeDecisions("retired preparation recovery (16 RecoverPreparation, 17 InitialPreparationRecoveryReady)", ({ it, boot }) => {
  for (const kind of RETIRED_KINDS) {
    it(`message kind ${kind} is unknown: MessageKindUnknown, no effect, nothing changed, even for a preparing row`, async () => {
      const core = await boot();
      const run = core.recovered({ status: ExecutionStatus.Preparing, phase: Phase.Preparing });
      const before = core.snapshot();
      expect(core.apply(kind, run.exec, run.generation, run.revision, core.request(), 1, run.revision + 1, 9)).toBe(ResultCode.MessageKindUnknown);
      expect(core.effects()).toEqual([]);
      expect(core.snapshot()).toEqual(before);
    });
  }

  it("a preparing row (a state no store writes) is installed, holding its agent, and refused by ContinueRecovered: ContinuationInvalid", async () => {
    const core = await boot();
    const run = core.recovered({ status: ExecutionStatus.Preparing, phase: Phase.Preparing });
    const before = run.record;
    const request = core.request();
    expect(core.apply(CONTINUE, run.exec, run.generation, run.revision, Continuation.None, 0, request)).toBe(ResultCode.ContinuationInvalid);
    invalidFact(core, run, ResultCode.ContinuationInvalid, request);
    expect(run.record).toEqual(before);
    expect(run.admission).toBe(AdmissionState.RecoveryRequired);
  });
});

// -- ContinueRecovered ---------------------------------------------------------

/** The continuation table of docs/core.md: valid phases, the flag that must
 * be clear, the resume phase and the effects after *register waiter*. */
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
  {
    continuation: Continuation.FrameworkTools,
    name: "FrameworkTools",
    phases: [Phase.DispatchingTools, Phase.Resuming],
    required: 0,
    forbidden: 0,
    resume: Phase.DispatchingTools,
    barrier: "tool",
  },
  {
    continuation: Continuation.ApprovalRejection,
    name: "ApprovalRejection",
    phases: [Phase.Resuming],
    required: 0,
    forbidden: ExecutionFlag.ApprovalGranted,
    resume: Phase.Resuming,
    barrier: null,
  },
  {
    continuation: Continuation.RecallModel,
    name: "RecallModel",
    phases: [Phase.CallingLlm],
    required: 0,
    forbidden: 0,
    resume: Phase.CallingLlm,
    barrier: "provider",
  },
];

/** `None` (the facts name no continuation) and the retired numbers 2–5
 * (framework_calls, output, followup, failed_terminal) fit no phase. */
const FITTING_NONE = [
  [Continuation.None, "None"],
  [2, "retired 2 (was FrameworkCalls)"],
  [3, "retired 3 (was Output)"],
  [4, "retired 4 (was Followup)"],
  [5, "retired 5 (was FailedTerminal)"],
] as const;

function invalidFact(core: Driver, run: Run, code: ResultCode, request: number): void {
  expect(core.effects()).toEqual([
    effect.RecoveryRequired(run.exec, RecoveryScope.Execution, code),
    effect.FailWaiters(run.exec, code),
    effect.FailRequest(request, code),
  ]);
}

describeDecisions("ContinueRecovered(exec, gen, expectedRevision, continuation, retired, request): valid", ({ it, boot }) => {
  for (const row of TABLE) {
    for (const phase of row.phases) {
      it(`${row.name} from phase ${phase}: new session in phase ${row.resume}, admission Executing${row.barrier ? `, ${row.barrier} barrier` : ""}`, async () => {
        const core = await boot();
        const run = core.recovered({ status: ExecutionStatus.Active, phase, flags: row.required });
        const before = run.record;
        const request = core.request();
        // The retired fifth argument (was hasFailure) is ignored.
        expect(core.apply(CONTINUE, run.exec, run.generation, run.revision, row.continuation, 0xffff_ffff, request)).toBe(ResultCode.Ok);
        const session = 1;
        const barrier =
          row.barrier === "tool"
            ? [effect.SubmitToolBarrier(run.exec, session, run.revision)]
            : row.barrier === "provider"
              ? [effect.SubmitProviderBarrier(run.exec, session, run.revision)]
              : [];
        expect(core.effects()).toEqual([effect.RegisterWaiter(run.exec, request), effect.ContinueSession(run.exec, session, row.continuation), ...barrier]);
        expect(run.record).toEqual({ ...before, phase: row.resume, session, waiters: 1, inFlight: row.barrier ? 1 : 0 });
        expect(run.admission).toBe(AdmissionState.Executing);
      });
    }
  }

  for (const [name, continuation, phase, kind, toolCount] of [
    ["RecallModel", Continuation.RecallModel, Phase.CallingLlm, MessageKind.ProviderDispatchReady, 0],
    ["FrameworkTools", Continuation.FrameworkTools, Phase.DispatchingTools, MessageKind.ToolDispatchReady, 2],
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
      expect(core.apply(kind, run.exec, run.generation, session, run.revision, CommitOutcome.Committed, run.revision + 1, toolCount)).toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([effect.PostDeferredTerminal(run.exec, session)]);
      expect(run.record).toMatchObject({ revision: run.revision + 1, inFlight: 0, phase: Phase.Terminal });
    });
  }
});

describeDecisions("ContinueRecovered(exec, gen, expectedRevision, continuation, retired, request): invalid", ({ it, boot }) => {
  for (const row of TABLE) {
    it(`${row.name} from every phase the table does not list: ContinuationInvalid, execution untouched`, async () => {
      const core = await boot({ agentsMax: 16, executionsMax: 16 });
      for (const phase of INSTALLABLE_PHASES) {
        if (row.phases.includes(phase)) continue;
        const status = phase === Phase.Preparing ? ExecutionStatus.Preparing : phase === Phase.Suspended ? ExecutionStatus.Suspended : ExecutionStatus.Active;
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

  for (const [continuation, name] of FITTING_NONE) {
    it(`${name} from every installable phase: ContinuationInvalid, execution untouched`, async () => {
      const core = await boot({ agentsMax: 16, executionsMax: 16 });
      for (const phase of INSTALLABLE_PHASES) {
        const status = phase === Phase.Preparing ? ExecutionStatus.Preparing : phase === Phase.Suspended ? ExecutionStatus.Suspended : ExecutionStatus.Active;
        const run = core.recovered({ status, phase });
        const before = run.record;
        const request = core.request();
        expect(core.apply(CONTINUE, run.exec, run.generation, run.revision, continuation, 0, request)).toBe(ResultCode.ContinuationInvalid);
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

  for (const [name, continuation, hasFailure] of [
    ["continuation 8", 8, 0],
    ["continuation 0xffffffff", 0xffff_ffff, 0],
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
    core.expectRefused(
      ResultCode.ExecutionGenerationMustMatch,
      request,
      CONTINUE,
      run.exec,
      run.generation + 1,
      run.revision,
      Continuation.RecallModel,
      0,
      request,
    );
    core.expectRefused(ResultCode.RevisionMustMatch, request, CONTINUE, run.exec, run.generation, run.revision - 1, Continuation.RecallModel, 0, request);
    // A malformed stale message is refused as stale, not judged.
    core.expectRefused(ResultCode.RevisionMustMatch, request, CONTINUE, run.exec, run.generation, run.revision - 1, 9, 0, request);
  });

  it("refuses a duplicate once the continuation started (the execution has a session) with SessionMustMatch", async () => {
    const core = await boot();
    const run = core.recovered({ status: ExecutionStatus.Active, phase: Phase.CallingLlm });
    core.step(CONTINUE, run.exec, run.generation, run.revision, Continuation.RecallModel, 0, core.request());
    const request = core.request();
    core.expectRefused(ResultCode.SessionMustMatch, request, CONTINUE, run.exec, run.generation, run.revision, Continuation.RecallModel, 0, request);
  });
});
