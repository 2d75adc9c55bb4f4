// The terminal durable barrier (docs/core.md: SessionFinished,
// DeferredTerminal, TerminalCommitReady; seeds: finish_on_event_loop,
// resume_deferred_terminal_on_event_loop, apply_terminal_commit_on_event_loop,
// handle_terminal_commit_error_on_event_loop, SPEC §6.3). A finished
// session commits its terminal only when quiescent — a barrier still being
// written counts as in flight (docs/decisions/0005) — otherwise the terminal
// is deferred (admission `Cancelling` for a cancel or timeout, else
// `Terminalizing`) until the last operation settles. The commit's result
// then settles the execution by outcome type: released and freed for
// completed / failed / handed_off / coordination_wait, kept as suspended,
// released (reservations) or kept for recovery when the store failed;
// requiring recovery ends the session (session 0).

import { expect } from "vitest";
import {
  AdmissionState,
  ExecutionFlag,
  ExecutionStatus,
  MessageKind,
  OutcomeType,
  Phase,
  RecoveryScope,
  Submission,
  ResultCode,
  SessionEnding,
  SessionEventKind,
} from "../../assembly/abi.js";
import { describeDecisions, effect, type Driver, type Run } from "./driver.js";

const FINISHED = MessageKind.SessionFinished;
const DEFERRED = MessageKind.DeferredTerminal;
const COMMIT = MessageKind.TerminalCommitReady;

const ENDINGS = [
  [SessionEnding.Completed, "Completed", AdmissionState.Terminalizing],
  [SessionEnding.Failed, "Failed", AdmissionState.Terminalizing],
  [SessionEnding.Suspended, "Suspended", AdmissionState.Terminalizing],
  [SessionEnding.HandedOff, "HandedOff", AdmissionState.Terminalizing],
  [SessionEnding.Cancelled, "Cancelled", AdmissionState.Cancelling],
  [SessionEnding.TimedOut, "TimedOut", AdmissionState.Cancelling],
  [SessionEnding.CoordinationWait, "CoordinationWait", AdmissionState.Terminalizing],
] as const;

/** A live, quiescent session in each phase `finish` is defined from. */
const FINISHABLE: ReadonlyArray<readonly [string, (core: Driver) => Run]> = [
  ["calling_llm", (core) => core.modelAnswered()],
  // Every tool settled; the batch not yet reported complete.
  ["dispatching_tools", (core) => core.toolsSettled()],
  ["recording_tool_results", (core) => core.recordingToolResults()],
  ["suspended", (core) => core.modelAnswered().event(SessionEventKind.ApprovalRequired)],
  ["resuming", (core) => core.resuming().commitResume(0)],
];

