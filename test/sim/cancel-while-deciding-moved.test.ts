// A cancel by id that waits for a decision being committed on a suspended
// execution, while the conversation's lease moves to another process and
// the decision's write then fails (docs/decisions/0063, "Found and fixed"
// 20; seed 9300298). The suspension is given back here, but the lease-lost
// report had already handed the execution's callers on: the cancel, which
// joined them after it, was never settled — the execution ran and
// completed at the process that took the conversation over. Two real
// environments on the simulated cluster store, on a fake clock.

import { expect, it, vi } from "vitest";
import { Cluster, type PendingWrite } from "./cluster-store.js";
import { advance, leaseMs, none, open, useSimulatedClock } from "./two-processes.js";

useSimulatedClock();

const isApproval = (write: PendingWrite): boolean => write.operation.type === "approvalCommit";

it("settles a cancel that waited for a decision whose write failed after the lease moved away", async () => {
  const cluster = new Cluster(leaseMs);
  const first = await open(cluster, "p1");
  const second = await open(cluster, "p2");
  const run = first.agent.conversation("c").start("refund order 1");
  run.result.catch(() => undefined);
  await advance(cluster, 100, none);
  const executionId = await run.executionId;
  expect(cluster.execution(executionId)?.status).toBe("suspended");
  const approvalId = (cluster.execution(executionId)?.approvalRequest as { approvalId: string }).approvalId;

  // A denial at p1, its write held; the lease moves to p2 meanwhile.
  const denied = first.agent.conversation("c").resume(executionId, { approvalId, approved: false });
  denied.result.catch(() => undefined);
  await advance(cluster, 50, isApproval);
  expect(cluster.pending.some(isApproval)).toBe(true);
  expect(first.store.giveUpLease()).toBe("c");
  const taking = second.agent.conversation("c").start("hello from p2", { onBusy: "enqueue" });
  taking.result.catch(() => undefined);
  // Long enough for p1 to be told (its lease tick): the report hands the
  // suspended execution's callers on before the cancel joins them.
  await advance(cluster, leaseMs, isApproval);
  expect(cluster.leases.get("c")?.owner).toBe("p2");

  // The cancel waits for the decision under way; then its write fails.
  // Settled while p2 still holds the conversation: not only once p1
  // takes it back (its recovery then lets the stale suspension go).
  let settled: { outcome: string } | { code: string } | undefined;
  let holderWhenSettled: string | undefined;
  const told = (answer: { outcome: string } | { code: string }): void => {
    settled = answer;
    holderWhenSettled = cluster.leases.get("c")?.owner;
  };
  first.environment.cancel(executionId).then(
    (result) => told({ outcome: result.outcome }),
    (error: { code: string }) => told({ code: error.code }),
  );

  await advance(cluster, 50, isApproval);
  cluster.pending.find(isApproval)?.settle("failed");
  await advance(cluster, 50, none);
  await expect(denied.result).rejects.toMatchObject({ code: "STORE" });

  // p2 decides it and it completes there: the cancel settles.
  const approved = second.agent.conversation("c").resume(executionId, { approvalId, approved: true });
  await advance(cluster, leaseMs * 2, none);
  await expect(approved.result).resolves.toMatchObject({ outcome: "completed" });
  expect(cluster.execution(executionId)).toMatchObject({ status: "terminal", outcome: "completed" });
  // Told how it ended, or that its own cancel commit was fenced here (0010).
  expect([{ outcome: "completed" }, { code: "EXECUTION_REHYDRATION_REQUIRED" }]).toContainEqual(settled);
  expect(holderWhenSettled).toBe("p2");
  await vi.advanceTimersByTimeAsync(0);
  await Promise.all([first.environment.close(), second.environment.close()]);
});
