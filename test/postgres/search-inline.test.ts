// Migration 29 (docs/decisions/0120): the reporting preparation and the
// terminal commit write the search document (the preparation also the
// definition's name and `finished_at`) themselves, and the row triggers run
// only for the writes that did not — the same columns after every write;
// their journal records are inserted inline, not by `append_journal`; and
// new pages of `executions` keep half their room for barriers.

import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { executionsFillfactor, executionsFillfactorRoomier, roomForEveryBarrier } from "../../host/store/postgres/hot-barriers.js";
import { documentOf } from "../../host/store/postgres/pages.js";
import { createPrepareReportingFirst } from "../../host/store/postgres/functions.js";
import { migrations, roomAndDocumentsInline } from "../../host/store/postgres/schema.js";
import { compareAndSetStatement, prepareStatement, readKnownRow, type CompareAndSetOperation } from "../../host/store/postgres/statements.js";
import { prepare, providerBarrier, suspendForApproval, terminalCommit, toolBarrier } from "../store/fixtures.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "./database.js";
import { indexInboxByAgent } from "../../host/store/postgres/inbox-by-agent.js";

/** Each row's search document, definition and finish time against what the trigger computes from the row. */
async function documents(schema: string): Promise<{ id: string; document: boolean; definition: string | null; finished: boolean }[]> {
  return withClient(async (client) => {
    await client.query(`SET search_path = "${schema}"`);
    return (
      await client.query<{ id: string; document: boolean; definition: string | null; finished: boolean }>(
        `SELECT execution_id AS id, search = ${documentOf("")} AS document, definition,
                finished_at IS NOT DISTINCT FROM (CASE WHEN status = 'terminal' THEN updated_at END) AS finished
         FROM executions ORDER BY execution_id`,
      )
    ).rows;
  });
}

