// Migration 27 (docs/decisions/0117): the status is a domain checked where
// it is written, and `finished_at` a plain column the writes keep — the
// terminal commit, the insert trigger, and a guard trigger on any other
// status change — equal to what migration 25's generated column was:
// `updated_at` while the row is terminal, NULL otherwise.

import { describe, expect, it } from "vitest";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { migrations, roomAndDocumentsInline, statusAndFinishedAt } from "../../host/store/postgres/schema.js";
import { undoReportingFirstAndStatusDomain } from "./fixtures/rewind.js";
import { createPrepareReportingFirst } from "../../host/store/postgres/functions.js";
import { approvalCommit, prepare, providerBarrier, suspendForApproval, terminalCommit, toolBarrier } from "../store/fixtures.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "./database.js";
import { indexInboxByAgent } from "../../host/store/postgres/inbox-by-agent.js";
import { roomForEveryBarrier } from "../../host/store/postgres/hot-barriers.js";

/** The row's status, `finished_at` and `updated_at`, as numbers (NULL as null). */
async function finish(schema: string, executionId: string): Promise<{ status: string; finished: number | null; updated: number }> {
  return withClient(async (client) => {
    const row = (
      await client.query<{ status: string; finished_at: string | null; updated_at: string }>(
        `SELECT status, finished_at, updated_at FROM "${schema}".executions WHERE execution_id = $1`,
        [executionId],
      )
    ).rows[0]!;
    return { status: row.status, finished: row.finished_at === null ? null : Number(row.finished_at), updated: Number(row.updated_at) };
  });
}

