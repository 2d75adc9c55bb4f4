// Migration 14 (docs/decisions/0094): the step timeline keyed by the
// execution's rowid, the definition's name in a column of its own. A
// version-13 file is made from a store written by real
// runs and taken back to version 13's timeline (the statements below, checked
// against a file built by migrations 1–13); opened again, every step reads
// back in order — timelines, the chat history, the dashboard's listing, a
// queued message's `queued` step, a definition's page — and a migration cut off after any of its
// statements (the file closed mid-way) leaves a store that opens and reads
// the same. The reads by execution keep their index.

import { copyFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Phronomy, type Environment } from "../../host/index.js";
import { queueStoreOf } from "../../host/store/queue.js";
import { openBetterSqlite3, type SqliteConnection } from "../../host/store/sqlite/driver.js";
import { applicationId, migrations, schemaVersion, writeFewerPages } from "../../host/store/sqlite/schema.js";
import { definitionMigration } from "../../host/store/sqlite/page-counts.js";
import { selectedForUpdate } from "../../host/store/sqlite/compare-and-set.js";
import { lastStep, payloadsOfKind, timelineMigration, timelineOf } from "../../host/store/sqlite/timeline.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import { agentRunModel, approvalRefundTool, lookupTool, recordingLogger, scriptedModel, temporaryStorePath, turnOf, waitFor } from "../runtime/helpers.js";
import { prepare, rawValue, temporaryDirectory, beforeVersion14, track } from "./fixtures.js";
import { beforeVersion15 } from "./search-index-fixtures.js";

const version13 = migrations.indexOf(writeFewerPages);
const migration14 = [...timelineMigration, ...definitionMigration];

/** The file taken back to version 13. */
const backToVersion13 = `${beforeVersion15} ${beforeVersion14} PRAGMA user_version = ${version13};`;

function withConnection<T>(path: string, use: (connection: SqliteConnection) => T): T {
  const connection = openBetterSqlite3(path);
  try {
    return use(connection);
  } finally {
    connection.close();
  }
}

/** What makes the timeline's schema: its columns and key, the queue's columns, the triggers. */
function timelineSchema(path: string): unknown {
  return withConnection(path, (connection) => ({
    steps: connection.prepare("SELECT name, type, \"notnull\", pk FROM pragma_table_info('steps')").all(),
    stepsKey: connection.prepare("SELECT name FROM pragma_index_info((SELECT name FROM pragma_index_list('steps') WHERE origin = 'pk'))").all(),
    queue: connection.prepare("SELECT name FROM pragma_table_info('queued_messages')").all(),
    triggers: connection.prepare("SELECT name FROM sqlite_schema WHERE type = 'trigger' ORDER BY name").all(),
    executions: connection.prepare("SELECT name FROM pragma_table_info('executions')").all(),
    indexes: connection
      .prepare("SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND tbl_name IN ('executions', 'steps') ORDER BY name")
      .all()
      .map((row) => [row["name"], String(row["sql"]).replace(/\s+/g, " ")]),
  }));
}

/** A file made by migrations 1–13, as version 13 of Phronomy made it. */
function version13File(path: string): void {
  withConnection(path, (connection) => {
    for (const migration of migrations.slice(0, version13)) migration(connection);
    connection.exec(`PRAGMA application_id = ${applicationId}; PRAGMA user_version = ${version13}`);
  });
}

let environment: Environment | undefined;
afterEach(async () => {
  await environment?.close();
  environment = undefined;
});

const refundModel = () =>
  scriptedModel(({ messages }) =>
    turnOf(messages) === 0 ? { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] } : { text: "refunded" },
  );

/** Writes a store through real runs: two turns of a conversation with tool
 * calls, and an execution waiting for an approval. Returns the ids. */
async function storeOfRuns(path: string): Promise<{ agentId: string; executionIds: string[] }> {
  const env = await Phronomy.open({ store: path, logger: recordingLogger() });
  try {
    const chat = env.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool() } }).conversation("user-1");
    const first = await chat.start("Where is order 42?").result;
    const second = await chat.start("And order 43?").result;
    const parked = env.agent({ id: "parked", model: refundModel(), tools: { refund: approvalRefundTool([]) } }).start("Refund order 42");
    const parkedId = await parked.executionId;
    await waitFor(async () => ((await env.execution(parkedId))?.status === "suspended" ? true : undefined));
    const agentId = (await env.execution(first.executionId))!.agentId;
    return { agentId, executionIds: [first.executionId, second.executionId, parkedId] };
  } finally {
    await env.close();
  }
}

/** Every read of the timeline: each execution's steps, the chat history, the dashboard's timelines and listing. */
async function readsOf(path: string, agentId: string, executionIds: readonly string[]): Promise<unknown> {
  environment = await Phronomy.open({ store: path, logger: recordingLogger() });
  const env = environment;
  const result = {
    timelines: await Promise.all(executionIds.map((id) => env.timeline(id))),
    dashboard: await Promise.all(executionIds.map((id) => env.admin.timeline(id))),
    listing: (await env.admin.executions({})).map((row) => [row.executionId, row.status, row.revision]),
    messages: await env.history(agentId, 100),
  };
  await env.close();
  environment = undefined;
  const store = await SqliteStore.open(path);
  const byDefinition = (await store.pageExecutions({ definition: "support" })).rows.map((row) => row.executionId);
  await store.close();
  return { ...result, byDefinition };
}

