// Migration 30 (docs/decisions/0124): no BEFORE UPDATE row trigger on
// `executions` (PostgreSQL locks the old row for every UPDATE of a table
// that has one); the search document and the finish time of a writer that
// left them are repaired by AFTER triggers, which the store's own writes
// never call.

import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { documentOf } from "../../host/store/postgres/pages.js";
import { repairRowsAfter } from "../../host/store/postgres/repairs-after.js";
import { migrations, roomAndDocumentsInline } from "../../host/store/postgres/schema.js";
import { compareAndSetStatement, prepareStatement, readKnownRow, type CompareAndSetOperation } from "../../host/store/postgres/statements.js";
import { prepare, providerBarrier, terminalCommit, toolBarrier } from "../store/fixtures.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "./database.js";

/** The row triggers of `executions`: name and timing, in name order. */
async function rowTriggers(schema: string): Promise<{ name: string; timing: string }[]> {
  return withClient(
    async (client) =>
      (
        await client.query<{ name: string; timing: string }>(
          `SELECT tgname AS name, CASE WHEN tgtype & 2 = 2 THEN 'before' ELSE 'after' END
                  || CASE WHEN tgtype & 4 = 4 THEN ' insert' ELSE '' END || CASE WHEN tgtype & 16 = 16 THEN ' update' ELSE '' END AS timing
           FROM pg_trigger WHERE tgrelid = '"${schema}".executions'::regclass AND NOT tgisinternal AND tgtype & 1 = 1 ORDER BY tgname`,
        )
      ).rows,
  );
}

/** Each row's search document and finish time against what the rule computes from the row. */
async function rows(schema: string): Promise<{ id: string; document: boolean; finished: string | null }[]> {
  return withClient(async (client) => {
    await client.query(`SET search_path = "${schema}"`);
    return (
      await client.query<{ id: string; document: boolean; finished: string | null }>(
        `SELECT execution_id AS id, search = ${documentOf("")} AS document, finished_at::text AS finished FROM executions ORDER BY execution_id`,
      )
    ).rows;
  });
}

const after = [
  { name: "execution_finished", timing: "after update" },
  { name: "execution_search_insert", timing: "before insert" },
  { name: "execution_search_update", timing: "after update" },
  { name: "queued_message_admitted", timing: "after insert" },
];

describe("the search document and the finish time repaired after, not computed before (PostgreSQL, migration 30)", () => {
  it("no BEFORE UPDATE trigger; the store's writes call no repair, a writer that left the columns gets them repaired", async () => {
    const schema = freshSchema();
    const store = await PostgresStore.open(postgresUrl, { schema });
    atEnd(() => store.close());
    expect(await rowTriggers(schema)).toEqual(after);
    await store.ensureAgent("support", 1);
    const client = await store.pool.connect();
    atEnd(async () => client.release());
    await client.query("SET track_functions = 'pl'");
    const calls = async (name: string) =>
      Number((await client.query<{ calls: string }>("SELECT coalesce(pg_stat_get_xact_function_calls($1::regproc), 0) AS calls", [name])).rows[0]!.calls);
    const repairs = async () => [await calls("execution_finished_repair"), await calls("execution_search_repair")];
    const write = async (operation: CompareAndSetOperation) => {
      const known = await readKnownRow(client, operation);
      const statement = compareAndSetStatement(operation, known, undefined, `w-${operation.type}-${operation.expectedRevision}`);
      expect((await client.query<{ applied: number }>(statement.sql)).rows[0]!.applied).toBe(1);
    };
    await client.query("BEGIN");
    for (const id of ["e-1", "e-2"]) {
      const prepared = prepareStatement(prepare(id, "support", { input: "A wool sweater", config: { replayable: true } }), undefined, randomUUID());
      expect((await client.query<{ applied: number }>(prepared.sql)).rows[0]!.applied).toBeGreaterThan(0);
      await write(providerBarrier(id, 1));
      await write(toolBarrier(id, 2));
    }
    await write(terminalCommit("e-1", 3, { output: "It ships in blue", at: 60 }));
    expect(await repairs()).toEqual([0, 0]);
    // By hand, as an earlier version's writer or an operation would: the status without the finish time, the output without the document.
    await client.query(`UPDATE executions SET status = 'terminal', updated_at = 70 WHERE execution_id = 'e-2'`);
    expect(await repairs()).toEqual([1, 0]);
    await client.query(`UPDATE executions SET output = '"Knitted by hand"' WHERE execution_id = 'e-2'`);
    expect(await repairs()).toEqual([1, 1]);
    // Reopened by hand: no finish time while not terminal.
    await client.query(`UPDATE executions SET status = 'active', updated_at = 80 WHERE execution_id = 'e-1'`);
    expect(await repairs()).toEqual([2, 1]);
    await client.query("COMMIT");
    expect(await rows(schema)).toEqual([
      { id: "e-1", document: true, finished: null },
      { id: "e-2", document: true, finished: "70" },
    ]);
    expect((await store.pageExecutions({ text: "knitted" })).rows.map((row) => row.executionId)).toEqual(["e-2"]);
    expect((await store.pageExecutions({ text: "blue" })).rows.map((row) => row.executionId)).toEqual(["e-1"]);
  });

  it("migrates a version 29 schema: its BEFORE triggers replaced, its rows kept", async () => {
    const schema = freshSchema();
    const before = await PostgresStore.open(postgresUrl, { schema });
    await before.ensureAgent("support", 1);
    await before.run(prepare("done-1", "support", { input: "Old sweater" }));
    await before.run(terminalCommit("done-1", 1, { output: "Old answer", at: 50 }));
    await before.close();
    // Migration 30 taken back: the two update triggers as migrations 27 and 29 made them.
    await withClient(async (client) => {
      await client.query(`SET search_path = "${schema}"`);
      await client.query(`
        DROP TRIGGER execution_finished ON executions;
        CREATE TRIGGER execution_finished BEFORE UPDATE OF status ON executions
        FOR EACH ROW WHEN (NEW.finished_at IS DISTINCT FROM (CASE WHEN NEW.status = 'terminal' THEN NEW.updated_at END))
        EXECUTE FUNCTION execution_finished();
        DROP TRIGGER execution_search_update ON executions;
        CREATE TRIGGER execution_search_update BEFORE UPDATE OF input, output ON executions
        FOR EACH ROW WHEN ((OLD.input IS DISTINCT FROM NEW.input OR OLD.output IS DISTINCT FROM NEW.output) AND NEW.search IS NOT DISTINCT FROM OLD.search)
        EXECUTE FUNCTION execution_search_document();
        DROP FUNCTION execution_finished_repair; DROP FUNCTION execution_search_repair;
        UPDATE store_version SET version = ${migrations.indexOf(roomAndDocumentsInline) + 1}`);
    });
    expect((await rowTriggers(schema)).map((trigger) => trigger.timing)).toEqual(["before update", "before insert", "before update", "after insert"]);
    expect(migrations.slice(migrations.indexOf(roomAndDocumentsInline) + 1)).toEqual([repairRowsAfter]);
    const migrated = await PostgresStore.open(postgresUrl, { schema });
    atEnd(() => migrated.close());
    expect(await rowTriggers(schema)).toEqual(after);
    await migrated.run(prepare("new-1", "support", { input: "New sweater" }));
    await withClient((client) => client.query(`UPDATE "${schema}".executions SET status = 'terminal', updated_at = 90 WHERE execution_id = 'new-1'`));
    expect(await rows(schema)).toEqual([
      { id: "done-1", document: true, finished: "50" },
      { id: "new-1", document: true, finished: "90" },
    ]);
  });
});
