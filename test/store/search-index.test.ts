// The search index kept off the run's transactions (docs/decisions/0095):
// a search finds an execution at every moment — right after its start,
// suspended, ended, after a crash before the sweep, after retention — and
// the sweep indexes it in batches of its own; the migration from a store
// whose index was kept by triggers.

import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkPageQuery } from "../../host/store/execution-pages.js";
import type { SqliteConnection } from "../../host/store/sqlite/driver.js";
import { pageExecutions } from "../../host/store/sqlite/pages.js";
import { migrations, openStoreConnection } from "../../host/store/sqlite/schema.js";
import { deferSearchIndex, sweepHoldRunningMs, sweepSearchIndex } from "../../host/store/sqlite/search-index.js";
import { commitGroup } from "../../host/store/sqlite/transaction.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import type { OffloadOperation } from "../../host/store/offload-operation.js";
import { prepare, rawExec, rawValue, suspendForApproval, temporaryDirectory, terminalCommit, track } from "./fixtures.js";
import { searchIndexByTriggers } from "./search-index-fixtures.js";

/** Far past every fixture's times (`at` 10–60): no running row is held. */
const later = 10 * sweepHoldRunningMs;

async function connectionTo(name = "store.db"): Promise<SqliteConnection> {
  return openStoreConnection(join(await temporaryDirectory(), name), { synchronous: "NORMAL" });
}

function commit(connection: SqliteConnection, ...operations: OffloadOperation[]): void {
  for (const settlement of commitGroup(connection, operations)) if (!settlement.ok) throw settlement.error;
}

function found(connection: SqliteConnection, text: string): string[] {
  return pageExecutions(connection, checkPageQuery({ text, limit: 100 }, "test")).rows.map((row) => row.executionId);
}

/** Where the index stands: the mark, the rows listed, the rows the index holds. */
function indexState(connection: SqliteConnection) {
  const value = (sql: string) => Number(Object.values(connection.prepare(sql).get() ?? {})[0] ?? 0);
  return {
    mark: value("SELECT mark FROM execution_search_mark"),
    last: value("SELECT coalesce(max(rowid), 0) FROM executions"),
    listed: value("SELECT count(*) FROM execution_search_pending"),
  };
}

/** The rows the index itself (not the rest) finds for a word. */
function inIndex(connection: SqliteConnection, word: string): number[] {
  return connection
    .prepare("SELECT rowid AS id FROM execution_search WHERE execution_search MATCH ? ORDER BY rowid")
    .all(`"${word}"*`)
    .map((row) => Number(row["id"]));
}

