// Paging, search and counts on PostgreSQL (a fresh schema per test), and
// the migration that indexes a store written before them.

import { describe, expect, it } from "vitest";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { migrations } from "../../host/store/postgres/schema.js";
import { createExecutionPages } from "../../host/store/postgres/pages.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "../postgres/database.js";
import { prepare } from "../store/fixtures.js";
import { postgresBackend } from "./backends.js";
import { definePagesSuite } from "./pages-suite.js";

definePagesSuite(postgresBackend);

describe("the paging migration (postgres)", () => {
  it("indexes the executions a store held before it: they are found by their words", async () => {
    const schema = freshSchema();
    const store = await PostgresStore.open(postgresUrl, { schema });
    await store.ensureAgent("a", 1);
    await store.run(prepare("old-1", "a", { input: "Refund the blue sweater", journal: [] }));
    await store.close();
    // The store as the version before this migration wrote it (and so
    // without the migrations after it: keyed signals, decision 0077).
    await withClient(async (client) => {
      await client.query(`SET search_path = "${schema}"`);
      await client.query(`
        DROP TRIGGER execution_search_insert ON executions; DROP TRIGGER execution_search_update ON executions;
        DROP FUNCTION execution_search_document(); DROP INDEX executions_search; ALTER TABLE executions DROP COLUMN search;
        DROP INDEX executions_by_time; DROP INDEX executions_by_outcome; DROP INDEX executions_by_state;
        DROP TABLE event_signals; DROP INDEX executions_wait_key; DROP INDEX executions_due; DROP INDEX executions_by_definition;
        UPDATE store_version SET version = ${migrations.indexOf(createExecutionPages)}`);
    });
    const migrated = await PostgresStore.open(postgresUrl, { schema });
    atEnd(() => migrated.close());
    expect((await migrated.pageExecutions({ text: "sweater" })).rows.map((row) => row.executionId)).toEqual(["old-1"]);
  });
});
