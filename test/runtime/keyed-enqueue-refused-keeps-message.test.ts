// A keyed start queued (onBusy "enqueue") while the store already holds a
// message under the key's execution id that this process does not know —
// another process queued it before the conversation's lease moved here.
// The store refuses the enqueue (`execution_exists`): the start follows
// the key's execution to its end, and the message, another caller's,
// stays queued. It was written terminal with the refusal (a cancelQueued
// of that message) and the start settled INVALID_INPUT (found by the
// whole-host simulation, docs/decisions/0063, found 21).

import { join } from "node:path";
import { expect, it } from "vitest";
import { Phronomy } from "../../host/index.js";
import { scriptedModel } from "../../host/testing.js";
import { startExecutionIdOf } from "../../host/store/start-filing.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import { temporaryDirectory } from "../store/fixtures.js";

it("a keyed enqueue refused because the key's message is queued already follows it and cancels nothing", async () => {
  const store = await SqliteStore.open(join(await temporaryDirectory(), "agents.db"));
  const env = await Phronomy.open({ store, logger: { warn: () => undefined } });
  let release!: () => void;
  const running = new Promise<void>((resolve) => {
    release = resolve;
  });
  const model = scriptedModel(async ({ messages }) => {
    const last = messages.filter((message) => message.role === "user").at(-1)?.content;
    if (last === "busy") await running;
    return { text: `answer to ${String(last)}` };
  });
  const support = env.agent({ name: "support", instructions: "You help.", model });
  const cancels: string[] = [];
  const cancelQueued = store.cancelQueued.bind(store);
  store.cancelQueued = (operation) => {
    cancels.push(operation.executionId);
    return cancelQueued(operation);
  };
  try {
    const chat = support.conversation("c0");
    const busy = chat.start("busy");
    await busy.executionId;
    const executionId = startExecutionIdOf(chat.id, "k");
    // Queued under the key's id by another caller (another process, before
    // the lease moved here): in the store, not in this process's queue.
    await store.enqueueMessage({ executionId, agentId: chat.id, input: "again", config: {}, front: false, limit: 100, at: Date.now() });
    const keyed = chat.start("again", { onBusy: "enqueue", idempotencyKey: "k" });
    keyed.result.catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(cancels).toEqual([]);
    expect((await store.queuedMessages(chat.id)).map((message) => message.executionId)).toEqual([executionId]);
    release();
    await expect(busy.result).resolves.toMatchObject({ outcome: "completed" });
    await expect(keyed.result).resolves.toMatchObject({ executionId, outcome: "completed", output: "answer to again" });
    expect(cancels).toEqual([]);
  } finally {
    release();
    await env.close();
  }
});
