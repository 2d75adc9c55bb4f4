// A child start refused because the child's conversation is held here for
// a recovery (found by the whole-host simulation, seed 728979172, decision
// 0099). The child's first start failed in the store (nothing written), so
// its conversation is held until a recovery reads its rows, and that start
// is made again a second later. Meanwhile a recovery of the parent
// reinstalls its child wait and starts the child again: refused
// (`AGENT_BUSY`, recovery_required), no child row yet. Before, that refusal
// was told to the parent as the child's failure — and the start made again,
// finding the parent's row still waiting (the tell's commit in flight), ran
// the child to completion: the parent went on with "failed" while its child
// completed. Now a conversation held for recovery is a refusal that says
// nothing of whether the child starts: made again later, and the parent
// resumes once, with the child's real end. Real environments on the
// simulated cluster store, on a fake clock.

import { expect, it, vi } from "vitest";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { agentTool, Phronomy } from "../../host/index.js";
import { childStartRetryMs } from "../../host/runtime/child-executions.js";
import { Cluster, type PendingWrite } from "./cluster-store.js";
import { advance, leaseMs, none, useSimulatedClock } from "./two-processes.js";

useSimulatedClock();

it("a child start refused while the child's conversation is held for recovery is made again, not told as failed: the parent resumes once with the child's end", async () => {
  const cluster = new Cluster(leaseMs);
  const store = cluster.storeFor("p1");
  const logged: string[] = [];
  const environment = await Phronomy.open({ store, logger: { warn: (line) => void logged.push(line), debug: (line) => void logged.push(line) } });
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
  // The child's preparation (its conversation is not "c") is held in flight.
  const isChildPreparation = (write: PendingWrite): boolean => write.operation.type === "prepareExecution" && write.operation.agentId !== "c";
  await advance(cluster, 100, isChildPreparation);
  const parentId = await run.executionId;
  expect(cluster.execution(parentId)).toMatchObject({ status: "suspended" });

  // The connection is lost: a cancel of the parent fails in the store, so
  // the parent's execution is held for recovery; then the child's
  // preparation fails with nothing written, so the child's conversation is
  // held for recovery too, and its start is made again a second later.
  store.disconnectedUntil = Date.now() + 60_000;
  await expect(environment.cancel(parentId)).rejects.toMatchObject({ code: "STORE" });
  cluster.pending.find(isChildPreparation)!.settle("failed");
  await vi.advanceTimersByTimeAsync(0);
  expect(cluster.execution(parentId)).toMatchObject({ status: "suspended" });

  // The store answers again; the parent is recovered first (its wait
  // reinstalled: the child started again, refused as its conversation is
  // still held); any answer to the parent is held in flight while the
  // start made again comes due (the old verdict told that refusal here).
  store.disconnectedUntil = 0;
  await environment.recovery("c");
  await vi.advanceTimersByTimeAsync(0);
  expect(logged.filter((line) => /agent ".*:call-0-0" requires recovery/.test(line))).toHaveLength(1);
  const isParentAnswer = (write: PendingWrite): boolean => write.operation.type === "approvalCommit";
  await advance(cluster, childStartRetryMs * 2, isParentAnswer);
  for (const write of cluster.pending.filter(isParentAnswer)) write.settle("commit");
  await advance(cluster, childStartRetryMs * 8, none);

  const child = cluster.connection.prepare("SELECT execution_id, status, outcome FROM executions WHERE execution_id <> ?").all(parentId);
  expect(child, logged.join("\n")).toEqual([{ execution_id: expect.any(String), status: "terminal", outcome: "completed" }]);
  expect(cluster.execution(parentId)).toMatchObject({ status: "terminal", outcome: "completed" });
  // (The Run itself was failed `EXECUTION_REHYDRATION_REQUIRED` when the
  // parent was held; its row is what went on.)
  await expect(run.result).rejects.toMatchObject({ code: "EXECUTION_REHYDRATION_REQUIRED" });
  expect(results).toEqual(["found it"]);
  const decided = cluster.connection
    .prepare("SELECT count(*) AS n FROM steps JOIN executions ON executions.rowid = steps.execution_rowid WHERE execution_id = ? AND kind = 'approval_decided'")
    .get(parentId);
  expect(decided?.["n"]).toBe(1);
  expect(cluster.unfinished()).toEqual([]);
  await environment.close();
});