describe("the timeline keyed by the execution's rowid (migration 14, docs/decisions/0094)", () => {
  it("takes a store back to version 13 exactly as migrations 1-13 make it (the test's own check)", async () => {
    const directory = await temporaryDirectory();
    const made = join(directory, "made.db");
    version13File(made);
    const current = join(directory, "current.db");
    await track(await SqliteStore.open(current)).close();
    withConnection(current, (connection) => connection.exec(backToVersion13));
    expect(timelineSchema(current)).toEqual(timelineSchema(made));
    expect(rawValue(current, "PRAGMA user_version")).toBe(13);
  });

  it("migrates a version-13 store written by runs: every step, the chat history and the dashboard read the same, in order", async () => {
    const path = await temporaryStorePath();
    const { agentId, executionIds } = await storeOfRuns(path);
    const before = await readsOf(path, agentId, executionIds);
    const steps = Number(rawValue(path, "SELECT count(*) FROM steps"));
    withConnection(path, (connection) => connection.exec(backToVersion13));
    expect(rawValue(path, "SELECT count(*) FROM steps WHERE execution_id IN (SELECT execution_id FROM executions)")).toBe(steps);
    const after = await readsOf(path, agentId, executionIds);
    expect(after).toEqual(before);
    expect(rawValue(path, "PRAGMA user_version")).toBe(schemaVersion);
    expect(rawValue(path, "SELECT count(*) FROM steps")).toBe(steps);
    const timeline = (after as { timelines: { seq: number }[][] }).timelines;
    for (const one of timeline) expect(one.map((step) => step.seq)).toEqual(one.map((_, index) => index + 1));
    expect(timeline[0]!.length).toBeGreaterThan(5);
    expect((after as { messages: unknown[] }).messages).toHaveLength(4);
    expect((after as { byDefinition: string[] }).byDefinition, "the definition's column filled from the metadata").toEqual([executionIds[1], executionIds[0]]);
  });

  it("carries a queued message's step into its queue row, and into its timeline at seq 0 once it is prepared", async () => {
    const path = join(await temporaryDirectory(), "queued.db");
    const store = track(await SqliteStore.open(path));
    await store.ensureAgent("support", 1);
    const queue = queueStoreOf(store)!;
    await queue.enqueueMessage({ executionId: "q1", agentId: "support", input: "first", config: {}, front: false, limit: 3, at: 5 });
    await queue.enqueueMessage({ executionId: "q2", agentId: "support", input: "now", config: {}, front: true, limit: 3, at: 6 });
    const queued = [await store.listSteps("q1"), await store.listSteps("q2")];
    expect(queued).toEqual([
      [{ seq: 0, kind: "queued", at: 5, payload: { position: 1, interrupt: false } }],
      [{ seq: 0, kind: "queued", at: 6, payload: { position: 1, interrupt: true } }],
    ]);
    await store.close();
    withConnection(path, (connection) => connection.exec(backToVersion13));
    expect(rawValue(path, "SELECT count(*) FROM steps WHERE seq = 0 AND kind = 'queued'")).toBe(2);
    const reopened = track(await SqliteStore.open(path));
    expect([await reopened.listSteps("q1"), await reopened.listSteps("q2")]).toEqual(queued);
    await reopened.run(prepare("q1"));
    expect((await reopened.listSteps("q1")).map((step) => [step.seq, step.kind])).toEqual([
      [0, "queued"],
      [1, "input"],
    ]);
    expect(await reopened.listSteps("q2")).toEqual(queued[1]);
  });

  it("opens and reads the same after a migration cut off after any of its statements (the file closed mid-way)", async () => {
    const path = await temporaryStorePath();
    const { agentId, executionIds } = await storeOfRuns(path);
    const before = await readsOf(path, agentId, executionIds);
    withConnection(path, (connection) => connection.exec(backToVersion13));
    for (let done = 1; done < migration14.length; done += 1) {
      const copy = `${path}-cut-${done}.db`;
      await copyFile(path, copy);
      withConnection(copy, (connection) => {
        connection.exec("BEGIN IMMEDIATE");
        for (const statement of migration14.slice(0, done)) connection.exec(statement);
      }); // closed without COMMIT
      expect(rawValue(copy, "PRAGMA user_version"), `cut after ${done}`).toBe(version13);
      expect(await readsOf(copy, agentId, executionIds), `cut after ${done}`).toEqual(before);
    }
  });

  it("reads an execution's timeline and a kind of its steps by index", async () => {
    const path = join(await temporaryDirectory(), "plans.db");
    await track(await SqliteStore.open(path)).close();
    withConnection(path, (connection) => {
      const plan = (sql: string) =>
        connection
          .prepare(`EXPLAIN QUERY PLAN ${sql}`)
          .all(
            ...sql
              .split("?")
              .slice(1)
              .map(() => null),
          )
          .map((row) => String(row["detail"]))
          .join("; ");
      // A write that reads its row first reads where its steps go with it.
      for (const sql of [timelineOf, lastStep, payloadsOfKind, selectedForUpdate]) {
        const read = plan(sql);
        expect(read, sql).toMatch(/SEARCH executions USING (COVERING )?INDEX sqlite_autoindex_executions_1 \(execution_id=\?\)/);
        expect(read, sql).toMatch(/SEARCH steps USING (COVERING )?INDEX sqlite_autoindex_steps_1 \(execution_rowid=\?/);
        expect(read, sql).not.toMatch(/SCAN|TEMP B-TREE/);
      }
      expect(plan("DELETE FROM steps WHERE execution_rowid = 7")).toMatch(/INDEX sqlite_autoindex_steps_1 \(execution_rowid=\?\)/);
      // The definition's page (`pages.ts`), on its column's index.
      const byDefinition = plan("SELECT * FROM executions WHERE definition = 'support' ORDER BY created_at DESC, execution_id DESC LIMIT 10");
      expect(byDefinition).toContain("USING INDEX executions_by_definition (definition=?)");
      expect(byDefinition).not.toContain("TEMP B-TREE");
    });
  });
});
