// Requests that observe or unwind (docs/core.md: AttachWaiter,
// SubmissionRefused; SPEC §3 "Every offload submission is bounded"; seeds:
// the `rescue` branches of begin_start_on_event_loop,
// begin_resume_on_event_loop, start_initial_preparation_recovery_on_event_loop,
// submit_terminal_operation and the dispatch preparations). A refused
// submission unwinds exactly what the submitting decision did: an admission
// nothing was submitted for is released (or put back to `Suspended`), a
// barrier that was not written is no longer in flight and fails the
// session's setup (only settles, when the session finished meanwhile), and
// a terminal commit that may or may not have been written marks the
// execution for recovery.

import { expect } from "vitest";
import {
  AdmissionState,
  ExecutionFlag,
  ExecutionStatus,
  MessageKind,
  OutcomeType,
  Phase,
  RecoveryScope,
  ResultCode,
  SessionEnding,
  SessionEventKind,
  SetupFailure,
  Submission,
} from "../../assembly/abi.js";
import { changedExecution, describeDecisions, effect, type Driver } from "./driver.js";

const REFUSED = MessageKind.SubmissionRefused;

describeDecisions("AttachWaiter(exec, gen, request)", ({ it, boot }) => {
  it("registers one more waiter on a live execution", async () => {
    const core = await boot();
    const run = core.callingModel();
    const request = core.request();
    expect(core.apply(MessageKind.AttachWaiter, run.exec, run.generation, request)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.RegisterWaiter(run.exec, request)]);
    expect(run.record.waiters).toBe(2);
  });

  it("registers a waiter on a suspended execution and on one installed by recovery", async () => {
    const core = await boot();
    const suspended = core.suspended();
    const recovered = core.recovered({ status: ExecutionStatus.Active, phase: Phase.RecoveryTools });
    for (const run of [suspended, recovered]) {
      const waiters = run.record.waiters;
      const request = core.request();
      expect(core.apply(MessageKind.AttachWaiter, run.exec, run.generation, request)).toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([effect.RegisterWaiter(run.exec, request)]);
      expect(run.record.waiters).toBe(waiters + 1);
    }
  });

  it("refuses an unknown, freed or reused slot with the exec check's code", async () => {
    const core = await boot();
    const ended = core.terminalizing().commitTerminal(OutcomeType.Completed);
    const request = core.request();
    core.expectRefused(ResultCode.ExecutionSlotUnknown, request, MessageKind.AttachWaiter, 3, 1, request);
    core.expectRefused(ResultCode.ExecutionSlotUnknown, request, MessageKind.AttachWaiter, ended.exec, ended.generation, request);
    core.installed();
    core.expectRefused(ResultCode.ExecutionGenerationMustMatch, request, MessageKind.AttachWaiter, ended.exec, ended.generation, request);
  });
});

