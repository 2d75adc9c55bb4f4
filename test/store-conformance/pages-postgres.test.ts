// Paging, search and counts on PostgreSQL (a fresh schema per test), and
// the migration that indexes a store written before them.

import { describe, expect, it } from "vitest";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { migrations } from "../../host/store/postgres/schema.js";
import { createExecutionPages, searchRecentRows } from "../../host/store/postgres/pages.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "../postgres/database.js";
import { undoReportingFirstAndStatusDomain } from "../postgres/fixtures/rewind.js";
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
    // without the migrations after it: keyed signals (0077), due waits
    // (0076), the core's replacing verdicts (0087), definitions (0089),
    // conversation homes (0101: migration 24 replaces the fence again),
    // migration 25's partition flag and its barrier-kept columns (0107,
    // 0108: migration 5's finish index and migration 1's creation index
    // are rebuilt as they were), migration 26's list of a conversation's
    // rows (0116), migration 27's status domain and finish trigger (0117:
    // the status CHECK as migration 1 made it), migration 28's reporting
    // preparation (0118)).
    await withClient(async (client) => {
      await client.query(`SET search_path = "${schema}"`);
      await client.query(`
        ${undoReportingFirstAndStatusDomain}
        DROP TRIGGER execution_search_insert ON executions; DROP TRIGGER execution_search_update ON executions;
        DROP FUNCTION execution_search_document(); DROP INDEX executions_search; ALTER TABLE executions DROP COLUMN search;
        DROP INDEX executions_by_time; DROP INDEX executions_by_outcome; DROP INDEX executions_by_state;
        DROP TABLE event_signals; DROP INDEX executions_wait_key; DROP INDEX executions_due; DROP FUNCTION prepare_execution_replacing_decided; DROP INDEX executions_by_definition;
        DROP FUNCTION home_conversation(text, text, integer, bigint, integer); DROP FUNCTION partition_fence_held_at(integer, text, bigint);
        DROP FUNCTION conversation_partition(text); DROP TABLE conversation_homes; DROP FUNCTION conversation_has_rows(text);
        DROP FUNCTION flag_partitions_moved_out(); ALTER TABLE partitions DROP COLUMN moved_out; ALTER TABLE executions DROP COLUMN definition;
        ALTER TABLE executions DROP COLUMN finished_at; CREATE INDEX executions_finished ON executions (updated_at) WHERE status = 'terminal';
        CREATE INDEX executions_by_creation ON executions (created_at);
        UPDATE store_version SET version = ${migrations.indexOf(createExecutionPages)}`);
    });
    const migrated = await PostgresStore.open(postgresUrl, { schema });
    atEnd(() => migrated.close());
    expect((await migrated.pageExecutions({ text: "sweater" })).rows.map((row) => row.executionId)).toEqual(["old-1"]);
  });
});

describe("a search's two plans (postgres, docs/decisions/0089)", () => {
  it(`reads the newest ${searchRecentRows} rows in time order, then every match by the index; pages walk every match once, newest first`, async () => {
    const schema = freshSchema();
    const store = await PostgresStore.open(postgresUrl, { schema });
    atEnd(() => store.close());
    // 12,000 rows: every row says "common", one in 100 "rare"; their times
    // run against the order they were written in.
    const rows = 12_000;
    await withClient(async (client) => {
      await client.query(`SET search_path = "${schema}"`);
      await client.query(`
        INSERT INTO executions (execution_id, agent_id, revision, status, phase, mode, input, metadata, outcome, output, error, usage, approval_request, created_at, updated_at)
        SELECT 'x' || lpad(i::text, 5, '0'), 'agent-' || (i % 3), 1, 'active', 'calling_llm', 'run',
          to_json('common words ' || CASE WHEN i % 100 = 0 THEN 'rare ' ELSE '' END || i)::text, '{}', NULL, 'null', 'null', '{}', 'null', 100000 - i, 100000 - i
        FROM generate_series(0, ${rows - 1}) AS i;
        ANALYZE executions`);
    });
    const walkAll = async (text: string, limit: number, agentId?: string): Promise<string[]> => {
      const ids: string[] = [];
      let cursor: string | undefined;
      for (let guard = 0; guard < 200; guard++) {
        const page = await store.pageExecutions({ text, limit, ...(agentId !== undefined ? { agentId } : {}), ...(cursor !== undefined ? { cursor } : {}) });
        ids.push(...page.rows.map((row) => row.executionId));
        cursor = page.next;
        if (cursor === undefined) return ids;
      }
      throw new Error("paging did not end");
    };
    const expected = (keep: (index: number) => boolean) =>
      Array.from({ length: rows }, (_, index) => index)
        .filter(keep)
        .map((index) => `x${String(index).padStart(5, "0")}`);
    expect(rows).toBeGreaterThan(2 * searchRecentRows);
    expect(await walkAll("common", 200)).toEqual(expected(() => true));
    // 50 in the newest 5,000: the first two pages of 20 in time order, the rest by the index.
    expect(await walkAll("rare", 20)).toEqual(expected((index) => index % 100 === 0));
    expect(await walkAll("rare", 200, "agent-1")).toEqual(expected((index) => index % 100 === 0 && index % 3 === 1));
    expect(await walkAll("nothing", 50)).toEqual([]);
  }, 60_000);
});
