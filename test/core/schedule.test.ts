// Scheduled starts' claims and firings, decided in the core
// (docs/decisions/0087): the compiled `scheduleClaimVerdict` and
// `scheduleFiringVerdict` against the reference model on every fact, and
// the cases 0078 spells out, with the host's translation of a start's
// refusal (`startAnswerOf`) feeding the core.

import { beforeAll, expect, it } from "vitest";
import {
  ScheduleClaimVerdict as Claim,
  ScheduleFact as Fact,
  ScheduleFiringFact as FiringFact,
  ScheduleFiringVerdict as Firing,
  StartAnswer as Answer,
} from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import { AgentBusyError, PhronomyError } from "../../host/errors.js";
import { startAnswerOf } from "../../host/runtime/start-answer.js";
import { scheduleClaimVerdictFor, scheduleFiringVerdictFor } from "../model/reference-queries.js";

let core: ControlCore;
beforeAll(async () => {
  core = new ControlCore(await loadCoreModule("debug"), { agentsMax: 1, executionsMax: 1 });
});

it("the compiled claim verdict is the model's rules for every fact", () => {
  for (let facts = 0; facts <= Fact.End + 1; facts += 1) {
    expect(core.scheduleClaimVerdict(facts), `facts ${facts}`).toBe(scheduleClaimVerdictFor(facts));
  }
  expect(core.scheduleClaimVerdict(0xffff_ffff)).toBe(Claim.None);
});

it("the compiled firing verdict is the model's rules for every fact and answer", () => {
  for (let facts = 0; facts <= FiringFact.End + 1; facts += 1) {
    for (let answer = 0; answer <= Answer.End + 1; answer += 1) {
      expect(core.scheduleFiringVerdict(facts, answer), `facts ${facts} answer ${answer}`).toBe(scheduleFiringVerdictFor(facts, answer));
    }
  }
});

it("missed slots fire once, a pending firing is claimed again only when due or its owner is gone, run now keeps the next slot", () => {
  expect(core.scheduleClaimVerdict(Fact.Due | Fact.Recurring)).toBe(Claim.FireDueThenAfterNow);
  expect(core.scheduleClaimVerdict(Fact.Due)).toBe(Claim.FireDueOnce);
  expect(core.scheduleClaimVerdict(Fact.Recurring)).toBe(Claim.Skip);
  expect(core.scheduleClaimVerdict(Fact.FiringPending | Fact.Recurring)).toBe(Claim.Skip);
  expect(core.scheduleClaimVerdict(Fact.FiringPending | Fact.Due)).toBe(Claim.ClaimAgain);
  expect(core.scheduleClaimVerdict(Fact.FiringPending | Fact.OwnerGone)).toBe(Claim.ClaimAgain);
  expect(core.scheduleClaimVerdict(Fact.OwnerGone | Fact.Recurring)).toBe(Claim.Skip);
  expect(core.scheduleClaimVerdict(Fact.RunNow | Fact.Recurring)).toBe(Claim.FireNowKeepNext);
  expect(core.scheduleClaimVerdict(Fact.RunNow)).toBe(Claim.FireNowOnce);
  expect(core.scheduleClaimVerdict(Fact.RunNow | Fact.FiringPending | Fact.Due)).toBe(Claim.RefusePending);
  expect(core.scheduleClaimVerdict(Fact.RunNow | Fact.OwnerGone)).toBe(Claim.None);
});

