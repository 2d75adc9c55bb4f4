// The live FSM session (docs/core.md: SessionEvent, OperationSettled,
// CancelRequested, the FSM table, *require recovery*). A session event moves
// the phase along the table and submits the barrier the new phase needs
// before any external operation, counting the barrier in flight (and is
// dropped `InFlightFull` when the count is already at `InFlightMax`); an
// undefined pair is dropped, never a trap. Operations settling count down
// to quiescence, where a deferred terminal is posted. Requiring recovery
// ends the live session: nothing it still posts applies.

import { expect } from "vitest";
import {
  AdmissionState,
  CommitOutcome,
  ExecutionFlag,
  ExecutionStatus,
  Limit,
  MessageKind,
  OutcomeType,
  Phase,
  ResultCode,
  SessionEnding,
  SessionEventKind,
  Submission,
} from "../../assembly/abi.js";
import { describeDecisions, effect, type Driver, type Run } from "./driver.js";

const EVENT = MessageKind.SessionEvent;
const SETTLED = MessageKind.OperationSettled;

/** The table of docs/core.md, without `finish` (SessionFinished's). */
const DEFINED: ReadonlyArray<readonly [Phase, SessionEventKind, Phase, "provider" | "tool" | null]> = [
  [Phase.CallingLlm, SessionEventKind.LlmCompletedWithTools, Phase.DispatchingTools, "tool"],
  [Phase.CallingLlm, SessionEventKind.ApprovalRequired, Phase.Suspended, null],
  [Phase.DispatchingTools, SessionEventKind.ToolsCompleted, Phase.RecordingToolResults, null],
  [Phase.RecordingToolResults, SessionEventKind.StateCompleted, Phase.CallingLlm, "provider"],
  [Phase.Resuming, SessionEventKind.ApprovalGranted, Phase.DispatchingTools, "tool"],
  [Phase.Resuming, SessionEventKind.ApprovalRejected, Phase.RecordingToolResults, null],
];

/** Walks a started execution to a live session in `phase`, the way a host
 * would get there. */
function liveIn(core: Driver, phase: Phase): Run {
  switch (phase) {
    case Phase.CallingLlm:
      return core.modelAnswered();
    case Phase.DispatchingTools:
      return core.dispatchingTools();
    case Phase.RecordingToolResults:
      return core.recordingToolResults();
    case Phase.Suspended:
      return core.modelAnswered().event(SessionEventKind.ApprovalRequired);
    case Phase.Resuming:
      return core.resuming().commitResume(1);
    case Phase.Terminal:
      return core.callingModel().finish(SessionEnding.Completed);
    default:
      throw new Error(`no live walk to phase ${phase}`);
  }
}

const LIVE_PHASES = [Phase.CallingLlm, Phase.DispatchingTools, Phase.RecordingToolResults, Phase.Suspended, Phase.Resuming, Phase.Terminal];
const EVENTS = [
  SessionEventKind.LlmCompletedWithTools,
  SessionEventKind.ToolsCompleted,
  SessionEventKind.StateCompleted,
  SessionEventKind.ApprovalRequired,
  SessionEventKind.ApprovalGranted,
  SessionEventKind.ApprovalRejected,
];

describeDecisions("SessionEvent(exec, gen, session, event): defined transitions", ({ it, boot }) => {
  for (const [from, event, to, barrier] of DEFINED) {
    it(`phase ${from} + event ${event} → phase ${to}${barrier ? ` and the ${barrier} barrier is submitted` : ", no effect"}`, async () => {
      const core = await boot();
      const run = liveIn(core, from);
      const before = run.record;
      expect(core.apply(EVENT, run.exec, run.generation, run.session, event)).toBe(ResultCode.Ok);
      const entry =
        barrier === "tool"
          ? [effect.SubmitToolBarrier(run.exec, run.session, run.revision)]
          : barrier === "provider"
            ? [effect.SubmitProviderBarrier(run.exec, run.session, run.revision)]
            : [];
      expect(core.effects()).toEqual(entry);
      // The phase moves and a barrier counts in flight; revision, session,
      // status, admission stay.
      expect(run.record).toEqual({ ...before, phase: to, inFlight: before.inFlight + (barrier ? 1 : 0) });
      expect(run.admission).toBe(AdmissionState.Executing);
    });
  }
});

