// Two starts with one idempotency key while the conversation is busy
// (onBusy "enqueue"): the second follows the message the first queued
// (README: a start with a key already started follows that execution). It
// used to be refused (INVALID_INPUT) and its refusal cancelled the first's
// queued message, whose Run then never settled (found by the whole-host
// simulation, docs/decisions/0063).

import { join } from "node:path";
import { expect, it } from "vitest";
import { Phronomy } from "../../host/index.js";
import { scriptedModel } from "../../host/testing.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import { temporaryDirectory } from "../store/fixtures.js";

it("a second keyed start while the first is queued follows it; the message runs once", async () => {
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
      if (calls === 1) await running;
      return { text: `answer ${calls}` };
    }),
  });
  try {
    const chat = support.conversation("c0");
    const busy = chat.start("busy");
    await busy.executionId;
    const first = chat.start("again", { onBusy: "enqueue", idempotencyKey: "k" });
    const second = chat.start("again", { onBusy: "enqueue", idempotencyKey: "k" });
    release();
    const [firstResult, secondResult] = await Promise.all([first.result, second.result]);
    expect(firstResult.outcome).toBe("completed");
    expect(secondResult).toMatchObject({ outcome: "completed", executionId: firstResult.executionId, output: firstResult.output });
    expect((await busy.result).outcome).toBe("completed");
    const rows = await env.executions({ agentId: "c0" });
    expect(rows.map((row) => row.outcome).sort()).toEqual(["completed", "completed"]);
    expect(calls).toBe(2);
  } finally {
    await env.close();
  }
});
