// A queue head prepared by another process while its own preparation was
// in flight (docs/decisions/0063, "Found and fixed" 12; seed 504003): two
// real environments on the simulated cluster store, on a fake clock. p2
// holds the conversation and takes X from its queue; X's preparation is
// slow. p2 stops renewing, p1 takes the conversation over, prepares X and
// dies; the conversation comes back to p2, whose takeover finds X's row
// while X's own start is still being prepared here — and only then is
// that preparation refused (the execution exists). X used to stay active
// for ever (its install refused AGENT_BUSY by that start, never tried
// again) and its Run was told INVALID_INPUT. Now the recovery waits for the
// preparation, installs X and runs it; X's Run follows it.

import { expect, it } from "vitest";
import { Cluster, type PendingWrite } from "./cluster-store.js";
import { advance, leaseMs, none, open, useSimulatedClock } from "./two-processes.js";

useSimulatedClock();

it("a head prepared by another process while its own preparation was in flight is recovered, and its Run follows it", async () => {
  const cluster = new Cluster(leaseMs, false);
  const p1 = await open(cluster, "p1");
  const p2 = await open(cluster, "p2");
  // p2 holds the conversation: an execution suspended there, X queued behind it.
  const suspended = p2.agent.conversation("c").start("refund order 1");
  await advance(cluster, 400, none);
  const suspendedId = await suspended.executionId;
  const x = p2.agent.conversation("c").start("X", { onBusy: "enqueue" });
  await advance(cluster, 100, none);
  const xId = await x.executionId;
  // p1 asks for the conversation (it takes it once p2 stops renewing).
  const refused = p1.agent.conversation("c").start("hello from p1").result;
  await advance(cluster, 100, none);
  await expect(refused).rejects.toMatchObject({ code: "AGENT_BUSY" });
  // The decision ends the suspended execution; p2 takes X from its queue,
  // and X's preparation at p2 is slow.
  const p2PreparesX = (write: PendingWrite): boolean =>
    write.handle === p2.store && write.operation.type === "prepareExecution" && write.operation.executionId === xId;
  const approvalId = (cluster.execution(suspendedId)?.approvalRequest as { approvalId: string }).approvalId;
  const resumed = p2.agent.conversation("c").resume(suspendedId, { approvalId, approved: true }).result;
  await advance(cluster, 100, p2PreparesX);
  await expect(resumed).resolves.toMatchObject({ outcome: "completed" });
  const slow = cluster.pending.find(p2PreparesX);
  expect(slow).toBeDefined();
  // p2 stops renewing; p1 takes the conversation over and prepares X (its
  // later writes never land: it dies).
  p2.store.stalledUntil = Date.now() + leaseMs * 2;
  const p1AfterPreparing = (write: PendingWrite): boolean => p2PreparesX(write) || (write.handle === p1.store && write.operation.type !== "prepareExecution");
  await advance(cluster, leaseMs * 2, p1AfterPreparing);
  expect(cluster.leases.get("c")?.owner).toBe("p1");
  expect(cluster.execution(xId)?.status).toBe("active");
  p1.store.kill();
  // The conversation comes back to p2, whose takeover finds X's row while
  // X's own start is still being prepared here; then that preparation is
  // refused (the execution exists).
  await advance(cluster, leaseMs * 3, p2PreparesX);
  expect(cluster.leases.get("c")?.owner).toBe("p2");
  slow!.settle("commit");
  await advance(cluster, leaseMs * 3, none);
  expect(cluster.unfinished()).toEqual([]);
  await expect(x.result).resolves.toMatchObject({ executionId: xId, outcome: "completed", output: "answer to X" });
  await p2.environment.close();
});