describeDecisions("SessionEvent(exec, gen, session, event): undefined pairs are dropped", ({ it, boot }) => {
  for (const phase of LIVE_PHASES) {
    it(`drops every event the table does not define from live phase ${phase} (TransitionUndefined)`, async () => {
      const core = await boot();
      const run = liveIn(core, phase);
      for (const event of EVENTS) {
        if (DEFINED.some(([from, defined]) => from === phase && defined === event)) continue;
        core.expectDropped(EVENT, ResultCode.TransitionUndefined, run.exec, run.generation, run.session, event);
      }
    });
  }
});

describeDecisions("SessionEvent(exec, gen, session, event): stale and malformed", ({ it, boot }) => {
  it("drops an event for an unknown slot or another generation", async () => {
    const core = await boot();
    const run = core.modelAnswered();
    const event = SessionEventKind.LlmCompletedWithTools;
    core.expectDropped(EVENT, ResultCode.ExecutionSlotUnknown, run.exec + 1, run.generation, run.session, event);
    core.expectDropped(EVENT, ResultCode.ExecutionGenerationMustMatch, run.exec, run.generation + 1, run.session, event);
  });

  it("drops an event of a previous session (SessionMustMatch), before judging the event", async () => {
    const core = await boot();
    const run = core.resuming().commitResume(1);
    const previous = run.session - 1;
    core.expectDropped(EVENT, ResultCode.SessionMustMatch, run.exec, run.generation, previous, SessionEventKind.ApprovalGranted);
    core.expectDropped(EVENT, ResultCode.SessionMustMatch, run.exec, run.generation, previous, 0xffff_ffff);
  });

  it("drops an event naming session 0: it names no live session (SessionMustMatch)", async () => {
    const core = await boot({ agentsMax: 8, executionsMax: 8 });
    const suspended = core.suspended();
    core.expectDropped(EVENT, ResultCode.SessionMustMatch, suspended.exec, suspended.generation, 0, SessionEventKind.ApprovalGranted);
    const noSession = [
      Phase.CallingLlm,
      Phase.DispatchingTools,
      Phase.Resuming,
      Phase.RecoveryProviderCompleted,
      Phase.RecoveryTools,
      Phase.RecoveryToolsCompleted,
      Phase.RecoveryResolvedFailed,
    ];
    for (const phase of noSession) {
      const run = core.recovered({ status: ExecutionStatus.Active, phase });
      for (const event of EVENTS) {
        core.expectDropped(EVENT, ResultCode.SessionMustMatch, run.exec, run.generation, 0, event);
      }
    }
  });

  for (const event of [SessionEventKind.None, SessionEventKind.Finish, 8, 0xffff_ffff]) {
    it(`drops event ${event} (outside 1–6; finish goes through SessionFinished) with ArgumentOutOfRange`, async () => {
      const core = await boot();
      const run = core.modelAnswered();
      core.expectDropped(EVENT, ResultCode.ArgumentOutOfRange, run.exec, run.generation, run.session, event);
    });
  }
});

