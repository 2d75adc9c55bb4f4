// `env.wait` at a process that does not hold the conversation, on an
// execution its holder is running (docs/decisions/0062, "By id"): the core
// places the wait (`byIdVerdict`, source `Observe`) at the owner, and it is
// followed there until it ends — on a leasing store that keeps no approval
// inbox too (the simulated cluster store): a wait is not filed, so the
// missing inbox must not refuse it. Two real environments on the
// simulated cluster store, on a fake clock.

import { expect, it, vi } from "vitest";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { Cluster } from "./cluster-store.js";
import { leaseMs, openById, useSimulatedClock } from "./two-processes.js";

useSimulatedClock();

it("a wait at a process that does not hold the conversation follows the running execution to its end", async () => {
  const cluster = new Cluster(leaseMs, true);
  let answer!: () => void;
  const gate = new Promise<void>((resolve) => {
    answer = resolve;
  });
  const model = scriptedModel(async () => {
    await gate;
    return { text: "hello" };
  });
  const p1 = await openById(cluster, "p1", model);
  const p2 = await openById(cluster, "p2", model);
  expect(cluster.leases.get("c")).toMatchObject({ owner: "p1" });
  const run = p1.agent.start("hi");
  const executionId = await run.executionId;
  await vi.advanceTimersByTimeAsync(100);
  expect(cluster.execution(executionId)?.status).toBe("active");

  const waited = p2.environment.wait(executionId).result;
  waited.catch(() => undefined);
  await vi.advanceTimersByTimeAsync(100);
  answer();
  await vi.advanceTimersByTimeAsync(leaseMs);
  await expect(run.result).resolves.toMatchObject({ outcome: "completed", output: "hello" });
  await expect(waited).resolves.toMatchObject({ executionId, outcome: "completed", output: "hello" });
  await p2.environment.close();
  await p1.environment.close();
});