describe("search documents written by the run's writes (PostgreSQL, migration 29)", () => {
  it("the preparation and the terminal commit call no trigger function nor append_journal; other writers still get the trigger's columns", async () => {
    const schema = freshSchema();
    const store = await PostgresStore.open(postgresUrl, { schema });
    atEnd(() => store.close());
    await store.ensureAgent("support", 1);
    const client = await store.pool.connect();
    atEnd(async () => client.release());
    // Calls of the trigger function in this client's transaction (superuser: the test database's).
    await client.query("SET track_functions = 'pl'");
    const calls = async (name: string) =>
      Number((await client.query<{ calls: string }>("SELECT coalesce(pg_stat_get_xact_function_calls($1::regproc), 0) AS calls", [name])).rows[0]!.calls);
    const triggerCalls = () => calls("execution_search_document");
    const write = async (operation: CompareAndSetOperation) => {
      const known = await readKnownRow(client, operation);
      const statement = compareAndSetStatement(operation, known, undefined, `w-${operation.type}-${operation.expectedRevision}`);
      expect((await client.query<{ applied: number }>(statement.sql)).rows[0]!.applied).toBe(1);
    };
    await client.query("BEGIN");
    const first = prepareStatement(
      prepare("e-1", "support", { input: "A wool sweater", config: { replayable: true, definition: "shop" } }),
      undefined,
      randomUUID(),
    );
    expect((await client.query<{ applied: number }>(first.sql)).rows[0]!.applied).toBeGreaterThan(0);
    await write(providerBarrier("e-1", 1));
    await write(toolBarrier("e-1", 2));
    await write(terminalCommit("e-1", 3, { output: "It ships in blue" }));
    expect(await triggerCalls()).toBe(0);
    // The journal's records inserted inline too (the nested call gone), in their order.
    expect(await calls("append_journal")).toBe(0);
    expect((await client.query<{ role: string }>("SELECT role FROM journal WHERE execution_id = 'e-1' ORDER BY position")).rows.map((row) => row.role)).toEqual(
      ["user", "assistant"],
    );
    // What a process of version 28 sends for a preparation: the insert trigger writes the three columns.
    const old = prepareStatement(prepare("o-1", "support", { input: "A red scarf", config: { definition: "shop" } }), undefined, randomUUID()).sql.replace(
      "prepare_execution_reporting_first(",
      "prepare_execution(",
    );
    expect((await client.query<{ applied: number }>(old)).rows[0]!.applied).toBe(1);
    expect(await triggerCalls()).toBe(1);
    // A writer of the output that leaves `search` (here by hand): the update trigger recomputes it.
    await client.query(`UPDATE executions SET output = '"Knitted by hand"', status = 'terminal', updated_at = 70 WHERE execution_id = 'o-1'`);
    expect(await triggerCalls()).toBe(2);
    await client.query("COMMIT");

    expect(await documents(schema)).toEqual([
      { id: "e-1", document: true, definition: "shop", finished: true },
      { id: "o-1", document: true, definition: "shop", finished: true },
    ]);
    const found = async (text: string) => (await store.pageExecutions({ text })).rows.map((row) => row.executionId);
    expect(await found("sweater")).toEqual(["e-1"]);
    expect(await found("blue")).toEqual(["e-1"]);
    expect(await found("scarf")).toEqual(["o-1"]);
    expect(await found("knitted")).toEqual(["o-1"]);
    expect(await found("wool blue")).toEqual(["e-1"]);
    expect((await store.pageExecutions({ definition: "shop" })).rows).toHaveLength(2);
  });

  it("a suspension and a terminal row inserted at preparation keep the document and the finish time", async () => {
    const schema = freshSchema();
    const store = await PostgresStore.open(postgresUrl, { schema });
    atEnd(() => store.close());
    await store.ensureAgent("support", 1);
    expect(await store.run(prepare("s-1", "support", { input: "Refund my boots" }))).toMatchObject({ outcome: "active" });
    expect(await store.run(suspendForApproval("s-1", 1))).toEqual({ revision: 2 });
    const blocked = await store.run(prepare("t-1", "support", { input: "Blocked words", blockedBy: { code: "input_blocked", message: "no" } }));
    expect(blocked).toMatchObject({ outcome: "terminal" });
    expect(await documents(schema)).toEqual([
      { id: "s-1", document: true, definition: null, finished: true },
      { id: "t-1", document: true, definition: null, finished: true },
    ]);
    expect((await store.pageExecutions({ text: "boots" })).rows.map((row) => row.executionId)).toEqual(["s-1"]);
    expect((await store.pageExecutions({ text: "blocked" })).rows.map((row) => row.executionId)).toEqual(["t-1"]);
  });

  it("gives new pages of executions room for barriers, on a new schema and on one migrated from version 28 (migrations 29 and 31)", async () => {
    const fillfactor = (schema: string) =>
      withClient(
        async (client) =>
          (await client.query<{ options: string[] | null }>(`SELECT reloptions AS options FROM pg_class WHERE oid = '"${schema}".executions'::regclass`))
            .rows[0]!.options,
      );
    const fresh = freshSchema();
    await (await PostgresStore.open(postgresUrl, { schema: fresh })).close();
    expect(await fillfactor(fresh)).toEqual([`fillfactor=${executionsFillfactorRoomier}`]);
    expect(executionsFillfactor).toBe(50);
    expect(executionsFillfactorRoomier).toBe(30);

    // Migration 29 taken back: version 28's fill and triggers; the preparation and the terminal commit as 28 made them.
    const schema = freshSchema();
    const before = await PostgresStore.open(postgresUrl, { schema });
    await before.ensureAgent("support", 1);
    await before.run(prepare("done-1", "support", { input: "Old sweater" }));
    await before.run(terminalCommit("done-1", 1, { output: "Old answer" }));
    await before.close();
    await withClient(async (client) => {
      await client.query(`SET search_path = "${schema}"`);
      await client.query(`
        ALTER TABLE executions SET (fillfactor = 70);
        DROP TRIGGER execution_search_insert ON executions;
        CREATE TRIGGER execution_search_insert BEFORE INSERT ON executions FOR EACH ROW EXECUTE FUNCTION execution_search_document();
        DROP TRIGGER execution_search_update ON executions;
        CREATE TRIGGER execution_search_update BEFORE UPDATE OF input, output ON executions
        FOR EACH ROW WHEN (OLD.input IS DISTINCT FROM NEW.input OR OLD.output IS DISTINCT FROM NEW.output) EXECUTE FUNCTION execution_search_document();
        DROP FUNCTION prepare_execution_reporting_first;
        UPDATE store_version SET version = ${migrations.indexOf(createPrepareReportingFirst)}`);
    });
    expect(migrations.slice(migrations.indexOf(createPrepareReportingFirst))).toEqual([
      createPrepareReportingFirst,
      roomAndDocumentsInline,
      indexInboxByAgent,
      roomForEveryBarrier,
    ]);
    const after = await PostgresStore.open(postgresUrl, { schema });
    atEnd(() => after.close());
    expect(await fillfactor(schema)).toEqual([`fillfactor=${executionsFillfactorRoomier}`]);
    await after.run(prepare("new-1", "support", { input: "New sweater" }));
    await after.run(terminalCommit("new-1", 1, { output: "New answer" }));
    expect(await documents(schema)).toEqual([
      { id: "done-1", document: true, definition: null, finished: true },
      { id: "new-1", document: true, definition: null, finished: true },
    ]);
    expect((await after.pageExecutions({ text: "sweater" })).rows.map((row) => row.executionId)).toEqual(["new-1", "done-1"]);
  });
});
