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
import { Cluster } from "./cluster-store.js";
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
