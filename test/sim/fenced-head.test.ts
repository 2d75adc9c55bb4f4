// A queue head whose preparation was fenced at the epoch it was sent,
// while its process took the lapsed lease again at the next one
// (docs/decisions/0134, 0136; seed 3412455951 with SIM_HOMES=0, seeds
// 3643775899 and 3643776005 with homes): the fence
// wrote nothing and the message is still queued in the store, so the
// head is kept (`HeadSettled(NotNow)`, the core's `HeadKept`) and runs
// before the message queued behind it. It used to be let go as refused
// for good: its Run was told EXECUTION_REHYDRATION_REQUIRED, the next
// message ran first, and the fenced one ran later, after it — or, with
// nothing behind it, it stayed queued in the store for good.

import { expect, it } from "vitest";
import { Cluster, type PendingWrite } from "./cluster-store.js";
import { advance, leaseMs, none, open, useSimulatedClock } from "./two-processes.js";

useSimulatedClock();

it("a head fenced at a lapsed epoch, its lease taken again at the next, is kept and runs before the message behind it", async () => {
  const cluster = new Cluster(leaseMs, false);
  const p1 = await open(cluster, "p1");
  // An execution suspended at p1 holds the conversation; B then C queued behind it.
  const suspended = p1.agent.conversation("c").start("refund order 1");
  await advance(cluster, 400, none);
  const suspendedId = await suspended.executionId;
  const b = p1.agent.conversation("c").start("B", { onBusy: "enqueue" });
  const c = p1.agent.conversation("c").start("C", { onBusy: "enqueue" });
  await advance(cluster, 100, none);
  const [bId, cId] = [await b.executionId, await c.executionId];
  const epoch = cluster.leases.get("c")!.epoch;
  // The decision ends the suspended execution; B's preparation, sent at
  // `epoch`, is on its way while p1's lease lapses and p1 takes it again.
  const preparesB = (write: PendingWrite): boolean => write.operation.type === "prepareExecution" && write.operation.executionId === bId;
  const approvalId = (cluster.execution(suspendedId)?.approvalRequest as { approvalId: string }).approvalId;
  const resumed = p1.agent.conversation("c").resume(suspendedId, { approvalId, approved: true }).result;
  await advance(cluster, 100, preparesB);
  await expect(resumed).resolves.toMatchObject({ outcome: "completed" });
  const slow = cluster.pending.find(preparesB);
  expect(slow).toBeDefined();
  p1.store.stalledUntil = Date.now() + leaseMs * 2;
  await advance(cluster, leaseMs * 3, preparesB);
  expect(cluster.leases.get("c")).toMatchObject({ owner: "p1", epoch: epoch + 1 });
  // Fenced at `epoch`: nothing written, B still queued in the store.
  slow!.settle("commit");
  await advance(cluster, leaseMs, none);
  await expect(b.result).resolves.toMatchObject({ executionId: bId, outcome: "completed", output: "answer to B" });
  await expect(c.result).resolves.toMatchObject({ executionId: cId, outcome: "completed", output: "answer to C" });
  const prepared = cluster.committed.filter((write) => write.type === "prepareExecution").map((write) => write.executionId);
  expect(prepared).toEqual([suspendedId, bId, cId]);
  expect(cluster.connection.prepare("SELECT execution_id FROM queued_messages").all()).toEqual([]);
  expect(cluster.queueOrderViolations).toEqual([]);
  expect(cluster.unfinished()).toEqual([]);
  await p1.environment.close();
});
