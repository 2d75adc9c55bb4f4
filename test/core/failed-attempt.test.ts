// A failed attempt of a model call or a tool decided in the core
// (docs/decisions/0110): the compiled `failedAttemptVerdict` against the
// reference model on every fact, attempt and retry count, the cases the
// decision spells out, and `withRetries` with the session's facts — a
// tool's throw of every kind, a model call's error transient or not,
// streamed or not, aborted or not, every retry count — against the loop
// and the session's `retryable` hooks as they stood before 0110.

import { beforeAll, expect, it } from "vitest";
import { FailedAttemptFact as F, FailedAttemptVerdict as V } from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import { isTransientModelError, withRetries } from "../../host/agent/retries.js";
import { ModelFailedError, PhronomyError } from "../../host/errors.js";
import { failedAttemptVerdictFor } from "../model/reference-failed-attempt.js";

let core: ControlCore;
beforeAll(async () => {
  core = new ControlCore(await loadCoreModule("debug"), { agentsMax: 1, executionsMax: 1 });
});

it("the compiled verdict is the model's rules for every fact, attempt and retry count", () => {
  for (let facts = 0; facts <= F.End + 1; facts += 1) {
    for (let maxRetries = 0; maxRetries <= 11; maxRetries += 1) {
      for (let number = 0; number <= maxRetries + 2; number += 1) {
        expect(core.failedAttemptVerdict(facts, number, maxRetries), `facts ${facts} attempt ${number} of ${maxRetries}`).toBe(
          failedAttemptVerdictFor(facts, number, maxRetries),
        );
      }
    }
  }
  expect(core.failedAttemptVerdict(0xffff_ffff, 1, 2)).toBe(V.None);
  expect(core.failedAttemptVerdict(F.Tool, 0xffff_ffff, 0xffff_fffe)).toBe(failedAttemptVerdictFor(F.Tool, 0xffff_ffff, 0xffff_fffe));
  expect(core.failedAttemptVerdict(F.Tool, 0xffff_ffff, 0xffff_fffe)).toBe(V.ThrowExhausted);
});

it("a tool's throw is retried unless a PhronomyError; a model call's when transient and not streamed; never once aborted; exhausted past the last", () => {
  expect(core.failedAttemptVerdict(F.Tool, 1, 2)).toBe(V.Retry);
  expect(core.failedAttemptVerdict(F.Tool | F.PhronomyError, 1, 2)).toBe(V.Throw);
  expect(core.failedAttemptVerdict(F.Transient, 1, 2)).toBe(V.Retry);
  expect(core.failedAttemptVerdict(F.Transient | F.Streamed, 1, 2)).toBe(V.Throw);
  expect(core.failedAttemptVerdict(0, 1, 2)).toBe(V.Throw);
  expect(core.failedAttemptVerdict(F.Tool | F.Aborted, 1, 2)).toBe(V.Throw);
  expect(core.failedAttemptVerdict(F.Tool, 3, 2)).toBe(V.ThrowExhausted);
  expect(core.failedAttemptVerdict(F.Tool, 1, 0)).toBe(V.Throw);
  // Cannot hold: a tool's transient or streamed, a model's PhronomyError bit, attempt 0 or past the last.
  expect(core.failedAttemptVerdict(F.Tool | F.Transient, 1, 2)).toBe(V.None);
  expect(core.failedAttemptVerdict(F.PhronomyError, 1, 2)).toBe(V.None);
  expect(core.failedAttemptVerdict(F.Tool, 0, 2)).toBe(V.None);
  expect(core.failedAttemptVerdict(F.Tool, 4, 2)).toBe(V.None);
});

/** host/agent/retries.ts's loop before 0110, as it stood (the delay and
 * the report aside: every case here waits 0 ms). */
async function withRetriesBefore(
  maxRetries: number,
  signal: AbortSignal,
  retryable: (error: unknown) => boolean,
  attempt: () => Promise<never>,
): Promise<unknown> {
  for (let number = 1; ; number += 1) {
    try {
      return await attempt();
    } catch (error) {
      if (signal.aborted || !retryable(error)) throw error;
      if (number > maxRetries) throw maxRetries === 0 ? error : new Error(`exhausted after ${number}`);
    }
  }
}

const exhaustedError = new Error("exhausted");

it("withRetries with the session's facts throws what, after how many attempts, the loop and the session's hooks did", async () => {
  const transient = new ModelFailedError("overloaded", { cause: Object.assign(new Error("503"), { statusCode: 503, isRetryable: true }) });
  const errors: readonly unknown[] = [
    new PhronomyError("TOOL_FAILED", "refused"),
    new Error("a plain throw"),
    "a string",
    transient,
    new ModelFailedError("bad request"),
  ];
  let cases = 0;
  for (const kind of ["tool", "model"] as const) {
    for (const error of errors) {
      for (const streamed of [false, true]) {
        if (kind === "tool" && streamed) continue;
        for (const aborted of [false, true]) {
          for (let maxRetries = 0; maxRetries <= 3; maxRetries += 1) {
            const controller = new AbortController();
            if (aborted) controller.abort(new Error("aborted"));
            const retryableBefore =
              kind === "tool" ? (thrown: unknown) => !(thrown instanceof PhronomyError) : (thrown: unknown) => !streamed && isTransientModelError(thrown);
            const factsOf =
              kind === "tool"
                ? (thrown: unknown) => F.Tool | (thrown instanceof PhronomyError ? F.PhronomyError : 0)
                : (thrown: unknown) => (isTransientModelError(thrown) ? F.Transient : 0) | (streamed ? F.Streamed : 0);
            let before = 0;
            const thrownBefore = await withRetriesBefore(maxRetries, controller.signal, retryableBefore, () => {
              before += 1;
              return Promise.reject(error);
            }).catch((thrown: unknown) => (thrown instanceof Error && thrown.message.startsWith("exhausted") ? exhaustedError : thrown));
            let now = 0;
            const thrownNow = await withRetries(
              { maxRetries, initialDelayMs: 0 },
              { signal: controller.signal, core, factsOf, onRetry: () => undefined, random: () => 0 },
              () => {
                now += 1;
                return Promise.reject(error);
              },
              () => exhaustedError,
            ).catch((thrown: unknown) => thrown);
            const named = `${kind} ${String(error)} streamed ${streamed} aborted ${aborted} maxRetries ${maxRetries}`;
            expect({ attempts: now, thrown: thrownNow }, named).toEqual({ attempts: before, thrown: thrownBefore });
            cases += 1;
          }
        }
      }
    }
  }
  expect(cases).toBe(120);
});
