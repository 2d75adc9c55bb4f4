// `env.cancel` of a keyed start's message while its enqueue is being
// written, when the store refuses that enqueue because a message under the
// key's execution id is queued already (another process queued it before
// the conversation's lease moved here). The cancel names that execution
// id, so it is written for the message the store holds: the message is
// cancelled in the store and never runs. It was answered "cancelled" with
// nothing written, the stored message stayed queued, and this process ran
// a later message ahead of it (found by the whole-host simulation,
// SIM_SEED=1270683270, docs/decisions/0063).

import { join } from "node:path";
import { expect, it } from "vitest";
import { Phronomy } from "../../host/index.js";
import { scriptedModel } from "../../host/testing.js";
import { startExecutionIdOf } from "../../host/store/start-filing.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import { temporaryDirectory } from "../store/fixtures.js";

it("a cancel asked while a keyed enqueue is written, refused as existing, cancels the message stored under that id", async () => {
  const store = await SqliteStore.open(join(await temporaryDirectory(), "agents.db"));
  const env = await Phronomy.open({ store, logger: { warn: () => undefined } });
  let release!: () => void;
  const running = new Promise<void>((resolve) => {
    release = resolve;
  });
  const asked: string[] = [];
  const model = scriptedModel(async ({ messages }) => {
    const last = String(messages.filter((message) => message.role === "user").at(-1)?.content);
    asked.push(last);
    if (last === "busy") await running;
    return { text: `answer to ${last}` };
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
    await store.enqueueMessage({ executionId, agentId: chat.id, input: "stored", config: {}, front: false, limit: 100, at: Date.now() });
    // The keyed enqueue held while it is written; cancelled meanwhile.
    let write!: () => void;
    const writing = new Promise<void>((resolve) => {
      write = resolve;
    });
    const enqueueMessage = store.enqueueMessage.bind(store);
    store.enqueueMessage = async (operation) => {
      await writing;
      return enqueueMessage(operation);
    };
    const keyed = chat.start("again", { onBusy: "enqueue", idempotencyKey: "k" });
    keyed.result.catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const cancelled = env.cancel(executionId);
    write();
    await cancelled;
    expect(cancels).toEqual([executionId]);
    expect(await store.queuedMessages(chat.id)).toEqual([]);
    release();
    await expect(busy.result).resolves.toMatchObject({ outcome: "completed" });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(asked).not.toContain("stored");
  } finally {
    release();
    await env.close();
  }
});