describeDecisions("SessionFinished(exec, gen, session, ending)", ({ it, boot }) => {
  for (const [name, walk] of FINISHABLE) {
    it(`quiescent in ${name}: phase Terminal, admission Terminalizing, terminal commit submitted`, async () => {
      const core = await boot();
      const run = walk(core);
      const before = run.record;
      expect(core.apply(FINISHED, run.exec, run.generation, run.session, SessionEnding.Completed)).toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([effect.SubmitTerminalCommit(run.exec, run.session, run.revision)]);
      expect(run.record).toEqual({ ...before, phase: Phase.Terminal });
      expect(run.admission).toBe(AdmissionState.Terminalizing);
    });
  }

  for (const [ending, name, waitState] of ENDINGS) {
    it(`with an operation in flight, ending ${name}: defers the terminal, admission ${waitState === AdmissionState.Cancelling ? "Cancelling" : "Terminalizing"}`, async () => {
      const core = await boot();
      const run = core.callingModel();
      const before = run.record;
      expect(core.apply(FINISHED, run.exec, run.generation, run.session, ending)).toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([effect.DeferTerminal(run.exec, run.session)]);
      expect(run.record).toEqual({ ...before, phase: Phase.Terminal, flags: ExecutionFlag.TerminalDeferred });
      expect(run.admission).toBe(waitState);
    });
  }

  const WRITING: ReadonlyArray<readonly [string, (core: Driver) => Run]> = [
    ["the provider barrier (calling_llm)", (core) => core.installed()],
    ["the tool barrier (dispatching_tools)", (core) => core.dispatchingTools()],
    ["the provider barrier after tool results (calling_llm)", (core) => core.recordingToolResults().event(SessionEventKind.StateCompleted)],
  ];
  for (const [name, walk] of WRITING) {
    for (const [ending, endingName, waitState] of [ENDINGS[0], ENDINGS[4]] as const) {
      it(`with only ${name} being written, ending ${endingName}: the barrier is in flight, the terminal is deferred`, async () => {
        const core = await boot();
        const run = walk(core);
        const before = run.record;
        expect(before.inFlight).toBe(1);
        expect(core.apply(FINISHED, run.exec, run.generation, run.session, ending)).toBe(ResultCode.Ok);
        expect(core.effects()).toEqual([effect.DeferTerminal(run.exec, run.session)]);
        expect(run.record).toEqual({ ...before, phase: Phase.Terminal, flags: ExecutionFlag.TerminalDeferred });
        expect(run.admission).toBe(waitState);
      });
    }
  }

  it("drops a finish for an unknown slot or another generation", async () => {
    const core = await boot();
    const run = core.modelAnswered();
    core.expectDropped(FINISHED, ResultCode.ExecutionSlotUnknown, run.exec + 1, run.generation, run.session, SessionEnding.Completed);
    core.expectDropped(FINISHED, ResultCode.ExecutionGenerationMustMatch, run.exec, run.generation + 1, run.session, SessionEnding.Completed);
  });

  it("drops a finish of another session (SessionMustMatch), before judging the ending", async () => {
    const core = await boot();
    const run = core.modelAnswered();
    core.expectDropped(FINISHED, ResultCode.SessionMustMatch, run.exec, run.generation, run.session + 1, SessionEnding.Completed);
    core.expectDropped(FINISHED, ResultCode.SessionMustMatch, run.exec, run.generation, run.session + 1, 0);
  });

  it("drops a finish naming session 0, which names no live session (SessionMustMatch)", async () => {
    const core = await boot();
    const suspended = core.suspended();
    core.expectDropped(FINISHED, ResultCode.SessionMustMatch, suspended.exec, suspended.generation, 0, SessionEnding.Completed);
    const recovered = core.recovered({ status: ExecutionStatus.Active, phase: Phase.CallingLlm });
    core.expectDropped(FINISHED, ResultCode.SessionMustMatch, recovered.exec, recovered.generation, 0, SessionEnding.Failed);
  });

  for (const ending of [SessionEnding.None, 8, 0xffff_ffff]) {
    it(`drops ending ${ending} (outside 1–7) with ArgumentOutOfRange`, async () => {
      const core = await boot();
      const run = core.modelAnswered();
      core.expectDropped(FINISHED, ResultCode.ArgumentOutOfRange, run.exec, run.generation, run.session, ending);
    });
  }

  it("drops a second finish once the phase is Terminal (TransitionUndefined)", async () => {
    const core = await boot();
    const run = core.callingModel().finish(SessionEnding.Completed);
    core.expectDropped(FINISHED, ResultCode.TransitionUndefined, run.exec, run.generation, run.session, SessionEnding.Failed);
  });
});

