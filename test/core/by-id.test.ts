// Operations by execution id with no conversation here to ask
// (docs/decisions/0062, "By id"): the compiled `byIdVerdict` against the
// reference model's ordered rules for every source and every fact, the
// cases spelled out as the host carries them out, and the two messages
// that moved with them — `ConversationRetaken` (a retake on demand recovers
// what a fenced write held) and `env.recover()` refused for a conversation
// whose lease is not held here.

import { beforeAll, expect, it } from "vitest";
import {
  AdmissionSource as Source,
  AdmissionVerdict as Verdict,
  ByIdFact as Fact,
  CommitOutcome,
  ConversationPhase as Phase,
  EffectKind,
  MessageKind as M,
  OwnerFact,
  Ownership,
  PreparationOutcome,
  RecoveryCause as Cause,
  RecoveryFact,
  RecoveryOutcome,
  ResultCode,
  SessionEventKind,
} from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import { byIdVerdictFor } from "../model/reference-conversations.js";
import { describeDecisions, type Driver } from "./driver.js";

let core: ControlCore;
beforeAll(async () => {
  core = new ControlCore(await loadCoreModule("debug"), { agentsMax: 1, executionsMax: 1 });
});

const BY_ID_SOURCES = [Source.Resume, Source.Retry, Source.Cancel, Source.Observe];

it("the compiled by-id verdict is the model's rules for every source and every fact", () => {
  for (let source = 0; source <= Source.Observe + 1; source += 1) {
    for (let facts = 0; facts <= Fact.End + 1; facts += 1) {
      const expected =
        BY_ID_SOURCES.includes(source) && facts < Fact.End
          ? byIdVerdictFor({
              source,
              visitor: (facts & Fact.Visitor) !== 0,
              leasing: (facts & Fact.Leasing) !== 0,
              heldHere: (facts & Fact.LeaseHeldHere) !== 0,
              heldElsewhere: (facts & Fact.LeaseHeldElsewhere) !== 0,
              inboxKept: (facts & Fact.InboxKept) !== 0,
              conversationHere: (facts & Fact.ConversationHere) !== 0,
            })
          : Verdict.None;
      expect(core.byIdVerdict(source, facts), `source ${source} facts ${facts}`).toBe(expected);
    }
  }
  expect(core.byIdVerdict(Source.Cancel, 0xffff_ffff)).toBe(Verdict.None);
});

it("a lease held without leases, or held both here and elsewhere, answers nothing", () => {
  for (const source of BY_ID_SOURCES) {
    expect(core.byIdVerdict(source, Fact.LeaseHeldHere)).toBe(Verdict.None);
    expect(core.byIdVerdict(source, Fact.LeaseHeldElsewhere | Fact.InboxKept)).toBe(Verdict.None);
    expect(core.byIdVerdict(source, Fact.Leasing | Fact.LeaseHeldHere | Fact.LeaseHeldElsewhere)).toBe(Verdict.None);
  }
});

/** The store's facts as the host reads them. */
const SQLITE_OWNER = Fact.InboxKept;
const SQLITE_VISITOR = Fact.Visitor | Fact.InboxKept;
const PG_HERE = Fact.Leasing | Fact.LeaseHeldHere | Fact.InboxKept;
const PG_ELSEWHERE = Fact.Leasing | Fact.LeaseHeldElsewhere | Fact.InboxKept;
const PG_NOBODY = Fact.Leasing | Fact.InboxKept;
const HERE = Fact.ConversationHere;

it("a cancel: filed for the owner, refused until its recovery installs it, or ended here when nothing will run it", () => {
  expect(core.byIdVerdict(Source.Cancel, SQLITE_VISITOR)).toBe(Verdict.FileForOwner);
  expect(core.byIdVerdict(Source.Cancel, PG_ELSEWHERE)).toBe(Verdict.FileForOwner);
  // Nobody holds the lease: the next holder claims it.
  expect(core.byIdVerdict(Source.Cancel, PG_NOBODY | HERE)).toBe(Verdict.FileForOwner);
  expect(core.byIdVerdict(Source.Cancel, SQLITE_OWNER | HERE)).toBe(Verdict.RefuseNotInstalled);
  expect(core.byIdVerdict(Source.Cancel, PG_HERE | HERE)).toBe(Verdict.RefuseNotInstalled);
  expect(core.byIdVerdict(Source.Cancel, SQLITE_OWNER)).toBe(Verdict.RunHere);
  expect(core.byIdVerdict(Source.Cancel, PG_HERE)).toBe(Verdict.RunHere);
  // No inbox to file in: as if it were this process's.
  expect(core.byIdVerdict(Source.Cancel, Fact.Visitor)).toBe(Verdict.RunHere);
  expect(core.byIdVerdict(Source.Cancel, Fact.Leasing | Fact.LeaseHeldElsewhere | HERE)).toBe(Verdict.RefuseNotInstalled);
});

