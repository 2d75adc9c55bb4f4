// Approval resume (docs/core.md: Resume, ResumeCommitReady; seeds:
// begin_resume_on_event_loop, apply_resume_commit_on_event_loop,
// install_resumed_execution_on_event_loop; SPEC §3). `Resume` needs a live
// suspended owner of this agent whose approval matches; it moves the
// admission to `Resuming` and asks for the durable approval commit. The
// commit's result installs the resumed execution with a new session in
// phase `Resuming`; any failure keeps the execution for recovery.

import { expect } from "vitest";
import {
  AdmissionState,
  CommitOutcome,
  ExecutionFlag,
  ExecutionStatus,
  MessageKind,
  OutcomeType,
  Phase,
  RecoveryScope,
  ResultCode,
  ResumeFact,
  SessionEnding,
  SessionEventKind,
} from "../../assembly/abi.js";
import { describeDecisions, effect } from "./driver.js";

const RESUME = MessageKind.Resume;
const MATCHES = ResumeFact.MatchesPending;
const COMMITTING = ResumeFact.MatchesCommittingSuspension;
const AFTER_RECOVERY = ResumeFact.AfterRecovery;
const READY = MessageKind.ResumeCommitReady;

describeDecisions("Resume(exec, gen, agent, agentGen, request, facts, sameAsCommitting)", ({ it, boot }) => {
  it("moves a suspended admission to Resuming and submits the approval commit", async () => {
    const core = await boot();
    const run = core.suspended();
    const before = run.record;
    const request = core.request();
    expect(core.apply(RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request, 1)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.SubmitApprovalCommit(run.exec, run.revision, request)]);
    expect(run.admission).toBe(AdmissionState.Resuming);
    expect(run.record).toEqual(before);
  });

  it("resumes an execution that recovery reinstalled as suspended (SPEC §6.2, still waiting)", async () => {
    const core = await boot();
    const run = core.recovered({ status: ExecutionStatus.Suspended, phase: Phase.Suspended });
    const request = core.request();
    expect(core.apply(RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request, 1)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.SubmitApprovalCommit(run.exec, run.revision, request)]);
    expect(run.admission).toBe(AdmissionState.Resuming);
  });

  it("refuses with RuntimeDraining while draining, after the identity checks, the waits and the approval check (decision 0065)", async () => {
    const core = await boot();
    const run = core.suspended();
    const suspending = core.modelAnswered().event(SessionEventKind.ApprovalRequired).finish(SessionEnding.Suspended);
    core.step(MessageKind.SetDraining, 1);
    const request = core.request();
    core.expectRefused(ResultCode.RuntimeDraining, request, RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request, MATCHES);
    core.expectRefused(
      ResultCode.RuntimeDraining,
      request,
      RESUME,
      run.exec,
      run.generation,
      run.agent,
      run.agentGeneration,
      request,
      MATCHES | AFTER_RECOVERY,
    );
    core.expectRefused(ResultCode.RehydrationRequired, request, RESUME, run.exec, run.generation + 1, 9, 9, request, MATCHES);
    core.expectRefused(ResultCode.ApprovalMustMatch, request, RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request, 0);
    // A decision asked before the drain is carried through its wait.
    expect(core.apply(RESUME, suspending.exec, suspending.generation, suspending.agent, suspending.agentGeneration, request, COMMITTING)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.AwaitSuspensionCommit(suspending.exec, request)]);
    // Sent again once its suspension was committed, it meets the drain.
    suspending.commitTerminal(OutcomeType.Suspended);
    core.expectRefused(
      ResultCode.RuntimeDraining,
      request,
      RESUME,
      suspending.exec,
      suspending.generation,
      suspending.agent,
      suspending.agentGeneration,
      request,
      MATCHES,
    );
  });

  it("takes a typed input wait's value, and refuses a resume of the other kind or a refused value (decision 0075)", async () => {
    const core = await boot();
    const run = core.suspended();
    const request = core.request();
    const WAITS = ResumeFact.PendingWaitsForInput;
    const VALUE = ResumeFact.GivesValue;
    const at = [RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request] as const;
    // Approve or decline a typed wait, or a value for an approval: refused, nothing moves.
    core.expectRefused(ResultCode.WaitKindMustMatch, request, ...at, MATCHES | WAITS);
    core.expectRefused(ResultCode.WaitKindMustMatch, request, ...at, MATCHES | VALUE);
    // A value (or edited arguments) its schema refused: refused, still pending.
    core.expectRefused(ResultCode.ValueMustMatchSchema, request, ...at, MATCHES | WAITS | VALUE | ResumeFact.ValueRefused);
    core.expectRefused(ResultCode.ValueMustMatchSchema, request, ...at, MATCHES | ResumeFact.ValueRefused);
    expect(run.admission).toBe(AdmissionState.Suspended);
    // Another wait's id is refused first, as for an approval.
    core.expectRefused(ResultCode.ApprovalMustMatch, request, ...at, WAITS | VALUE);
    expect(core.apply(...at, MATCHES | WAITS | VALUE)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.SubmitApprovalCommit(run.exec, run.revision, request)]);
    expect(run.admission).toBe(AdmissionState.Resuming);
    // Given twice: the second is refused as another decision under way.
    const again = core.request();
    core.expectRefused(ResultCode.ResumeInProgress, again, RESUME, run.exec, run.generation, run.agent, run.agentGeneration, again, MATCHES | WAITS | VALUE);
  });

  it("resumes a keyed event wait only with a signal, live or stored early, and refuses inconsistent facts (decision 0077)", async () => {
    const core = await boot();
    const run = core.suspended();
    const request = core.request();
    const EVENT = ResumeFact.PendingWaitsForEvent;
    const SIGNAL = ResumeFact.GivesSignal;
    const STORED = ResumeFact.SignalStored;
    const at = [RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request] as const;
    // A decision or a value for an event wait, a signal for an approval or a typed wait: refused.
    core.expectRefused(ResultCode.WaitKindMustMatch, request, ...at, MATCHES | EVENT);
    core.expectRefused(ResultCode.WaitKindMustMatch, request, ...at, MATCHES | EVENT | ResumeFact.GivesValue);
    core.expectRefused(ResultCode.WaitKindMustMatch, request, ...at, MATCHES | SIGNAL);
    core.expectRefused(ResultCode.WaitKindMustMatch, request, ...at, MATCHES | ResumeFact.PendingWaitsForInput | SIGNAL);
    // A payload its schema refused: the wait stays pending.
    core.expectRefused(ResultCode.ValueMustMatchSchema, request, ...at, MATCHES | EVENT | SIGNAL | ResumeFact.ValueRefused);
    // Facts no host sends: two wait kinds, two answer kinds, a stored signal that is no signal.
    core.expectRefused(ResultCode.ArgumentOutOfRange, request, ...at, MATCHES | EVENT | ResumeFact.PendingWaitsForInput | SIGNAL);
    core.expectRefused(ResultCode.ArgumentOutOfRange, request, ...at, MATCHES | EVENT | SIGNAL | ResumeFact.GivesValue);
    core.expectRefused(ResultCode.ArgumentOutOfRange, request, ...at, MATCHES | EVENT | STORED);
    expect(run.admission).toBe(AdmissionState.Suspended);
    // The signal stored before the wait was committed resumes it as a live one does.
    expect(core.apply(...at, MATCHES | EVENT | SIGNAL | STORED)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.SubmitApprovalCommit(run.exec, run.revision, request)]);
    // A second signal for the same wait: refused, the first one's commit is under way.
    const again = core.request();
    core.expectRefused(ResultCode.ResumeInProgress, again, RESUME, run.exec, run.generation, run.agent, run.agentGeneration, again, MATCHES | EVENT | SIGNAL);
  });

  it("resumes a child's wait with its child's end only, and a child's end answers no other wait (decision 0079)", async () => {
    const core = await boot();
    const run = core.suspended();
    const request = core.request();
    const CHILD = ResumeFact.PendingWaitsForChild;
    const ENDED = ResumeFact.GivesChildOutcome;
    const at = [RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request] as const;
    // A person's decision or value on a child's wait, a child's end on an approval or a typed wait: refused.
    core.expectRefused(ResultCode.WaitKindMustMatch, request, ...at, MATCHES | CHILD);
    core.expectRefused(ResultCode.WaitKindMustMatch, request, ...at, MATCHES | CHILD | ResumeFact.GivesValue);
    core.expectRefused(ResultCode.WaitKindMustMatch, request, ...at, MATCHES | CHILD | ResumeFact.GivesSignal);
    // Facts no host sends: two wait kinds, two answer kinds.
    core.expectRefused(ResultCode.ArgumentOutOfRange, request, ...at, MATCHES | CHILD | ResumeFact.PendingWaitsForInput | ResumeFact.GivesValue);
    core.expectRefused(ResultCode.ArgumentOutOfRange, request, ...at, MATCHES | CHILD | ENDED | ResumeFact.GivesSignal);
    core.expectRefused(ResultCode.WaitKindMustMatch, request, ...at, MATCHES | ENDED);
    core.expectRefused(ResultCode.WaitKindMustMatch, request, ...at, MATCHES | ENDED | ResumeFact.PendingWaitsForInput);
    expect(run.admission).toBe(AdmissionState.Suspended);
    // Another wait's id is refused first.
    core.expectRefused(ResultCode.ApprovalMustMatch, request, ...at, CHILD | ENDED);
    expect(core.apply(...at, MATCHES | CHILD | ENDED)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.SubmitApprovalCommit(run.exec, run.revision, request)]);
    expect(run.admission).toBe(AdmissionState.Resuming);
  });

  it("lets only the clock answer a timer, and the clock only a wait with a due time (decision 0076)", async () => {
    const core = await boot();
    const run = core.suspended();
    const request = core.request();
    const TIMER = ResumeFact.PendingWaitsForClock | ResumeFact.PendingHasDeadline;
    const CLOCK = ResumeFact.ClockAnswers;
    const at = [RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request] as const;
    // A person's decision or value for a timer: refused, nothing moves.
    core.expectRefused(ResultCode.WaitKindMustMatch, request, ...at, MATCHES | TIMER);
    core.expectRefused(ResultCode.WaitKindMustMatch, request, ...at, MATCHES | TIMER | ResumeFact.GivesValue);
    // The clock for a wait without a due time, or a clock carrying a value: refused.
    core.expectRefused(ResultCode.WaitKindMustMatch, request, ...at, MATCHES | CLOCK);
    core.expectRefused(ResultCode.WaitKindMustMatch, request, ...at, MATCHES | ResumeFact.PendingWaitsForInput | CLOCK);
    core.expectRefused(ResultCode.WaitKindMustMatch, request, ...at, MATCHES | TIMER | CLOCK | ResumeFact.GivesValue);
    // Another wait's id is refused first.
    core.expectRefused(ResultCode.ApprovalMustMatch, request, ...at, TIMER | CLOCK);
    expect(run.admission).toBe(AdmissionState.Suspended);
    expect(core.apply(...at, MATCHES | TIMER | CLOCK)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.SubmitApprovalCommit(run.exec, run.revision, request)]);
    expect(run.admission).toBe(AdmissionState.Resuming);
    // Fired twice (a second process, the sweep after "fire now"): refused as a decision under way.
    const again = core.request();
    core.expectRefused(ResultCode.ResumeInProgress, again, RESUME, run.exec, run.generation, run.agent, run.agentGeneration, again, MATCHES | TIMER | CLOCK);
  });

  it("lets the clock end a typed wait or an approval that has a due time (its timeout, decision 0076)", async () => {
    const core = await boot();
    const run = core.suspended();
    const request = core.request();
    const DEADLINE = ResumeFact.PendingHasDeadline;
    const at = [RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request] as const;
    // A due time changes nothing of what a person may answer: a decision for a typed wait is refused.
    core.expectRefused(ResultCode.WaitKindMustMatch, request, ...at, MATCHES | ResumeFact.PendingWaitsForInput | DEADLINE);
    expect(core.apply(...at, MATCHES | ResumeFact.PendingWaitsForInput | DEADLINE | ResumeFact.ClockAnswers)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.SubmitApprovalCommit(run.exec, run.revision, request)]);
  });

  it("refuses facts outside the ResumeFact bits with ArgumentOutOfRange, before the execution check", async () => {
    const core = await boot();
    const run = core.suspended();
    const request = core.request();
    core.expectRefused(ResultCode.ArgumentOutOfRange, request, RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request, ResumeFact.End);
    core.expectRefused(ResultCode.ArgumentOutOfRange, request, RESUME, run.exec + 5, 0, run.agent, run.agentGeneration, request, 0xffff_ffff);
  });

  it("refuses with RehydrationRequired when there is no live owner (unknown slot, freed slot, other generation)", async () => {
    const core = await boot();
    const ended = core.terminalizing().commitTerminal(OutcomeType.Completed);
    const run = core.suspended();
    const request = core.request();
    core.expectRefused(ResultCode.RehydrationRequired, request, RESUME, 3, 1, run.agent, run.agentGeneration, request, 1);
    core.expectRefused(ResultCode.RehydrationRequired, request, RESUME, ended.exec, ended.generation, ended.agent, ended.agentGeneration, request, 1);
    core.expectRefused(ResultCode.RehydrationRequired, request, RESUME, run.exec, run.generation + 1, run.agent, run.agentGeneration, request, 1);
  });

  it("refuses an unknown agent or another generation of it with the agent check's code", async () => {
    const core = await boot();
    const run = core.suspended();
    const request = core.request();
    core.expectRefused(ResultCode.AgentSlotUnknown, request, RESUME, run.exec, run.generation, 3, 1, request, 1);
    core.expectRefused(ResultCode.AgentGenerationMustMatch, request, RESUME, run.exec, run.generation, run.agent, run.agentGeneration + 1, request, 1);
  });

  it("refuses an execution of another agent with AgentMustMatch", async () => {
    const core = await boot();
    const run = core.suspended();
    const other = core.registerAgent();
    const request = core.request();
    core.expectRefused(ResultCode.AgentMustMatch, request, RESUME, run.exec, run.generation, other.agent, other.agentGeneration, request, 1);
  });

  it("refuses an execution that is not suspended with StatusMustMatch", async () => {
    const core = await boot();
    const running = core.modelAnswered();
    const request = core.request();
    core.expectRefused(ResultCode.StatusMustMatch, request, RESUME, running.exec, running.generation, running.agent, running.agentGeneration, request, 1);
    // Still Active while its suspension commit is in flight.
    const suspending = core.modelAnswered().event(SessionEventKind.ApprovalRequired).finish(SessionEnding.Suspended);
    core.expectRefused(
      ResultCode.StatusMustMatch,
      request,
      RESUME,
      suspending.exec,
      suspending.generation,
      suspending.agent,
      suspending.agentGeneration,
      request,
      1,
    );
  });

  it("refuses a second resume while the first is in progress with ResumeInProgress", async () => {
    const core = await boot();
    const run = core.resuming();
    const request = core.request();
    core.expectRefused(ResultCode.ResumeInProgress, request, RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request, 1);
  });

  it("lets the same decision sent again while the commit is under way follow it (FollowResume), changing nothing", async () => {
    const core = await boot();
    const run = core.resuming();
    const request = core.request();
    const before = core.snapshot();
    expect(core.apply(RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request, 1, 1)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.FollowResume(run.exec, request)]);
    expect(core.snapshot()).toEqual(before);
  });

  it("refuses a sameAsCommitting flag that is not 0 or 1 with ArgumentOutOfRange", async () => {
    const core = await boot();
    const run = core.resuming();
    const request = core.request();
    core.expectRefused(ResultCode.ArgumentOutOfRange, request, RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request, 1, 2);
  });

  it("asks to recover an execution held for recovery first (RecoverBeforeResume), whatever the decision, changing nothing", async () => {
    const core = await boot();
    const run = core.resuming();
    core.apply(READY, run.exec, run.generation, run.revision, CommitOutcome.RehydrationRequired, 0, 0, run.resumeRequest);
    expect(run.record.status).toBe(ExecutionStatus.Suspended);
    expect(run.admission).toBe(AdmissionState.RecoveryRequired);
    const before = core.snapshot();
    const request = core.request();
    // The same decision as the one whose outcome is not known, another one,
    // one for another approval: the store says what was written.
    for (const [facts, same] of [
      [MATCHES, 1],
      [MATCHES, 0],
      [0, 0],
      [COMMITTING, 0],
    ] as const) {
      expect(core.apply(RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request, facts, same)).toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([effect.RecoverBeforeResume(run.exec, request)]);
    }
    expect(core.snapshot()).toEqual(before);
  });

  it("asks to recover an active execution held for recovery too (its session abandoned)", async () => {
    const core = await boot();
    const run = core.terminalizing();
    core.apply(MessageKind.TerminalCommitReady, run.exec, run.generation, run.session, run.revision, OutcomeType.StoreFailed, 0);
    expect(run.admission).toBe(AdmissionState.RecoveryRequired);
    const request = core.request();
    expect(core.apply(RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request, COMMITTING)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.RecoverBeforeResume(run.exec, request)]);
  });

  it("refuses a decision sent again after its recovery while the execution is still held with AgentAdmissionHeld", async () => {
    const core = await boot();
    const run = core.resuming();
    core.apply(READY, run.exec, run.generation, run.revision, CommitOutcome.RehydrationRequired, 0, 0, run.resumeRequest);
    const request = core.request();
    core.expectRefused(
      ResultCode.AgentAdmissionHeld,
      request,
      RESUME,
      run.exec,
      run.generation,
      run.agent,
      run.agentGeneration,
      request,
      MATCHES | AFTER_RECOVERY,
    );
  });

  it("applies a decision sent again after its recovery to the execution recovered suspended as any decision", async () => {
    const core = await boot();
    const run = core.recovered({ status: ExecutionStatus.Suspended, phase: Phase.Suspended });
    const request = core.request();
    core.expectRefused(ResultCode.ApprovalMustMatch, request, RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request, AFTER_RECOVERY);
    expect(core.apply(RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request, MATCHES | AFTER_RECOVERY)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.SubmitApprovalCommit(run.exec, run.revision, request)]);
  });

  it("refuses a decision sent again after its recovery on an execution that runs on with StatusMustMatch, never waiting, even while draining", async () => {
    const core = await boot();
    const run = core.modelAnswered().event(SessionEventKind.ApprovalRequired).finish(SessionEnding.Suspended);
    core.step(MessageKind.SetDraining, 1);
    const request = core.request();
    for (const facts of [AFTER_RECOVERY, AFTER_RECOVERY | COMMITTING, AFTER_RECOVERY | MATCHES]) {
      core.expectRefused(ResultCode.StatusMustMatch, request, RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request, facts);
    }
  });

  it("makes a decision for the suspension being committed wait for that commit (AwaitSuspensionCommit), changing nothing", async () => {
    const core = await boot();
    // The session's ending is known to the host before the core has it,
    // and while the terminal commit is written.
    const answered = core.modelAnswered().event(SessionEventKind.ApprovalRequired);
    const request = core.request();
    const expectAwaited = (): void => {
      const before = core.snapshot();
      expect(core.apply(RESUME, answered.exec, answered.generation, answered.agent, answered.agentGeneration, request, COMMITTING)).toBe(ResultCode.Ok);
      expect(core.effects()).toEqual([effect.AwaitSuspensionCommit(answered.exec, request)]);
      expect(core.snapshot()).toEqual(before);
    };
    expectAwaited();
    answered.finish(SessionEnding.Suspended);
    expect(answered.record.phase).toBe(Phase.Terminal);
    expectAwaited();
    // Once the suspension is committed, the decision sent again is applied.
    answered.commitTerminal(OutcomeType.Suspended);
    expect(core.apply(RESUME, answered.exec, answered.generation, answered.agent, answered.agentGeneration, request, MATCHES)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.SubmitApprovalCommit(answered.exec, answered.record.revision, request)]);
  });

  it("does not wait on a suspended execution: the committing fact is stale there (the pending approval decides)", async () => {
    const core = await boot();
    const run = core.suspended();
    const request = core.request();
    core.expectRefused(ResultCode.ApprovalMustMatch, request, RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request, COMMITTING);
  });

  it("refuses an approval that does not match a suspended execution with ApprovalMustMatch, before the admission check", async () => {
    const core = await boot();
    const run = core.suspended();
    const request = core.request();
    core.expectRefused(ResultCode.ApprovalMustMatch, request, RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request, 0);
    // While another decision is being committed, or a cancel.
    const resuming = core.resuming();
    core.expectRefused(
      ResultCode.ApprovalMustMatch,
      request,
      RESUME,
      resuming.exec,
      resuming.generation,
      resuming.agent,
      resuming.agentGeneration,
      request,
      0,
      1,
    );
    core.expectRefused(
      ResultCode.ResumeInProgress,
      request,
      RESUME,
      resuming.exec,
      resuming.generation,
      resuming.agent,
      resuming.agentGeneration,
      request,
      MATCHES,
    );
  });
});

