// A keyed start filed for the holder while the holder's own start of that
// key is being queued there, the enqueue then refused by the fence (the
// holder gave the lease up meanwhile: nothing written) — sim seeds 778664
// and 778790 with homes; docs/decisions/0139. The holder's claim of the
// filed start followed the queued message being written (decision 0133),
// and that follow knew its execution id at once: the claim was settled
// `applied` before the message was durable. The enqueue then wrote
// nothing, and the filer followed an applied start whose execution never
// came: its Run never settled. The follow knows the id once the enqueue
// committed, as the message's own Run does: the refusal is the claim's
// (its write tried again, or left for the next holder), which runs it.

import { expect, it } from "vitest";
import { Cluster, type PendingWrite } from "./cluster-store.js";
import { advance, leaseMs, none, open, useSimulatedClock } from "./two-processes.js";

useSimulatedClock();

it("a filed keyed start following a message whose enqueue the fence then refused runs at the next holder", { timeout: 20_000 }, async () => {
  const cluster = new Cluster(leaseMs, false);
  cluster.startInbox = true;
  const p1 = await open(cluster, "p1");
  const p2 = await open(cluster, "p2");
  // The conversation is busy at p1: a refund waits for its approval (the interrupts cancel it).
  const busy = p1.agent.conversation("c").start("refund order 1");
  await advance(cluster, 200, none);
  expect(cluster.leases.get("c")).toMatchObject({ owner: "p1" });

  // p1's start of key "k" is being queued: its enqueue is held back.
  const enqueue = (write: PendingWrite): boolean => write.handle === p1.store && write.operation.type === "enqueueMessage";
  const first = p1.agent.conversation("c").start("hello", { idempotencyKey: "k", onBusy: "interrupt" });
  first.result.catch(() => undefined);
  await advance(cluster, 100, enqueue);
  const queued = cluster.pending.find(enqueue);
  expect(queued, "p1's enqueue is in flight").toBeDefined();
  // p2's start of the same key: filed for p1, claimed there, following the message being queued.
  const second = p2.agent.conversation("c").start("hello", { idempotencyKey: "k", onBusy: "interrupt" });
  await advance(cluster, 500, enqueue);
  expect(cluster.connection.prepare("SELECT state, claimed_by FROM sim_start_inbox").all()).toEqual([{ state: "claimed", claimed_by: "p1" }]);

  // p1 gives the lease up (a partition move); its enqueue then lands, fenced: nothing written.
  expect(p1.store.giveUpLease()).toBe("c");
  queued!.settle("commit");
  await advance(cluster, 100, none);
  await expect(first.result).rejects.toMatchObject({ code: "EXECUTION_REHYDRATION_REQUIRED" });
  expect(cluster.connection.prepare("SELECT execution_id FROM queued_messages").all()).toEqual([]);

  await advance(cluster, leaseMs * 3, none);
  await expect(second.result).resolves.toMatchObject({ outcome: "completed", output: "answer to hello" });
  expect(cluster.connection.prepare("SELECT state FROM sim_start_inbox").all()).toEqual([{ state: "applied" }]);
  await expect(busy.result).rejects.toMatchObject({ code: "CANCELLED" });
  await p2.environment.close();
  await p1.environment.close();
});