describeDecisions("OperationSettled(exec, gen)", ({ it, boot }) => {
  it("counts one operation down and emits nothing while the terminal is not deferred", async () => {
    const core = await boot();
    const run = core.runningTools(3);
    const before = run.record;
    expect(core.apply(SETTLED, run.exec, run.generation)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([]);
    expect(run.record).toEqual({ ...before, inFlight: 2 });
    core.step(SETTLED, run.exec, run.generation);
    expect(core.apply(SETTLED, run.exec, run.generation)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([]);
    expect(run.record.inFlight).toBe(0);
  });

  it("drops a settlement with nothing in flight (InFlightUnderflow)", async () => {
    const core = await boot();
    const run = core.modelAnswered();
    core.expectDropped(SETTLED, ResultCode.InFlightUnderflow, run.exec, run.generation);
  });

  it("drops a settlement for an unknown slot or another generation", async () => {
    const core = await boot();
    const run = core.callingModel();
    core.expectDropped(SETTLED, ResultCode.ExecutionSlotUnknown, run.exec + 1, run.generation);
    core.expectDropped(SETTLED, ResultCode.ExecutionGenerationMustMatch, run.exec, run.generation + 1);
  });

  it("posts the deferred terminal when the last operation settles", async () => {
    const core = await boot();
    const run = core.runningTools(2).finish(SessionEnding.Completed);
    core.step(SETTLED, run.exec, run.generation);
    expect(core.effects()).toEqual([]);
    expect(core.apply(SETTLED, run.exec, run.generation)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.PostDeferredTerminal(run.exec, run.session)]);
    // The flag stays until DeferredTerminal is applied.
    expect(run.record).toMatchObject({ inFlight: 0, flags: ExecutionFlag.TerminalDeferred, phase: Phase.Terminal });
  });
});

describeDecisions("CancelRequested(exec, gen)", ({ it, boot }) => {
  it("sets CancelRequested and emits nothing; asking twice is the same", async () => {
    const core = await boot();
    const run = core.recovered({ status: ExecutionStatus.Active, phase: Phase.Resuming, flags: ExecutionFlag.ApprovalGranted });
    const before = run.record;
    for (let time = 0; time < 2; time += 1) {
      expect(core.apply(MessageKind.CancelRequested, run.exec, run.generation)).toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([]);
      expect(run.record).toEqual({ ...before, flags: ExecutionFlag.ApprovalGranted | ExecutionFlag.CancelRequested });
    }
  });

  it("drops a cancel for an unknown slot or another generation", async () => {
    const core = await boot();
    const run = core.callingModel();
    core.expectDropped(MessageKind.CancelRequested, ResultCode.ExecutionSlotUnknown, run.exec + 1, run.generation);
    core.expectDropped(MessageKind.CancelRequested, ResultCode.ExecutionGenerationMustMatch, run.exec, run.generation + 1);
  });

  it("drops a cancel for an execution that already ended (its slot is free)", async () => {
    const core = await boot();
    const run = core.terminalizing().commitTerminal(1);
    core.expectDropped(MessageKind.CancelRequested, ResultCode.ExecutionSlotUnknown, run.exec, run.generation);
  });
});

describeDecisions("SessionEvent(exec, gen, session, event): the in-flight limit", ({ it, boot }) => {
  /** Phase `RecordingToolResults` with `tools` tools still in flight. */
  function recordingWith(core: Driver, tools: number): Run {
    return core.dispatchingTools().commitToolBarrier(tools).event(SessionEventKind.ToolsCompleted);
  }

  it("drops an event into calling_llm with InFlightMax in flight (InFlightFull): the provider barrier would be one more", async () => {
    const core = await boot();
    const run = recordingWith(core, Limit.InFlightMax);
    expect(run.record.inFlight).toBe(Limit.InFlightMax);
    core.expectDropped(EVENT, ResultCode.InFlightFull, run.exec, run.generation, run.session, SessionEventKind.StateCompleted);
  });

  it("drops an event into dispatching_tools with InFlightMax in flight (InFlightFull)", async () => {
    const core = await boot();
    // InFlightMax - 1 tools still running, then the model call: InFlightMax.
    const run = recordingWith(core, Limit.InFlightMax - 1)
      .event(SessionEventKind.StateCompleted)
      .commitProviderBarrier();
    expect(run.record).toMatchObject({ phase: Phase.CallingLlm, inFlight: Limit.InFlightMax });
    core.expectDropped(EVENT, ResultCode.InFlightFull, run.exec, run.generation, run.session, SessionEventKind.LlmCompletedWithTools);
  });

  it("accepts the event that fills the count to InFlightMax exactly", async () => {
    const core = await boot();
    const run = recordingWith(core, Limit.InFlightMax - 1);
    expect(core.apply(EVENT, run.exec, run.generation, run.session, SessionEventKind.StateCompleted)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.SubmitProviderBarrier(run.exec, run.session, run.revision)]);
    expect(run.record).toMatchObject({ phase: Phase.CallingLlm, inFlight: Limit.InFlightMax });
  });

  it("does not limit an event into a phase without a barrier", async () => {
    const core = await boot();
    const run = core.dispatchingTools().commitToolBarrier(Limit.InFlightMax);
    expect(core.apply(EVENT, run.exec, run.generation, run.session, SessionEventKind.ToolsCompleted)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([]);
    expect(run.record).toMatchObject({ phase: Phase.RecordingToolResults, inFlight: Limit.InFlightMax });
  });

  it("judges the transition before the limit (TransitionUndefined)", async () => {
    const core = await boot();
    const run = recordingWith(core, Limit.InFlightMax);
    core.expectDropped(EVENT, ResultCode.TransitionUndefined, run.exec, run.generation, run.session, SessionEventKind.LlmCompletedWithTools);
  });

  it("once an operation settles, the barrier can be asked for again", async () => {
    const core = await boot();
    const run = recordingWith(core, Limit.InFlightMax).settle();
    expect(core.apply(EVENT, run.exec, run.generation, run.session, SessionEventKind.StateCompleted)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.SubmitProviderBarrier(run.exec, run.session, run.revision)]);
    expect(run.record.inFlight).toBe(Limit.InFlightMax);
  });
});

