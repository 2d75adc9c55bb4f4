// A cancel filed from another process whose owner could not claim it at
// once (its connection lost as the notification came), for an execution
// that then ended and left its conversation idle (found by the whole-host
// simulation with the approval inbox, seed 777413; decision 0086): an idle
// conversation's owner claims only what wakes it, so the cancel stays
// filed — its filer is answered from the ended row instead of waiting for
// good. Real environments on the simulated cluster store, on a fake clock.

import { expect, it, vi } from "vitest";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { Cluster } from "./cluster-store.js";
import { advance, leaseMs, none, open, useSimulatedClock } from "./two-processes.js";

useSimulatedClock();

it("a cancel filed for an execution that ends before its owner claims it settles with the execution's outcome", async () => {
  const cluster = new Cluster(leaseMs);
  const model = scriptedModel(() => ({ text: "done" }));
  const p1 = await open(cluster, "p1", model);
  const p2 = await open(cluster, "p2", model);
  const run = p1.agent.conversation("c").start("hello");
  run.result.catch(() => undefined);
  const isEnd = (write: { operation: { type: string } }): boolean => write.operation.type === "terminalCommit";
  await advance(cluster, 100, isEnd);
  const executionId = await run.executionId;
  expect(cluster.pending.some(isEnd)).toBe(true);

  // The owner loses its connection; the cancel is filed from p2 meanwhile.
  p1.store.disconnectedUntil = Date.now() + 500;
  let cancelled: string | undefined;
  p2.environment.cancel(executionId, { reason: "changed my mind" }).then(
    (result) => (cancelled = result.outcome),
    (error: { code?: string }) => (cancelled = `error ${String(error.code)}`),
  );
  await vi.advanceTimersByTimeAsync(0);
  expect(cluster.connection.prepare("SELECT state FROM approval_inbox WHERE kind = 'cancel'").get()).toEqual({ state: "filed" });

  // The execution ends (its commit was in flight); the conversation goes idle.
  await advance(cluster, 1_000, none);
  await expect(run.result).resolves.toMatchObject({ outcome: "completed" });
  await advance(cluster, leaseMs * 2, none);
  expect(cancelled).toBe("completed");
  expect(cluster.execution(executionId)).toMatchObject({ status: "terminal", outcome: "completed" });
  await Promise.all([p1.environment.close(), p2.environment.close()]);
});
