// Three starts with one idempotency key: the first runs; the second
// (onBusy "enqueue") is queued under the key's execution id, and its
// enqueue is refused (`execution_exists`), so it follows the running
// execution; the third comes while that enqueue is in flight and follows
// the second's queue item. It was told the raw refusal (INVALID_INPUT,
// "already in the store") instead of following the execution the key ran
// as (found by the whole-host simulation, docs/decisions/0063, found 19).

import { join } from "node:path";
import { expect, it } from "vitest";
import { Phronomy } from "../../host/index.js";
import { scriptedModel } from "../../host/testing.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import { temporaryDirectory } from "../store/fixtures.js";

it("a keyed start following a queued start of its key whose enqueue is refused follows the key's execution", async () => {
  const store = await SqliteStore.open(join(await temporaryDirectory(), "agents.db"));
  const env = await Phronomy.open({ store, logger: { warn: () => undefined } });
  let release!: () => void;
  const running = new Promise<void>((resolve) => {
    release = resolve;
  });
  let calls = 0;
  const support = env.agent({
    name: "support",
    instructions: "You help.",
    model: scriptedModel(async () => {
      calls += 1;
      await running;
      return { text: `answer ${calls}` };
    }),
  });
  try {
    const chat = support.conversation("c0");
    const first = chat.start("hello", { idempotencyKey: "k" });
    const executionId = await first.executionId;
    const second = chat.start("hello", { onBusy: "enqueue", idempotencyKey: "k" });
    const third = chat.start("hello", { idempotencyKey: "k" });
    release();
    const results = await Promise.allSettled([first.result, second.result, third.result]);
    for (const result of results) expect(result).toMatchObject({ status: "fulfilled", value: { executionId, outcome: "completed", output: "answer 1" } });
    expect(calls).toBe(1);
  } finally {
    await env.close();
  }
});