it("a claim the store did not apply starts nothing; a start's refusal settles the firing or leaves it pending by the core's rule", () => {
  const made = FiringFact.Claimed | FiringFact.DefinedHere;
  expect(core.scheduleFiringVerdict(0, Answer.None)).toBe(Firing.Skip);
  expect(core.scheduleFiringVerdict(FiringFact.DefinedHere, Answer.None)).toBe(Firing.Skip);
  expect(core.scheduleFiringVerdict(FiringFact.Claimed, Answer.None)).toBe(Firing.LeavePending);
  expect(core.scheduleFiringVerdict(made, Answer.None)).toBe(Firing.Start);
  expect(core.scheduleFiringVerdict(FiringFact.Claimed, Answer.Started)).toBe(Firing.None);
  const verdictOf = (error: unknown): Firing => core.scheduleFiringVerdict(made, startAnswerOf(error)) as Firing;
  expect(verdictOf(new AgentBusyError("support:1"))).toBe(Firing.SettleRefused);
  expect(verdictOf(AgentBusyError.heldForRecovery("support:1"))).toBe(Firing.LeavePending);
  expect(verdictOf(new PhronomyError("QUEUE_FULL", "full"))).toBe(Firing.SettleRefused);
  expect(verdictOf(new PhronomyError("AGENT_CLOSED", "closed"))).toBe(Firing.SettleRefused);
  expect(verdictOf(new PhronomyError("AGENT_BUSY", "lease", { details: { reason: "lease_not_held" } }))).toBe(Firing.LeavePending);
  for (const code of ["RUNTIME_SHUTDOWN", "STORE", "OFFLOAD_FULL", "CAPACITY", "CORE_FAILED", "INTERNAL"]) {
    expect(verdictOf(new PhronomyError(code as never, code)), code).toBe(Firing.LeavePending);
  }
  expect(verdictOf(new Error("a throw that is not a PhronomyError"))).toBe(Firing.LeavePending);
  expect(core.scheduleFiringVerdict(made, Answer.Started)).toBe(Firing.SettleStarted);
  expect(core.scheduleFiringVerdict(made, Answer.Queued)).toBe(Firing.SettleQueued);
});

it("a run now never claims a slot again: refused at the instant of its last slot, the due slot fired when one is due (decision 0098)", () => {
  // Two clicks in one millisecond: the second reads the first's slot as now.
  expect(core.scheduleClaimVerdict(Fact.RunNow | Fact.Recurring | Fact.FiredThisInstant)).toBe(Claim.RefuseFiredThisInstant);
  expect(core.scheduleClaimVerdict(Fact.RunNow | Fact.FiredThisInstant)).toBe(Claim.RefuseFiredThisInstant);
  expect(core.scheduleClaimVerdict(Fact.RunNow | Fact.Recurring | Fact.Due | Fact.FiredThisInstant)).toBe(Claim.RefuseFiredThisInstant);
  // A pending firing is still the answer before the instant is.
  expect(core.scheduleClaimVerdict(Fact.RunNow | Fact.FiringPending | Fact.FiredThisInstant)).toBe(Claim.RefusePending);
  // A next slot due now is the one a run now fires (not now, then that slot again).
  expect(core.scheduleClaimVerdict(Fact.RunNow | Fact.Recurring | Fact.Due)).toBe(Claim.FireDueThenAfterNow);
  expect(core.scheduleClaimVerdict(Fact.RunNow | Fact.Due)).toBe(Claim.FireDueOnce);
  // The sweep fires its due slot (after the last one) whatever the instant of the last.
  expect(core.scheduleClaimVerdict(Fact.Due | Fact.Recurring | Fact.FiredThisInstant)).toBe(Claim.FireDueThenAfterNow);
  expect(core.scheduleClaimVerdict(Fact.FiringPending | Fact.Due | Fact.FiredThisInstant)).toBe(Claim.ClaimAgain);
});

it("a refusal naming the firing's keyed execution, which the store has, settles it started or queued (decisions 0097, 0098)", () => {
  const made = FiringFact.Claimed | FiringFact.DefinedHere;
  const found = made | FiringFact.KeyedExecutionFound;
  // The keyed start followed an earlier claimer's execution that failed since.
  expect(core.scheduleFiringVerdict(found, startAnswerOf(new PhronomyError("MODEL_FAILED", "failed")))).toBe(Firing.SettleStarted);
  expect(core.scheduleFiringVerdict(found | FiringFact.KeyedExecutionQueued, Answer.Refused)).toBe(Firing.SettleQueued);
  // Even a refusal that would pass: the execution is there, so the firing started.
  expect(core.scheduleFiringVerdict(found, Answer.StoreFailed)).toBe(Firing.SettleStarted);
  expect(core.scheduleFiringVerdict(made, Answer.StoreFailed)).toBe(Firing.LeavePending);
  expect(core.scheduleFiringVerdict(made, Answer.Refused)).toBe(Firing.SettleRefused);
  // Facts that cannot hold together: read only after a refusal, queued only if found, only for a start made here.
  for (const answer of [Answer.None, Answer.Started, Answer.Queued]) expect(core.scheduleFiringVerdict(found, answer), `answer ${answer}`).toBe(Firing.None);
  expect(core.scheduleFiringVerdict(made | FiringFact.KeyedExecutionQueued, Answer.Refused)).toBe(Firing.None);
  expect(core.scheduleFiringVerdict(FiringFact.Claimed | FiringFact.KeyedExecutionFound, Answer.Refused)).toBe(Firing.None);
});