describeDecisions("require recovery ends the live session", ({ it, boot }) => {
  it("a barrier result requiring recovery sets the session to 0; the session's later messages are dropped (SessionMustMatch)", async () => {
    const core = await boot();
    const run = core.installed();
    core.step(MessageKind.ProviderDispatchReady, run.exec, run.generation, run.session, run.revision, CommitOutcome.RehydrationRequired, 0);
    expect(run.record).toMatchObject({ session: 0, phase: Phase.CallingLlm, status: ExecutionStatus.Active });
    expect(run.admission).toBe(AdmissionState.RecoveryRequired);
    const { exec, generation, session, revision } = run;
    core.expectDropped(EVENT, ResultCode.SessionMustMatch, exec, generation, session, SessionEventKind.LlmCompletedWithTools);
    core.expectDropped(MessageKind.SessionFinished, ResultCode.SessionMustMatch, exec, generation, session, SessionEnding.Failed);
    core.expectDropped(
      MessageKind.ProviderDispatchReady,
      ResultCode.SessionMustMatch,
      exec,
      generation,
      session,
      revision,
      CommitOutcome.Committed,
      revision + 1,
    );
    core.expectDropped(MessageKind.SubmissionRefused, ResultCode.SessionMustMatch, Submission.ProviderBarrier, exec, generation, session, 0);
    // Session 0 names no live session either.
    core.expectDropped(EVENT, ResultCode.SessionMustMatch, exec, generation, 0, SessionEventKind.LlmCompletedWithTools);
    core.expectDropped(MessageKind.SessionFinished, ResultCode.SessionMustMatch, exec, generation, 0, SessionEnding.Failed);
  });

  it("a deferred terminal of a session that required recovery is dropped (SessionMustMatch), before judging quiescence", async () => {
    const core = await boot();
    // Model call and tool barrier in flight, then cancelled: deferred.
    const run = core.callingModel().event(SessionEventKind.LlmCompletedWithTools).finish(SessionEnding.Cancelled);
    core.step(MessageKind.ToolDispatchReady, run.exec, run.generation, run.session, run.revision, CommitOutcome.RehydrationRequired, 0, 0);
    // Recovery drops the abandoned session's deferred terminal too; the
    // barrier that answered settled, the model call is still in flight.
    expect(run.record).toMatchObject({ session: 0, phase: Phase.Terminal, inFlight: 1, flags: 0 });
    const { exec, generation, session, revision } = run;
    core.expectDropped(MessageKind.DeferredTerminal, ResultCode.SessionMustMatch, exec, generation, session);
    // The abandoned operation settling posts no deferred terminal.
    expect(core.apply(MessageKind.OperationSettled, exec, generation)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([]);
    core.expectDropped(
      MessageKind.ToolDispatchReady,
      ResultCode.SessionMustMatch,
      exec,
      generation,
      session,
      revision,
      CommitOutcome.Committed,
      revision + 1,
      1,
    );
    core.expectDropped(MessageKind.SubmissionRefused, ResultCode.SessionMustMatch, Submission.ToolBarrier, exec, generation, session, 0);
  });

  it("a terminal commit requiring recovery ends the session: a retried commit result is dropped (SessionMustMatch)", async () => {
    const core = await boot();
    const run = core.terminalizing();
    core.step(MessageKind.TerminalCommitReady, run.exec, run.generation, run.session, run.revision, OutcomeType.StoreFailed, 0);
    expect(run.record).toMatchObject({ session: 0, phase: Phase.Terminal });
    const { exec, generation, session, revision } = run;
    core.expectDropped(MessageKind.TerminalCommitReady, ResultCode.SessionMustMatch, exec, generation, session, revision, OutcomeType.Completed, revision + 1);
    core.expectDropped(MessageKind.SubmissionRefused, ResultCode.SessionMustMatch, Submission.TerminalCommit, exec, generation, session, 0);
  });
});
