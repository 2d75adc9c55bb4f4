// The conversation lifecycle (docs/decisions/0062, docs/core.md
// "Conversations"), on the WebAssembly core and the reference model: the
// recovery pipeline with its epoch and rows policy, the one backoff, the
// admission decision, the queue's head and letting an idle conversation go.

import { expect } from "vitest";
import {
  AdmissionFact as AFact,
  AdmissionSource as Source,
  AdmissionState,
  AdmissionVerdict as Verdict,
  CommitOutcome,
  BusyPolicy as Policy,
  ConversationPhase as Phase,
  ConversationFlag as Flag,
  EffectKind,
  ExecutionStatus,
  HeadOutcome,
  HoldCause,
  Limit,
  MessageKind as M,
  OutcomeType,
  OwnerFact,
  Ownership,
  Phase as ExecutionPhase,
  PreparationOutcome,
  RecoveryCause as Cause,
  RecoveryFact as Fact,
  RecoveryOutcome,
  ResultCode,
  RowsPolicy,
  SessionEventKind,
} from "../../assembly/abi.js";
import type { CoreEffect } from "../../host/core/effects.js";
import { describeDecisions, type Driver } from "./driver.js";

/** The facts of a leasing store where recovery runs by itself: holds retry. */
const RETRYING = Fact.Leasing | Fact.RecoversByItself;

interface Conversation {
  readonly slot: number;
  readonly generation: number;
}

function register(core: Driver): Conversation {
  const handle = core.registerAgent();
  return { slot: handle.agent, generation: handle.agentGeneration };
}

/** Registered, owned here, its first-use recovery finished: ready. */
function ready(core: Driver): Conversation {
  const conversation = register(core);
  core.step(M.ConversationOwned, conversation.slot, conversation.generation, Ownership.Here);
  const [read] = core.step(M.RecoveryRequested, conversation.slot, conversation.generation, Cause.FirstUse, 0);
  core.step(M.RecoveryFinished, conversation.slot, conversation.generation, (read as { epoch: number }).epoch, RecoveryOutcome.Recovered);
  return conversation;
}

function phaseOf(core: Driver, conversation: Conversation): number {
  return core.snapshot().conversations[conversation.slot]!.phase;
}

function verdictOf(effects: readonly CoreEffect[]): number | undefined {
  const decided = effects.find((item) => item.kind === EffectKind.AdmissionDecided);
  return decided?.kind === EffectKind.AdmissionDecided ? decided.verdict : undefined;
}

