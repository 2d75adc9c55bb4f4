// A keyed start's refusal decided in the core (docs/decisions/0031, 0057,
// 0102): the compiled `keyedStartVerdict` against the reference model on
// every start answer and fact, the cases the decisions spell out, and every
// error code (with every reason) through `startAnswerOf` and the host's
// carrying out (`judgeKeyedRefusal`) against agent.ts's former rule, written
// out as it stood.

import { beforeAll, expect, it } from "vitest";
import { KeyedStartFact as Fact, KeyedStartVerdict as Verdict, StartAnswer as Answer } from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import type { PhronomyError } from "../../host/errors.js";
import { judgeKeyedRefusal } from "../../host/runtime/keyed-start-refusal.js";
import { keyedStartVerdictFor } from "../model/reference-queries.js";
import { errorOf, EVERY_CODE, REASONS } from "./every-error-code.js";
import { expectEveryAnswerAndFact } from "./verdict-walk.js";

let core: ControlCore;
beforeAll(async () => {
  core = new ControlCore(await loadCoreModule("debug"), { agentsMax: 1, executionsMax: 1 });
});

it("the compiled verdict is the model's rules for every answer and fact", () => {
  expectEveryAnswerAndFact((answer, facts) => core.keyedStartVerdict(answer, facts), keyedStartVerdictFor, Answer.End, Fact.End);
  expect(core.keyedStartVerdict(0xffff_ffff, 0)).toBe(Verdict.None);
  expect(core.keyedStartVerdict(Answer.Refused, 0xffff_ffff)).toBe(Verdict.None);
});

it("the key's execution in the store: followed; busy for any reason: followed only if admitted here; anything else fails", () => {
  expect(core.keyedStartVerdict(Answer.ExecutionExists, 0)).toBe(Verdict.Follow);
  for (const answer of [Answer.BusyByPolicy, Answer.LeaseNotHeld, Answer.BusyHeld]) {
    expect(core.keyedStartVerdict(answer, 0)).toBe(Verdict.AskAdmitted);
    expect(core.keyedStartVerdict(answer, Fact.AdmittedRead | Fact.AdmittedHere)).toBe(Verdict.Follow);
    expect(core.keyedStartVerdict(answer, Fact.AdmittedRead)).toBe(Verdict.Fail);
  }
  for (const answer of [Answer.Stopping, Answer.StoreFailed, Answer.Full, Answer.CoreFailed, Answer.Internal, Answer.RehydrationRequired, Answer.Refused]) {
    expect(core.keyedStartVerdict(answer, 0)).toBe(Verdict.Fail);
  }
  // Not a refusal, a read not asked for, an admission without its read: cannot hold.
  expect(core.keyedStartVerdict(Answer.Started, 0)).toBe(Verdict.None);
  expect(core.keyedStartVerdict(Answer.Queued, 0)).toBe(Verdict.None);
  expect(core.keyedStartVerdict(Answer.ExecutionExists, Fact.AdmittedRead)).toBe(Verdict.None);
  expect(core.keyedStartVerdict(Answer.BusyByPolicy, Fact.AdmittedHere)).toBe(Verdict.None);
});

/** agent.ts's `followingOnDuplicate` before 0102, as it stood. */
function followsBefore(refusal: PhronomyError, admitted: boolean | "read failed"): boolean {
  if (refusal.code === "INVALID_INPUT" && refusal.details?.["reason"] === "execution_exists") return true;
  if (refusal.code === "AGENT_BUSY") return admitted === true;
  return false;
}

function judged(refusal: PhronomyError, admitted: boolean | "read failed"): Promise<{ follows: boolean; read: boolean }> {
  let read = false;
  return new Promise((resolve) =>
    judgeKeyedRefusal(
      core,
      refusal,
      () => {
        read = true;
        return admitted === "read failed" ? Promise.reject(new Error("the read failed")) : Promise.resolve(admitted);
      },
      (follows) => resolve({ follows, read }),
    ),
  );
}

it("every error code, with every reason and every answer of the read, is carried out as agent.ts's rule decided it; the read is made only for a busy refusal", async () => {
  for (const code of EVERY_CODE) {
    for (const reason of REASONS) {
      for (const admitted of [false, true, "read failed"] as const) {
        const refusal = errorOf(code, reason);
        const named = `${code} ${reason ?? "(no reason)"} admitted ${admitted}`;
        const { follows, read } = await judged(refusal, admitted);
        expect(follows, named).toBe(followsBefore(refusal, admitted));
        expect(read, named).toBe(code === "AGENT_BUSY");
      }
    }
  }
});

it("carried out at once when no read is asked (no turn of the event loop, as before)", () => {
  let follows: boolean | undefined;
  judgeKeyedRefusal(
    core,
    errorOf("INVALID_INPUT", "execution_exists"),
    () => Promise.resolve(false),
    (answer) => (follows = answer),
  );
  expect(follows).toBe(true);
  judgeKeyedRefusal(
    core,
    errorOf("STORE", undefined),
    () => Promise.resolve(true),
    (answer) => (follows = answer),
  );
  expect(follows).toBe(false);
});
