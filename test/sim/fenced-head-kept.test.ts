// A queue head whose preparation was fenced at the epoch it was sent with,
// its conversation's lease having lapsed and been taken again meanwhile by
// the same process at the next epoch (seeds 3643775899 and 3643776005 with
// homes). Nothing was written: the message is still queued in the store.
// The host used to tell the core the head was refused for good
// (`HeadOutcome.Refused`, for any refusal but `lease_not_held`): the head
// left the queue here while its row stayed queued in the store, and this
// process, holding the conversation, never started it — the message
// stayed queued for good and its Run was never told. The fence's
// `lease_lost` is "not now" (`HeadOutcome.NotNow`): the core keeps the head
// and offers it again, and it runs at the new epoch.

import { expect, it } from "vitest";
import { Cluster, type PendingWrite } from "./cluster-store.js";
import { advance, leaseMs, none, open, useSimulatedClock } from "./two-processes.js";

useSimulatedClock();

it("a queue head fenced at the epoch it was sent with, its lease taken again here at the next one, is kept and runs", async () => {
  const cluster = new Cluster(leaseMs, false);
  const p1 = await open(cluster, "p1");
  // An execution suspended on its approval; X queued behind it.
  const suspended = p1.agent.conversation("c").start("refund order 1");
  await advance(cluster, 400, none);
  const suspendedId = await suspended.executionId;
  const x = p1.agent.conversation("c").start("X", { onBusy: "enqueue" });
  await advance(cluster, 100, none);
  const xId = await x.executionId;
  const epoch = cluster.leases.get("c")!.epoch;
  // The decision ends the suspended execution; X's preparation, sent at
  // `epoch`, is slow.
  const preparesX = (write: PendingWrite): boolean => write.operation.type === "prepareExecution" && write.operation.executionId === xId;
  const approvalId = (cluster.execution(suspendedId)?.approvalRequest as { approvalId: string }).approvalId;
  const resumed = p1.agent.conversation("c").resume(suspendedId, { approvalId, approved: true }).result;
  await advance(cluster, 100, preparesX);
  await expect(resumed).resolves.toMatchObject({ outcome: "completed" });
  const slow = cluster.pending.find(preparesX);
  expect(slow).toBeDefined();
  // p1 stops renewing past its lease, then takes it again at the next epoch.
  p1.store.stalledUntil = Date.now() + leaseMs * 2;
  await advance(cluster, leaseMs * 3, preparesX);
  expect(cluster.leases.get("c")).toMatchObject({ owner: "p1", epoch: epoch + 1 });
  // X's preparation is fenced at `epoch` (lease_lost): nothing was written.
  slow!.settle("commit");
  await advance(cluster, leaseMs * 3, none);
  expect(cluster.connection.prepare("SELECT execution_id FROM queued_messages").all()).toEqual([]);
  expect(cluster.unfinished()).toEqual([]);
  await expect(x.result).resolves.toMatchObject({ executionId: xId, outcome: "completed", output: "answer to X" });
  await p1.environment.close();
});