describeDecisions("DeferredTerminal(exec, gen, session)", ({ it, boot }) => {
  /** Finished with `toolCount` tools in flight, then `settled` of them settled. */
  function deferred(core: Driver, ending: SessionEnding, toolCount: number, settled: number): Run {
    const run = core.runningTools(toolCount).finish(ending);
    for (let index = 0; index < settled; index += 1) run.settle();
    return run;
  }

  for (const [ending, name] of [
    [SessionEnding.Completed, "Terminalizing"],
    [SessionEnding.Cancelled, "Cancelling"],
  ] as const) {
    it(`once quiescent: clears TerminalDeferred, admission ${name} → Terminalizing, terminal commit submitted`, async () => {
      const core = await boot();
      const run = deferred(core, ending, 2, 2);
      const before = run.record;
      expect(core.apply(DEFERRED, run.exec, run.generation, run.session)).toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([effect.SubmitTerminalCommit(run.exec, run.session, run.revision)]);
      expect(run.record).toEqual({ ...before, flags: 0 });
      expect(run.admission).toBe(AdmissionState.Terminalizing);
    });
  }

  it("drops for an unknown slot or another generation", async () => {
    const core = await boot();
    const run = deferred(core, SessionEnding.Completed, 1, 1);
    core.expectDropped(DEFERRED, ResultCode.ExecutionSlotUnknown, run.exec + 1, run.generation, run.session);
    core.expectDropped(DEFERRED, ResultCode.ExecutionGenerationMustMatch, run.exec, run.generation + 1, run.session);
  });

  it("drops for another session or session 0 (SessionMustMatch)", async () => {
    const core = await boot();
    const run = deferred(core, SessionEnding.Completed, 1, 1);
    core.expectDropped(DEFERRED, ResultCode.SessionMustMatch, run.exec, run.generation, run.session + 1);
    core.expectDropped(DEFERRED, ResultCode.SessionMustMatch, run.exec, run.generation, 0);
  });

  it("drops when the terminal was never deferred (TerminalNotDeferred), even with operations in flight", async () => {
    const core = await boot();
    const quiescent = core.terminalizing();
    core.expectDropped(DEFERRED, ResultCode.TerminalNotDeferred, quiescent.exec, quiescent.generation, quiescent.session);
    const running = core.callingModel();
    core.expectDropped(DEFERRED, ResultCode.TerminalNotDeferred, running.exec, running.generation, running.session);
  });

  it("drops a duplicate after the deferred terminal was resumed (TerminalNotDeferred)", async () => {
    const core = await boot();
    const run = deferred(core, SessionEnding.Completed, 1, 1);
    core.step(DEFERRED, run.exec, run.generation, run.session);
    core.expectDropped(DEFERRED, ResultCode.TerminalNotDeferred, run.exec, run.generation, run.session);
  });

  it("drops while an operation is still in flight (NotQuiescent)", async () => {
    const core = await boot();
    const run = deferred(core, SessionEnding.TimedOut, 2, 1);
    core.expectDropped(DEFERRED, ResultCode.NotQuiescent, run.exec, run.generation, run.session);
    expect(run.admission).toBe(AdmissionState.Cancelling);
  });
});

