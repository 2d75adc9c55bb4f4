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
  BusyPolicy as Policy,
  ConversationPhase as Phase,
  ConversationFlag as Flag,
  EffectKind,
  HeadOutcome,
  HoldCause,
  MessageKind as M,
  OutcomeType,
  OwnerFact,
  Ownership,
  PreparationOutcome,
  RecoveryCause as Cause,
  RecoveryFact as Fact,
  RecoveryOutcome,
  ResultCode,
  RowsPolicy,
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
      { kind: EffectKind.OpenAdmissions, agent: c.slot },
      { kind: EffectKind.OpenInbox, agent: c.slot },
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
    // Settled with nothing moved: ready, starts admitted again.
    expect(core.step(M.RecoveryFinished, c.slot, c.generation, 2, RecoveryOutcome.Recovered)).toEqual([
      { kind: EffectKind.OpenAdmissions, agent: c.slot },
      { kind: EffectKind.OpenInbox, agent: c.slot },
    ]);
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 9, Source.Direct, Policy.Reject, 1))).toBe(Verdict.RunHere);
    // Settled by taking the partition back: the takeover joins and the rows are read under a new epoch.
    core.step(M.RecoveryRequested, c.slot, c.generation, Cause.LeaseSettling, Fact.Leasing);
    core.step(M.RecoveryRequested, c.slot, c.generation, Cause.LeaseTakeover, 0);
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
      const [retry] = core.step(M.RecoveryFinished, c.slot, c.generation, epoch, RecoveryOutcome.StoreFault);
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
      expect(core.step(M.RecoveryFinished, c.slot, c.generation, 1, RecoveryOutcome.StoreFault), `facts ${facts}`).toEqual([]);
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
      const [retry] = core.step(M.RecoveryFinished, c.slot, c.generation, 1, outcome);
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
      { kind: EffectKind.OpenAdmissions, agent: c.slot },
      { kind: EffectKind.OpenInbox, agent: c.slot },
      { kind: EffectKind.RestoreQueue, agent: c.slot },
      { kind: EffectKind.StartHead, agent: c.slot },
    ]);
  });

  it("follows the messages queued here when owned elsewhere, keeps them counted, and leaves when taken back", async () => {
    const core = await boot();
    const c = ready(core);
    // Nothing queued: owned elsewhere, nothing to follow.
    expect(core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Elsewhere)).toEqual([]);
    core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Here);
    core.step(M.RecoveryRequested, c.slot, c.generation, Cause.LeaseTakeover, 0);
    core.step(M.RecoveryFinished, c.slot, c.generation, 2, RecoveryOutcome.Recovered);
    core.step(M.Start, c.slot, c.generation, core.request(), 0);
    core.step(M.MessageQueued, c.slot, c.generation, 2);
    // The lease lost: the two messages' callers follow them; both stay counted.
    expect(core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Elsewhere)).toEqual([{ kind: EffectKind.FollowQueued, agent: c.slot, queued: 2 }]);
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
    // The execution started before still holds the admission: the head waits for its release.
    expect(core.step(M.RecoveryFinished, c.slot, c.generation, 3, RecoveryOutcome.Recovered)).toEqual([
      { kind: EffectKind.OpenAdmissions, agent: c.slot },
      { kind: EffectKind.OpenInbox, agent: c.slot },
      { kind: EffectKind.RestoreQueue, agent: c.slot },
    ]);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ phase: Phase.Ready, queued: 3 });
  });

  it("follows the execution holding the admission when it is parked here (suspended or held for recovery), not one running", async () => {
    const core = await boot({ agentsMax: 8, executionsMax: 8 });
    const elsewhere = (run: { agent: number; agentGeneration: number }): CoreEffect[] =>
      core.step(M.ConversationOwned, run.agent, run.agentGeneration, Ownership.Elsewhere);
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
    expect(core.step(M.ConversationOwned, admission.agent, admission.agentGeneration, Ownership.Elsewhere)).toEqual([]);
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
    expect(core.step(M.ConversationOwned, c.slot, c.generation, Ownership.Elsewhere)).toEqual([{ kind: EffectKind.FollowQueued, agent: c.slot, queued: 1 }]);
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

  it("a head that went back waits: nothing is started again at once, the next release starts it", async () => {
    const core = await boot();
    const c = ready(core);
    core.step(M.MessageQueued, c.slot, c.generation, 1);
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 5, Source.QueueHead, Policy.Enqueue, 1))).toBe(Verdict.RunHere);
    // Refused for now while the conversation is held elsewhere: the
    // admission is free, yet asking for the same start again at once
    // would be refused again (and again).
    expect(core.step(M.HeadSettled, c.slot, c.generation, HeadOutcome.Back)).toEqual([]);
    expect(core.snapshot().conversations[c.slot]).toMatchObject({ queued: 1, flags: 0 });
    expect(core.step(M.AdmissionReleased, c.slot, c.generation)).toEqual([{ kind: EffectKind.StartHead, agent: c.slot }]);
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
    expect(core.step(M.HeadSettled, c.slot, c.generation, HeadOutcome.Failed)).toEqual([{ kind: EffectKind.RetryHeadAfter, agent: c.slot, delayMs: 250 }]);
    expect(core.step(M.HeadRetryDue, c.slot, c.generation)).toEqual([{ kind: EffectKind.StartHead, agent: c.slot }]);
    expect(verdictOf(core.step(M.Admit, c.slot, c.generation, 3, Source.QueueHead, Policy.Enqueue, 1))).toBe(Verdict.RunHere);
    expect(core.step(M.HeadSettled, c.slot, c.generation, HeadOutcome.Failed)).toEqual([{ kind: EffectKind.RetryHeadAfter, agent: c.slot, delayMs: 500 }]);
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
    core.expectDropped(M.RecoveryFinished, ResultCode.ConversationPhaseMustMatch, c.slot, c.generation, 1, RecoveryOutcome.Recovered);
    core.expectDropped(M.RecoveryRequested, ResultCode.ArgumentOutOfRange, c.slot, c.generation, Cause.LeaseSettling + 1, 0);
    core.expectDropped(M.UseBegin, ResultCode.AgentGenerationMustMatch, c.slot, c.generation + 1);
    core.expectRefused(ResultCode.QueueEmpty, 9, M.Admit, c.slot, c.generation, 9, Source.QueueHead, Policy.Enqueue, 1);
  });
});
