// An interrupt whose enqueue the store refuses — here a keyed start whose
// key's execution ended already (`execution_exists`: the start follows
// that execution) — while it is the head of the conversation's queue and
// the conversation fell idle meanwhile: the message queued behind it must
// start. It used to stay queued for ever, its Run pending: the refusal
// forgot the head and started nothing (found by the whole-host
// simulation, seeds 5187, 5194, 5463, docs/decisions/0063).

import { expect, it } from "vitest";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import type { ExecutionStore } from "../../host/store/store.js";
import { deferred, openEnvironment, temporaryStorePath } from "./helpers.js";

/** A real SQLite store whose second enqueue waits for `written`. */
async function gatedStore() {
  const store = await SqliteStore.open(await temporaryStorePath());
  const enqueueing = deferred();
  const written = deferred();
  let enqueues = 0;
  const enqueueMessage = async (...args: Parameters<SqliteStore["enqueueMessage"]>) => {
    if (++enqueues === 2) {
      enqueueing.resolve();
      await written.promise;
    }
    return store.enqueueMessage(...args);
  };
  const gated = new Proxy(store, {
    get(target, property, receiver) {
      if (property === "enqueueMessage") return enqueueMessage;
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as unknown as ExecutionStore;
  return { store: gated, enqueueing, written };
}

it("an interrupt refused by the store while it heads the queue lets the message behind it run", async () => {
  const gates = await gatedStore();
  const env = await openEnvironment({ store: gates.store });
  const busy = deferred();
  const agent = env.agent({
    id: "c0",
    model: scriptedModel(async ({ messages }) => {
      const last = messages.filter((message) => message.role === "user").at(-1)?.content;
      if (last === "busy") await busy.promise;
      return { text: `answer to ${String(last)}` };
    }),
  });
  const keyed = await agent.start("keyed", { idempotencyKey: "k" }).result;
  expect(keyed.outcome).toBe("completed");
  const running = agent.start("busy");
  await running.executionId;
  const second = agent.start("second", { onBusy: "enqueue" });
  await second.executionId;
  // The key's execution ended already: the store refuses this enqueue.
  const again = agent.start("again", { onBusy: "interrupt", idempotencyKey: "k" });
  await gates.enqueueing.promise;
  // The conversation falls idle while the interrupt heads the queue, unwritten.
  busy.resolve();
  await expect(running.result).resolves.toMatchObject({ outcome: "completed" });
  gates.written.resolve();
  await expect(again.result).resolves.toMatchObject({ outcome: "completed", executionId: keyed.executionId, output: keyed.output });
  await expect(second.result).resolves.toMatchObject({ outcome: "completed", output: "answer to second" });
}, 20_000);
