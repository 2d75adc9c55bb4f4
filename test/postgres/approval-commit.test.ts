// The approval commit as one grouped call of `approval_commit` and the steps
// numbered from the execution row (docs/decisions/0048): the function's own
// refusals — a stale revision, a fenced epoch, a second decision, a request
// changed without a new revision — write nothing and name why; a row from
// before migration 14 (or after a transaction operation) numbers its steps
// after max(seq).

import { describe, expect, it } from "vitest";
import { ApprovalMismatchError, ExecutionRehydrationRequiredError } from "../../host/errors.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { approvalCommit, prepare, providerBarrier, suspendForApproval, terminalCommit, toolBarrier } from "../store/fixtures.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "./database.js";

async function open(schema: string, options: Parameters<typeof PostgresStore.open>[1] = {}): Promise<PostgresStore> {
  const store = await PostgresStore.open(`${postgresUrl}?schema=${schema}`, options);
  atEnd(() => store.close());
  return store;
}

/** e1 of `support` suspended for approval at revision 3. */
async function suspended(store: PostgresStore): Promise<void> {
  await store.ensureAgent("support", 1);
  await store.run(prepare("e1"));
  await store.run(providerBarrier("e1", 1));
  await store.run(suspendForApproval("e1", 2));
}

async function rows(schema: string, sql: string): Promise<unknown[]> {
  return withClient(async (client) => (await client.query(sql.replaceAll("$schema", schema))).rows);
}

async function stepKinds(store: PostgresStore): Promise<{ seq: number; kind: string }[]> {
  return (await store.listSteps("e1")).map(({ seq, kind }) => ({ seq, kind }));
}

describe("approval_commit (PostgreSQL, migration 14)", () => {
  it("is one statement of a group, computed from the row getExecution read; the next barrier reads nothing first", async () => {
    const schema = freshSchema();
    const store = await open(schema);
    await suspended(store);
    expect((await store.getExecution("e1"))?.status).toBe("suspended");
    const before = { ...store.groups.figures };
    expect(await store.run(approvalCommit("e1", 3))).toEqual({ revision: 4 });
    expect(store.groups.figures.statements - before.statements).toBe(1);
    expect(await store.run(toolBarrier("e1", 4, { steps: [] }))).toEqual({ revision: 5 });
    const steps = await stepKinds(store);
    expect(steps.slice(-3).map((step) => step.kind)).toEqual(["approval_requested", "approval_decided", "tool_barrier"]);
    expect(steps.map((step) => step.seq)).toEqual(steps.map((_, index) => index + 1));
  });

  it("a stale revision: the row remembered at revision 3 was approved by another process; refused, nothing written", async () => {
    const schema = freshSchema();
    const store = await open(schema);
    await suspended(store);
    await store.getExecution("e1");
    const other = await open(schema);
    expect(await other.run(approvalCommit("e1", 3, { reason: "the other process" }))).toEqual({ revision: 4 });
    const steps = await store.listSteps("e1");
    const refused = store.run(approvalCommit("e1", 3));
    await expect(refused).rejects.toBeInstanceOf(ExecutionRehydrationRequiredError);
    await expect(refused).rejects.toThrow(
      /execution e1 moved on: approvalCommit expected revision 3 with status suspended, the store holds revision 4 with status active/,
    );
    expect(await store.listSteps("e1")).toEqual(steps);
    expect((await store.getExecution("e1"))?.approvalRequest).toMatchObject({ decision: { reason: "the other process" } });
  });

  it("a second decision racing the first on the same revision: exactly one lands, the other is refused", async () => {
    const schema = freshSchema();
    const store = await open(schema);
    await suspended(store);
    const other = await open(schema);
    await Promise.all([store.getExecution("e1"), other.getExecution("e1")]);
    const settled = await Promise.allSettled([
      store.run(approvalCommit("e1", 3, { approved: true })),
      other.run(approvalCommit("e1", 3, { approved: false, reason: "declined" })),
    ]);
    expect(settled.filter((outcome) => outcome.status === "fulfilled")).toEqual([{ status: "fulfilled", value: { revision: 4 } }]);
    const loser = settled.find((outcome) => outcome.status === "rejected") as PromiseRejectedResult;
    expect(loser.reason).toBeInstanceOf(ExecutionRehydrationRequiredError);
    expect(await rows(schema, "SELECT count(*)::int AS count FROM $schema.steps WHERE kind = 'approval_decided'")).toEqual([{ count: 1 }]);
  });

  it("a decision written without a new revision after the row was remembered: the function's own check refuses (already_decided)", async () => {
    const schema = freshSchema();
    const store = await open(schema);
    await suspended(store);
    await store.getExecution("e1");
    await rows(
      schema,
      `UPDATE $schema.executions SET approval_request = (approval_request::jsonb || '{"decision":{"approved":false,"reason":null,"decidedAt":1}}'::jsonb)::text WHERE execution_id = 'e1'`,
    );
    const steps = await store.listSteps("e1");
    const refused = store.run(approvalCommit("e1", 3));
    await expect(refused).rejects.toBeInstanceOf(ApprovalMismatchError);
    await expect(refused).rejects.toMatchObject({ details: { mismatch: "already_decided" } });
    expect(await store.listSteps("e1")).toEqual(steps);
    expect((await store.getExecution("e1"))?.revision).toBe(3);
  });

  it("a fenced epoch: the partition was reclaimed at a higher epoch; refused as lease_lost, nothing written", async () => {
    const schema = freshSchema();
    const store = await open(schema, { leaseMs: 60_000, instanceId: "first", partitions: 4 });
    await store.ensureAgent("support", 1);
    await store.acquireLease("support");
    await store.run(prepare("e1"));
    await store.run(providerBarrier("e1", 1));
    await store.run(suspendForApproval("e1", 2));
    await store.getExecution("e1");
    // An instant reclaim by the same instance id (a restarted process): epoch 2.
    await withClient((client) => client.query(`SET search_path = ${schema}; SELECT * FROM take_partitions('first', NULL, 60000, 60000)`));
    const steps = await store.listSteps("e1");
    const refused = store.run(approvalCommit("e1", 3));
    await expect(refused).rejects.toBeInstanceOf(ExecutionRehydrationRequiredError);
    await expect(refused).rejects.toMatchObject({ details: { reason: "lease_lost", owner: "first", epoch: 1 } });
    expect(await store.listSteps("e1")).toEqual(steps);
    expect((await store.getExecution("e1"))?.status).toBe("suspended");
  });

  it("a mismatch found in the row remembered is refused before anything is sent", async () => {
    const schema = freshSchema();
    const store = await open(schema);
    await suspended(store);
    await store.getExecution("e1");
    const before = { ...store.groups.figures };
    await expect(store.run(approvalCommit("e1", 3, { argumentsHash: "hash-2" }))).rejects.toMatchObject({ details: { mismatch: "arguments_hash" } });
    expect(store.groups.figures.statements).toBe(before.statements);
  });
});