describeDecisions("ResumeCommitReady(exec, gen, expectedRevision, outcome, newRevision, approved, request)", ({ it, boot }) => {
  for (const approved of [1, 0] as const) {
    it(`Committed, approved ${approved}: a new session in phase Resuming, admission Executing, the resume request waits`, async () => {
      const core = await boot();
      const run = core.resuming();
      const before = run.record;
      const nextSession = core.snapshot().nextSession;
      expect(core.apply(READY, run.exec, run.generation, run.revision, CommitOutcome.Committed, run.revision + 1, approved, run.resumeRequest)).toBe(
        ResultCode.Ok,
      );
      expect(core.effects()).toEqual([effect.RegisterWaiter(run.exec, run.resumeRequest), effect.ResumeSession(run.exec, nextSession, approved === 1)]);
      expect(run.record).toEqual({
        ...before,
        revision: run.revision + 1,
        session: nextSession,
        status: ExecutionStatus.Active,
        phase: Phase.Resuming,
        waiters: before.waiters + 1,
        flags: approved === 1 ? ExecutionFlag.ApprovalGranted : 0,
      });
      expect(run.admission).toBe(AdmissionState.Executing);
      expect(core.snapshot().nextSession).toBe(nextSession + 1);
    });
  }

  it("Committed with approved 0 clears an ApprovalGranted flag recovery installed", async () => {
    const core = await boot();
    const run = core
      .recovered({
        status: ExecutionStatus.Suspended,
        phase: Phase.Suspended,
        flags: ExecutionFlag.ApprovalGranted,
      })
      .resume();
    expect(core.apply(READY, run.exec, run.generation, run.revision, CommitOutcome.Committed, run.revision + 1, 0, run.resumeRequest)).toBe(ResultCode.Ok);
    expect(run.record.flags).toBe(0);
  });

  it("refuses a result for an unknown slot or another generation with the exec check's code", async () => {
    const core = await boot();
    const run = core.resuming();
    const request = run.resumeRequest;
    core.expectRefused(
      ResultCode.ExecutionSlotUnknown,
      request,
      READY,
      run.exec + 1,
      run.generation,
      run.revision,
      CommitOutcome.Committed,
      run.revision + 1,
      1,
      request,
    );
    core.expectRefused(
      ResultCode.ExecutionGenerationMustMatch,
      request,
      READY,
      run.exec,
      run.generation + 1,
      run.revision,
      CommitOutcome.Committed,
      run.revision + 1,
      1,
      request,
    );
  });

  it("refuses a result computed against another revision with RevisionMustMatch", async () => {
    const core = await boot();
    const run = core.resuming();
    const request = run.resumeRequest;
    core.expectRefused(
      ResultCode.RevisionMustMatch,
      request,
      READY,
      run.exec,
      run.generation,
      run.revision - 1,
      CommitOutcome.Committed,
      run.revision + 1,
      1,
      request,
    );
  });

  it("refuses a result for an execution no longer suspended with StatusMustMatch", async () => {
    const core = await boot();
    const run = core.resuming().commitResume(1);
    const request = core.request();
    // Same revision as the live one, so only the status tells it is stale.
    core.expectRefused(
      ResultCode.StatusMustMatch,
      request,
      READY,
      run.exec,
      run.generation,
      run.revision,
      CommitOutcome.Committed,
      run.revision + 1,
      1,
      request,
    );
  });

  it("refuses a result when the admission is not Resuming with AdmissionStateMustMatch", async () => {
    const core = await boot();
    const run = core.suspended();
    const request = core.request();
    core.expectRefused(
      ResultCode.AdmissionStateMustMatch,
      request,
      READY,
      run.exec,
      run.generation,
      run.revision,
      CommitOutcome.Committed,
      run.revision + 1,
      1,
      request,
    );
  });

  it("RehydrationRequired (outcome unknown): keeps the execution for recovery, fails the waiters and the request, returns Ok", async () => {
    const core = await boot();
    const run = core.resuming();
    const before = run.record;
    const code = ResultCode.RehydrationRequired;
    expect(core.apply(READY, run.exec, run.generation, run.revision, CommitOutcome.RehydrationRequired, 0, 1, run.resumeRequest)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([
      effect.RecoveryRequired(run.exec, RecoveryScope.Execution, code),
      effect.FailWaiters(run.exec, code),
      effect.FailRequest(run.resumeRequest, code),
    ]);
    expect(run.record).toEqual({ ...before, waiters: 0 });
    expect(run.admission).toBe(AdmissionState.RecoveryRequired);
  });

  it("StoreFailed (nothing written): gives the suspension back, fails only the request, returns Ok (docs/decisions/0057)", async () => {
    const core = await boot();
    const run = core.resuming();
    const before = run.record;
    expect(core.apply(READY, run.exec, run.generation, run.revision, CommitOutcome.StoreFailed, 0, 1, run.resumeRequest)).toBe(ResultCode.Ok);
    expect(core.effects()).toEqual([effect.FailRequest(run.resumeRequest, ResultCode.StoreFailed)]);
    expect(run.record).toEqual(before);
    expect(run.admission).toBe(AdmissionState.Suspended);
  });

  const malformed = [
    ["an unknown outcome (0)", CommitOutcome.None, 1, 1, ResultCode.OutcomeUnknown],
    ["an unknown outcome (4)", 4, 1, 1, ResultCode.OutcomeUnknown],
    ["approved outside {0, 1}", CommitOutcome.Committed, 1, 2, ResultCode.ArgumentOutOfRange],
    ["approved outside {0, 1} on a failed commit", CommitOutcome.StoreFailed, 1, 2, ResultCode.ArgumentOutOfRange],
    ["a new revision equal to the current one", CommitOutcome.Committed, 0, 1, ResultCode.RevisionMustIncrease],
    ["a new revision below the current one", CommitOutcome.Committed, -1, 0, ResultCode.RevisionMustIncrease],
  ] as const;
  for (const [name, outcome, delta, approved, code] of malformed) {
    it(`${name}: keeps the execution for recovery, fails the waiters and the request, returns the fact`, async () => {
      const core = await boot();
      const run = core.resuming();
      const before = run.record;
      expect(core.apply(READY, run.exec, run.generation, run.revision, outcome, run.revision + delta, approved, run.resumeRequest)).toBe(code);
      expect(core.effects()).toEqual([
        effect.RecoveryRequired(run.exec, RecoveryScope.Execution, code),
        effect.FailWaiters(run.exec, code),
        effect.FailRequest(run.resumeRequest, code),
      ]);
      expect(run.record).toEqual({ ...before, waiters: 0 });
      expect(run.admission).toBe(AdmissionState.RecoveryRequired);
    });
  }
});
