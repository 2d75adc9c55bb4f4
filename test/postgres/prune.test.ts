// Pruning on PostgreSQL beyond the shared suite (test/store-conformance/
// prune-suite.ts): a prune racing a transaction that reopens a terminal
// execution (as a retry does) neither waits for it nor deletes the row,
// and two processes' pruners share one store; `env.prune()` through the
// public API on a postgres:// store.

import { describe, expect, it } from "vitest";
import { Phronomy } from "../../host/index.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { pruneBatchExecutionsMax } from "../../host/store/prune.js";
import { prepare, providerBarrier, terminalCommit } from "../store/fixtures.js";
import { agentRunModel, lookupTool, recordingLogger } from "../runtime/helpers.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "./database.js";

async function openStore(schema: string): Promise<PostgresStore> {
  const store = await PostgresStore.open(postgresUrl, { schema });
  atEnd(() => store.close());
  return store;
}

async function finished(store: PostgresStore, executionId: string, at: number): Promise<void> {
  await store.run(prepare(executionId, "support", { at: at - 2 }));
  await store.run(providerBarrier(executionId, 1, { at: at - 1 }));
  await store.run(terminalCommit(executionId, 2, { at }));
}

describe("pruning on PostgreSQL", () => {
  it("skips a terminal row another transaction is reopening, without waiting for it, and leaves it reopened", async () => {
    const schema = freshSchema();
    const store = await openStore(schema);
    await store.ensureAgent("support", 1);
    await finished(store, "reopened", 100);
    await finished(store, "old", 101);
    await withClient(async (client) => {
      await client.query(`SET search_path = ${schema}`);
      await client.query("BEGIN");
      // What a retry does to a terminal row: active again, a new revision.
      await client.query("UPDATE executions SET status = 'active', phase = 'calling_llm', revision = revision + 1, updated_at = 500 WHERE execution_id = 'reopened'");
      const counts = await store.pruneExecutions({ type: "pruneExecutions", finishedBefore: 1_000, executionsMax: pruneBatchExecutionsMax });
      expect(counts.executions).toBe(1);
      await client.query("COMMIT");
    });
    expect(await store.getExecution("old")).toBeUndefined();
    expect(await store.getExecution("reopened")).toMatchObject({ status: "active", updatedAt: 500 });
    expect((await store.listSteps("reopened")).length).toBeGreaterThan(0);
    // Reopened, it is no longer a candidate at all.
    expect(await store.pruneExecutions({ type: "pruneExecutions", finishedBefore: 1_000, executionsMax: pruneBatchExecutionsMax })).toMatchObject({ executions: 0 });
  });

  it("two stores pruning one schema at once delete each execution once", async () => {
    const schema = freshSchema();
    const first = await openStore(schema);
    const second = await openStore(schema);
    await first.ensureAgent("support", 1);
    for (let index = 0; index < 60; index += 1) await finished(first, `e${index}`, 100 + index);
    const request = { type: "pruneExecutions" as const, finishedBefore: 1_000, executionsMax: 10 };
    let deleted = 0;
    for (;;) {
      const [a, b] = await Promise.all([first.pruneExecutions(request), second.pruneExecutions(request)]);
      deleted += a.executions + b.executions;
      if (a.executions + b.executions === 0) break;
    }
    expect(deleted).toBe(60);
    expect(await first.listExecutions()).toEqual([]);
  });

  it("env.prune() on a postgres:// store removes finished executions and reports them", async () => {
    const env = await Phronomy.open({ store: `${postgresUrl}?schema=${freshSchema()}`, logger: recordingLogger(), retention: { finishedMs: "forever" } });
    atEnd(() => env.close());
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const { executionId } = await agent.start("Where is order 42?").result;
    const steps = (await env.timeline(executionId)).length;
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await env.prune({ olderThanMs: 0 })).toEqual({ executions: 1, steps, journal: 0, approvals: 0 });
    expect(await env.execution(executionId)).toBeUndefined();
    // The conversation's memory stays: the next start reads it.
    expect(await env.store.readJournal("support", 10)).toHaveLength(2);
    await expect(agent.start("And order 43?").result).resolves.toMatchObject({ outcome: "completed" });
  });
});