describe("the deferred search index (sqlite, docs/decisions/0095)", () => {
  it("finds an execution at once after it starts, while suspended and after it ends, before and after each sweep", async () => {
    const connection = await connectionTo();
    try {
      commit(connection, prepare("e1", "support", { input: "Refund the blue sweater" }));
      // The start wrote nothing for the search: the row is above the mark.
      expect(indexState(connection)).toEqual({ mark: 0, last: 1, listed: 0 });
      expect(inIndex(connection, "sweater")).toEqual([]);
      expect(found(connection, "sweater")).toEqual(["e1"]);
      expect(found(connection, "refund blu")).toEqual(["e1"]);
      expect(found(connection, "sweat refund")).toEqual(["e1"]);
      expect(found(connection, "jacket")).toEqual([]);

      expect(sweepSearchIndex(connection, later)).toEqual({ indexed: 1, more: false });
      expect(indexState(connection)).toEqual({ mark: 1, last: 1, listed: 0 });
      expect(inIndex(connection, "sweater")).toEqual([1]);
      expect(found(connection, "sweater")).toEqual(["e1"]);
      // Nothing to do: no transaction, nothing indexed.
      expect(sweepSearchIndex(connection, later)).toEqual({ indexed: 0, more: false });

      // Suspended for an approval: its text did not change, nothing listed.
      commit(connection, suspendForApproval("e1", 1));
      expect(indexState(connection).listed).toBe(0);
      expect(found(connection, "sweater")).toEqual(["e1"]);

      // A second execution ends before any sweep: one index write, with its output.
      commit(connection, prepare("e2", "support", { input: "Where is order 42?" }));
      commit(connection, terminalCommit("e2", 1, { output: "Order 42 ships on Tuesday." }));
      expect(found(connection, "tuesday")).toEqual(["e2"]);
      expect(sweepSearchIndex(connection, later)).toEqual({ indexed: 1, more: false });
      expect(inIndex(connection, "tuesday")).toEqual([2]);
      expect(found(connection, "tuesday")).toEqual(["e2"]);
    } finally {
      connection.close();
    }
  });

  it("lists an indexed execution whose output changes and finds it by its new words only, before and after the sweep", async () => {
    const connection = await connectionTo();
    try {
      commit(connection, prepare("e1", "support", { input: "Where is order 42?" }));
      commit(connection, terminalCommit("e1", 1, { output: "Order 42 ships on Tuesday." }));
      sweepSearchIndex(connection, later);
      // A regenerated answer: the stored output changes in place.
      rawExec(connection.path, `UPDATE executions SET output = '"Order 42 ships on Friday."' WHERE execution_id = 'e1'`);
      expect(indexState(connection)).toEqual({ mark: 1, last: 1, listed: 1 });
      expect(inIndex(connection, "tuesday"), "the stale entry is still in the index").toEqual([1]);
      expect(found(connection, "tuesday")).toEqual([]);
      expect(found(connection, "friday")).toEqual(["e1"]);
      expect(found(connection, "order")).toEqual(["e1"]);
      sweepSearchIndex(connection, later);
      expect(indexState(connection).listed).toBe(0);
      expect(inIndex(connection, "tuesday")).toEqual([]);
      expect(found(connection, "tuesday")).toEqual([]);
      expect(found(connection, "friday")).toEqual(["e1"]);
    } finally {
      connection.close();
    }
  });

  it("leaves a young running execution listed until it ends, then indexes it once", async () => {
    const connection = await connectionTo();
    try {
      commit(connection, prepare("e1", "support", { input: "Refund the blue sweater" }));
      // `now` just after the row's creation (`at` 10): it is running and young.
      expect(sweepSearchIndex(connection, 11)).toEqual({ indexed: 0, more: false });
      expect(indexState(connection)).toEqual({ mark: 1, last: 1, listed: 1 });
      expect(inIndex(connection, "sweater")).toEqual([]);
      expect(found(connection, "sweater")).toEqual(["e1"]);
      // Its end writes nothing for the search: it is listed already.
      commit(connection, terminalCommit("e1", 1, { output: "Refunded on Tuesday." }));
      expect(indexState(connection).listed).toBe(1);
      expect(found(connection, "tuesday")).toEqual(["e1"]);
      expect(sweepSearchIndex(connection, 12)).toEqual({ indexed: 1, more: false });
      expect(indexState(connection).listed).toBe(0);
      expect(inIndex(connection, "tuesday")).toEqual([1]);
      expect(found(connection, "tuesday")).toEqual(["e1"]);
      // One left running longer than the hold is indexed as it is.
      commit(connection, prepare("e2", "support", { input: "A slow tool call" }));
      sweepSearchIndex(connection, 10 + sweepHoldRunningMs + 1);
      expect(inIndex(connection, "slow")).toEqual([2]);
    } finally {
      connection.close();
    }
  });

  it("forgets pruned executions, and a rowid given again after the newest row was deleted is searched by its own text", async () => {
    const connection = await connectionTo();
    try {
      commit(connection, prepare("e1", "support", { input: "the blue sweater" }));
      commit(connection, terminalCommit("e1", 1));
      commit(connection, prepare("e2", "support", { input: "the red scarf" }));
      commit(connection, terminalCommit("e2", 1));
      sweepSearchIndex(connection, later);
      commit(connection, { type: "pruneExecutions", finishedBefore: 1_000, executionsMax: 10 });
      expect(indexState(connection)).toEqual({ mark: 0, last: 0, listed: 2 });
      expect(found(connection, "sweater")).toEqual([]);
      expect(found(connection, "scarf")).toEqual([]);
      // The newest rowid is given again: its old entry must not speak for it.
      commit(connection, prepare("e3", "support", { input: "a green hat" }));
      commit(connection, prepare("e4", "support", { input: "a yellow scarf" }));
      expect(found(connection, "sweater")).toEqual([]);
      expect(found(connection, "hat")).toEqual(["e3"]);
      expect(found(connection, "scarf")).toEqual(["e4"]);
      sweepSearchIndex(connection, later);
      expect(indexState(connection)).toEqual({ mark: 2, last: 2, listed: 0 });
      expect(inIndex(connection, "sweater")).toEqual([]);
      expect(inIndex(connection, "red")).toEqual([]);
      expect(found(connection, "sweater")).toEqual([]);
      expect(found(connection, "hat")).toEqual(["e3"]);
      expect(found(connection, "scarf")).toEqual(["e4"]);
    } finally {
      connection.close();
    }
  });

  it("sweeps in batches: more than a batch is left for the next sweep, and nothing is missed meanwhile", async () => {
    const connection = await connectionTo();
    try {
      const rows = 1_100;
      rawExec(
        connection.path,
        `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${rows - 1})
         INSERT INTO executions (execution_id, agent_id, revision, status, phase, mode, input, metadata, outcome, output, error, usage, approval_request, created_at, updated_at)
         SELECT printf('x%05d', i), 'a', 1, 'terminal', 'done', 'run', json_quote('common ' || CASE WHEN i % 100 = 0 THEN 'rare ' ELSE '' END || i), '{}', 'completed', 'null', 'null', '{}', 'null', i, i FROM n`,
      );
      const sweeps: boolean[] = [];
      for (let more = true; more; ) {
        expect(found(connection, "rare")).toHaveLength(11);
        more = sweepSearchIndex(connection, later).more;
        sweeps.push(more);
      }
      expect(sweeps).toEqual([true, true, false]);
      expect(indexState(connection)).toEqual({ mark: rows, last: rows, listed: 0 });
      expect(inIndex(connection, "rare")).toHaveLength(11);
    } finally {
      connection.close();
    }
  });

  it("agrees with the text at every step of random writes, deletes and sweeps (seeded)", async () => {
    const seed = Number(process.env["SEARCH_INDEX_SEED"] ?? Date.now() % 1_000_000);
    console.log(`search-index random test seed ${seed} (SEARCH_INDEX_SEED to repeat)`);
    let state = seed;
    const random = (n: number) => {
      state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
      return state % n;
    };
    const vocabulary = ["apple", "apricot", "banana", "cherry", "date", "elder", "fig"];
    const text = () => Array.from({ length: 1 + random(3) }, () => vocabulary[random(vocabulary.length)]).join(" ");
    const connection = await connectionTo();
    try {
      const model = new Map<string, string>(); // execution id → its words
      let next = 0;
      for (let step = 0; step < 300; step += 1) {
        const ids = [...model.keys()];
        const action = random(10);
        const pick = () => ids[random(ids.length)]!;
        if (action < 4 || ids.length === 0) {
          const id = `r${next++}`;
          const input = text();
          rawExec(
            connection.path,
            `INSERT INTO executions (execution_id, agent_id, revision, status, phase, mode, input, metadata, outcome, output, error, usage, approval_request, created_at, updated_at)
             VALUES ('${id}', 'a', 1, '${random(2) === 0 ? "active" : "suspended"}', 'p', 'run', json_quote('${input}'), '{}', NULL, 'null', 'null', '{}', 'null', ${step}, ${step})`,
          );
          model.set(id, input);
        } else if (action < 6) {
          const id = pick();
          const output = text();
          rawExec(connection.path, `UPDATE executions SET status = 'terminal', output = json_quote('${output}') WHERE execution_id = '${id}'`);
          model.set(id, `${String(rawValue(connection.path, "SELECT json_extract(input, '$') FROM executions WHERE execution_id = ?", id))} ${output}`);
        } else if (action < 7) {
          // The newest row now and then: its rowid is given again.
          const id = random(2) === 0 ? pick() : String(rawValue(connection.path, "SELECT execution_id FROM executions ORDER BY rowid DESC LIMIT 1"));
          rawExec(connection.path, `DELETE FROM executions WHERE execution_id = '${id}'`);
          model.delete(id);
        } else {
          // A `now` that holds the running rows of the last steps, or none.
          sweepSearchIndex(connection, random(2) === 0 ? step : later);
        }
        for (const word of [vocabulary[random(vocabulary.length)]!, vocabulary[random(vocabulary.length)]!.slice(0, 2)]) {
          const expected = [...model]
            .filter(([, words]) => words.split(" ").some((each) => each.startsWith(word)))
            .map(([id]) => id)
            .sort();
          expect(found(connection, word).sort(), `step ${step}, "${word}" (seed ${seed})`).toEqual(expected);
        }
      }
      while (sweepSearchIndex(connection, later).more);
      expect(indexState(connection).listed).toBe(0);
    } finally {
      connection.close();
    }
  });
});

