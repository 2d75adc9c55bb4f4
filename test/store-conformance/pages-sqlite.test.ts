// Paging, search and counts on the embedded SQLite store (a temporary file),
// and the migration that indexes a store written before them.

import { describe, expect, it } from "vitest";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import { createExecutionPages } from "../../host/store/sqlite/pages.js";
import { migrations } from "../../host/store/sqlite/schema.js";
import { openTemporaryStore, prepare, rawExec, track } from "../store/fixtures.js";
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
      `DROP TRIGGER execution_search_insert; DROP TRIGGER execution_search_update; DROP TRIGGER execution_search_delete; DROP TABLE execution_search; DROP INDEX executions_by_time; DROP INDEX executions_by_outcome; DROP TABLE event_signals; DROP INDEX executions_wait_key; DROP INDEX executions_due; DROP TRIGGER execution_counts_insert; DROP TRIGGER execution_counts_update; DROP TRIGGER execution_counts_delete; DROP TABLE execution_counts; DROP INDEX executions_by_definition; PRAGMA user_version = ${migrations.indexOf(createExecutionPages)}`,
    );
    const migrated = track(await SqliteStore.open(store.path));
    expect((await migrated.pageExecutions({ text: "sweater" })).rows.map((row) => row.executionId)).toEqual(["old-1"]);
  });
});
