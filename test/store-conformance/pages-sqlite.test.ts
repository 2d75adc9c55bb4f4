// Paging, search and counts on the embedded SQLite store (a temporary file),
// and the migration that indexes a store written before them.

import { describe, expect, it } from "vitest";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import { createExecutionPages, searchFewMatches } from "../../host/store/sqlite/pages.js";
import { migrations } from "../../host/store/sqlite/schema.js";
import { openTemporaryStore, prepare, rawExec, beforeVersion14, track } from "../store/fixtures.js";
import { sqliteBackend } from "./backends.js";
import { definePagesSuite } from "./pages-suite.js";

definePagesSuite(sqliteBackend);

describe("the paging migration (sqlite)", () => {
  it("indexes the executions a store held before it: they are found by their words", async () => {
    const store = await openTemporaryStore();
    await store.ensureAgent("a", 1);
    await store.run(prepare("old-1", "a", { input: "Refund the blue sweater", journal: [] }));
    await store.close();
    // The store as the version before this migration wrote it (and so
    // without the migrations after it: keyed signals, decision 0077).
    rawExec(
      store.path,
      `${beforeVersion14} DROP TRIGGER execution_search_update; DROP TRIGGER execution_search_delete; DROP TABLE execution_search_mark; DROP TABLE execution_search_pending; DROP TABLE execution_search; DROP INDEX executions_by_time; DROP INDEX executions_by_outcome; DROP TABLE event_signals; DROP INDEX executions_wait_key; DROP INDEX executions_due; DROP TRIGGER execution_counts_insert; DROP TRIGGER execution_counts_update; DROP TRIGGER execution_counts_delete; DROP TABLE execution_counts; DROP INDEX executions_by_definition; PRAGMA user_version = ${migrations.indexOf(createExecutionPages)}`,
    );
    const migrated = track(await SqliteStore.open(store.path));
    expect((await migrated.pageExecutions({ text: "sweater" })).rows.map((row) => row.executionId)).toEqual(["old-1"]);
    // The kept counts start from the rows already there (docs/decisions/0089).
    expect((await migrated.countExecutions()).byStatus).toMatchObject({ active: 1 });
  });
});

describe("a search's two plans (sqlite, docs/decisions/0089)", () => {
  it(`reads a word in more than ${searchFewMatches} rows in time order and a rarer one by its matches; both walk every match once, newest first`, async () => {
    const store = await openTemporaryStore();
    await store.close();
    // 2,500 rows: every row says "common", one in 100 "rare"; their times
    // run against their rowids (the newest row was written first), so an
    // order by rowid would be caught.
    const rows = 2_500;
    rawExec(
      store.path,
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${rows - 1})
       INSERT INTO executions (execution_id, agent_id, revision, status, phase, mode, input, metadata, outcome, output, error, usage, approval_request, created_at, updated_at)
       SELECT printf('x%05d', i), 'agent-' || (i % 3), 1, 'active', 'calling_llm', 'run',
         json_quote('common words ' || CASE WHEN i % 100 = 0 THEN 'rare ' ELSE '' END || i), '{}', NULL, 'null', 'null', '{}', 'null', 100000 - i, 100000 - i FROM n`,
    );
    const reopened = track(await SqliteStore.open(store.path));
    const walkAll = async (text: string, agentId?: string): Promise<string[]> => {
      const ids: string[] = [];
      let cursor: string | undefined;
      for (let guard = 0; guard < 100; guard++) {
        const page = await reopened.pageExecutions({
          text,
          limit: 200,
          ...(agentId !== undefined ? { agentId } : {}),
          ...(cursor !== undefined ? { cursor } : {}),
        });
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
    expect(rows).toBeGreaterThan(searchFewMatches);
    expect(await walkAll("common")).toEqual(expected(() => true));
    expect(await walkAll("rare")).toEqual(expected((index) => index % 100 === 0));
    expect(await walkAll("common", "agent-1")).toEqual(expected((index) => index % 3 === 1));
    expect(await walkAll("rare", "agent-1")).toEqual(expected((index) => index % 100 === 0 && index % 3 === 1));
    const back = await reopened.pageExecutions({ text: "rare", limit: 5, cursor: (await reopened.pageExecutions({ text: "rare", limit: 10 })).next! });
    const previous = await reopened.pageExecutions({ text: "rare", limit: 10, cursor: back.previous! });
    expect(previous.rows.map((row) => row.executionId)).toEqual(expected((index) => index % 100 === 0).slice(0, 10));
  });
});
