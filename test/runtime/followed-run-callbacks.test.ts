// A Run that follows an execution from the store (a start whose
// idempotency key was already started, here on SQLite; a start filed for
// another process, test/postgres/start-callbacks.test.ts) applies the
// callback-error policy as a live Run does (decision 0056): under
// fail_task, a listener that throws or rejects on `done` fails the Run
// with STREAM_CALLBACK, the rejection as cause; under report it is
// reported and the Run resolves.

// This file's subject is the async listener whose rejection the runtime
// reports (`EventListener` says it may be async; its type returns void so
// that any function fits): passing one is the point, not a slip.
/* eslint-disable @typescript-eslint/no-misused-promises */

import { describe, expect, it } from "vitest";
import type { ExecutionEvent } from "../../host/index.js";
import { openEnvironment, recordingLogger, scriptedModel } from "./helpers.js";

const throwing = (event: ExecutionEvent): void => {
  if (event.type === "done") throw new Error("follower listener bug");
};
const rejecting = async (event: ExecutionEvent): Promise<void> => {
  if (event.type === "done") throw new Error("follower listener bug");
};

describe("a start following an execution already ended (same idempotency key)", () => {
  for (const [how, onEvent] of [
    ["throws", throwing],
    ["rejects", rejecting],
  ] as const) {
    it(`fail_task: a listener that ${how} on done fails the Run STREAM_CALLBACK`, async () => {
      const env = await openEnvironment({ callbackErrorPolicy: "fail_task" });
      const agent = env.agent({ id: `followed-${how}`, model: scriptedModel(() => ({ text: "ok" })) });
      const first = await agent.start("once", { idempotencyKey: "k" }).result;
      const failure = await agent.start("once", { idempotencyKey: "k", onEvent }).result.catch((error: unknown) => error);
      expect(failure).toMatchObject({ code: "STREAM_CALLBACK", executionId: first.executionId, cause: { message: "follower listener bug" } });
      await expect(agent.start("next").result).resolves.toMatchObject({ outcome: "completed" });
      await env.close();
    });
  }

  it("fail_task: a keyed start that runs here, its listener throwing on done, fails STREAM_CALLBACK", async () => {
    const env = await openEnvironment({ callbackErrorPolicy: "fail_task" });
    const agent = env.agent({ id: "keyed-live", model: scriptedModel(() => ({ text: "ok" })) });
    const failure = await agent.start("once", { idempotencyKey: "k", onEvent: throwing }).result.catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "STREAM_CALLBACK", cause: { message: "follower listener bug" } });
    await expect(agent.start("next").result).resolves.toMatchObject({ outcome: "completed" });
    await env.close();
  });

  it("report: the failure is reported and the Run resolves", async () => {
    const logger = recordingLogger();
    const env = await openEnvironment({ logger });
    const agent = env.agent({ id: "followed-report", model: scriptedModel(() => ({ text: "ok" })) });
    await agent.start("once", { idempotencyKey: "k" }).result;
    await expect(agent.start("once", { idempotencyKey: "k", onEvent: throwing }).result).resolves.toMatchObject({ outcome: "completed" });
    await env.close();
    expect(logger.warnings.some((warning) => warning.includes("follower listener bug"))).toBe(true);
  });
});