describeDecisions("the conversation lifecycle", ({ it, boot }) => {
  it("registers, recovers under epoch 1 and opens the gate, the inbox and the queue", async () => {
    const core = await boot();
    const c = register(core);
    expect(phaseOf(core, c)).toBe(Phase.Registering);
    const facts = Fact.Leasing | Fact.QueuedAtOpen;
    expect(core.step(M.RecoveryRequested, c.slot, c.generation, Cause.OpenScan, facts)).toEqual([
      { kind: EffectKind.ReadRows, agent: c.slot, epoch: 1, rows: RowsPolicy.FromStore, readQueue: true },
    ]);
    expect(core.step(M.RecoveryFinished, c.slot, c.generation, 1, RecoveryOutcome.Recovered)).toEqual([
      { kind: EffectKind.ReadinessChanged, agent: c.slot },
      { kind: EffectKind.OpenAdmissions, agent: c.slot },
      { kind: EffectKind.OpenInbox, agent: c.slot, drain: false },
      { kind: EffectKind.RestoreQueue, agent: c.slot },
    ]);
    expect(phaseOf(core, c)).toBe(Phase.Ready);
  });

  it("chooses the rows from the facts: the scan, nothing, or the store", async () => {
    const core = await boot();
    const cases: [number, number, number, boolean][] = [
      [Cause.OpenScan, Fact.InScan, RowsPolicy.FromScan, false],
      [Cause.OpenScan, 0, RowsPolicy.Nothing, false],
      [Cause.FirstUse, Fact.Leasing | Fact.HeldSinceBeforeScan | Fact.InScan, RowsPolicy.FromScan, true],
      [Cause.FirstUse, Fact.Leasing | Fact.LeaseEpochOne, RowsPolicy.Nothing, false],
      [Cause.FirstUse, Fact.Leasing | Fact.PartitionScanned | Fact.InScan, RowsPolicy.FromStore, true],
      [Cause.LeaseTakeover, Fact.InScan, RowsPolicy.FromStore, true],
      // A partition taken in the background: its rows were read when taken.
      [Cause.PartitionTaken, Fact.Leasing | Fact.PartitionScanned, RowsPolicy.Nothing, false],
      [Cause.PartitionTaken, Fact.Leasing, RowsPolicy.FromStore, true],
      [Cause.Retake, Fact.Leasing | Fact.PartitionScanned, RowsPolicy.FromStore, true],
    ];
    for (const [cause, facts, rows, readQueue] of cases) {
      const c = register(core);
      const [read] = core.step(M.RecoveryRequested, c.slot, c.generation, cause, facts);
      expect(read, `cause ${cause} facts ${facts}`).toEqual({ kind: EffectKind.ReadRows, agent: c.slot, epoch: 1, rows, readQueue });
      core.step(M.RecoveryFinished, c.slot, c.generation, 1, RecoveryOutcome.Recovered);
      core.step(M.PurgeAgent, c.slot, c.generation);
    }
  });

  it("joins a second trigger, and reads again after one that brought new facts", async () => {
    const core = await boot();
    const c = register(core);
    core.step(M.RecoveryRequested, c.slot, c.generation, Cause.FirstUse, 0);
    expect(core.step(M.RecoveryRequested, c.slot, c.generation, Cause.RecoverCalled, 0)).toEqual([
      { kind: EffectKind.RecoveryJoined, agent: c.slot, epoch: 1 },
    ]);
    expect(core.step(M.RecoveryRequested, c.slot, c.generation, Cause.LeaseTakeover, 0)).toEqual([
      { kind: EffectKind.RecoveryJoined, agent: c.slot, epoch: 1 },
    ]);
    expect(core.step(M.RecoveryFinished, c.slot, c.generation, 1, RecoveryOutcome.Recovered)).toEqual([
      { kind: EffectKind.ReadRows, agent: c.slot, epoch: 2, rows: RowsPolicy.FromStore, readQueue: true },
    ]);
    core.expectDropped(M.RecoveryFinished, ResultCode.RecoveryEpochMustMatch, c.slot, c.generation, 1, RecoveryOutcome.Recovered);
  });

  it("makes starts wait while this process's own lease settles, reading nothing; a takeover it ends in reads again", async () => {
    const core = await boot();
    const c = ready(core);
    expect(core.step(M.RecoveryRequested, c.slot, c.generation, Cause.LeaseSettling, Fact.Leasing)).toEqual([
      { kind: EffectKind.ReadRows, agent: c.slot, epoch: 2, rows: RowsPolicy.Nothing, readQueue: false },
    ]);
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 7, Source.Direct, Policy.Reject, 1))).toBe(Verdict.WaitUntilReady);
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 8, Source.Filed, Policy.Enqueue, 1))).toBe(Verdict.WaitUntilReady);
    // Settled with nothing moved: ready, starts admitted again; the inbox
    // stayed open (its own lease settling moves nothing), nothing to claim now.
    expect(core.step(M.RecoveryFinished, c.slot, c.generation, 2, RecoveryOutcome.Recovered)).toEqual([
      { kind: EffectKind.ReadinessChanged, agent: c.slot },
      { kind: EffectKind.OpenAdmissions, agent: c.slot },
      { kind: EffectKind.OpenInbox, agent: c.slot, drain: false },
    ]);
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 9, Source.Direct, Policy.Reject, 1))).toBe(Verdict.RunHere);
    // Settled by taking the partition back: the takeover joins and the rows are read under a new epoch.
    core.step(M.RecoveryRequested, c.slot, c.generation, Cause.LeaseSettling, Fact.Leasing);
    expect(core.step(M.RecoveryRequested, c.slot, c.generation, Cause.LeaseTakeover, 0)).toEqual([
      { kind: EffectKind.RecoveryJoined, agent: c.slot, epoch: 3 },
      { kind: EffectKind.CloseInbox, agent: c.slot },
    ]);
    expect(core.step(M.RecoveryFinished, c.slot, c.generation, 3, RecoveryOutcome.Recovered)).toEqual([
      { kind: EffectKind.ReadRows, agent: c.slot, epoch: 4, rows: RowsPolicy.FromStore, readQueue: true },
    ]);
  });

  it("holds a failed recovery with its cause and retries after 250 ms doubling to 5 s (a leasing store, recovery by itself)", async () => {
    const core = await boot();
    const c = register(core);
    const delays: number[] = [];
    for (let epoch = 1; epoch <= 7; epoch += 1) {
      core.step(M.RecoveryRequested, c.slot, c.generation, epoch === 1 ? Cause.FirstUse : Cause.Retry, RETRYING);
      const [woken, retry] = core.step(M.RecoveryFinished, c.slot, c.generation, epoch, RecoveryOutcome.StoreFault);
      expect(woken).toEqual({ kind: EffectKind.ReadinessChanged, agent: c.slot });
      if (retry?.kind === EffectKind.RetryAfter) delays.push(retry.delayMs);
    }
    expect(delays).toEqual([250, 500, 1000, 2000, 4000, 5000, 5000]);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.Held, cause: HoldCause.StoreFault, failures: 7 });
    core.step(M.RecoveryRequested, c.slot, c.generation, Cause.Retry, 0);
    core.step(M.RecoveryFinished, c.slot, c.generation, 8, RecoveryOutcome.Recovered);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.Ready, cause: 0, failures: 0 });
  });

  it("retries a hold only on a leasing store where recovery runs by itself; else it waits for env.recover()", async () => {
    const core = await boot();
    for (const facts of [0, Fact.Leasing, Fact.RecoversByItself]) {
      // A store without leases (one process owns the file), or `recover: false`: the application decides.
      const c = register(core);
      core.step(M.RecoveryRequested, c.slot, c.generation, Cause.FirstUse, facts);
      // Held: the starts told to wait ask again (and are refused held); no retry of its own.
      expect(core.step(M.RecoveryFinished, c.slot, c.generation, 1, RecoveryOutcome.StoreFault), `facts ${facts}`).toEqual([
        { kind: EffectKind.ReadinessChanged, agent: c.slot },
      ]);
      expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.Held, cause: HoldCause.StoreFault, failures: 1 });
      // env.recover() asks again: recovered, the hold is over.
      core.step(M.RecoveryRequested, c.slot, c.generation, Cause.RecoverCalled, facts);
      core.step(M.RecoveryFinished, c.slot, c.generation, 2, RecoveryOutcome.Recovered);
      // A store fault while ready holds it the same way: no retry of its own.
      expect(core.step(M.ConversationHeld, c.slot, c.generation, HoldCause.StoreFault)).toEqual([]);
      core.step(M.PurgeAgent, c.slot, c.generation);
    }
    // Leasing and recovery by itself: the hold of a ready conversation is retried.
    const c = register(core);
    core.step(M.RecoveryRequested, c.slot, c.generation, Cause.FirstUse, RETRYING);
    core.step(M.RecoveryFinished, c.slot, c.generation, 1, RecoveryOutcome.Recovered);
    expect(core.step(M.ConversationHeld, c.slot, c.generation, HoldCause.NotQuiescent)).toEqual([
      { kind: EffectKind.RetryAfter, agent: c.slot, epoch: 1, delayMs: 250 },
    ]);
  });

  it("holds a recovery whose pass left what a store fault held still held, and readies it once released", async () => {
    const core = await boot();
    const admission = core.admitted();
    const c = { slot: admission.agent, generation: admission.agentGeneration };
    core.apply(M.InitialPreparationReady, c.slot, c.generation, admission.token, PreparationOutcome.OutcomeUnknown, 10, 0, admission.request);
    expect(core.agentRecord(c.slot)).toMatchObject({ admissionState: AdmissionState.RecoveryRequired, executionSlotPlusOne: 0 });
    core.step(M.RecoveryRequested, c.slot, c.generation, Cause.RecoverCalled, RETRYING);
    // The host reports the pass ran; the core reads its own record.
    expect(core.step(M.RecoveryFinished, c.slot, c.generation, 1, RecoveryOutcome.Recovered)).toEqual([
      { kind: EffectKind.ReadinessChanged, agent: c.slot },
      { kind: EffectKind.RetryAfter, agent: c.slot, epoch: 1, delayMs: 250 },
    ]);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.Held, cause: HoldCause.StoreFault, failures: 1 });
    expect(core.apply(M.DischargeAgentRecovery, c.slot, c.generation)).toBe(ResultCode.Ok);
    core.step(M.RecoveryRequested, c.slot, c.generation, Cause.HealAfterStoreFault, 0);
    core.step(M.RecoveryFinished, c.slot, c.generation, 2, RecoveryOutcome.Recovered);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.Ready, cause: 0, failures: 0 });
  });

  it("pins a conversation at its registration's report: owned elsewhere then, or defined by id", async () => {
    const core = await boot();
    const cases: [number, number, boolean][] = [
      [Ownership.Here, 0, false],
      [Ownership.Here, OwnerFact.DefinedById, true],
      [Ownership.Elsewhere, 0, true],
      [Ownership.Elsewhere, OwnerFact.DefinedById, true],
    ];
    for (const [ownership, facts, pinned] of cases) {
      const c = register(core);
      core.step(M.ConversationOwned, c.slot, c.generation, ownership, facts);
      const flags = core.snapshot().conversations[c.slot]!.flags;
      expect((flags & Flag.Pinned) !== 0, `ownership ${ownership} facts ${facts}`).toBe(pinned);
      core.step(M.PurgeAgent, c.slot, c.generation);
    }
    // A later report decides no pin; facts out of range change nothing.
    const c = ready(core);
    core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Here, OwnerFact.DefinedById);
    expect(core.snapshot().conversations[c.slot]!.flags & Flag.Pinned).toBe(0);
    core.expectDropped(M.ConversationOwned, ResultCode.ArgumentOutOfRange, c.slot, c.generation, Ownership.Here, 2);
  });

  it("RetryDue recovers a conversation still held at the retry's epoch with the cause its hold names; a stale one is dropped", async () => {
    const core = await boot();
    const facts = Fact.Leasing | Fact.RecoversByItself;
    const cases: [RecoveryOutcome, Cause][] = [
      [RecoveryOutcome.StoreFault, Cause.HealAfterStoreFault],
      [RecoveryOutcome.OutcomeUnknown, Cause.HealAfterStoreFault],
      [RecoveryOutcome.NotQuiescent, Cause.SessionSettling],
      [RecoveryOutcome.LeaseLapsed, Cause.Retry],
    ];
    for (const [outcome, cause] of cases) {
      const c = register(core);
      core.step(M.RecoveryRequested, c.slot, c.generation, Cause.FirstUse, facts);
      const [, retry] = core.step(M.RecoveryFinished, c.slot, c.generation, 1, outcome);
      expect(retry).toMatchObject({ kind: EffectKind.RetryAfter, epoch: 1 });
      core.expectDropped(M.RetryDue, ResultCode.RecoveryEpochMustMatch, c.slot, c.generation, 2, facts);
      expect(core.step(M.RetryDue, c.slot, c.generation, 1, facts)).toEqual([
        { kind: EffectKind.ReadRows, agent: c.slot, epoch: 2, rows: RowsPolicy.FromStore, readQueue: true },
      ]);
      expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.Recovering, cause });
      // The same retry again: no longer held (a recovery began).
      core.expectDropped(M.RetryDue, ResultCode.ConversationPhaseMustMatch, c.slot, c.generation, 1, facts);
      core.step(M.RecoveryFinished, c.slot, c.generation, 2, RecoveryOutcome.Recovered);
      core.step(M.PurgeAgent, c.slot, c.generation);
    }
  });

  it("admits a start on a ready, free conversation; files one owned elsewhere; waits while recovering", async () => {
    const core = await boot();
    const c = ready(core);
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 7, Source.Direct, Policy.Reject, 1))).toBe(Verdict.RunHere);
    core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Elsewhere);
    // Filed for the owner only when the host says a start can be filed.
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 8, Source.Direct, Policy.Reject, AFact.QueueKept | AFact.CanFile))).toBe(Verdict.FileForOwner);
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 9, Source.Filed, Policy.Reject, AFact.QueueKept | AFact.CanFile))).toBe(Verdict.LeaveFiled);
    core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Here);
    core.step(M.RecoveryRequested, c.slot, c.generation, Cause.LeaseTakeover, 0);
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 10, Source.Direct, Policy.Enqueue, 1))).toBe(Verdict.WaitUntilReady);
  });

  it("refuses a start or retry made here for a conversation owned elsewhere when it cannot be filed; a filed one stays filed either way", async () => {
    const core = await boot();
    const c = ready(core);
    core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Elsewhere);
    for (const facts of [0, AFact.QueueKept]) {
      expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 8, Source.Direct, Policy.Enqueue, facts))).toBe(Verdict.RefuseOwnedElsewhere);
      expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 9, Source.Retry, Policy.Reject, facts))).toBe(Verdict.RefuseOwnedElsewhere);
      expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 10, Source.Filed, Policy.Reject, facts))).toBe(Verdict.LeaveFiled);
    }
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 11, Source.Retry, Policy.Reject, AFact.CanFile))).toBe(Verdict.FileForOwner);
    // Facts past the known bits are refused as out of range.
    core.expectRefused(ResultCode.ArgumentOutOfRange, 12, M.Admit, c.slot, c.generation, 12, Source.Direct, Policy.Reject, AFact.End);
  });

  it("starts the head of a queue read inside the recovery's pass once it is ready, when nothing holds the admission", async () => {
    const core = await boot();
    const c = register(core);
    core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Here);
    core.step(M.RecoveryRequested, c.slot, c.generation, Cause.OpenScan, Fact.Leasing | Fact.QueuedAtOpen);
    // The pass read two messages; a head offered meanwhile stays queued.
    core.step(M.MessageQueued, c.slot, c.generation, 2);
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 11, Source.QueueHead, Policy.Enqueue, 1))).toBe(Verdict.StayQueued);
    expect(core.step(M.RecoveryFinished, c.slot, c.generation, 1, RecoveryOutcome.Recovered)).toEqual([
      { kind: EffectKind.ReadinessChanged, agent: c.slot },
      { kind: EffectKind.OpenAdmissions, agent: c.slot },
      { kind: EffectKind.OpenInbox, agent: c.slot, drain: false },
      { kind: EffectKind.RestoreQueue, agent: c.slot },
      { kind: EffectKind.StartHead, agent: c.slot },
    ]);
  });

  it("follows the messages queued here when owned elsewhere, keeps them counted, and leaves when taken back", async () => {
    const core = await boot();
    const c = ready(core);
    // Nothing queued: owned elsewhere, nothing to follow; the inbox closes.
    expect(core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Elsewhere)).toEqual([{ kind: EffectKind.CloseInbox, agent: c.slot }]);
    core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Here);
    core.step(M.RecoveryRequested, c.slot, c.generation, Cause.LeaseTakeover, 0);
    core.step(M.RecoveryFinished, c.slot, c.generation, 2, RecoveryOutcome.Recovered);
    core.step(M.Start, c.slot, c.generation, core.request(), 0);
    core.step(M.MessageQueued, c.slot, c.generation, 2);
    // The lease lost: the two messages' callers follow them; both stay counted.
    expect(core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Elsewhere)).toEqual([
      { kind: EffectKind.CloseInbox, agent: c.slot },
      { kind: EffectKind.FollowQueued, agent: c.slot, queued: 2 },
    ]);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.OwnedElsewhere, queued: 2 });
    // A head stays queued while owned elsewhere: the owner runs it.
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 11, Source.QueueHead, Policy.Enqueue, 1))).toBe(Verdict.StayQueued);
    // A message counted queued again, and the owner's lease seen again: followed too.
    core.step(M.MessageQueued, c.slot, c.generation, 1);
    expect(core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Elsewhere)).toEqual([{ kind: EffectKind.FollowQueued, agent: c.slot, queued: 3 }]);
    // Taken back: registering, then the takeover's recovery reads the queue again.
    expect(core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Here)).toEqual([]);
    expect(phaseOf(core, c)).toBe(Phase.Registering);
    expect(core.step(M.RecoveryRequested, c.slot, c.generation, Cause.LeaseTakeover, Fact.Leasing)).toEqual([
      { kind: EffectKind.ReadRows, agent: c.slot, epoch: 3, rows: RowsPolicy.FromStore, readQueue: true },
    ]);
    // The execution started before still holds the admission: the head
    // waits for its release. Decisions filed meanwhile are claimed now.
    expect(core.step(M.RecoveryFinished, c.slot, c.generation, 3, RecoveryOutcome.Recovered)).toEqual([
      { kind: EffectKind.ReadinessChanged, agent: c.slot },
      { kind: EffectKind.OpenAdmissions, agent: c.slot },
      { kind: EffectKind.OpenInbox, agent: c.slot, drain: true },
      { kind: EffectKind.RestoreQueue, agent: c.slot },
    ]);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.Ready, queued: 3 });
  });

  it("follows the execution holding the admission when it is parked here (suspended or held for recovery), not one running", async () => {
    const core = await boot({ agentsMax: 8, executionsMax: 8 });
    // What follows the callers (the wake of starts told to wait, on leaving registering, is not the point here).
    const elsewhere = (run: { agent: number; agentGeneration: number }): CoreEffect[] =>
      core.step(M.ConversationOwned, run.agent, run.agentGeneration, Ownership.Elsewhere).filter((item) => item.kind !== EffectKind.ReadinessChanged);
    // Running here: it keeps its callers (its next write is fenced and tells them).
    const running = core.callingModel();
    expect(elsewhere(running)).toEqual([]);
    // Suspended: its callers follow it, on every report, and nothing changes.
    const suspended = core.suspended();
    const before = core.snapshot();
    expect(elsewhere(suspended)).toEqual([{ kind: EffectKind.FollowAdmitted, execution: suspended.exec, generation: suspended.generation }]);
    expect(core.snapshot().executions).toEqual(before.executions);
    expect(core.snapshot().agents).toEqual(before.agents);
    expect(elsewhere(suspended)).toEqual([{ kind: EffectKind.FollowAdmitted, execution: suspended.exec, generation: suspended.generation }]);
    // Suspended with its decision being committed (admission resuming): still parked here.
    const resuming = core.resuming();
    expect(elsewhere(resuming)).toEqual([{ kind: EffectKind.FollowAdmitted, execution: resuming.exec, generation: resuming.generation }]);
    // Held for recovery after an active execution's terminal write failed.
    const held = core.terminalizing();
    core.apply(M.TerminalCommitReady, held.exec, held.generation, held.session, held.revision, OutcomeType.StoreFailed, 0);
    expect(elsewhere(held)).toEqual([{ kind: EffectKind.FollowAdmitted, execution: held.exec, generation: held.generation }]);
    // After messages queued here: both the queue's callers and the execution's follow.
    const queued = core.suspended();
    core.step(M.MessageQueued, queued.agent, queued.agentGeneration, 2);
    expect(elsewhere(queued)).toEqual([
      { kind: EffectKind.FollowQueued, agent: queued.agent, queued: 2 },
      { kind: EffectKind.FollowAdmitted, execution: queued.exec, generation: queued.generation },
    ]);
    // Owned here again: nothing follows.
    expect(core.step(M.ConversationOwned, queued.agent, queued.agentGeneration, Ownership.Here)).toEqual([]);
  });

  it("follows nothing for an admission held for recovery with no execution bound", async () => {
    const core = await boot();
    const admission = core.admitted();
    core.step(M.InitialPreparationReady, admission.agent, admission.agentGeneration, admission.token, PreparationOutcome.StoreFailed, 0, 0, admission.request);
    expect(core.agentRecord(admission.agent)).toMatchObject({ admissionState: AdmissionState.RecoveryRequired, executionSlotPlusOne: 0 });
    expect(core.step(M.ConversationOwned, admission.agent, admission.agentGeneration, Ownership.Elsewhere)).toEqual([
      { kind: EffectKind.ReadinessChanged, agent: admission.agent },
    ]);
  });

  it("recovers what this process holds while owned elsewhere; the owner reported again abandons that epoch", async () => {
    const core = await boot();
    const c = ready(core);
    core.step(M.MessageQueued, c.slot, c.generation, 1);
    core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Elsewhere);
    // A decision here on an execution a fault left held: its recovery runs.
    expect(core.step(M.RecoveryRequested, c.slot, c.generation, Cause.HealAfterStoreFault, Fact.Leasing)).toEqual([
      { kind: EffectKind.ReadRows, agent: c.slot, epoch: 2, rows: RowsPolicy.FromStore, readQueue: true },
    ]);
    // Its queue read back while the store names another holder.
    expect(core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Elsewhere)).toEqual([
      { kind: EffectKind.ReadinessChanged, agent: c.slot },
      { kind: EffectKind.FollowQueued, agent: c.slot, queued: 1 },
    ]);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.OwnedElsewhere, queued: 1, cause: 0, abandonedEpoch: 2 });
    // Its pass ends later: the finish only says so (nothing else changes);
    // told twice, the second is dropped as stale.
    expect(core.step(M.RecoveryFinished, c.slot, c.generation, 2, RecoveryOutcome.Recovered)).toEqual([]);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.OwnedElsewhere, queued: 1, cause: 0, abandonedEpoch: 0 });
    core.expectDropped(M.RecoveryFinished, ResultCode.ConversationPhaseMustMatch, c.slot, c.generation, 2, RecoveryOutcome.Recovered);
  });

  it("starts no head while an abandoned recovery's pass still runs, even once a later recovery made it ready", async () => {
    const core = await boot();
    const c = ready(core);
    core.step(M.MessageQueued, c.slot, c.generation, 1);
    core.step(M.RecoveryRequested, c.slot, c.generation, Cause.FencedWrite, Fact.Leasing);
    // The lease lost mid-pass: epoch 2 abandoned, its pass still running.
    core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Elsewhere);
    // Taken back: epoch 3 recovers and finishes first.
    core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Here);
    core.step(M.RecoveryRequested, c.slot, c.generation, Cause.LeaseTakeover, Fact.Leasing);
    const finished = core.step(M.RecoveryFinished, c.slot, c.generation, 3, RecoveryOutcome.Recovered);
    expect(finished.map((effect) => effect.kind)).not.toContain(EffectKind.StartHead);
    expect(phaseOf(core, c)).toBe(Phase.Ready);
    expect(core.step(M.AdmissionReleased, c.slot, c.generation)).toEqual([]);
    expect(core.step(M.MessageWritten, c.slot, c.generation)).toEqual([]);
    // Epoch 2's pass ends: now the head is offered.
    expect(core.step(M.RecoveryFinished, c.slot, c.generation, 2, RecoveryOutcome.StoreFault)).toEqual([{ kind: EffectKind.StartHead, agent: c.slot }]);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.Ready, abandonedEpoch: 0, failures: 0 });
  });

  it("applies the busy policy behind a running execution and keeps the queue's order", async () => {
    const core = await boot();
    const c = ready(core);
    core.step(M.Start, c.slot, c.generation, core.request(), 0);
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 1, Source.Direct, Policy.Reject, 1))).toBe(Verdict.RefuseBusy);
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 2, Source.Direct, Policy.Enqueue, 0))).toBe(Verdict.RefuseNoQueue);
    expect(core.step(M.Admit, c.slot, c.generation, 3, Source.Direct, Policy.Interrupt, 1)).toEqual([
      { kind: EffectKind.AdmissionDecided, request: 3, verdict: Verdict.EnqueueFront, agent: c.slot, interrupt: true },
    ]);
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 4, Source.QueueHead, Policy.Enqueue, 1))).toBe(Verdict.StayQueued);
    expect(core.snapshot().conversations[c.slot]!.queued).toBe(1);
  });

  it("starts the head once the admission is free, then lets the idle conversation go", async () => {
    const core = await boot();
    const c = ready(core);
    core.step(M.UseBegin, c.slot, c.generation);
    core.step(M.MessageQueued, c.slot, c.generation, 1);
    expect(core.step(M.AdmissionReleased, c.slot, c.generation)).toEqual([{ kind: EffectKind.StartHead, agent: c.slot }]);
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 5, Source.QueueHead, Policy.Enqueue, 1))).toBe(Verdict.RunHere);
    expect(core.apply(M.PurgeAgent, c.slot, c.generation)).toBe(ResultCode.ConversationInUse);
    expect(core.step(M.HeadSettled, c.slot, c.generation, HeadOutcome.Left)).toEqual([]);
    expect(core.step(M.UseEnd, c.slot, c.generation)).toEqual([{ kind: EffectKind.ReleaseConversation, agent: c.slot, generation: c.generation }]);
    expect(phaseOf(core, c)).toBe(Phase.Releasing);
    core.step(M.PurgeAgent, c.slot, c.generation);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.None, users: 0, queued: 0, flags: 0, recoveryEpoch: 0 });
  });

  it("lets an idle conversation go while owned elsewhere, not while held; one used again before the purge is owned elsewhere again", async () => {
    const core = await boot();
    const held = ready(core);
    core.step(M.UseBegin, held.slot, held.generation);
    core.step(M.ConversationHeld, held.slot, held.generation, HoldCause.StoreFault);
    // Held: its retry recovers it, so it stays.
    expect(core.step(M.UseEnd, held.slot, held.generation)).toEqual([]);
    expect(core.snapshot().conversations[held.slot]).toMatchObject({ phase: Phase.Held, cause: HoldCause.StoreFault });
    const elsewhere = ready(core);
    core.step(M.UseBegin, elsewhere.slot, elsewhere.generation);
    core.step(M.ConversationOwned, elsewhere.slot, elsewhere.generation, Ownership.Elsewhere);
    expect(core.step(M.UseEnd, elsewhere.slot, elsewhere.generation)).toEqual([
      { kind: EffectKind.ReleaseConversation, agent: elsewhere.slot, generation: elsewhere.generation },
    ]);
    expect(core.snapshot().conversations[elsewhere.slot]).toMatchObject({ phase: Phase.Releasing, flags: Flag.ReleasedElsewhere });
    // Used again before the host purged it: owned elsewhere again.
    core.step(M.UseBegin, elsewhere.slot, elsewhere.generation);
    expect(core.snapshot().conversations[elsewhere.slot]).toMatchObject({ phase: Phase.OwnedElsewhere, flags: 0 });
    // Let go again, and taken over meanwhile: used again, it is ready (the takeover's recovery follows).
    core.step(M.UseEnd, elsewhere.slot, elsewhere.generation);
    core.step(M.ConversationOwned, elsewhere.slot, elsewhere.generation, Ownership.Here);
    expect(core.snapshot().conversations[elsewhere.slot]).toMatchObject({ phase: Phase.Releasing, flags: 0 });
    core.step(M.UseBegin, elsewhere.slot, elsewhere.generation);
    expect(phaseOf(core, elsewhere)).toBe(Phase.Ready);
    // Purged while releasing: the slot's record is all zero.
    core.step(M.UseEnd, elsewhere.slot, elsewhere.generation);
    expect(core.apply(M.PurgeAgent, elsewhere.slot, elsewhere.generation)).toBe(ResultCode.Ok);
    expect(core.snapshot().conversations[elsewhere.slot]).toMatchObject({ phase: Phase.None, flags: 0, cause: 0 });
  });

  it("a head refused for now while the store says another process holds the conversation is kept and follows the owner, not started again here", async () => {
    const core = await boot();
    const c = ready(core);
    core.step(M.MessageQueued, c.slot, c.generation, 1);
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 5, Source.QueueHead, Policy.Enqueue, 1))).toBe(Verdict.RunHere);
    // The admission is free, yet asking for the same start again at once
    // would be refused again (and again): it is counted queued again, its
    // Run follows it to the owner, and the conversation is owned elsewhere.
    expect(core.step(M.HeadSettled, c.slot, c.generation, HeadOutcome.NotNow, Ownership.Elsewhere)).toEqual([
      { kind: EffectKind.HeadKept, agent: c.slot },
      { kind: EffectKind.CloseInbox, agent: c.slot },
      { kind: EffectKind.FollowQueued, agent: c.slot, queued: 1 },
    ]);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.OwnedElsewhere, queued: 1, flags: 0, failures: 0 });
    expect(core.step(M.AdmissionReleased, c.slot, c.generation)).toEqual([]);
    expect(core.step(M.HeadRetryDue, c.slot, c.generation)).toEqual([]);
    // Taken back: the takeover's recovery reads the queue and offers it.
    core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Here);
    const [read] = core.step(M.RecoveryRequested, c.slot, c.generation, Cause.LeaseTakeover, 0);
    expect(core.step(M.RecoveryFinished, c.slot, c.generation, (read as { epoch: number }).epoch, RecoveryOutcome.Recovered)).toContainEqual({
      kind: EffectKind.StartHead,
      agent: c.slot,
    });
  });

  it("a head the store failed while the conversation is held or recovering is kept with no timer; the recovery's end offers it", async () => {
    const core = await boot();
    const c = ready(core);
    core.step(M.MessageQueued, c.slot, c.generation, 1);
    // Held while its preparation was in flight (another write failed).
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 5, Source.QueueHead, Policy.Enqueue, 1))).toBe(Verdict.RunHere);
    core.step(M.ConversationHeld, c.slot, c.generation, HoldCause.StoreFault);
    const failuresHeld = core.snapshot().conversations[c.slot]!.failures;
    expect(core.step(M.HeadSettled, c.slot, c.generation, HeadOutcome.StoreFailed, Ownership.Here)).toEqual([{ kind: EffectKind.HeadKept, agent: c.slot }]);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.Held, queued: 1, flags: Flag.InboxOpen, failures: failuresHeld });
    expect(core.step(M.HeadRetryDue, c.slot, c.generation)).toEqual([]);
    const [read] = core.step(M.RecoveryRequested, c.slot, c.generation, Cause.HealAfterStoreFault, 0);
    const epoch = (read as { epoch: number }).epoch;
    expect(core.step(M.RecoveryFinished, c.slot, c.generation, epoch, RecoveryOutcome.Recovered)).toContainEqual({ kind: EffectKind.StartHead, agent: c.slot });
    // Recovering while its preparation was in flight (a takeover): refused
    // for now, held here — kept, and offered once the recovery ends.
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 6, Source.QueueHead, Policy.Enqueue, 1))).toBe(Verdict.RunHere);
    const [again] = core.step(M.RecoveryRequested, c.slot, c.generation, Cause.LeaseTakeover, 0);
    expect(core.step(M.HeadSettled, c.slot, c.generation, HeadOutcome.NotNow, Ownership.Here)).toEqual([{ kind: EffectKind.HeadKept, agent: c.slot }]);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.Recovering, queued: 1 });
    const finished = core.step(M.RecoveryFinished, c.slot, c.generation, (again as { epoch: number }).epoch, RecoveryOutcome.Recovered);
    expect(finished).toContainEqual({ kind: EffectKind.StartHead, agent: c.slot });
  });

  it("a head whose execution another process prepared is taken; one refused for good leaves; neither follows the owner", async () => {
    const core = await boot();
    const c = ready(core);
    core.step(M.MessageQueued, c.slot, c.generation, 3);
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 5, Source.QueueHead, Policy.Enqueue, 1))).toBe(Verdict.RunHere);
    expect(core.step(M.HeadSettled, c.slot, c.generation, HeadOutcome.StoreFailed, Ownership.Here)).toEqual([
      { kind: EffectKind.HeadKept, agent: c.slot },
      { kind: EffectKind.RetryHeadAfter, agent: c.slot, delayMs: 250 },
    ]);
    core.step(M.HeadRetryDue, c.slot, c.generation);
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 6, Source.QueueHead, Policy.Enqueue, 1))).toBe(Verdict.RunHere);
    // Its Run follows the execution; the backoff starts again; the next head is offered.
    expect(core.step(M.HeadSettled, c.slot, c.generation, HeadOutcome.ExecutionExists, Ownership.Elsewhere)).toEqual([
      { kind: EffectKind.HeadTaken, agent: c.slot },
      { kind: EffectKind.StartHead, agent: c.slot },
    ]);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.Ready, queued: 2, failures: 0 });
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 7, Source.QueueHead, Policy.Enqueue, 1))).toBe(Verdict.RunHere);
    expect(core.step(M.HeadSettled, c.slot, c.generation, HeadOutcome.Refused, Ownership.Elsewhere)).toEqual([{ kind: EffectKind.StartHead, agent: c.slot }]);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.Ready, queued: 1 });
  });

  it("offers the head itself: on messages read back (once for the count), a message written, and a head's retry due", async () => {
    const core = await boot();
    const c = ready(core);
    // Read back from the store: one StartHead for the three, not three.
    expect(core.step(M.MessageQueued, c.slot, c.generation, 3)).toEqual([{ kind: EffectKind.StartHead, agent: c.slot }]);
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 1, Source.QueueHead, Policy.Enqueue, 1))).toBe(Verdict.RunHere);
    // Behind a head starting: counted queued at Admit, offered nothing when written.
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 2, Source.Direct, Policy.Enqueue, 1))).toBe(Verdict.EnqueueBack);
    expect(core.step(M.MessageWritten, c.slot, c.generation)).toEqual([]);
    // The store failed the head: the one backoff, as its own effect; the
    // retry due offers the head again, once nothing else starts it.
    expect(core.step(M.HeadSettled, c.slot, c.generation, HeadOutcome.StoreFailed, Ownership.Here)).toEqual([
      { kind: EffectKind.HeadKept, agent: c.slot },
      { kind: EffectKind.RetryHeadAfter, agent: c.slot, delayMs: 250 },
    ]);
    expect(core.step(M.HeadRetryDue, c.slot, c.generation)).toEqual([{ kind: EffectKind.StartHead, agent: c.slot }]);
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 3, Source.QueueHead, Policy.Enqueue, 1))).toBe(Verdict.RunHere);
    expect(core.step(M.HeadSettled, c.slot, c.generation, HeadOutcome.NotNow, Ownership.Here)).toEqual([
      { kind: EffectKind.HeadKept, agent: c.slot },
      { kind: EffectKind.RetryHeadAfter, agent: c.slot, delayMs: 500 },
    ]);
    // A message written meanwhile offers the head before the wait is over
    // (the store answered: as the host's own offer did before); the retry
    // due then finds a head starting and offers nothing.
    expect(core.step(M.MessageWritten, c.slot, c.generation)).toEqual([{ kind: EffectKind.StartHead, agent: c.slot }]);
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 4, Source.QueueHead, Policy.Enqueue, 1))).toBe(Verdict.RunHere);
    expect(core.step(M.HeadRetryDue, c.slot, c.generation)).toEqual([]);
    // It left: the backoff starts again, and the next head is offered.
    expect(core.step(M.HeadSettled, c.slot, c.generation, HeadOutcome.Left)).toEqual([{ kind: EffectKind.StartHead, agent: c.slot }]);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ queued: 3, failures: 0 });
  });

  it("offers no head while recovering, held or owned elsewhere; a recovery's end offers it", async () => {
    const core = await boot();
    const c = register(core);
    core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Here);
    core.step(M.RecoveryRequested, c.slot, c.generation, Cause.FirstUse, Fact.QueuedAtOpen);
    expect(core.step(M.MessageQueued, c.slot, c.generation, 2)).toEqual([]);
    expect(core.step(M.MessageWritten, c.slot, c.generation)).toEqual([]);
    expect(core.step(M.HeadRetryDue, c.slot, c.generation)).toEqual([]);
    expect(core.step(M.RecoveryFinished, c.slot, c.generation, 1, RecoveryOutcome.Recovered)).toContainEqual({ kind: EffectKind.StartHead, agent: c.slot });
    core.step(M.ConversationHeld, c.slot, c.generation, HoldCause.StoreFault);
    expect(core.step(M.MessageWritten, c.slot, c.generation)).toEqual([]);
    expect(core.step(M.HeadRetryDue, c.slot, c.generation)).toEqual([]);
    core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Elsewhere);
    expect(core.step(M.MessageQueued, c.slot, c.generation, 1)).toEqual([]);
  });

  it("drops what does not fit and changes nothing", async () => {
    const core = await boot();
    const c = ready(core);
    core.expectDropped(M.UseEnd, ResultCode.ConversationUsersUnderflow, c.slot, c.generation);
    core.expectDropped(M.MessageLeft, ResultCode.QueueEmpty, c.slot, c.generation);
    core.expectDropped(M.MessageWritten, ResultCode.QueueEmpty, c.slot, c.generation);
    core.expectDropped(M.HeadRetryDue, ResultCode.AgentGenerationMustMatch, c.slot, c.generation + 1);
    core.expectDropped(M.HeadSettled, ResultCode.HeadNotStarting, c.slot, c.generation, HeadOutcome.Left);
    // 2 is retired (was Back: the host's decision); past Refused; an ownership that is none of the three.
    core.expectDropped(M.HeadSettled, ResultCode.ArgumentOutOfRange, c.slot, c.generation, 2, Ownership.Here);
    core.expectDropped(M.HeadSettled, ResultCode.ArgumentOutOfRange, c.slot, c.generation, HeadOutcome.Refused + 1, Ownership.Here);
    core.expectDropped(M.HeadSettled, ResultCode.ArgumentOutOfRange, c.slot, c.generation, HeadOutcome.StoreFailed, Ownership.Elsewhere + 1);
    core.expectDropped(M.RecoveryFinished, ResultCode.ConversationPhaseMustMatch, c.slot, c.generation, 1, RecoveryOutcome.Recovered);
    core.expectDropped(M.RecoveryRequested, ResultCode.ArgumentOutOfRange, c.slot, c.generation, Cause.Moved + 1, 0);
    core.expectDropped(M.UseBegin, ResultCode.AgentGenerationMustMatch, c.slot, c.generation + 1);
    core.expectRefused(ResultCode.QueueEmpty, 9, M.Admit, c.slot, c.generation, 9, Source.QueueHead, Policy.Enqueue, 1);
  });

  it("opens the approval inbox when a recovery ends ready and closes it when the lease changes hands, owned elsewhere or purged", async () => {
    const core = await boot();
    const open = (c: Conversation): boolean => (core.snapshot().conversations[c.slot]!.flags & Flag.InboxOpen) !== 0;
    const inboxEffects = (effects: readonly CoreEffect[]): CoreEffect[] =>
      effects.filter((effect) => effect.kind === EffectKind.OpenInbox || effect.kind === EffectKind.CloseInbox);
    const c = register(core);
    expect(open(c)).toBe(false);
    // Registering and recovering: closed (a decision would find nothing installed).
    core.step(M.RecoveryRequested, c.slot, c.generation, Cause.FirstUse, 0);
    expect(open(c)).toBe(false);
    // A first use with nothing suspended: open, nothing claimed now.
    expect(inboxEffects(core.step(M.RecoveryFinished, c.slot, c.generation, 1, RecoveryOutcome.Recovered))).toEqual([
      { kind: EffectKind.OpenInbox, agent: c.slot, drain: false },
    ]);
    expect(open(c)).toBe(true);
    // A recovery of this process's own (env.recover(), a heal) keeps it open;
    // a hold too (what is installed stays installed).
    expect(inboxEffects(core.step(M.RecoveryRequested, c.slot, c.generation, Cause.RecoverCalled, 0))).toEqual([]);
    expect(open(c)).toBe(true);
    expect(inboxEffects(core.step(M.RecoveryFinished, c.slot, c.generation, 2, RecoveryOutcome.Recovered))).toEqual([
      { kind: EffectKind.OpenInbox, agent: c.slot, drain: false },
    ]);
    expect(inboxEffects(core.step(M.ConversationHeld, c.slot, c.generation, HoldCause.StoreFault))).toEqual([]);
    expect(open(c)).toBe(true);
    // Taken over (the lease changed hands): closed until its recovery ends,
    // then claimed at once; a recovery that fails keeps it closed.
    for (const cause of [Cause.LeaseTakeover, Cause.PartitionTaken, Cause.Retake, Cause.FencedWrite]) {
      const [read, ...rest] = core.step(M.RecoveryRequested, c.slot, c.generation, cause, RETRYING);
      expect(rest, `cause ${cause}`).toEqual([{ kind: EffectKind.CloseInbox, agent: c.slot }]);
      const epoch = (read as { epoch: number }).epoch;
      expect(inboxEffects(core.step(M.RecoveryFinished, c.slot, c.generation, epoch, RecoveryOutcome.StoreFault))).toEqual([]);
      expect(open(c)).toBe(false);
      const [again] = core.step(M.RecoveryRequested, c.slot, c.generation, Cause.HealAfterStoreFault, RETRYING);
      const retried = (again as { epoch: number }).epoch;
      expect(inboxEffects(core.step(M.RecoveryFinished, c.slot, c.generation, retried, RecoveryOutcome.Recovered))).toEqual([
        { kind: EffectKind.OpenInbox, agent: c.slot, drain: true },
      ]);
    }
    // A takeover joining a recovery under way closes it too (once).
    core.step(M.RecoveryRequested, c.slot, c.generation, Cause.RecoverCalled, 0);
    expect(inboxEffects(core.step(M.RecoveryRequested, c.slot, c.generation, Cause.LeaseTakeover, 0))).toEqual([
      { kind: EffectKind.CloseInbox, agent: c.slot },
    ]);
    expect(inboxEffects(core.step(M.RecoveryRequested, c.slot, c.generation, Cause.Retake, 0))).toEqual([]);
    // Owned elsewhere: closed; a purge of an open one closes it.
    expect(inboxEffects(core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Elsewhere))).toEqual([]);
    const d = ready(core);
    expect(inboxEffects(core.step(M.ConversationOwned, d.slot, d.generation, Ownership.Elsewhere))).toEqual([{ kind: EffectKind.CloseInbox, agent: d.slot }]);
    const e = ready(core);
    expect(core.step(M.PurgeAgent, e.slot, e.generation)).toEqual([{ kind: EffectKind.CloseInbox, agent: e.slot }]);
  });

  it("claims at once what waits for a first use that recovered something suspended; an owned-elsewhere conversation recovers closed", async () => {
    const core = await boot();
    const open = (c: Conversation): boolean => (core.snapshot().conversations[c.slot]!.flags & Flag.InboxOpen) !== 0;
    // A first use that installed a suspended execution: its decisions are claimed at once.
    const run = core.recovered({ status: ExecutionStatus.Suspended, phase: ExecutionPhase.Suspended });
    const s = { slot: run.agent, generation: run.agentGeneration };
    const [read] = core.step(M.RecoveryRequested, s.slot, s.generation, Cause.FirstUse, 0);
    expect(open(s)).toBe(false);
    const effects = core.step(M.RecoveryFinished, s.slot, s.generation, (read as { epoch: number }).epoch, RecoveryOutcome.Recovered);
    expect(effects).toContainEqual({ kind: EffectKind.OpenInbox, agent: s.slot, drain: true });
    // Owned elsewhere, recovered here (what a fault held is let go): closed
    // while recovering, open once ready; taken back (registering), closed
    // until its recovery ends.
    const c = ready(core);
    core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Elsewhere);
    const [again] = core.step(M.RecoveryRequested, c.slot, c.generation, Cause.RecoverCalled, 0);
    expect(open(c)).toBe(false);
    core.step(M.RecoveryFinished, c.slot, c.generation, (again as { epoch: number }).epoch, RecoveryOutcome.Recovered);
    expect(open(c)).toBe(true);
    core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Elsewhere);
    core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Here);
    expect(phaseOf(core, c)).toBe(Phase.Registering);
    expect(open(c)).toBe(false);
  });
});

