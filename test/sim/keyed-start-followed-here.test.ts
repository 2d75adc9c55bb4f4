// A second start of an idempotency key while the first one's preparation is
// still in flight here, on a store with a start inbox (PostgreSQL's; the
// simulated cluster store's, decision 0031): the second follows the
// execution here, as `env.wait` does, and settles with its outcome. Before,
// it followed it as a filer follows a start filed elsewhere — its first
// read found neither the row (not written yet) nor a filing, and the Run
// was refused INVALID_INPUT "neither in the store nor filed (purged?)"
// (the whole-host simulation's seed 2032).

import { expect, it, vi } from "vitest";
import { Cluster } from "./cluster-store.js";
import { advance, leaseMs, none, open, useSimulatedClock } from "./two-processes.js";

useSimulatedClock();

it("a second start of a key whose first is being queued here settles with that execution's outcome", async () => {
  const cluster = new Cluster(leaseMs, false);
  cluster.startInbox = true;
  const p1 = await open(cluster, "p1");
  // The conversation is busy: a refund waits for its approval.
  const busy = p1.agent.conversation("c").start("refund order 1");
  await advance(cluster, 200, none);
  const first = p1.agent.conversation("c").start("hello", { idempotencyKey: "k", onBusy: "interrupt" });
  await vi.advanceTimersByTimeAsync(0);
  const queued = cluster.pending.find((write) => write.operation.type === "enqueueMessage");
  expect(queued, "the first start's message is being queued").toBeDefined();
  const second = p1.agent.conversation("c").start("hello", { idempotencyKey: "k", onBusy: "interrupt" });
  // A filer's poll would have read the execution by now: nothing is written yet.
  await advance(cluster, 200, (write) => write === queued);
  await advance(cluster, 1_000, none);
  await expect(busy.result).rejects.toMatchObject({ code: "CANCELLED" });
  const done = await first.result;
  expect(done).toMatchObject({ outcome: "completed", output: "answer to hello" });
  await expect(second.result).resolves.toMatchObject({ outcome: "completed", executionId: done.executionId });
  await p1.environment.close();
});