describe("the owner's sweep and the visitor's search (docs/decisions/0095)", () => {
  it("after a crash before the sweep: a visitor finds the rows not indexed, the next owner indexes them", async () => {
    const path = join(await temporaryDirectory(), "crashed.db");
    const writer = openStoreConnection(path, { synchronous: "NORMAL" });
    // Written, then the process died: no sweep ran.
    commit(writer, prepare("e1", "support", { input: "Refund the blue sweater" }));
    commit(writer, terminalCommit("e1", 1, { output: "Refunded on Tuesday." }));
    writer.close();
    expect(rawValue(path, "SELECT mark FROM execution_search_mark")).toBe(0);
    const visitor = await SqliteStore.openVisitor(path);
    try {
      expect((await visitor.pageExecutions({ text: "tuesday" })).rows.map((row) => row.executionId)).toEqual(["e1"]);
    } finally {
      await visitor.close();
    }
    for (const offloadPolicy of ["inline", "worker"] as const) {
      const store = track(await SqliteStore.open(path, { offloadPolicy }));
      expect((await store.pageExecutions({ text: "sweater" })).rows.map((row) => row.executionId)).toEqual(["e1"]);
      await store.run(prepare(`e-${offloadPolicy}`, "support", { input: `written under ${offloadPolicy}` }));
      // The first sweep, asked for at the open and after the write.
      const behind = () =>
        store.offloadStatistics.sweeps === 0
        || Number(rawValue(path, "SELECT mark FROM execution_search_mark")) < Number(rawValue(path, "SELECT max(rowid) FROM executions"));
      for (let waited = 0; behind(); waited += 10) {
        if (waited > 10_000) throw new Error(`no sweep under ${offloadPolicy}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(store.offloadStatistics.sweeps).toBeGreaterThan(0);
      expect(store.offloadStatistics.sweepFailure).toBeUndefined();
      expect((await store.pageExecutions({ text: offloadPolicy })).rows.map((row) => row.executionId)).toEqual([`e-${offloadPolicy}`]);
      await store.close();
    }
    expect(rawValue(path, "SELECT count(*) FROM execution_search_pending")).toBe(0);
    expect(rawValue(path, `SELECT count(*) FROM execution_search WHERE execution_search MATCH '"tuesday"*'`)).toBe(1);
  });
});

describe("migration 15: from a store whose search index triggers kept (docs/decisions/0095)", () => {
  it("keeps what was indexed, sets the mark at the last row, and drops the insert trigger", async () => {
    const path = join(await temporaryDirectory(), "version-14.db");
    const store = track(await SqliteStore.open(path, { offloadPolicy: "inline" }));
    await store.run(prepare("old-1", "support", { input: "Refund the blue sweater" }));
    await store.close();
    searchIndexByTriggers(path);
    // Written by the older version: its triggers index it in the same transaction.
    rawExec(
      path,
      `PRAGMA user_version = ${migrations.indexOf(deferSearchIndex)};
       INSERT INTO executions (execution_id, agent_id, revision, status, phase, mode, input, metadata, outcome, output, error, usage, approval_request, created_at, updated_at)
       VALUES ('old-2', 'support', 1, 'terminal', 'done', 'run', json_quote('A red scarf'), '{}', 'completed', json_quote('Shipped on Tuesday'), 'null', '{}', 'null', 20, 20)`,
    );
    expect(rawValue(path, `SELECT count(*) FROM execution_search WHERE execution_search MATCH '"tuesday"*'`)).toBe(1);
    const migrated = openStoreConnection(path, { synchronous: "NORMAL" });
    try {
      expect(indexState(migrated)).toEqual({ mark: 2, last: 2, listed: 0 });
      expect(Number(rawValue(path, "SELECT count(*) FROM sqlite_schema WHERE name = 'execution_search_insert'"))).toBe(0);
      expect(found(migrated, "sweater")).toEqual(["old-1"]);
      expect(found(migrated, "tuesday")).toEqual(["old-2"]);
      expect(sweepSearchIndex(migrated, later)).toEqual({ indexed: 0, more: false });
      // A new row is not indexed by its insert any more.
      commit(migrated, prepare("new-1", "support", { input: "A green hat" }));
      expect(inIndex(migrated, "hat")).toEqual([]);
      expect(found(migrated, "hat")).toEqual(["new-1"]);
    } finally {
      migrated.close();
    }
  });
});
