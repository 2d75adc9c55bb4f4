// The conversation queue (host/store/queue.ts, docs/decisions/0025) on both
// stores, through the store alone: enqueue order and the interrupt's place,
// the bound (QUEUE_FULL, nothing written), the trigger that removes a
// queued message in its preparation's transaction, cancel while queued, a
// closed agent, and the reads.

import { describe, expect, it } from "vitest";
import { AgentClosedError, InvalidInputError, QueueFullError } from "../../host/errors.js";
import { queueStoreOf, queueReaderOf, type EnqueueMessageOperation, type QueueStore } from "../../host/store/queue.js";
import type { ExecutionStore } from "../../host/store/store.js";
import { prepare } from "../store/fixtures.js";
import { postgresBackend, simulatedBackend, sqliteBackend, type Backend } from "./backends.js";

function message(executionId: string, extra: Partial<EnqueueMessageOperation> = {}): Omit<EnqueueMessageOperation, "type"> {
  return { executionId, agentId: "support", input: `input of ${executionId}`, config: { timeoutMs: 1000 }, front: false, limit: 3, at: 5, ...extra };
}

for (const backend of [sqliteBackend, postgresBackend, simulatedBackend] as Backend[]) {
  describe(`conversation queue (${backend.name})`, () => {
    async function opened(): Promise<{ store: ExecutionStore; queue: QueueStore }> {
      const store = await backend.open();
      await store.ensureAgent("support", 1);
      const queue = queueStoreOf(store);
      if (queue === undefined) throw new Error(`${backend.name} keeps no queue`);
      return { store, queue };
    }

    it("keeps order per agent, puts an interrupt at the head, and refuses a full queue writing nothing", async () => {
      const { store, queue } = await opened();
      expect(await queue.enqueueMessage(message("q1"))).toEqual({ seq: 1, position: 1 });
      expect(await queue.enqueueMessage(message("q2"))).toEqual({ seq: 2, position: 2 });
      expect(await queue.enqueueMessage(message("q0", { front: true }))).toEqual({ seq: 0, position: 1 });
      const full = queue.enqueueMessage(message("q3"));
      await expect(full).rejects.toBeInstanceOf(QueueFullError);
      await expect(full).rejects.toMatchObject({ code: "QUEUE_FULL", agentId: "support", details: { limit: 3 } });
      expect((await queue.queuedMessages("support")).map((queued) => queued.executionId)).toEqual(["q0", "q1", "q2"]);
      expect(await queueReaderOf(store)!.queuedMessage("q3")).toBeUndefined();
      expect(await store.listSteps("q3")).toEqual([]);
      expect(await queueReaderOf(store)!.queuedMessage("q1")).toEqual({
        executionId: "q1",
        agentId: "support",
        seq: 1,
        input: "input of q1",
        config: { timeoutMs: 1000 },
        createdAt: 5,
      });
      expect(await store.listSteps("q0")).toEqual([{ seq: 0, kind: "queued", at: 5, payload: { position: 1, interrupt: true } }]);
      await expect(queue.enqueueMessage(message("q1", { limit: 10 }))).rejects.toBeInstanceOf(InvalidInputError);
    });

    it("queueHeads: the head of every agent's queue, one per agent, with its config (the open scan, docs/decisions/0024)", async () => {
      const { store, queue } = await opened();
      expect(await queue.queueHeads!()).toEqual([]);
      await store.ensureAgent("user-9", 1);
      await queue.enqueueMessage(message("q1"));
      await queue.enqueueMessage(message("q2"));
      await queue.enqueueMessage(message("u1", { agentId: "user-9", config: { definition: "support" } }));
      await queue.enqueueMessage(message("q0", { front: true }));
      const heads = (await queue.queueHeads!()).map((head) => [head.agentId, head.executionId, head.config]).sort();
      expect(heads).toEqual([
        ["support", "q0", { timeoutMs: 1000 }],
        ["user-9", "u1", { definition: "support" }],
      ]);
      expect(await store.run(prepare("u1", "user-9"))).toMatchObject({ outcome: "active" });
      expect((await queue.queueHeads!()).map((head) => head.executionId)).toEqual(["q0"]);
    });

    it("a preparation under the queued id removes the message in its transaction; its timeline goes on after the queued step", async () => {
      const { store, queue } = await opened();
      await queue.enqueueMessage(message("q1"));
      await queue.enqueueMessage(message("q2"));
      // The enqueue wrote the root; this is its first preparation.
      expect(await store.run(prepare("q1"))).toEqual({ outcome: "active", revision: 1, ...(backend.reportsFirstOfAgent ? { firstOfAgent: true } : {}) });
      expect((await queue.queuedMessages("support")).map((queued) => queued.executionId)).toEqual(["q2"]);
      expect((await store.listSteps("q1")).map((step) => [step.seq, step.kind])).toEqual([
        [0, "queued"],
        [1, "input"],
      ]);
      expect(await queue.cancelQueued({ executionId: "q1", error: { code: "CANCELLED", message: "late" }, at: 9 })).toEqual({ cancelled: false });
      expect(await store.getExecution("q1")).toMatchObject({ status: "active" });
      await expect(queue.enqueueMessage(message("q1"))).rejects.toBeInstanceOf(InvalidInputError);
    });

    it("cancel while queued writes the execution terminal failed with the error; a second cancel finds nothing", async () => {
      const { store, queue } = await opened();
      await queue.enqueueMessage(message("q1"));
      const error = { code: "CANCELLED", message: "execution q1 was cancelled", details: { whileQueued: true } };
      expect(await queue.cancelQueued({ executionId: "q1", error, at: 7 })).toEqual({ cancelled: true });
      expect(await store.getExecution("q1")).toMatchObject({
        executionId: "q1",
        agentId: "support",
        revision: 1,
        status: "terminal",
        phase: "terminal",
        outcome: "failed",
        error,
        input: "input of q1",
        createdAt: 5,
        updatedAt: 7,
      });
      expect((await store.listSteps("q1")).map((step) => [step.seq, step.kind])).toEqual([
        [0, "queued"],
        [1, "terminal"],
      ]);
      expect(await queue.queuedMessages("support")).toEqual([]);
      expect(await queue.cancelQueued({ executionId: "q1", error, at: 8 })).toEqual({ cancelled: false });
      expect(await store.run(prepare("q1"))).toMatchObject({ outcome: "not_established" });
    });

    it("refuses a closed agent, and a purge while messages are queued", async () => {
      const { store, queue } = await opened();
      await queue.enqueueMessage(message("q1"));
      await expect(store.purgeAgent("support")).rejects.toMatchObject({ code: "AGENT_BUSY", details: { unfinishedExecutionIds: ["q1"] } });
      await store.closeAgent("support", 6);
      await expect(queue.enqueueMessage(message("q2"))).rejects.toBeInstanceOf(AgentClosedError);
    });

    it("lists queued messages newest first, bounded, by agent", async () => {
      const { store, queue } = await opened();
      await store.ensureAgent("other", 1);
      await queue.enqueueMessage(message("a1", { at: 1 }));
      await queue.enqueueMessage(message("b1", { agentId: "other", at: 2 }));
      await queue.enqueueMessage(message("a2", { at: 3 }));
      const reader = queueReaderOf(store)!;
      expect((await reader.listQueuedMessages({ limit: 10 })).map((queued) => queued.executionId)).toEqual(["a2", "b1", "a1"]);
      expect((await reader.listQueuedMessages({ limit: 2 })).map((queued) => queued.executionId)).toEqual(["a2", "b1"]);
      expect((await reader.listQueuedMessages({ agentId: "support", limit: 10 })).map((queued) => queued.executionId)).toEqual(["a2", "a1"]);
    });
  });
}