describeDecisions("SubmissionRefused(submission, slot, gen, tokenOrSession, request)", ({ it, boot }) => {
  // 5 is retired (was PreparationRecovery; decision 0022).
  for (const submission of [Submission.None, 5, 7, 0xffff_ffff]) {
    it(`drops submission ${submission} (not 1–4 or 6) with ArgumentOutOfRange`, async () => {
      const core = await boot();
      const admission = core.admitted();
      core.expectDropped(REFUSED, ResultCode.ArgumentOutOfRange, submission, admission.agent, admission.agentGeneration, admission.token, admission.request);
    });
  }

  // -- Prepare (agent, token) --------------------------------------------------

  it("Prepare: releases the admission and its reservation, fails the start with OffloadFull", async () => {
    const core = await boot();
    const admission = core.admitted();
    expect(core.apply(REFUSED, Submission.Prepare, admission.agent, admission.agentGeneration, admission.token, admission.request)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.FailRequest(admission.request, ResultCode.OffloadFull)]);
    expect(core.agentRecord(admission.agent)).toMatchObject({ admissionState: AdmissionState.None, ownerToken: 0, executionSlotPlusOne: 0 });
    expect(core.snapshot()).toMatchObject({ admittingAgents: 0, liveExecutions: 0 });
    core.admitted(admission);
  });

  it("Prepare: drops for an unknown agent or another generation", async () => {
    const core = await boot();
    const admission = core.admitted();
    core.expectDropped(
      REFUSED,
      ResultCode.AgentSlotUnknown,
      Submission.Prepare,
      admission.agent + 1,
      admission.agentGeneration,
      admission.token,
      admission.request,
    );
    core.expectDropped(
      REFUSED,
      ResultCode.AgentGenerationMustMatch,
      Submission.Prepare,
      admission.agent,
      admission.agentGeneration + 1,
      admission.token,
      admission.request,
    );
  });

  it("Prepare: drops with OwnerTokenMustMatch for another token or an agent no longer admitting", async () => {
    const core = await boot();
    const admission = core.admitted();
    core.expectDropped(
      REFUSED,
      ResultCode.OwnerTokenMustMatch,
      Submission.Prepare,
      admission.agent,
      admission.agentGeneration,
      admission.token + 1,
      admission.request,
    );
    const run = core.installed();
    core.expectDropped(REFUSED, ResultCode.OwnerTokenMustMatch, Submission.Prepare, run.agent, run.agentGeneration, 2, run.request);
    const idle = core.registerAgent();
    core.expectDropped(REFUSED, ResultCode.OwnerTokenMustMatch, Submission.Prepare, idle.agent, idle.agentGeneration, 0, core.request());
  });

  // -- ProviderBarrier / ToolBarrier (exec, session) ------------------------------

  it("ProviderBarrier: settles the barrier, fails the session's provider setup and changes nothing else", async () => {
    const core = await boot();
    const run = core.installed();
    const before = core.snapshot();
    expect(core.apply(REFUSED, Submission.ProviderBarrier, run.exec, run.generation, run.session, 0)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.SetupFailed(run.exec, run.session, SetupFailure.Provider)]);
    expect(core.snapshot()).toEqual(changedExecution(before, run.exec, { inFlight: 0 }));
  });

  it("ToolBarrier: settles the barrier, fails the session's tool setup and changes nothing else", async () => {
    const core = await boot();
    const run = core.dispatchingTools();
    const before = core.snapshot();
    expect(core.apply(REFUSED, Submission.ToolBarrier, run.exec, run.generation, run.session, 0)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.SetupFailed(run.exec, run.session, SetupFailure.Tool)]);
    expect(core.snapshot()).toEqual(changedExecution(before, run.exec, { inFlight: 0 }));
  });

  it("ToolBarrier with the model call still in flight: settles only the barrier", async () => {
    const core = await boot();
    const run = core.callingModel().event(SessionEventKind.LlmCompletedWithTools);
    const before = core.snapshot();
    expect(core.apply(REFUSED, Submission.ToolBarrier, run.exec, run.generation, run.session, 0)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.SetupFailed(run.exec, run.session, SetupFailure.Tool)]);
    expect(core.snapshot()).toEqual(changedExecution(before, run.exec, { inFlight: 1 }));
  });

  for (const [submission, name, walk] of [
    [Submission.ProviderBarrier, "ProviderBarrier", (core: Driver) => core.installed()],
    [Submission.ToolBarrier, "ToolBarrier", (core: Driver) => core.dispatchingTools()],
  ] as const) {
    it(`${name} after the session finished (phase Terminal): settles the barrier and posts the deferred terminal, no setup to fail`, async () => {
      const core = await boot();
      const run = walk(core).finish(SessionEnding.Cancelled);
      const before = core.snapshot();
      expect(core.apply(REFUSED, submission, run.exec, run.generation, run.session, 0)).toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([effect.PostDeferredTerminal(run.exec, run.session)]);
      expect(core.snapshot()).toEqual(changedExecution(before, run.exec, { inFlight: 0 }));
      // The terminal goes ahead at the unchanged revision.
      expect(core.apply(MessageKind.DeferredTerminal, run.exec, run.generation, run.session)).toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([effect.SubmitTerminalCommit(run.exec, run.session, run.revision)]);
    });

    it(`${name}: drops with nothing in flight (InFlightUnderflow), after the phase check`, async () => {
      const core = await boot();
      const quiescent = core.terminalizing();
      core.expectDropped(REFUSED, ResultCode.InFlightUnderflow, submission, quiescent.exec, quiescent.generation, quiescent.session, 0);
      const run = walk(core);
      core.step(REFUSED, submission, run.exec, run.generation, run.session, 0);
      core.expectDropped(REFUSED, ResultCode.InFlightUnderflow, submission, run.exec, run.generation, run.session, 0);
      const recording = core.recordingToolResults();
      core.expectDropped(REFUSED, ResultCode.PhaseMustMatch, submission, recording.exec, recording.generation, recording.session, 0);
    });
  }

  it("a barrier refused after the finish with other operations in flight only settles it; the terminal stays deferred", async () => {
    const core = await boot();
    const run = core.callingModel().event(SessionEventKind.LlmCompletedWithTools).finish(SessionEnding.TimedOut);
    const before = core.snapshot();
    expect(core.apply(REFUSED, Submission.ToolBarrier, run.exec, run.generation, run.session, 0)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([]);
    expect(core.snapshot()).toEqual(changedExecution(before, run.exec, { inFlight: 1 }));
    expect(run.record.flags).toBe(ExecutionFlag.TerminalDeferred);
  });

  it("barriers: drop for an unknown slot, another generation or another session", async () => {
    const core = await boot();
    const run = core.installed();
    for (const submission of [Submission.ProviderBarrier, Submission.ToolBarrier]) {
      core.expectDropped(REFUSED, ResultCode.ExecutionSlotUnknown, submission, run.exec + 1, run.generation, run.session, 0);
      core.expectDropped(REFUSED, ResultCode.ExecutionGenerationMustMatch, submission, run.exec, run.generation + 1, run.session, 0);
      core.expectDropped(REFUSED, ResultCode.SessionMustMatch, submission, run.exec, run.generation, run.session + 1, 0);
    }
  });

  it("barriers: drop for session 0, which names no live session (SessionMustMatch)", async () => {
    const core = await boot();
    const run = core.recovered({ status: ExecutionStatus.Active, phase: Phase.CallingLlm });
    core.expectDropped(REFUSED, ResultCode.SessionMustMatch, Submission.ProviderBarrier, run.exec, run.generation, 0, 0);
    const tools = core.recovered({ status: ExecutionStatus.Active, phase: Phase.DispatchingTools });
    core.expectDropped(REFUSED, ResultCode.SessionMustMatch, Submission.ToolBarrier, tools.exec, tools.generation, 0, 0);
  });

  it("barriers: drop when the execution left the barrier's phase (PhaseMustMatch)", async () => {
    const core = await boot();
    const run = core.dispatchingTools();
    core.expectDropped(REFUSED, ResultCode.PhaseMustMatch, Submission.ProviderBarrier, run.exec, run.generation, run.session, 0);
    const calling = core.installed();
    core.expectDropped(REFUSED, ResultCode.PhaseMustMatch, Submission.ToolBarrier, calling.exec, calling.generation, calling.session, 0);
  });

  // -- ApprovalCommit (exec) --------------------------------------------------------

  it("ApprovalCommit: puts the admission back to Suspended and fails the resume with OffloadFull", async () => {
    const core = await boot();
    const run = core.resuming();
    const before = run.record;
    // tokenOrSession is not read for this submission.
    expect(core.apply(REFUSED, Submission.ApprovalCommit, run.exec, run.generation, 0xdead, run.resumeRequest)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.FailRequest(run.resumeRequest, ResultCode.OffloadFull)]);
    expect(run.admission).toBe(AdmissionState.Suspended);
    expect(run.record).toEqual(before);
    // Resume works again.
    run.resume();
    expect(run.admission).toBe(AdmissionState.Resuming);
  });

  it("ApprovalCommit: drops for an unknown slot, another generation, or an admission not Resuming", async () => {
    const core = await boot();
    const run = core.suspended();
    core.expectDropped(REFUSED, ResultCode.ExecutionSlotUnknown, Submission.ApprovalCommit, run.exec + 1, run.generation, 0, 0);
    core.expectDropped(REFUSED, ResultCode.ExecutionGenerationMustMatch, Submission.ApprovalCommit, run.exec, run.generation + 1, 0, 0);
    core.expectDropped(REFUSED, ResultCode.AdmissionStateMustMatch, Submission.ApprovalCommit, run.exec, run.generation, 0, 0);
  });

  // -- TerminalCommit (exec, session) ----------------------------------------------

  it("TerminalCommit: marks the execution for recovery and fails its waiters with OffloadFull", async () => {
    const core = await boot();
    const run = core.terminalizing();
    const before = run.record;
    expect(core.apply(REFUSED, Submission.TerminalCommit, run.exec, run.generation, run.session, 0)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([
      effect.RecoveryRequired(run.exec, RecoveryScope.Execution, ResultCode.OffloadFull),
      effect.FailWaiters(run.exec, ResultCode.OffloadFull),
    ]);
    // The live session is over.
    expect(run.record).toEqual({ ...before, waiters: 0, session: 0 });
    expect(run.admission).toBe(AdmissionState.RecoveryRequired);
  });

  it("TerminalCommit: drops session 0, which names no live session, even after recovery was required (SessionMustMatch)", async () => {
    const core = await boot();
    const run = core.terminalizing();
    core.step(REFUSED, Submission.TerminalCommit, run.exec, run.generation, run.session, 0);
    expect(run.record).toMatchObject({ session: 0, phase: Phase.Terminal });
    core.expectDropped(REFUSED, ResultCode.SessionMustMatch, Submission.TerminalCommit, run.exec, run.generation, 0, 0);
  });

  it("TerminalCommit: drops for an unknown slot, another generation, another session, or a phase not Terminal", async () => {
    const core = await boot();
    const run = core.terminalizing();
    core.expectDropped(REFUSED, ResultCode.ExecutionSlotUnknown, Submission.TerminalCommit, run.exec + 1, run.generation, run.session, 0);
    core.expectDropped(REFUSED, ResultCode.ExecutionGenerationMustMatch, Submission.TerminalCommit, run.exec, run.generation + 1, run.session, 0);
    core.expectDropped(REFUSED, ResultCode.SessionMustMatch, Submission.TerminalCommit, run.exec, run.generation, run.session + 1, 0);
    const running = core.modelAnswered();
    core.expectDropped(REFUSED, ResultCode.PhaseMustMatch, Submission.TerminalCommit, running.exec, running.generation, running.session, 0);
  });

  it("checks the session before the phase", async () => {
    const core = await boot();
    const run = core.modelAnswered();
    core.expectDropped(REFUSED, ResultCode.SessionMustMatch, Submission.TerminalCommit, run.exec, run.generation, run.session + 1, 0);
    core.expectDropped(REFUSED, ResultCode.SessionMustMatch, Submission.ToolBarrier, run.exec, run.generation, run.session + 1, 0);
  });
});
