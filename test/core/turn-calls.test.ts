// One question per turn, decided in the core (docs/decisions/0075, 0080,
// 0087): the compiled `turnCallVerdict` against the reference model on
// every fact, and the turns 0075 describes, walked call by call as the
// session walks them.

import { beforeAll, expect, it } from "vitest";
import { TurnCallFact as Fact, TurnCallVerdict as Verdict } from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import { turnCallVerdictFor } from "../model/reference-queries.js";

let core: ControlCore;
beforeAll(async () => {
  core = new ControlCore(await loadCoreModule("debug"), { agentsMax: 1, executionsMax: 1 });
});

it("the compiled verdict is the model's for every fact", () => {
  for (let facts = 0; facts <= Fact.End + 1; facts += 1) expect(core.turnCallVerdict(facts), `facts ${facts}`).toBe(turnCallVerdictFor(facts));
  expect(core.turnCallVerdict(0xffff_ffff)).toBe(Verdict.None);
});

/** The session's walk over a turn's calls (`Session.turnQuestions`). */
function walk(calls: readonly number[]): Verdict[] {
  const turnWaits = calls.some((facts) => (facts & Fact.Waits) !== 0 && (facts & Fact.Failed) === 0);
  let taken = false;
  return calls.map((facts) => {
    const verdict = core.turnCallVerdict(facts | (turnWaits ? Fact.TurnWaits : 0) | (taken ? Fact.WaitTaken : 0)) as Verdict;
    if (verdict === Verdict.AskWait) taken = true;
    return verdict;
  });
}

it("a turn with two questions waits on the first; the second and the calls needing approval are declined; the rest run", () => {
  expect(walk([0, Fact.NeedsApproval, Fact.Waits, Fact.Waits, 0])).toEqual([Verdict.Run, Verdict.Decline, Verdict.AskWait, Verdict.Decline, Verdict.Run]);
});

it("a failed waiting call is not the question: the next one is, and the failed one is declined with the rest", () => {
  expect(walk([Fact.Waits | Fact.Failed, Fact.Waits])).toEqual([Verdict.Decline, Verdict.AskWait]);
  expect(walk([Fact.Waits | Fact.Failed, 0])).toEqual([Verdict.Run, Verdict.Run]);
});

it("a turn without a question asks one approval for every call needing one", () => {
  expect(walk([Fact.NeedsApproval, 0, Fact.NeedsApproval])).toEqual([Verdict.AskApproval, Verdict.Run, Verdict.AskApproval]);
  expect(walk([0, 0])).toEqual([Verdict.Run, Verdict.Run]);
});

it("facts that cannot hold together answer nothing", () => {
  expect(core.turnCallVerdict(Fact.Waits)).toBe(Verdict.None);
  expect(core.turnCallVerdict(Fact.WaitTaken)).toBe(Verdict.None);
});
