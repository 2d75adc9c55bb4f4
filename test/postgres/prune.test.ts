// Pruning on PostgreSQL beyond the shared suite (test/store-conformance/
// prune-suite.ts): a prune racing a transaction that reopens a terminal
// execution (as a retry does) neither waits for it nor deletes the row,
// and two processes' pruners share one store; `env.prune()` through the
// public API on a postgres:// store; filed starts their owner refused (no
// execution goes with them) are pruned on their own once old enough
// (docs/decisions/0047).

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
      await client.query(
        "UPDATE executions SET status = 'active', phase = 'calling_llm', revision = revision + 1, updated_at = 500 WHERE execution_id = 'reopened'",
      );
      const counts = await store.pruneExecutions({ type: "pruneExecutions", finishedBefore: 1_000, executionsMax: pruneBatchExecutionsMax });
      expect(counts.executions).toBe(1);
      await client.query("COMMIT");
    });
    expect(await store.getExecution("old")).toBeUndefined();
    expect(await store.getExecution("reopened")).toMatchObject({ status: "active", updatedAt: 500 });
    expect((await store.listSteps("reopened")).length).toBeGreaterThan(0);
    // Reopened, it is no longer a candidate at all.
    expect(await store.pruneExecutions({ type: "pruneExecutions", finishedBefore: 1_000, executionsMax: pruneBatchExecutionsMax })).toMatchObject({
      executions: 0,
    });
  });

  it("two stores pruning one schema at once delete each execution once", async () => {
    const schema = freshSchema();
    const first = await openStore(schema);
    await first.ensureAgent("support", 1);
    for (let index = 0; index < 60; index += 1) await finished(first, `e${index}`, 100 + index);
    // Opened once the rows are written: a second store takes partitions
    // over as it opens, and `first`'s fenced writes would be refused.
    const second = await openStore(schema);
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

  it("filed starts refused before finishedBefore are pruned on their own, a batch at most per request, by agent or all but the excepted; unsettled and recent ones stay, and the id may be filed again", async () => {
    const schema = freshSchema();
    const store = await openStore(schema);
    const start = { input: "hello", options: {} };
    const file = (executionId: string, agentId: string) => store.fileStart({ decisionId: `d-${executionId}`, executionId, agentId, start, filedAt: 1 });
    for (const [executionId, agentId] of [
      ["old-1", "c"],
      ["old-2", "c"],
      ["other", "d"],
      ["recent", "c"],
      ["waiting", "c"],
    ] as const)
      await file(executionId, agentId);
    const refusal = JSON.stringify({ code: "CANCELLED", message: "cancelled while filed" });
    for (const [executionId, at] of [
      ["old-1", 100],
      ["old-2", 200],
      ["other", 150],
      ["recent", 5_000],
    ] as const) {
      expect(await store.cancelFiledStart(executionId, refusal, at)).toMatchObject({ state: "cancelled" });
    }
    const request = { type: "pruneExecutions" as const, finishedBefore: 1_000, executionsMax: 1 };
    expect(await store.pruneExecutions({ ...request, agentId: "c" })).toEqual({ executions: 0, steps: 0, journal: 0, approvals: 1 });
    expect(await inboxIds(schema)).toEqual(["old-2", "other", "recent", "waiting"]);
    expect(await store.pruneExecutions({ ...request, agentId: "c" })).toMatchObject({ approvals: 1 });
    expect(await store.pruneExecutions({ ...request, agentId: "c" })).toMatchObject({ approvals: 0 });
    expect(await store.pruneExecutions({ ...request, exceptAgentIds: ["d"] })).toMatchObject({ approvals: 0 });
    expect(await store.pruneExecutions(request)).toMatchObject({ approvals: 1 });
    expect(await inboxIds(schema)).toEqual(["recent", "waiting"]);
    // The id of a pruned refused start may be filed again.
    expect(await file("old-1", "c")).toEqual({ decisionId: "d-old-1", filedNow: true });
  });

  it("env.prune() removes refused filed starts past a batch (the drain asks again while a batch of inbox rows went)", async () => {
    const schema = freshSchema();
    const env = await Phronomy.open({ store: `${postgresUrl}?schema=${schema}`, logger: recordingLogger(), retention: { finishedMs: "forever" } });
    atEnd(() => env.close());
    const count = (env.store as PostgresStore).pruneBatchExecutions + 20;
    await withClient((client) =>
      client.query(
        `
      INSERT INTO ${schema}.approval_inbox (decision_id, execution_id, agent_id, approval_id, approved, execution_revision, filed_by, filed_at, state, kind, start, error, settled_at)
      SELECT 'd-' || n, 'e-' || n, 'c-' || n, 'start:d-' || n, false, 0, 'elsewhere', 1, 'refused', 'start', '{"input":"x","options":{}}', '{"code":"AGENT_BUSY","message":"busy"}', 10
      FROM generate_series(1, $1) AS n
    `,
        [count],
      ),
    );
    expect(await env.prune({ olderThanMs: 0 })).toEqual({ executions: 0, steps: 0, journal: 0, approvals: count });
    expect(await inboxIds(schema)).toEqual([]);
  });
});

async function inboxIds(schema: string): Promise<string[]> {
  const { rows } = await withClient((client) =>
    client.query<{ execution_id: string }>(`SELECT execution_id FROM ${schema}.approval_inbox ORDER BY execution_id`),
  );
  return rows.map((row) => row.execution_id);
}