it("a decision: the agent's own resume when defined here, else filed for the owner, else refused", () => {
  expect(core.byIdVerdict(Source.Resume, SQLITE_OWNER | HERE)).toBe(Verdict.RunHere);
  expect(core.byIdVerdict(Source.Resume, PG_ELSEWHERE | HERE)).toBe(Verdict.RunHere);
  expect(core.byIdVerdict(Source.Resume, SQLITE_VISITOR)).toBe(Verdict.FileForOwner);
  expect(core.byIdVerdict(Source.Resume, PG_ELSEWHERE)).toBe(Verdict.FileForOwner);
  expect(core.byIdVerdict(Source.Resume, PG_NOBODY)).toBe(Verdict.FileForOwner);
  expect(core.byIdVerdict(Source.Resume, SQLITE_OWNER)).toBe(Verdict.RefuseNotDefined);
  expect(core.byIdVerdict(Source.Resume, PG_HERE)).toBe(Verdict.RefuseNotDefined);
  expect(core.byIdVerdict(Source.Resume, Fact.Visitor)).toBe(Verdict.RefuseNotDefined);
});

it("a retry: filed for the holder, refused when nobody would claim it, or run by the definition here", () => {
  expect(core.byIdVerdict(Source.Retry, SQLITE_VISITOR)).toBe(Verdict.FileForOwner);
  expect(core.byIdVerdict(Source.Retry, PG_ELSEWHERE | HERE)).toBe(Verdict.FileForOwner);
  expect(core.byIdVerdict(Source.Retry, PG_NOBODY | HERE)).toBe(Verdict.RefuseOwnedElsewhere);
  expect(core.byIdVerdict(Source.Retry, Fact.Leasing | Fact.LeaseHeldElsewhere | HERE)).toBe(Verdict.RefuseOwnedElsewhere);
  expect(core.byIdVerdict(Source.Retry, PG_HERE | HERE)).toBe(Verdict.RunHere);
  expect(core.byIdVerdict(Source.Retry, SQLITE_OWNER | HERE)).toBe(Verdict.RunHere);
  expect(core.byIdVerdict(Source.Retry, PG_HERE)).toBe(Verdict.RefuseNotDefined);
  // A visitor with no inbox tries here (its store refuses the write).
  expect(core.byIdVerdict(Source.Retry, Fact.Visitor | HERE)).toBe(Verdict.RunHere);
  expect(core.byIdVerdict(Source.Retry, Fact.Visitor)).toBe(Verdict.RefuseNotDefined);
});

it("a wait on an execution running but not live here: followed at its owner, or read here", () => {
  expect(core.byIdVerdict(Source.Observe, SQLITE_VISITOR)).toBe(Verdict.FileForOwner);
  expect(core.byIdVerdict(Source.Observe, Fact.Visitor)).toBe(Verdict.FileForOwner);
  expect(core.byIdVerdict(Source.Observe, PG_ELSEWHERE)).toBe(Verdict.FileForOwner);
  expect(core.byIdVerdict(Source.Observe, PG_NOBODY)).toBe(Verdict.FileForOwner);
  expect(core.byIdVerdict(Source.Observe, PG_HERE | HERE)).toBe(Verdict.RunHere);
  expect(core.byIdVerdict(Source.Observe, SQLITE_OWNER)).toBe(Verdict.RunHere);
});

it("the by-id sources are not admission sources: an Admit's verdict function answers nothing for them", () => {
  for (const source of [Source.Cancel, Source.Observe]) expect(core.admissionVerdict(Phase.Ready, source, 1, 0)).toBe(Verdict.None);
});

interface Conversation {
  readonly slot: number;
  readonly generation: number;
}

/** Registered, owned here and recovered: ready. */
function ready(driver: Driver): Conversation {
  const handle = driver.registerAgent();
  const c = { slot: handle.agent, generation: handle.agentGeneration };
  driver.step(M.ConversationOwned, c.slot, c.generation, Ownership.Here, OwnerFact.DefinedById);
  driver.step(M.RecoveryRequested, c.slot, c.generation, Cause.FirstUse, 0);
  driver.step(M.RecoveryFinished, c.slot, c.generation, 1, RecoveryOutcome.Recovered);
  return c;
}