describeDecisions("TerminalCommitReady(exec, gen, session, expectedRevision, outcome, newRevision)", ({ it, boot }) => {
  const RELEASED = [
    [OutcomeType.Completed, "Completed"],
    [OutcomeType.Failed, "Failed"],
    [OutcomeType.HandedOff, "HandedOff"],
    [OutcomeType.CoordinationWait, "CoordinationWait"],
  ] as const;

  for (const [outcome, name] of RELEASED) {
    it(`${name}: delivers the outcome, releases the admission, frees the slot at the next generation`, async () => {
      const core = await boot();
      const run = core.terminalizing();
      run.attachWaiter();
      expect(core.apply(COMMIT, run.exec, run.generation, run.session, run.revision, outcome, run.revision + 1)).toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([effect.DeliverOutcome(run.exec, outcome), effect.ReleaseExecution(run.exec, run.generation)]);
      expect(run.record).toEqual({
        slot: run.exec,
        agentSlotPlusOne: 0,
        revision: 0,
        session: 0,
        generation: run.generation + 1,
        waiters: 0,
        inFlight: 0,
        status: 0,
        phase: 0,
        flags: 0,
      });
      expect(run.agentRecord).toMatchObject({ admissionState: AdmissionState.None, ownerToken: 0, executionSlotPlusOne: 0 });
      expect(core.snapshot()).toMatchObject({ liveExecutions: 0, admittingAgents: 0 });
    });
  }

  it("after the release, the old handle is unknown and, once the slot is reused, of another generation", async () => {
    const core = await boot();
    const run = core.terminalizing().commitTerminal(OutcomeType.Completed);
    core.expectDropped(COMMIT, ResultCode.ExecutionSlotUnknown, run.exec, run.generation, run.session, run.revision, OutcomeType.Completed, run.revision + 1);
    const next = core.installed({ handle: { agent: run.agent, agentGeneration: run.agentGeneration } });
    expect([next.exec, next.generation]).toEqual([run.exec, run.generation + 1]);
    core.expectDropped(
      COMMIT,
      ResultCode.ExecutionGenerationMustMatch,
      run.exec,
      run.generation,
      run.session,
      run.revision,
      OutcomeType.Completed,
      run.revision + 1,
    );
  });

  it("Suspended: keeps the admission as Suspended, ends the session, keeps the waiters pending", async () => {
    const core = await boot();
    const run = core.modelAnswered().event(SessionEventKind.ApprovalRequired).finish(SessionEnding.Suspended);
    run.attachWaiter();
    const before = run.record;
    expect(core.apply(COMMIT, run.exec, run.generation, run.session, run.revision, OutcomeType.Suspended, run.revision + 1)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.DeliverOutcome(run.exec, OutcomeType.Suspended)]);
    expect(run.record).toEqual({
      ...before,
      revision: run.revision + 1,
      session: 0,
      status: ExecutionStatus.Suspended,
      phase: Phase.Suspended,
      waiters: 2,
    });
    expect(run.admission).toBe(AdmissionState.Suspended);
    expect(core.snapshot().liveExecutions).toBe(1);
  });

  it("StoreFailed: keeps the execution for recovery and fails its waiters, returns Ok", async () => {
    const core = await boot();
    const run = core.terminalizing();
    const before = run.record;
    expect(core.apply(COMMIT, run.exec, run.generation, run.session, run.revision, OutcomeType.StoreFailed, 0)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([
      effect.RecoveryRequired(run.exec, RecoveryScope.Execution, ResultCode.StoreFailed),
      effect.FailWaiters(run.exec, ResultCode.StoreFailed),
    ]);
    // The record stays for recovery; the waiters and the session are gone.
    expect(run.record).toEqual({ ...before, waiters: 0, session: 0 });
    expect(run.admission).toBe(AdmissionState.RecoveryRequired);
  });

  it("StoreFailed keeps every execution for recovery: no reservation is released (retired, decision 0022)", async () => {
    const core = await boot();
    // The retired flags argument of the preparation once carried Reservation (4).
    const run = core.terminalizing(SessionEnding.Completed, { flags: 4 });
    run.attachWaiter();
    expect(core.apply(COMMIT, run.exec, run.generation, run.session, run.revision, OutcomeType.StoreFailed, 0)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([
      effect.RecoveryRequired(run.exec, RecoveryScope.Execution, ResultCode.StoreFailed),
      effect.FailWaiters(run.exec, ResultCode.StoreFailed),
    ]);
    expect(run.admission).toBe(AdmissionState.RecoveryRequired);
  });

  it("drops a commit naming session 0, even when recovery left the execution in phase Terminal with session 0 (SessionMustMatch)", async () => {
    const core = await boot();
    const run = core.terminalizing();
    core.step(MessageKind.SubmissionRefused, Submission.TerminalCommit, run.exec, run.generation, run.session, 0);
    expect(run.record).toMatchObject({ session: 0, phase: Phase.Terminal });
    core.expectDropped(COMMIT, ResultCode.SessionMustMatch, run.exec, run.generation, 0, run.revision, OutcomeType.Completed, run.revision + 1);
  });

  it("judges StoreFailed before the revision increase", async () => {
    const core = await boot();
    const run = core.terminalizing();
    expect(core.apply(COMMIT, run.exec, run.generation, run.session, run.revision, OutcomeType.StoreFailed, run.revision)).toBe(ResultCode.Ok);
    expect(core.effects()[0]).toEqual(effect.RecoveryRequired(run.exec, RecoveryScope.Execution, ResultCode.StoreFailed));
  });

  for (const outcome of [OutcomeType.None, 7, 0xffff_ffff]) {
    it(`an unknown outcome (${outcome}) keeps the execution for recovery and returns OutcomeUnknown`, async () => {
      const core = await boot();
      const run = core.terminalizing();
      const before = run.record;
      expect(core.apply(COMMIT, run.exec, run.generation, run.session, run.revision, outcome, run.revision + 1)).toBe(ResultCode.OutcomeUnknown);
      expect(core.effects()).toEqual([
        effect.RecoveryRequired(run.exec, RecoveryScope.Execution, ResultCode.OutcomeUnknown),
        effect.FailWaiters(run.exec, ResultCode.OutcomeUnknown),
      ]);
      expect(run.record).toEqual({ ...before, waiters: 0, session: 0 });
      expect(run.admission).toBe(AdmissionState.RecoveryRequired);
    });
  }

  for (const [name, delta] of [
    ["equal to", 0],
    ["below", -1],
  ] as const) {
    it(`a new revision ${name} the current one keeps the execution for recovery and returns RevisionMustIncrease`, async () => {
      const core = await boot();
      const run = core.terminalizing();
      const before = run.record;
      expect(core.apply(COMMIT, run.exec, run.generation, run.session, run.revision, OutcomeType.Completed, run.revision + delta)).toBe(
        ResultCode.RevisionMustIncrease,
      );
      expect(core.effects()).toEqual([
        effect.RecoveryRequired(run.exec, RecoveryScope.Execution, ResultCode.RevisionMustIncrease),
        effect.FailWaiters(run.exec, ResultCode.RevisionMustIncrease),
      ]);
      expect(run.record).toEqual({ ...before, waiters: 0, session: 0 });
      expect(run.admission).toBe(AdmissionState.RecoveryRequired);
    });
  }

  it("drops a result for an unknown slot or another generation", async () => {
    const core = await boot();
    const run = core.terminalizing();
    core.expectDropped(
      COMMIT,
      ResultCode.ExecutionSlotUnknown,
      run.exec + 1,
      run.generation,
      run.session,
      run.revision,
      OutcomeType.Completed,
      run.revision + 1,
    );
    core.expectDropped(
      COMMIT,
      ResultCode.ExecutionGenerationMustMatch,
      run.exec,
      run.generation + 1,
      run.session,
      run.revision,
      OutcomeType.Completed,
      run.revision + 1,
    );
  });

  it("drops a result computed against another revision (RevisionMustMatch), before the session check", async () => {
    const core = await boot();
    const run = core.terminalizing();
    core.expectDropped(
      COMMIT,
      ResultCode.RevisionMustMatch,
      run.exec,
      run.generation,
      run.session + 1,
      run.revision + 1,
      OutcomeType.Completed,
      run.revision + 2,
    );
  });

  it("drops a result of another session (SessionMustMatch), before the phase check", async () => {
    const core = await boot();
    const run = core.modelAnswered();
    core.expectDropped(COMMIT, ResultCode.SessionMustMatch, run.exec, run.generation, run.session + 1, run.revision, OutcomeType.Completed, run.revision + 1);
  });

  it("drops a result for an execution that is not in phase Terminal (PhaseMustMatch)", async () => {
    const core = await boot();
    const run = core.modelAnswered();
    core.expectDropped(COMMIT, ResultCode.PhaseMustMatch, run.exec, run.generation, run.session, run.revision, OutcomeType.Completed, run.revision + 1);
  });

  it("drops a duplicate of the suspension commit (its revision moved on and its session is gone)", async () => {
    const core = await boot();
    const run = core.modelAnswered().event(SessionEventKind.ApprovalRequired).finish(SessionEnding.Suspended);
    const { session, revision } = run;
    run.commitTerminal(OutcomeType.Suspended);
    core.expectDropped(COMMIT, ResultCode.RevisionMustMatch, run.exec, run.generation, session, revision, OutcomeType.Suspended, revision + 1);
    core.expectDropped(COMMIT, ResultCode.SessionMustMatch, run.exec, run.generation, session, run.revision, OutcomeType.Suspended, run.revision + 1);
  });

  it("commits a deferred terminal once it was resumed (the whole deferred path)", async () => {
    const core = await boot();
    const run = core.runningTools(1).finish(SessionEnding.Cancelled);
    run.settle();
    expect(core.effects()).toEqual([effect.PostDeferredTerminal(run.exec, run.session)]);
    core.step(DEFERRED, run.exec, run.generation, run.session);
    expect(core.apply(COMMIT, run.exec, run.generation, run.session, run.revision, OutcomeType.Failed, run.revision + 1)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.DeliverOutcome(run.exec, OutcomeType.Failed), effect.ReleaseExecution(run.exec, run.generation)]);
  });
});
