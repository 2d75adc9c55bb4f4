// A start that comes the moment the store gives a conversation back to a
// process whose core still records it ready (docs/decisions/0062, "The
// core's phase is the one gate"): two real environments on the simulated
// cluster store, on a fake clock. p2 holds conversation "c" and stalls past
// its lease; p1 takes "c" over, leaves an execution suspended there and
// dies; p2's next tick finds its lease lost and takes "c" back at a later
// epoch, in one turn. A start made at p2 in that turn is judged by a core
// that was told of the takeover first: it waits for the recovery (no store
// hold refuses it AGENT_BUSY "recovering", and it never runs ahead of the
// recovered execution), then goes behind that execution and runs once.

import { expect, it, vi } from "vitest";
import { ConversationPhase } from "../../assembly/abi.js";
import { z } from "zod";
import { scriptedModel, type ScriptedTurn } from "../../host/agent/scripted-model.js";
import { Phronomy, tool, type Environment } from "../../host/index.js";
import type { Run } from "../../host/index.js";
import { Cluster } from "./cluster-store.js";
import { leaseMs, useSimulatedClock } from "./two-processes.js";

useSimulatedClock();

/** A refund (needs approval) for "refund order 1", text otherwise. */
function refundOnAsk() {
  return scriptedModel(({ messages }): ScriptedTurn => {
    const last = messages.filter((message) => message.role === "user").at(-1)?.content;
    const afterTool = messages.at(-1)?.role === "tool";
    return last === "refund order 1" && !afterTool ? { toolCalls: [{ toolName: "refund", input: { orderId: "1" } }] } : { text: `answer to ${String(last)}` };
  });
}

/** A process of the cluster with agent "c" defined by its id (it keeps
 * the lease while defined, or asks for it until it can take it). */
async function openWithC(cluster: Cluster, owner: string) {
  const store = cluster.storeFor(owner);
  const environment = await Phronomy.open({ store, logger: { warn: () => undefined } });
  const refund = tool({ description: "Refunds an order", inputSchema: z.object({ orderId: z.string() }), needsApproval: true, execute: () => "refunded" });
  const agent = environment.agent({ id: "c", instructions: "You help.", model: refundOnAsk(), tools: { refund } });
  await environment.recovery("c");
  await vi.advanceTimersByTimeAsync(0);
  return { store, environment, agent };
}

function phaseOf(environment: Environment): number {
  return environment.core.conversation(environment.conversations.slotOf("c")!).phase;
}

it("a start made as the store gives the conversation back is told to wait by the core, then runs once, after the recovered execution", async () => {
  const cluster = new Cluster(leaseMs, true);
  const p2 = await openWithC(cluster, "p2");
  const p1 = await openWithC(cluster, "p1");
  expect(cluster.leases.get("c")).toMatchObject({ owner: "p2", epoch: 1 });

  // p2 stalls past its lease (its core still records "c" ready); p1 takes
  // "c" over and leaves an execution suspended there.
  p2.store.stalledUntil = Number.POSITIVE_INFINITY;
  await vi.advanceTimersByTimeAsync(leaseMs * 2);
  expect(cluster.leases.get("c")).toMatchObject({ owner: "p1", epoch: 2 });
  const suspended = p1.agent.start("refund order 1");
  suspended.result.catch(() => undefined);
  const suspendedId = await suspended.executionId;
  await vi.advanceTimersByTimeAsync(100);
  expect(cluster.execution(suspendedId)?.status).toBe("suspended");

  // p1 dies; its lease runs out. p2's next tick loses and takes back "c"
  // in one turn, and a start is made at p2 the moment it is taken.
  p1.store.kill();
  await vi.advanceTimersByTimeAsync(leaseMs * 2);
  let during: Run | undefined;
  cluster.onTakeover = (agentId, _former, taker) => {
    if (agentId === "c" && taker === "p2") during = p2.agent.start("during", { onBusy: "enqueue" });
  };
  expect(phaseOf(p2.environment), "ready, stale").toBe(ConversationPhase.Ready);
  p2.store.stalledUntil = 0;
  for (let waited = 0; during === undefined && waited < leaseMs; waited += 50) await vi.advanceTimersByTimeAsync(50);
  expect(during, "p2 took c back").toBeDefined();
  const refusal = during!.result.then(
    () => undefined,
    (error: unknown) => error,
  );
  await vi.advanceTimersByTimeAsync(400);
  expect(cluster.leases.get("c")).toMatchObject({ owner: "p2", epoch: 3 });
  // Behind the recovered execution (suspended, it holds the admission):
  // queued, not refused, not admitted ahead of it.
  const duringId = await during!.executionId;
  expect(cluster.execution(duringId)).toBeUndefined();
  expect(cluster.execution(suspendedId)?.status).toBe("suspended");

  const approvalId = (cluster.execution(suspendedId)?.approvalRequest as { approvalId: string }).approvalId;
  const resumed = p2.agent.resume(suspendedId, { approvalId, approved: true }).result;
  await vi.advanceTimersByTimeAsync(1_000);
  await expect(resumed).resolves.toMatchObject({ outcome: "completed" });
  expect(await refusal).toBeUndefined();
  await expect(during!.result).resolves.toMatchObject({ executionId: duringId, outcome: "completed", output: "answer to during" });
  expect(cluster.unfinished()).toEqual([]);
  // One admission at a time: the recovered execution ended before the start was prepared.
  expect(cluster.execution(suspendedId)!.updatedAt).toBeLessThanOrEqual(cluster.execution(duringId)!.createdAt);
  await p2.environment.close();
});