describeDecisions("ConversationRetaken(agent, gen, cause)", ({ it, boot }) => {
  it("answers RecoveryDue(cause) when an execution of the conversation is held for recovery, and changes nothing", async () => {
    for (const cause of [Cause.Retake, Cause.FencedWrite]) {
      const driver = await boot();
      const run = driver.callingModel().event(SessionEventKind.LlmCompletedWithTools);
      // The tool barrier's write was fenced (its lease lost): held recovery_required.
      driver.step(M.ToolDispatchReady, run.exec, run.generation, run.session, run.revision, CommitOutcome.RehydrationRequired, 0, 0);
      const before = driver.snapshot();
      expect(driver.step(M.ConversationRetaken, run.agent, run.agentGeneration, cause)).toEqual([{ kind: EffectKind.RecoveryDue, agent: run.agent, cause }]);
      expect(driver.snapshot()).toEqual(before);
    }
  });

  it("answers RecoveryDue(cause) for a conversation recorded owned elsewhere that is taken back, and leaves its phase", async () => {
    for (const cause of [Cause.Retake, Cause.FencedWrite]) {
      const driver = await boot();
      const c = ready(driver);
      driver.step(M.ConversationOwned, c.slot, c.generation, Ownership.Elsewhere, 0);
      const before = driver.snapshot();
      expect(driver.step(M.ConversationRetaken, c.slot, c.generation, cause)).toEqual([{ kind: EffectKind.RecoveryDue, agent: c.slot, cause }]);
      expect(driver.snapshot()).toEqual(before);
      expect(driver.snapshot().conversations[c.slot]?.phase).toBe(Phase.OwnedElsewhere);
    }
  });

  it("answers nothing when nothing is held: a running execution, an idle conversation, an agent held with no execution", async () => {
    const driver = await boot();
    const c = ready(driver);
    expect(driver.step(M.ConversationRetaken, c.slot, c.generation, Cause.Retake)).toEqual([]);
    expect(driver.step(M.ConversationRetaken, c.slot, c.generation, Cause.FencedWrite)).toEqual([]);
    const run = driver.callingModel();
    expect(driver.step(M.ConversationRetaken, run.agent, run.agentGeneration, Cause.Retake)).toEqual([]);
    // A preparation whose outcome was not read back holds the agent itself: not a fenced execution.
    const admission = driver.admitted();
    driver.apply(
      M.InitialPreparationReady,
      admission.agent,
      admission.agentGeneration,
      admission.token,
      PreparationOutcome.OutcomeUnknown,
      10,
      0,
      admission.request,
    );
    expect(driver.step(M.ConversationRetaken, admission.agent, admission.agentGeneration, Cause.Retake)).toEqual([]);
  });

  it("drops a stale generation, and a cause that is not a retake's", async () => {
    const driver = await boot();
    const c = ready(driver);
    driver.expectDropped(M.ConversationRetaken, ResultCode.AgentGenerationMustMatch, c.slot, c.generation + 1, Cause.Retake);
    for (const cause of [Cause.None, Cause.LeaseTakeover, Cause.RecoverCalled, 0xffff_ffff])
      driver.expectDropped(M.ConversationRetaken, ResultCode.ArgumentOutOfRange, c.slot, c.generation, cause);
  });
});

describeDecisions("RecoveryRequested(RecoverCalled) of a conversation whose lease is not held here", ({ it, boot }) => {
  it("is refused (LeaseNotHeldHere): its holder recovers it; a recovery under way is not joined", async () => {
    const driver = await boot();
    const c = ready(driver);
    const facts = RecoveryFact.Leasing | RecoveryFact.RecoversByItself | RecoveryFact.LeaseNotHeldHere;
    driver.expectDropped(M.RecoveryRequested, ResultCode.LeaseNotHeldHere, c.slot, c.generation, Cause.RecoverCalled, facts);
    driver.step(M.RecoveryRequested, c.slot, c.generation, Cause.HealAfterStoreFault, 0);
    driver.expectDropped(M.RecoveryRequested, ResultCode.LeaseNotHeldHere, c.slot, c.generation, Cause.RecoverCalled, facts);
  });

  it("is recovered as before when the lease is held here, and other triggers are not refused by the fact", async () => {
    const driver = await boot();
    const c = ready(driver);
    const [read] = driver.step(M.RecoveryRequested, c.slot, c.generation, Cause.RecoverCalled, RecoveryFact.Leasing);
    expect(read).toMatchObject({ kind: EffectKind.ReadRows, epoch: 2 });
    driver.step(M.RecoveryFinished, c.slot, c.generation, 2, RecoveryOutcome.Recovered);
    const [again] = driver.step(M.RecoveryRequested, c.slot, c.generation, Cause.LeaseTakeover, RecoveryFact.Leasing | RecoveryFact.LeaseNotHeldHere);
    expect(again).toMatchObject({ kind: EffectKind.ReadRows, epoch: 3 });
  });
});
