// A start whose preparation the store refused, decided in the core
// (docs/decisions/0112): the compiled `refusedStartVerdict` against the
// reference model on every start answer and fact, and the cases the
// decision spells out.

import { beforeAll, expect, it } from "vitest";
import { RefusedStartFact as Fact, RefusedStartVerdict as Verdict, StartAnswer as Answer } from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import { refusedStartVerdictFor } from "../model/reference-refused-start.js";
import { expectEveryAnswerAndFact } from "./verdict-walk.js";

let core: ControlCore;
beforeAll(async () => {
  core = new ControlCore(await loadCoreModule("debug"), { agentsMax: 1, executionsMax: 1 });
});

it("the compiled verdict is the model's rules for every answer and fact", () => {
  expectEveryAnswerAndFact((answer, facts) => core.refusedStartVerdict(answer, facts), refusedStartVerdictFor, Answer.End, Fact.End);
  expect(core.refusedStartVerdict(0xffff_ffff, 0)).toBe(Verdict.None);
  expect(core.refusedStartVerdict(Answer.LeaseNotHeld, 0xffff_ffff)).toBe(Verdict.None);
});

it("a start made here, refused because its conversation was moved elsewhere, is placed again once; anything else is told to its Run", () => {
  const moved = Fact.MovedElsewhere | Fact.Direct;
  // Whatever class the refusal is worded in (AGENT_BUSY naming the holder, the fence's own lease_lost) …
  for (let answer = Answer.StoreFailed; answer < Answer.End; answer += 1)
    expect(core.refusedStartVerdict(answer, moved), `answer ${answer}`).toBe(Verdict.PlaceAgain);
  // … but once only, not while closing; a filed start's fate is the inbox's; a refusal not caused by a move is the Run's.
  expect(core.refusedStartVerdict(Answer.LeaseNotHeld, moved | Fact.PlacedAgain)).toBe(Verdict.Deliver);
  expect(core.refusedStartVerdict(Answer.Stopping, moved)).toBe(Verdict.Deliver);
  expect(core.refusedStartVerdict(Answer.LeaseNotHeld, Fact.MovedElsewhere)).toBe(Verdict.Deliver);
  expect(core.refusedStartVerdict(Answer.LeaseNotHeld, Fact.Direct)).toBe(Verdict.Deliver);
  // Not a refusal: cannot hold.
  expect(core.refusedStartVerdict(Answer.Started, moved)).toBe(Verdict.None);
  expect(core.refusedStartVerdict(Answer.Queued, 0)).toBe(Verdict.None);
});

it("a refusal of the move its preparation carried (docs/decisions/0119) is placed again, also after a placement already", () => {
  const refusedMove = Fact.MovedElsewhere | Fact.Direct | Fact.MoveRefused;
  expect(core.refusedStartVerdict(Answer.LeaseNotHeld, refusedMove)).toBe(Verdict.PlaceAgain);
  expect(core.refusedStartVerdict(Answer.LeaseNotHeld, refusedMove | Fact.PlacedAgain)).toBe(Verdict.PlaceAgain);
  // Still a start made here, still not while closing, still where it lives known.
  expect(core.refusedStartVerdict(Answer.LeaseNotHeld, Fact.MovedElsewhere | Fact.MoveRefused | Fact.PlacedAgain)).toBe(Verdict.Deliver);
  expect(core.refusedStartVerdict(Answer.Stopping, refusedMove)).toBe(Verdict.Deliver);
  expect(core.refusedStartVerdict(Answer.LeaseNotHeld, Fact.Direct | Fact.MoveRefused)).toBe(Verdict.Deliver);
});