describe("steps numbered from the execution row (PostgreSQL, migration 14)", () => {
  it("a row without last_seq (written before version 14) numbers after max(seq), and keeps counting from there", async () => {
    const schema = freshSchema();
    const store = await open(schema);
    await store.ensureAgent("support", 1);
    await store.run(prepare("e1"));
    await store.run(providerBarrier("e1", 1, { steps: [{ kind: "model_response", at: 2, payload: { text: "a" } }] }));
    expect(await rows(schema, "SELECT last_seq FROM $schema.executions")).toEqual([{ last_seq: "3" }]);
    await rows(schema, "UPDATE $schema.executions SET last_seq = NULL");
    await store.run(toolBarrier("e1", 2));
    await store.run(terminalCommit("e1", 3));
    const seqs = (await store.listSteps("e1")).map((step) => step.seq);
    expect(seqs).toEqual(seqs.map((_, index) => index + 1));
    expect(await rows(schema, "SELECT last_seq FROM $schema.executions")).toEqual([{ last_seq: String(seqs.length) }]);
  });

  it("a retry's reopen (a transaction of its own) leaves last_seq unknown; the next barrier numbers after max(seq)", async () => {
    const schema = freshSchema();
    const store = await open(schema);
    await store.ensureAgent("support", 1);
    await store.run(prepare("e1"));
    await store.run(terminalCommit("e1", 1, { outcome: "failed", output: null }));
    await store.run({
      type: "reopenExecution",
      executionId: "e1",
      expectedRevision: 2,
      status: "active",
      phase: "calling_llm",
      metadata: { config: {}, attempt: 2, runningSince: 90 },
      step: { attempt: 2, resumeFromSeq: 1 },
      at: 90,
    });
    expect(await rows(schema, "SELECT last_seq FROM $schema.executions")).toEqual([{ last_seq: null }]);
    await store.run(providerBarrier("e1", 3));
    const steps = await stepKinds(store);
    expect(steps.slice(-3).map((step) => step.kind)).toEqual(["terminal", "retried", "provider_barrier"]);
    expect(steps.map((step) => step.seq)).toEqual(steps.map((_, index) => index + 1));
  });
});
