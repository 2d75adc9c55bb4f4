// A start filed for the process that holds its conversation's partition
// (docs/decisions/0031) is followed from the store by the sender: its Run
// applies the callback-error policy as a live Run does (decision 0056).
// Under fail_task, the sender's listener throwing or rejecting on `done`
// fails the sender's Run STREAM_CALLBACK; the execution itself completed.

// This file's subject is the async listener whose rejection the runtime
// reports (`EventListener` says it may be async; its type returns void so
// that any function fits): passing one is the point, not a slip.
/* eslint-disable @typescript-eslint/no-misused-promises */

import { describe, expect, it } from "vitest";
import { Phronomy, type Environment, type ExecutionEvent } from "../../host/index.js";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { recordingLogger } from "../runtime/helpers.js";
import { atEnd } from "./database.js";
import { freePartitionsSchema } from "./fixtures/free-schema.js";

async function openAs(url: string, instanceId: string): Promise<Environment> {
  const environment = await Phronomy.open({ store: url, logger: recordingLogger(), callbackErrorPolicy: "fail_task", postgres: { instanceId } });
  atEnd(() => environment.close());
  return environment;
}

describe("a filed start's Run follows the execution under the callback-error policy (PostgreSQL)", () => {
  const listeners = {
    throws: (event: ExecutionEvent): void => {
      if (event.type === "done") throw new Error("sender listener bug");
    },
    rejects: async (event: ExecutionEvent): Promise<void> => {
      if (event.type === "done") throw new Error("sender listener bug");
    },
  };
  for (const [how, onEvent] of Object.entries(listeners)) {
    it(`fail_task: the sender's listener ${how} on done: its Run fails STREAM_CALLBACK, the execution completed`, async () => {
      const { url } = await freePartitionsSchema(1_000, 1);
      const model = scriptedModel(() => ({ text: "ok" }));
      const owner = await openAs(url, "owner");
      owner.agent({ name: "support", model });
      const sender = await openAs(url, "sender");
      const support = sender.agent({ name: "support", model });
      const run = support.conversation("c-1").start("hello", { onEvent });
      const failure = await run.result.catch((error: unknown) => error);
      expect(failure).toMatchObject({ code: "STREAM_CALLBACK", executionId: await run.executionId, cause: { message: "sender listener bug" } });
      expect(await owner.execution(await run.executionId)).toMatchObject({ status: "terminal", outcome: "completed" });
      await expect(support.conversation("c-1").start("again").result).resolves.toMatchObject({ outcome: "completed" });
    }, 60_000);
  }
});
