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
  SessionEnding,
  SessionEventKind,
} from "../../assembly/abi.js";
import { describeDecisions, effect } from "./driver.js";

const RESUME = MessageKind.Resume;
const READY = MessageKind.ResumeCommitReady;

describeDecisions("Resume(exec, gen, agent, agentGen, request, approvalMatches, sameAsCommitting)", ({ it, boot }) => {
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

  it("refuses with RuntimeDraining while draining, before any other check", async () => {
    const core = await boot();
    const run = core.suspended();
    core.step(MessageKind.SetDraining, 1);
    const request = core.request();
    core.expectRefused(ResultCode.RuntimeDraining, request, RESUME, run.exec, run.generation + 1, 9, 9, request, 7);
  });

  it("refuses approvalMatches outside {0, 1} with ArgumentOutOfRange, before the execution check", async () => {
    const core = await boot();
    const run = core.suspended();
    const request = core.request();
    core.expectRefused(ResultCode.ArgumentOutOfRange, request, RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request, 2);
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

  it("refuses the same decision on an execution held for recovery with ResumeInProgress (nothing is being committed to follow)", async () => {
    const core = await boot();
    const run = core.resuming();
    core.apply(READY, run.exec, run.generation, run.revision, CommitOutcome.RehydrationRequired, 0, 0, run.resumeRequest);
    const request = core.request();
    core.expectRefused(ResultCode.ResumeInProgress, request, RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request, 1, 1);
  });

  it("refuses a suspended execution whose admission needs recovery with ResumeInProgress", async () => {
    const core = await boot();
    const run = core.resuming();
    core.apply(READY, run.exec, run.generation, run.revision, CommitOutcome.RehydrationRequired, 0, 0, run.resumeRequest);
    expect(run.record.status).toBe(ExecutionStatus.Suspended);
    expect(run.admission).toBe(AdmissionState.RecoveryRequired);
    const request = core.request();
    core.expectRefused(ResultCode.ResumeInProgress, request, RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request, 1);
  });

  it("refuses an approval that does not match with ApprovalMustMatch, after every other check", async () => {
    const core = await boot();
    const run = core.suspended();
    const request = core.request();
    core.expectRefused(ResultCode.ApprovalMustMatch, request, RESUME, run.exec, run.generation, run.agent, run.agentGeneration, request, 0);
    const resuming = core.resuming();
    core.expectRefused(ResultCode.ResumeInProgress, request, RESUME, resuming.exec, resuming.generation, resuming.agent, resuming.agentGeneration, request, 0);
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
