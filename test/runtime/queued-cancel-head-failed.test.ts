// A queue head cancelled while its preparation is in flight, whose
// preparation then fails (a lost connection) before the cancel commits:
// the failure puts the head back at the front of the queue (decision
// 0058), and the cancel, once written, must take it out again. It used to
// leave the cancelled head there, and every message behind it stayed
// queued for ever (found by the whole-host simulation, seed 2961835667,
// docs/decisions/0063).

import { expect, it } from "vitest";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { StoreError } from "../../host/errors.js";
import type { StoreOperation, StoreResult } from "../../host/store/records.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import type { ExecutionStore } from "../../host/store/store.js";
import { deferred, openEnvironment, temporaryStorePath, waitFor } from "./helpers.js";

/** A real SQLite store whose second preparation fails once `failPreparation`
 * is resolved, and whose queue cancels wait for `cancelWritten`. */
async function gatedStore() {
  const store = await SqliteStore.open(await temporaryStorePath());
  const preparing = deferred();
  const failPreparation = deferred();
  const cancelling = deferred();
  const cancelWritten = deferred();
  let preparations = 0;
  const run = async <O extends StoreOperation>(operation: O): Promise<StoreResult<O>> => {
    if (operation.type === "prepareExecution" && ++preparations === 2) {
      preparing.resolve();
      await failPreparation.promise;
      throw new StoreError("injected: the connection was lost during prepareExecution; nothing was written");
    }
    return store.run(operation);
  };
  const cancelQueued = async (...args: Parameters<SqliteStore["cancelQueued"]>) => {
    cancelling.resolve();
    await cancelWritten.promise;
    return store.cancelQueued(...args);
  };
  const gated = new Proxy(store, {
    get(target, property, receiver) {
      if (property === "run") return run;
      if (property === "cancelQueued") return cancelQueued;
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as unknown as ExecutionStore;
  return { store: gated, preparing, failPreparation, cancelling, cancelWritten };
}

it("a queue head cancelled while its preparation fails leaves the queue; the message behind it runs", async () => {
  const gates = await gatedStore();
  const env = await openEnvironment({ store: gates.store });
  const busy = deferred();
  let calls = 0;
  const agent = env.agent({
    id: "c0",
    model: scriptedModel(async () => {
      calls += 1;
      if (calls === 1) await busy.promise;
      return { text: `answer ${calls}` };
    }),
    onBusy: "enqueue",
  });
  const first = agent.start("first");
  await first.executionId;
  const second = agent.start("second");
  const secondId = await second.executionId;
  const secondResult = second.result.catch((error: unknown) => error);
  busy.resolve();
  await first.result;
  // The head's preparation is in flight; a third message queues behind it.
  await gates.preparing.promise;
  const third = agent.start("third");
  await third.executionId;
  const cancel = env.cancel(secondId);
  await gates.cancelling.promise;
  // The preparation fails: the head goes back to the front of the queue.
  gates.failPreparation.resolve();
  await new Promise((resolve) => setTimeout(resolve, 20));
  gates.cancelWritten.resolve();
  await expect(cancel).resolves.toMatchObject({ outcome: "cancelled" });
  await expect(secondResult).resolves.toMatchObject({ code: "CANCELLED" });
  await expect(third.result).resolves.toMatchObject({ outcome: "completed", output: "answer 2" });
  const rows = await waitFor(async () => {
    const listed = await env.executions({ agentId: "c0" });
    return listed.length === 3 ? listed : undefined;
  });
  // A queued message cancelled is written terminal `failed` with CANCELLED.
  expect(rows.map((row) => row.outcome).sort()).toEqual(["completed", "completed", "failed"]);
  expect(rows.find((row) => row.executionId === secondId)?.error).toMatchObject({ code: "CANCELLED" });
}, 20_000);
