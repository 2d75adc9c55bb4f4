// A child whose start the store failed while the read that would tell its
// parent failed too (the connection lost right as the parent's child wait
// committed; found by the whole-host simulation, seed 950308256, decision
// 0086): the start is made again once the store answers, so the child runs
// and the parent resumes with its outcome, once — before, the parent waited
// for good. Real environments on the simulated cluster store, on a fake clock.

import { expect, it, vi } from "vitest";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { agentTool, Phronomy } from "../../host/index.js";
import { childStartRetryMs } from "../../host/runtime/child-executions.js";
import { Cluster, type PendingWrite } from "./cluster-store.js";
import { advance, leaseMs, none, useSimulatedClock } from "./two-processes.js";

useSimulatedClock();

it("a child start failed with its parent not told is made again: the child runs, the parent resumes once with its outcome", async () => {
  const cluster = new Cluster(leaseMs);
  const store = cluster.storeFor("p1");
  const environment = await Phronomy.open({ store, logger: { warn: () => undefined } });
  const helper = environment.agent({ name: "helper", model: scriptedModel(() => ({ text: "found it" })) });
  const results: unknown[] = [];
  const support = environment.agent({
    name: "support",
    model: scriptedModel(({ messages }) => {
      const last = messages.at(-1);
      if (last?.role !== "tool") return { toolCalls: [{ toolName: "ask", input: { input: "look it up" } }] };
      results.push(last.results[0]?.output);
      return { text: "done" };
    }),
    tools: { ask: agentTool(helper, { description: "Asks the helper" }) },
  });
  const run = support.conversation("c").start("help");
  run.result.catch(() => undefined);
  const isSuspension = (write: { operation: { type: string } }): boolean => write.operation.type === "terminalCommit";
  await advance(cluster, 100, isSuspension);
  const parentId = await run.executionId;
  // The parent's suspension lands just as the connection is lost.
  store.disconnectedUntil = Date.now() + childStartRetryMs * 2;
  cluster.pending.find(isSuspension)!.settle("commit");
  await vi.advanceTimersByTimeAsync(0);
  expect(cluster.execution(parentId)).toMatchObject({ status: "suspended" });
  expect(cluster.unfinished().filter((row) => row.executionId !== parentId)).toEqual([]);

  await advance(cluster, childStartRetryMs * 4, none);
  expect(cluster.execution(parentId)).toMatchObject({ status: "terminal", outcome: "completed" });
  await expect(run.result).resolves.toMatchObject({ outcome: "completed", output: "done" });
  expect(results).toEqual(["found it"]);
  const decided = cluster.connection
    .prepare("SELECT count(*) AS n FROM steps JOIN executions ON executions.rowid = steps.execution_rowid WHERE execution_id = ? AND kind = 'approval_decided'")
    .get(parentId);
  expect(decided?.["n"]).toBe(1);
  expect(cluster.unfinished()).toEqual([]);
  await environment.close();
});

it("a child start made again later is dropped when its parent no longer waits on that wait then (the core's StartAgain / Drop, decision 0099)", async () => {
  const cluster = new Cluster(leaseMs);
  const store = cluster.storeFor("p1");
  const environment = await Phronomy.open({ store, logger: { warn: () => undefined } });
  const helper = environment.agent({ name: "helper", model: scriptedModel(() => ({ text: "found it" })) });
  const support = environment.agent({
    name: "support",
    model: scriptedModel(({ messages }) =>
      messages.at(-1)?.role === "tool" ? { text: "done" } : { toolCalls: [{ toolName: "ask", input: { input: "look it up" } }] },
    ),
    tools: { ask: agentTool(helper, { description: "Asks the helper" }) },
  });
  const run = support.conversation("c").start("help");
  run.result.catch(() => undefined);
  const isChildPreparation = (write: PendingWrite): boolean => write.operation.type === "prepareExecution" && write.operation.agentId !== "c";
  await advance(cluster, 100, isChildPreparation);
  const parentId = await run.executionId;
  expect(cluster.execution(parentId)).toMatchObject({ status: "suspended" });
  // The child's start fails in the store (nothing written): made again a second later.
  cluster.pending.find(isChildPreparation)!.settle("failed");
  await vi.advanceTimersByTimeAsync(0);
  // Before it comes due, the parent is cancelled: its row no longer waits.
  const cancelled = environment.cancel(parentId);
  cancelled.catch(() => undefined);
  await advance(cluster, 200, none);
  expect(cluster.execution(parentId)).toMatchObject({ status: "terminal" });

  await advance(cluster, childStartRetryMs * 4, none);
  const children = cluster.connection.prepare("SELECT count(*) AS n FROM executions WHERE execution_id <> ?").get(parentId);
  expect(children?.["n"]).toBe(0);
  expect(cluster.pending).toEqual([]);
  await environment.close();
}, 20_000);
