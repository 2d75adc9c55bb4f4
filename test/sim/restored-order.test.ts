// A conversation's queue restored by a takeover keeps its durable order
// (docs/decisions/0063, "Found and fixed" 11): two real environments on
// the simulated cluster store, on a fake clock. p2 holds the conversation
// (an execution suspended there) and queues X, whose enqueue is slow; the
// conversation moves to p1, which queues Y; it comes back to p2, whose
// takeover reads Y from the store — and only then does X's enqueue
// commit, behind Y. Y runs first. The restore used to append Y after X
// (whose order was not known yet), and X ran ahead of it.

import { expect, it, vi } from "vitest";
import { Cluster } from "./cluster-store.js";
import { advance, leaseMs, none, open, useSimulatedClock } from "./two-processes.js";

useSimulatedClock();

it("a message queued by the former holder runs before one whose enqueue committed after the takeover's restore", async () => {
  const cluster = new Cluster(leaseMs, false);
  cluster.fencesAtCommit = true;
  const p1 = await open(cluster, "p1");
  const p2 = await open(cluster, "p2");
  const suspended = p2.agent.conversation("c").start("refund order 1");
  await advance(cluster, 400, none);
  const suspendedId = await suspended.executionId;
  expect(cluster.execution(suspendedId)?.status).toBe("suspended");
  // p1 asks for the conversation: it takes it once p2 stops renewing.
  const refused = p1.agent.conversation("c").start("hello from p1").result;
  await advance(cluster, 100, none);
  await expect(refused).rejects.toMatchObject({ code: "AGENT_BUSY" });
  // X's enqueue, slow: held until after the conversation came back to p2.
  const x = p2.agent.conversation("c").start("X", { onBusy: "enqueue" });
  await vi.advanceTimersByTimeAsync(0);
  const held = cluster.pending.find((write) => write.operation.type === "enqueueMessage");
  expect(held).toBeDefined();
  p2.store.stalledUntil = Date.now() + leaseMs * 2;
  await advance(cluster, leaseMs * 3, (write) => write === held);
  expect(cluster.leases.get("c")?.owner).toBe("p1");
  const y = p1.agent.conversation("c").start("Y", { onBusy: "enqueue" });
  await advance(cluster, 100, (write) => write === held);
  const yId = await y.executionId;
  // p2 asks again, and takes the conversation back once p1 stops renewing.
  const again = p2.agent
    .conversation("c")
    .start("again")
    .result.catch(() => undefined);
  await advance(cluster, 100, (write) => write === held);
  await again;
  p1.store.stalledUntil = Date.now() + leaseMs * 2;
  await advance(cluster, leaseMs * 3, (write) => write === held);
  expect(cluster.leases.get("c")?.owner).toBe("p2");
  held!.settle("commit");
  await advance(cluster, 100, none);
  const xId = await x.executionId;
  const approvalId = (cluster.execution(suspendedId)?.approvalRequest as { approvalId: string }).approvalId;
  const resumed = p2.agent.conversation("c").resume(suspendedId, { approvalId, approved: true }).result;
  await advance(cluster, leaseMs, none);
  await expect(resumed).resolves.toMatchObject({ outcome: "completed" });
  await advance(cluster, leaseMs, none);
  const prepared = cluster.committed.filter((write) => write.type === "prepareExecution").map((write) => write.executionId);
  expect(prepared.indexOf(yId), `prepared in the order ${prepared.join(", ")}`).toBeLessThan(prepared.indexOf(xId));
  expect(prepared.indexOf(yId)).toBeGreaterThanOrEqual(0);
  expect(cluster.queueOrderViolations).toEqual([]);
  await expect(x.result).resolves.toMatchObject({ executionId: xId, outcome: "completed", output: "answer to X" });
  await Promise.all([p1.environment.close(), p2.environment.close()]);
});
