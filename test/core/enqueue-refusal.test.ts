// A refused enqueue decided in the core (docs/decisions/0063, 0110): the
// compiled `enqueueRefusalVerdict` against the reference model on every
// start answer and fact, the cases the decisions spell out, and every error
// code (with every reason) through `startAnswerOf` and the host's carrying
// out (`carryOutEnqueueRefusal`, `observerFollows`) against
// queue-enqueue.ts's and conversation-queue.ts's former rules, written out
// as they stood.

import { beforeAll, expect, it } from "vitest";
import { EnqueueRefusalFact as Fact, EnqueueRefusalVerdict as Verdict, StartAnswer as Answer } from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import { PhronomyError } from "../../host/errors.js";
import { carryOutEnqueueRefusal, observerFollows } from "../../host/runtime/enqueue-refusal.js";
import { enqueueRefusalVerdictFor } from "../model/reference-enqueue-cancel.js";
import { errorOf, EVERY_CODE, REASONS } from "./every-error-code.js";
import { expectEveryAnswerAndFact } from "./verdict-walk.js";

let core: ControlCore;
beforeAll(async () => {
  core = new ControlCore(await loadCoreModule("debug"), { agentsMax: 1, executionsMax: 1 });
});

it("the compiled verdict is the model's rules for every answer and fact", () => {
  expectEveryAnswerAndFact((answer, facts) => core.enqueueRefusalVerdict(answer, facts), enqueueRefusalVerdictFor, Answer.End, Fact.End);
  expect(core.enqueueRefusalVerdict(0xffff_ffff, 0)).toBe(Verdict.None);
  expect(core.enqueueRefusalVerdict(Answer.Refused, 0xffff_ffff)).toBe(Verdict.None);
});

it("its id an execution already: the cancel is told it is queued, the write merges the stored queue, an observer follows; else told, forgotten, rejected", () => {
  expect(core.enqueueRefusalVerdict(Answer.ExecutionExists, Fact.Cancelling)).toBe(Verdict.TellCancelQueued);
  expect(core.enqueueRefusalVerdict(Answer.ExecutionExists, 0)).toBe(Verdict.ForgetAndMerge);
  expect(core.enqueueRefusalVerdict(Answer.ExecutionExists, Fact.Observed)).toBe(Verdict.Follow);
  for (let answer = Answer.Stopping; answer < Answer.End; answer += 1) {
    if (answer === Answer.ExecutionExists) continue;
    expect(core.enqueueRefusalVerdict(answer, Fact.Cancelling)).toBe(Verdict.TellCancelGone);
    expect(core.enqueueRefusalVerdict(answer, 0)).toBe(Verdict.Forget);
    expect(core.enqueueRefusalVerdict(answer, Fact.Observed)).toBe(Verdict.Reject);
  }
  // Not a refusal, or a message both cancelling and observed: cannot hold.
  expect(core.enqueueRefusalVerdict(Answer.Started, 0)).toBe(Verdict.None);
  expect(core.enqueueRefusalVerdict(Answer.Queued, Fact.Observed)).toBe(Verdict.None);
  expect(core.enqueueRefusalVerdict(Answer.ExecutionExists, Fact.Cancelling | Fact.Observed)).toBe(Verdict.None);
});

/** queue-enqueue.ts's refused write before 0110, as it stood. */
function stepsBefore(refusal: PhronomyError, cancelling: boolean): string[] {
  const exists = refusal.code === "INVALID_INPUT" && refusal.details?.["reason"] === "execution_exists";
  if (cancelling) return [`tellCancel ${exists}`];
  return ["forget", ...(exists ? ["merge"] : []), "refuse"];
}

/** conversation-queue.ts's observer before 0110, as it stood. */
function followsBefore(error: unknown): boolean {
  return error instanceof PhronomyError && error.code === "INVALID_INPUT" && error.details?.["reason"] === "execution_exists";
}

function stepsNow(refusal: PhronomyError, cancelling: boolean): string[] {
  const steps: string[] = [];
  carryOutEnqueueRefusal(core, refusal, cancelling, {
    tellCancel: (queued) => steps.push(`tellCancel ${queued}`),
    forget: () => steps.push("forget"),
    merge: () => steps.push("merge"),
    refuse: () => steps.push("refuse"),
  });
  return steps;
}

it("every error code, with every reason, cancelling or not, takes the steps queue-enqueue.ts took; an observer follows as conversation-queue.ts decided", () => {
  for (const code of EVERY_CODE) {
    for (const reason of REASONS) {
      const refusal = errorOf(code, reason);
      const named = `${code} ${reason ?? "(no reason)"}`;
      for (const cancelling of [false, true])
        expect(stepsNow(refusal, cancelling), `${named} cancelling ${cancelling}`).toEqual(stepsBefore(refusal, cancelling));
      expect(observerFollows(core, refusal), named).toBe(followsBefore(refusal));
    }
  }
  for (const thrown of [new Error("not a PhronomyError"), "a string", undefined]) expect(observerFollows(core, thrown)).toBe(followsBefore(thrown));
});