describeDecisions("RecoveryFinished: the core decides a conversation is still settling", ({ it, boot }) => {
  it("holds as NotQuiescent a pass that left a row for a start still being prepared here, and retries it", async () => {
    const core = await boot();
    const c = register(core);
    core.step(M.RecoveryRequested, c.slot, c.generation, Cause.FirstUse, RETRYING);
    expect(core.step(M.RecoveryFinished, c.slot, c.generation, 1, RecoveryOutcome.Recovered, Fact.StartPreparingHere)).toEqual([
      { kind: EffectKind.ReadinessChanged, agent: c.slot },
      { kind: EffectKind.RetryAfter, agent: c.slot, epoch: 1, delayMs: 250 },
    ]);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.Held, cause: HoldCause.NotQuiescent, failures: 1 });
    core.step(M.RetryDue, c.slot, c.generation, 1, RETRYING);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.Recovering, cause: Cause.SessionSettling });
    core.step(M.RecoveryFinished, c.slot, c.generation, 2, RecoveryOutcome.Recovered, 0);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.Ready, cause: 0, failures: 0 });
  });

  it("retries at once, not after the backoff, a hold for a start being prepared here once that start's admission is released (0140)", async () => {
    const core = await boot();
    const admission = core.admitted();
    const c = { slot: admission.agent, generation: admission.agentGeneration };
    // A takeover's pass read a row while that start held the admission: left for it (0137), held.
    core.step(M.RecoveryRequested, c.slot, c.generation, Cause.LeaseTakeover, RETRYING);
    const epoch = core.snapshot().conversations[c.slot]!.recoveryEpoch;
    expect(core.step(M.RecoveryFinished, c.slot, c.generation, epoch, RecoveryOutcome.Recovered, Fact.StartPreparingHere)).toContainEqual({
      kind: EffectKind.RetryAfter,
      agent: c.slot,
      epoch,
      delayMs: 250,
    });
    // Its preparation refused (nothing written): the admission released,
    // the row is read again now — a decision on it is not refused for the backoff.
    core.step(M.InitialPreparationReady, c.slot, c.generation, admission.token, PreparationOutcome.NotEstablished, 0, 0, admission.request);
    expect(core.agentRecord(c.slot)).toMatchObject({ admissionState: AdmissionState.None });
    expect(core.step(M.AdmissionReleased, c.slot, c.generation)).toEqual([{ kind: EffectKind.RetryAfter, agent: c.slot, epoch, delayMs: 0 }]);
    // Once: a second release asks nothing more.
    expect(core.step(M.AdmissionReleased, c.slot, c.generation)).toEqual([]);
    core.step(M.RetryDue, c.slot, c.generation, epoch, RETRYING);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.Recovering, cause: Cause.SessionSettling });
    core.step(M.RecoveryFinished, c.slot, c.generation, epoch + 1, RecoveryOutcome.Recovered, 0);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.Ready, failures: 0 });
  });

  it("asks no retry on a release for a hold of another cause, or once the conversation recovered", async () => {
    const core = await boot();
    const c = register(core);
    core.step(M.RecoveryRequested, c.slot, c.generation, Cause.FirstUse, RETRYING);
    core.step(M.RecoveryFinished, c.slot, c.generation, 1, RecoveryOutcome.NotQuiescent, 0);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.Held, cause: HoldCause.NotQuiescent });
    expect(core.step(M.AdmissionReleased, c.slot, c.generation)).toEqual([]);
  });

  it("ignores the pass's facts when the pass failed, and drops facts it does not know", async () => {
    const core = await boot();
    const c = register(core);
    core.step(M.RecoveryRequested, c.slot, c.generation, Cause.FirstUse, RETRYING);
    for (const facts of [Fact.Leasing, Fact.StartPreparingHere << 1, Fact.StartPreparingHere | Fact.InScan]) {
      core.expectDropped(M.RecoveryFinished, ResultCode.ArgumentOutOfRange, c.slot, c.generation, 1, RecoveryOutcome.Recovered, facts);
    }
    core.step(M.RecoveryFinished, c.slot, c.generation, 1, RecoveryOutcome.LeaseLapsed, Fact.StartPreparingHere);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.Held, cause: HoldCause.LeaseLapsed });
  });

  it("holds as NotQuiescent while an execution held for recovery has operations in flight, as StoreFault once they settled", async () => {
    const core = await boot();
    const run = core.callingModel().event(SessionEventKind.LlmCompletedWithTools);
    core.step(M.ToolDispatchReady, run.exec, run.generation, run.session, run.revision, CommitOutcome.RehydrationRequired, 0, 0);
    expect(core.machine.executionHeldForRecovery(run.exec)).toBe(true);
    const c = { slot: run.agent, generation: run.agentGeneration };
    const [read] = core.step(M.RecoveryRequested, c.slot, c.generation, Cause.FencedWrite, RETRYING);
    const epoch = (read as { epoch: number }).epoch;
    // The pass ran; its DischargeRecovery was refused NotQuiescent: the core sees the operation in flight.
    core.step(M.RecoveryFinished, c.slot, c.generation, epoch, RecoveryOutcome.Recovered, 0);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.Held, cause: HoldCause.NotQuiescent });
    core.step(M.OperationSettled, run.exec, run.generation);
    core.step(M.RetryDue, c.slot, c.generation, epoch, RETRYING);
    core.step(M.RecoveryFinished, c.slot, c.generation, epoch + 1, RecoveryOutcome.Recovered, 0);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.Held, cause: HoldCause.StoreFault });
  });
});

describeDecisions("Admit(…, starts waiting): the limit of starts waiting for one conversation", ({ it, boot }) => {
  it("answers WaitUntilReady below Limit.WaitingStartsMax and RefuseHeld at it; a ready conversation runs the start whatever the count", async () => {
    const core = await boot();
    const c = register(core);
    core.step(M.RecoveryRequested, c.slot, c.generation, Cause.FirstUse, 0);
    const admit = (request: number, waiting: number): number | undefined =>
      verdictOf(core.step(M.Admit, c.slot, c.generation, request, Source.Direct, Policy.Reject, 1, waiting));
    expect(admit(7, 0)).toBe(Verdict.WaitUntilReady);
    expect(admit(8, Limit.WaitingStartsMax - 1)).toBe(Verdict.WaitUntilReady);
    expect(admit(9, Limit.WaitingStartsMax)).toBe(Verdict.RefuseHeld);
    expect(admit(10, 0xffff_ffff)).toBe(Verdict.RefuseHeld);
    core.step(M.RecoveryFinished, c.slot, c.generation, 1, RecoveryOutcome.Recovered, 0);
    expect(admit(11, Limit.WaitingStartsMax)).toBe(Verdict.RunHere);
  });
});
