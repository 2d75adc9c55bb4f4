// A keyed start at a process that does not hold the conversation, whose
// key's message is queued at the holder (docs/decisions/0063, found 18):
// the start follows that message to its end. It was told INVALID_INPUT
// ("no execution … in this store") at once — the message had no row yet —
// and the message then ran and completed. Two real environments on the
// simulated cluster store (no approval inbox), on a fake clock.

import { expect, it, vi } from "vitest";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { Cluster } from "./cluster-store.js";
import { leaseMs, openById, useSimulatedClock } from "./two-processes.js";

useSimulatedClock();

it("a keyed start elsewhere follows the key's message queued at the holder to its end", async () => {
  const cluster = new Cluster(leaseMs, true);
  let answer!: () => void;
  const gate = new Promise<void>((resolve) => {
    answer = resolve;
  });
  const model = scriptedModel(async ({ messages }) => {
    const last = messages.filter((message) => message.role === "user").at(-1)?.content;
    if (last === "busy") await gate;
    return { text: `answer to ${String(last)}` };
  });
  const p1 = await openById(cluster, "p1", model);
  const p2 = await openById(cluster, "p2", model);
  expect(cluster.leases.get("c")).toMatchObject({ owner: "p1" });
  const busy = p1.agent.start("busy");
  await busy.executionId;
  const queued = p1.agent.start("again", { onBusy: "enqueue", idempotencyKey: "k" });
  const queuedId = await queued.executionId;
  await vi.advanceTimersByTimeAsync(100);

  const follower = p2.agent.start("again", { onBusy: "enqueue", idempotencyKey: "k" });
  follower.result.catch(() => undefined);
  await vi.advanceTimersByTimeAsync(100);
  answer();
  await vi.advanceTimersByTimeAsync(leaseMs);
  await expect(busy.result).resolves.toMatchObject({ outcome: "completed" });
  await expect(queued.result).resolves.toMatchObject({ outcome: "completed", output: "answer to again" });
  await expect(follower.result).resolves.toMatchObject({ executionId: queuedId, outcome: "completed", output: "answer to again" });
  await p2.environment.close();
  await p1.environment.close();
});
