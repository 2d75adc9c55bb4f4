// A start filed for this process, its fate decided in the core
// (docs/decisions/0031, 0057, 0062, 0096): the compiled `filedStartVerdict`
// against the reference model on every start answer and every fact, and
// the cases the decisions spell out. The host's side (the facts it reads,
// the fate it carries out) is test/runtime/filed-start-fate.test.ts.

import { beforeAll, expect, it } from "vitest";
import { FiledStartFact as Fact, FiledStartVerdict as Verdict, StartAnswer as Answer } from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import { filedStartVerdictFor } from "../model/reference-queries.js";
import { expectEveryAnswerAndFact } from "./verdict-walk.js";

let core: ControlCore;
beforeAll(async () => {
  core = new ControlCore(await loadCoreModule("debug"), { agentsMax: 1, executionsMax: 1 });
});

it("the compiled verdict is the model's rules for every answer and fact", () => {
  expectEveryAnswerAndFact((answer, facts) => core.filedStartVerdict(answer, facts), filedStartVerdictFor, Answer.End, Fact.End);
  expect(core.filedStartVerdict(0xffff_ffff, 0)).toBe(Verdict.None);
  expect(core.filedStartVerdict(Answer.Refused, 0xffff_ffff)).toBe(Verdict.None);
});

it("left for the owner when the core said LeaveFiled, whatever the error; stopping and a core failure leave it too", () => {
  for (const answer of [Answer.LeaseNotHeld, Answer.StoreFailed, Answer.BusyByPolicy, Answer.Refused]) {
    expect(core.filedStartVerdict(answer, Fact.LeftFiled)).toBe(Verdict.Left);
  }
  expect(core.filedStartVerdict(Answer.Stopping, 0)).toBe(Verdict.Left);
  expect(core.filedStartVerdict(Answer.CoreFailed, 0)).toBe(Verdict.Left);
});

it("the store's answer to the write the core let run is tried again; its id in the store already: it ran", () => {
  expect(core.filedStartVerdict(Answer.StoreFailed, 0)).toBe(Verdict.WriteFailed);
  expect(core.filedStartVerdict(Answer.LeaseNotHeld, 0)).toBe(Verdict.WriteFailed);
  expect(core.filedStartVerdict(Answer.ExecutionExists, Fact.LeftFiled)).toBe(Verdict.Ran);
  expect(core.filedStartVerdict(Answer.Started, 0)).toBe(Verdict.Ran);
});

it("busy: the host reads whether it admitted that id itself; it runs if so (0057), else it is refused", () => {
  for (const answer of [Answer.BusyByPolicy, Answer.BusyHeld]) {
    expect(core.filedStartVerdict(answer, 0)).toBe(Verdict.AskAdmitted);
    expect(core.filedStartVerdict(answer, Fact.AdmittedRead | Fact.AdmittedHere)).toBe(Verdict.Ran);
    expect(core.filedStartVerdict(answer, Fact.AdmittedRead)).toBe(Verdict.Refused);
  }
  // A read the core did not ask for, or an answer without its read, cannot hold.
  expect(core.filedStartVerdict(Answer.Refused, Fact.AdmittedRead)).toBe(Verdict.None);
  expect(core.filedStartVerdict(Answer.BusyByPolicy, Fact.AdmittedHere)).toBe(Verdict.None);
  for (const answer of [Answer.Refused, Answer.Full, Answer.Internal, Answer.RehydrationRequired]) {
    expect(core.filedStartVerdict(answer, 0)).toBe(Verdict.Refused);
  }
});
