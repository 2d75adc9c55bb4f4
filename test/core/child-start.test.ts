// A parent's child start, decided in the core (docs/decisions/0079, 0086,
// 0096, 0099): the compiled `childStartVerdict` against the reference model on
// every start answer and every fact, and the cases the decisions spell out.

import { beforeAll, expect, it } from "vitest";
import { ChildFact as Fact, ChildStartVerdict as Verdict, StartAnswer as Answer } from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import { childStartVerdictFor } from "../model/reference-queries.js";
import { expectEveryAnswerAndFact } from "./verdict-walk.js";

let core: ControlCore;
beforeAll(async () => {
  core = new ControlCore(await loadCoreModule("debug"), { agentsMax: 1, executionsMax: 1 });
});

const read = (facts: number): number => Fact.Read | facts;

it("the compiled verdict is the model's rules for every answer and fact", () => {
  expectEveryAnswerAndFact((answer, facts) => core.childStartVerdict(answer, facts), childStartVerdictFor, Answer.End, Fact.End);
  expect(core.childStartVerdict(0xffff_ffff, 0)).toBe(Verdict.None);
  expect(core.childStartVerdict(Answer.Refused, 0xffff_ffff)).toBe(Verdict.None);
});

it("a conversation held elsewhere or here for recovery, or a start the store failed, is made again later, never told as a failure (0086, 0099)", () => {
  for (const answer of [Answer.LeaseNotHeld, Answer.StoreFailed, Answer.BusyHeld]) {
    expect(core.childStartVerdict(answer, 0)).toBe(Verdict.StartAgainLater);
    // Nothing is read for them: facts after such an answer cannot hold.
    expect(core.childStartVerdict(answer, read(0))).toBe(Verdict.None);
  }
});

it("any other refusal is the child's failure unless its row exists: ended, its outcome; running, its own end files", () => {
  for (const answer of [Answer.Refused, Answer.BusyByPolicy, Answer.Full, Answer.Internal, Answer.ExecutionExists]) {
    expect(core.childStartVerdict(answer, 0)).toBe(Verdict.ReadChild);
    expect(core.childStartVerdict(answer, read(0))).toBe(Verdict.TellRefusal);
    expect(core.childStartVerdict(answer, read(Fact.Found))).toBe(Verdict.Leave);
    expect(core.childStartVerdict(answer, read(Fact.Found | Fact.Ended))).toBe(Verdict.TellOutcome);
    expect(core.childStartVerdict(answer, read(Fact.Failed))).toBe(Verdict.StartAgainLater);
    expect(core.childStartVerdict(answer, read(Fact.Found | Fact.Ended | Fact.Failed))).toBe(Verdict.StartAgainLater);
  }
});

it("a start that has an execution id is followed: an ended child is told again (seed 2380454721), a failed read leaves it", () => {
  for (const answer of [Answer.Started, Answer.Queued]) {
    expect(core.childStartVerdict(answer, 0)).toBe(Verdict.ReadChild);
    expect(core.childStartVerdict(answer, read(Fact.Found | Fact.Ended))).toBe(Verdict.TellOutcome);
    expect(core.childStartVerdict(answer, read(Fact.Found))).toBe(Verdict.Leave);
    expect(core.childStartVerdict(answer, read(0))).toBe(Verdict.Leave);
    expect(core.childStartVerdict(answer, read(Fact.Failed))).toBe(Verdict.Leave);
  }
});

it("the process stopping does nothing; facts that cannot hold answer nothing", () => {
  expect(core.childStartVerdict(Answer.Stopping, 0)).toBe(Verdict.Drop);
  expect(core.childStartVerdict(Answer.Stopping, read(0))).toBe(Verdict.None);
  expect(core.childStartVerdict(Answer.None, 0)).toBe(Verdict.None);
  expect(core.childStartVerdict(Answer.Refused, Fact.Found)).toBe(Verdict.None);
  expect(core.childStartVerdict(Answer.Refused, read(Fact.Ended))).toBe(Verdict.None);
});

const dueAgain = (facts: number): number => Fact.ParentRead | facts;
const waiting = Fact.ParentSuspended | Fact.ParentOnWait;

it("a start made again later is made now only while the parent is suspended on that wait (0099)", () => {
  // Every answer that can be made again later: the retried refusals, and any refusal whose read or tell failed.
  for (const answer of [Answer.LeaseNotHeld, Answer.StoreFailed, Answer.BusyHeld, Answer.Refused, Answer.BusyByPolicy, Answer.Full, Answer.Internal]) {
    expect(core.childStartVerdict(answer, dueAgain(waiting))).toBe(Verdict.StartAgain);
    // Answered (suspended on a later wait), cancelled or ended (the wait still named), gone.
    expect(core.childStartVerdict(answer, dueAgain(Fact.ParentSuspended))).toBe(Verdict.Drop);
    expect(core.childStartVerdict(answer, dueAgain(Fact.ParentOnWait))).toBe(Verdict.Drop);
    expect(core.childStartVerdict(answer, dueAgain(0))).toBe(Verdict.Drop);
    // The parent's row could not be read: later again.
    expect(core.childStartVerdict(answer, dueAgain(Fact.Failed))).toBe(Verdict.StartAgainLater);
  }
});

it("the parent's facts hold only when a start made again comes due: never with the child's row, a followed start or a stop", () => {
  expect(core.childStartVerdict(Answer.StoreFailed, dueAgain(Fact.Failed | Fact.ParentOnWait))).toBe(Verdict.None);
  expect(core.childStartVerdict(Answer.StoreFailed, dueAgain(waiting | Fact.Read))).toBe(Verdict.None);
  expect(core.childStartVerdict(Answer.Refused, dueAgain(waiting | Fact.Found))).toBe(Verdict.None);
  expect(core.childStartVerdict(Answer.Started, dueAgain(waiting))).toBe(Verdict.None);
  expect(core.childStartVerdict(Answer.Queued, dueAgain(waiting))).toBe(Verdict.None);
  expect(core.childStartVerdict(Answer.Stopping, dueAgain(waiting))).toBe(Verdict.None);
  // Without ParentRead the parent's bits are not facts of a child's read.
  expect(core.childStartVerdict(Answer.StoreFailed, waiting)).toBe(Verdict.None);
  expect(core.childStartVerdict(Answer.Refused, read(Fact.ParentSuspended))).toBe(Verdict.None);
});
