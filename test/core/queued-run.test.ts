// A message taken from the durable queue whose Run failed before it ran
// (docs/decisions/0062, "A failed queued Run"): the compiled
// `queuedRunVerdict` against the reference model's rule for every failure
// class, and the host's translation of each error code into a class,
// which together keep the codes that used to leave a message queued
// (`KEPT_QUEUED`, once a host set) doing so — every other code writes it
// terminal.

import { beforeAll, expect, it } from "vitest";
import { QueuedRunFailure as Failure, QueuedRunVerdict as Verdict } from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import { PhronomyError, type PhronomyErrorCode } from "../../host/errors.js";
import { queuedRunFailureOf } from "../../host/runtime/queue-words.js";
import { queuedRunVerdictFor } from "../model/reference-conversations.js";

let core: ControlCore;
beforeAll(async () => {
  core = new ControlCore(await loadCoreModule("debug"), { agentsMax: 1, executionsMax: 1 });
});

it("the compiled verdict is the model's rule for every failure class", () => {
  for (let failure = 0; failure <= Failure.End + 1; failure += 1) {
    expect(core.queuedRunVerdict(failure), `failure ${failure}`).toBe(queuedRunVerdictFor(failure));
  }
  expect(core.queuedRunVerdict(0xffff_ffff)).toBe(Verdict.None);
});

it("only a refusal for good writes the message terminal; an unknown class answers nothing", () => {
  expect(core.queuedRunVerdict(Failure.RefusedForGood)).toBe(Verdict.WriteTerminal);
  for (const failure of [Failure.NotNow, Failure.StoreFailed, Failure.OutcomeUnknown, Failure.Stopping, Failure.ExecutionExists]) {
    expect(core.queuedRunVerdict(failure)).toBe(Verdict.KeepQueued);
  }
  expect(core.queuedRunVerdict(Failure.None)).toBe(Verdict.None);
  expect(core.queuedRunVerdict(Failure.End)).toBe(Verdict.None);
});

/** Every error code (a record, so a new code fails to compile here). */
const EVERY_CODE = Object.keys({
  AGENT_CLOSED: true,
  AGENT_BUSY: true,
  RUNTIME_SHUTDOWN: true,
  OFFLOAD_FULL: true,
  EXECUTION_REHYDRATION_REQUIRED: true,
  STALE_RESULT: true,
  CANCELLED: true,
  TIMEOUT: true,
  APPROVAL_MISMATCH: true,
  STREAM_CALLBACK: true,
  STORE: true,
  INVALID_INPUT: true,
  INPUT_BLOCKED: true,
  OUTPUT_BLOCKED: true,
  BUDGET_EXCEEDED: true,
  MAX_TURNS_EXCEEDED: true,
  TOOL_FAILED: true,
  MODEL_FAILED: true,
  CAPACITY: true,
  CORE_FAILED: true,
  INTERNAL: true,
  APPROVAL_REQUIRED: true,
  QUEUE_FULL: true,
  EXECUTION_NOT_FOUND: true,
  EXECUTION_ENDED: true,
  RETRY_REFUSED: true,
  UNSUPPORTED_RUNTIME: true,
  SIGNAL_REFUSED: true,
} satisfies Record<PhronomyErrorCode, true>) as PhronomyErrorCode[];

const FORMERLY_KEPT_QUEUED = new Set(["RUNTIME_SHUTDOWN", "STORE", "EXECUTION_REHYDRATION_REQUIRED", "AGENT_BUSY", "CORE_FAILED"]);

it("every error code keeps a message queued exactly when the host's old set did", () => {
  for (const code of EVERY_CODE) {
    const error = new PhronomyError(code, "a failure");
    const verdict = core.queuedRunVerdict(queuedRunFailureOf(error));
    expect(verdict, code).toBe(FORMERLY_KEPT_QUEUED.has(code) ? Verdict.KeepQueued : Verdict.WriteTerminal);
  }
});

it("INVALID_INPUT because the id is taken already keeps the message: it is another start's (0063, found 21)", () => {
  const exists = new PhronomyError("INVALID_INPUT", "exists", { details: { reason: "execution_exists" } });
  expect(queuedRunFailureOf(exists)).toBe(Failure.ExecutionExists);
  expect(core.queuedRunVerdict(queuedRunFailureOf(exists))).toBe(Verdict.KeepQueued);
  expect(queuedRunFailureOf(new PhronomyError("INVALID_INPUT", "bad"))).toBe(Failure.RefusedForGood);
});

it("AGENT_BUSY is refused for now whatever its reason", () => {
  const leaseNotHeld = new PhronomyError("AGENT_BUSY", "busy", { details: { reason: "lease_not_held" } });
  expect(queuedRunFailureOf(leaseNotHeld)).toBe(Failure.NotNow);
  expect(queuedRunFailureOf(new PhronomyError("AGENT_BUSY", "busy"))).toBe(Failure.NotNow);
});
