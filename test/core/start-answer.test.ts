// One class of a start's answer for every verdict over it (docs/decisions
// 0096): each error code (with the reasons that change its reading) goes
// through `startAnswerOf` into the core's three verdicts — a message taken
// from the durable queue, a schedule's firing, a parent's child start — and
// each must decide as the rules the host kept before, written out here as
// they stood (queue-words.ts's set, schedule-sweep.ts's classes,
// child-executions.ts's `mayStartElsewhere`).

import { beforeAll, expect, it } from "vitest";
import {
  ChildStartVerdict,
  FiledStartFact,
  FiledStartVerdict,
  QueuedRunVerdict,
  ScheduleFiringFact,
  ScheduleFiringVerdict,
  StartAnswer,
} from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import type { PhronomyError } from "../../host/errors.js";
import { startAnswerOf } from "../../host/runtime/start-answer.js";
import { errorOf, EVERY_CODE, REASONS } from "./every-error-code.js";

let core: ControlCore;
beforeAll(async () => {
  core = new ControlCore(await loadCoreModule("debug"), { agentsMax: 1, executionsMax: 1 });
});

// -- the rules as the host kept them before 0096 --------------------------------

const KEPT_QUEUED = new Set(["RUNTIME_SHUTDOWN", "STORE", "EXECUTION_REHYDRATION_REQUIRED", "AGENT_BUSY", "CORE_FAILED"]);
const keptQueuedBefore = (e: PhronomyError): boolean => KEPT_QUEUED.has(e.code) || (e.code === "INVALID_INPUT" && e.details?.["reason"] === "execution_exists");

const LEFT_PENDING = new Set(["RUNTIME_SHUTDOWN", "STORE", "OFFLOAD_FULL", "CAPACITY", "CORE_FAILED", "INTERNAL"]);
const leftPendingBefore = (e: PhronomyError): boolean => LEFT_PENDING.has(e.code) || (e.code === "AGENT_BUSY" && e.details?.["reason"] !== undefined);

function childStepBefore(e: PhronomyError): ChildStartVerdict {
  if (e.code === "RUNTIME_SHUTDOWN") return ChildStartVerdict.Drop;
  // Decision 0099 added a conversation held for recovery (`recovery_required`) to the host's former two.
  const mayStartElsewhere = (e.code === "AGENT_BUSY" && e.details?.["reason"] !== undefined) || e.code === "STORE";
  return mayStartElsewhere ? ChildStartVerdict.StartAgainLater : ChildStartVerdict.ReadChild;
}

function filedFateBefore(e: PhronomyError, leftFiled: boolean, admitted: boolean): FiledStartVerdict {
  if (e.code === "INVALID_INPUT" && e.details?.["reason"] === "execution_exists") return FiledStartVerdict.Ran;
  if (e.code === "RUNTIME_SHUTDOWN" || e.code === "CORE_FAILED" || leftFiled) return FiledStartVerdict.Left;
  if (e.code === "STORE" || (e.code === "AGENT_BUSY" && e.details?.["reason"] === "lease_not_held")) return FiledStartVerdict.WriteFailed;
  return e.code === "AGENT_BUSY" && admitted ? FiledStartVerdict.Ran : FiledStartVerdict.Refused;
}

/** The core's filed-start fate the way the host asks it: the read of
 * "admitted here" only when the core asks for it. */
function filedFate(answer: StartAnswer, leftFiled: boolean, admitted: boolean): number {
  const facts = leftFiled ? FiledStartFact.LeftFiled : 0;
  const first = core.filedStartVerdict(answer, facts);
  if (first !== FiledStartVerdict.AskAdmitted) return first;
  return core.filedStartVerdict(answer, facts | FiledStartFact.AdmittedRead | (admitted ? FiledStartFact.AdmittedHere : 0));
}

it("every error code, with every reason, is decided as the host's rules decided it, by all four verdicts", () => {
  const made = ScheduleFiringFact.Claimed | ScheduleFiringFact.DefinedHere;
  for (const code of EVERY_CODE) {
    for (const reason of REASONS) {
      const error = errorOf(code, reason);
      const answer = startAnswerOf(error);
      const named = `${code} ${reason ?? "(no reason)"} → ${answer}`;
      expect(core.queuedRunVerdict(answer), named).toBe(keptQueuedBefore(error) ? QueuedRunVerdict.KeepQueued : QueuedRunVerdict.WriteTerminal);
      expect(core.scheduleFiringVerdict(made, answer), named).toBe(
        leftPendingBefore(error) ? ScheduleFiringVerdict.LeavePending : ScheduleFiringVerdict.SettleRefused,
      );
      expect(core.childStartVerdict(answer, 0), named).toBe(childStepBefore(error));
      for (const leftFiled of [false, true]) {
        for (const admitted of [false, true]) {
          expect(filedFate(answer, leftFiled, admitted), `${named} leftFiled ${leftFiled} admitted ${admitted}`).toBe(
            filedFateBefore(error, leftFiled, admitted),
          );
        }
      }
    }
  }
});

it("a throw that is not a PhronomyError is internal: the firing stays pending, the queued message is written terminal, the child failed", () => {
  const answer = startAnswerOf(new Error("a throw"));
  expect(answer).toBe(StartAnswer.Internal);
  expect(core.scheduleFiringVerdict(ScheduleFiringFact.Claimed | ScheduleFiringFact.DefinedHere, answer)).toBe(ScheduleFiringVerdict.LeavePending);
  expect(core.queuedRunVerdict(answer)).toBe(QueuedRunVerdict.WriteTerminal);
  expect(core.childStartVerdict(answer, 0)).toBe(ChildStartVerdict.ReadChild);
});

it("AGENT_BUSY reads by its reason: the busy policy, a lease held elsewhere, a conversation held for recovery", () => {
  expect(startAnswerOf(errorOf("AGENT_BUSY", undefined))).toBe(StartAnswer.BusyByPolicy);
  expect(startAnswerOf(errorOf("AGENT_BUSY", "lease_not_held"))).toBe(StartAnswer.LeaseNotHeld);
  expect(startAnswerOf(errorOf("AGENT_BUSY", "recovery_required"))).toBe(StartAnswer.BusyHeld);
  expect(startAnswerOf(errorOf("INVALID_INPUT", "execution_exists"))).toBe(StartAnswer.ExecutionExists);
  expect(startAnswerOf(errorOf("INVALID_INPUT", undefined))).toBe(StartAnswer.Refused);
});

// Seed 3643775710 (decision 0134): a firing's keyed start whose enqueue was
// fenced at the epoch it was sent with wrote nothing, yet settled its slot
// refused while the conversation's new holder ran the firing.
it("a start's write fenced at the epoch it was sent with (lease_lost) is a lease in flux: a schedule's firing stays pending", () => {
  const fenced = errorOf("EXECUTION_REHYDRATION_REQUIRED", "lease_lost");
  expect(startAnswerOf(fenced)).toBe(StartAnswer.LeaseNotHeld);
  expect(core.scheduleFiringVerdict(ScheduleFiringFact.Claimed | ScheduleFiringFact.DefinedHere, startAnswerOf(fenced))).toBe(
    ScheduleFiringVerdict.LeavePending,
  );
  expect(startAnswerOf(errorOf("EXECUTION_REHYDRATION_REQUIRED", undefined))).toBe(StartAnswer.RehydrationRequired);
});