describe("finished_at written, the status a domain (PostgreSQL, migration 27)", () => {
  it("follows every write of the store: NULL while active or suspended, updated_at once terminal, NULL again when reopened", async () => {
    const schema = freshSchema();
    const store = await PostgresStore.open(postgresUrl, { schema });
    atEnd(() => store.close());
    await store.ensureAgent("support", 1);
    expect(await store.run(prepare("e-1", "support"))).toMatchObject({ outcome: "active" });
    expect(await finish(schema, "e-1")).toMatchObject({ status: "active", finished: null });
    await store.run(providerBarrier("e-1", 1));
    await store.run(toolBarrier("e-1", 2));
    expect(await finish(schema, "e-1")).toMatchObject({ status: "active", finished: null });
    // A terminal commit that suspends leaves it NULL; the approval commit too.
    await store.run(suspendForApproval("e-1", 3));
    expect(await finish(schema, "e-1")).toMatchObject({ status: "suspended", finished: null });
    await store.run(approvalCommit("e-1", 4));
    expect(await finish(schema, "e-1")).toMatchObject({ status: "active", finished: null });
    await store.run(terminalCommit("e-1", 5, { at: 90 }));
    expect(await finish(schema, "e-1")).toEqual({ status: "terminal", finished: 90, updated: 90 });
    // The reopen (a compare-and-set naming the status): the guard trigger clears it.
    await store.run({
      type: "reopenExecution",
      executionId: "e-1",
      expectedRevision: 6,
      status: "active",
      phase: "calling_llm",
      metadata: { config: {} },
      step: { attempt: 2 },
      at: 95,
    });
    expect(await finish(schema, "e-1")).toMatchObject({ status: "active", finished: null, updated: 95 });
    await store.run(terminalCommit("e-1", 7, { at: 99 }));
    expect(await finish(schema, "e-1")).toEqual({ status: "terminal", finished: 99, updated: 99 });
    expect(await store.pruneExecutions({ type: "pruneExecutions", finishedBefore: 99, executionsMax: 10 })).toMatchObject({ executions: 0 });
    expect(await store.pruneExecutions({ type: "pruneExecutions", finishedBefore: 100, executionsMax: 10 })).toMatchObject({ executions: 1 });
  });

  it("keeps the rule for writes that do not name it (an insert, a status change by hand) and refuses an unknown status", async () => {
    const schema = freshSchema();
    const store = await PostgresStore.open(postgresUrl, { schema });
    atEnd(() => store.close());
    await withClient(async (client) => {
      await client.query(`SET search_path = "${schema}"`);
      const insert = (id: string, status: string, at: number) =>
        client.query(
          `INSERT INTO executions (execution_id, agent_id, revision, status, phase, mode, input, metadata, outcome, output, error, usage, approval_request, created_at, updated_at)
           VALUES ($1, 'a', 1, $2, $4, 'invoke', '"x"', '{}', NULL, 'null', 'null', '{}', 'null', $3, $3)`,
          [id, status, at, status],
        );
      await insert("t-1", "terminal", 40);
      await insert("a-1", "active", 41);
      expect(await finish(schema, "t-1")).toEqual({ status: "terminal", finished: 40, updated: 40 });
      expect(await finish(schema, "a-1")).toEqual({ status: "active", finished: null, updated: 41 });
      await client.query("UPDATE executions SET status = 'terminal', updated_at = 50 WHERE execution_id = 'a-1'");
      expect(await finish(schema, "a-1")).toEqual({ status: "terminal", finished: 50, updated: 50 });
      // A status set to itself with a new time follows the time, as the generated column did.
      await client.query("UPDATE executions SET status = 'terminal', updated_at = 55 WHERE execution_id = 'a-1'");
      expect(await finish(schema, "a-1")).toEqual({ status: "terminal", finished: 55, updated: 55 });
      await client.query("UPDATE executions SET status = 'suspended', updated_at = 60 WHERE execution_id = 't-1'");
      expect(await finish(schema, "t-1")).toEqual({ status: "suspended", finished: null, updated: 60 });
      await expect(client.query("UPDATE executions SET status = 'finished' WHERE execution_id = 't-1'")).rejects.toMatchObject({ code: "23514" });
      await expect(insert("x-1", "done", 70)).rejects.toMatchObject({ code: "23514" });
      expect(await finish(schema, "t-1")).toMatchObject({ status: "suspended" });
    });
  });

  it("migrates a version 26 schema: finish times kept, the status CHECK now the domain's", async () => {
    const schema = freshSchema();
    const before = await PostgresStore.open(postgresUrl, { schema });
    await before.ensureAgent("support", 1);
    await before.run(prepare("done-1", "support"));
    await before.run(terminalCommit("done-1", 1, { at: 80 }));
    await before.run(prepare("open-1", "support"));
    await before.close();
    // Migrations 27 and 28 taken back: the generated column and the table
    // CHECK as migrations 25 and 1 made them, no reporting preparation (0118).
    await withClient(async (client) => {
      await client.query(`SET search_path = "${schema}"`);
      await client.query(`
        ${undoReportingFirstAndStatusDomain}
        DROP INDEX executions_finished; ALTER TABLE executions DROP COLUMN finished_at;
        ALTER TABLE executions ADD COLUMN finished_at bigint GENERATED ALWAYS AS (CASE WHEN status = 'terminal' THEN updated_at END) STORED;
        CREATE INDEX executions_finished ON executions (finished_at) WHERE finished_at IS NOT NULL;
        UPDATE store_version SET version = ${migrations.indexOf(statusAndFinishedAt)}`);
    });
    expect(migrations.slice(migrations.indexOf(statusAndFinishedAt) + 1)).toEqual([
      createPrepareReportingFirst,
      roomAndDocumentsInline,
      indexInboxByAgent,
      roomForEveryBarrier,
    ]);
    const after = await PostgresStore.open(postgresUrl, { schema });
    atEnd(() => after.close());
    expect(await finish(schema, "done-1")).toEqual({ status: "terminal", finished: 80, updated: 80 });
    expect(await finish(schema, "open-1")).toMatchObject({ status: "active", finished: null });
    const shape = await withClient(
      async (client) =>
        (
          await client.query<{ generated: string; type: string; checks: string }>(
            `SELECT (SELECT attgenerated FROM pg_attribute WHERE attrelid = '"${schema}".executions'::regclass AND attname = 'finished_at') AS generated,
                  (SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = '"${schema}".executions'::regclass AND attname = 'status') AS type,
                  (SELECT count(*) FROM pg_constraint WHERE conrelid = '"${schema}".executions'::regclass AND contype = 'c')::text AS checks`,
          )
        ).rows[0]!,
    );
    expect(shape).toMatchObject({ generated: "", checks: "0" });
    expect(shape.type).toMatch(/\.execution_status$/);
    await after.run(terminalCommit("open-1", 1, { at: 85 }));
    expect(await finish(schema, "open-1")).toEqual({ status: "terminal", finished: 85, updated: 85 });
  });
});
