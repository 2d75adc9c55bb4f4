// A conversation's first preparation on PostgreSQL says so (`firstOfAgent`,
// migration 28, docs/decisions/0118): the runtime reads no journal before
// its first model call, and reads it before every later run's; a schema of
// version 27 migrates, and the `prepare_execution` a process of the version
// before calls still answers 1 for a first preparation.

import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { Phronomy } from "../../host/index.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { createPrepareReportingFirst } from "../../host/store/postgres/functions.js";
import { migrations, roomAndDocumentsInline } from "../../host/store/postgres/schema.js";
import { prepareStatement } from "../../host/store/postgres/statements.js";
import { prepare, terminalCommit } from "../store/fixtures.js";
import { recordingLogger, scriptedModel } from "../runtime/helpers.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "./database.js";
import { indexInboxByAgent } from "../../host/store/postgres/inbox-by-agent.js";
import { roomForEveryBarrier } from "../../host/store/postgres/hot-barriers.js";

/** The texts of the statements the store's pool sends from now on. */
function statementsOf(store: PostgresStore): string[] {
  const sent: string[] = [];
  const query = store.pool.query.bind(store.pool) as (...args: unknown[]) => unknown;
  (store.pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const config = args[0] as { text?: unknown } | string | undefined;
    sent.push(typeof config === "string" ? config : String(config?.text ?? ""));
    return query(...args);
  };
  return sent;
}

const readsJournal = (text: string) => /FROM journal\b/.test(text) && !/DELETE FROM journal/.test(text);

describe("a conversation's first preparation (postgres)", () => {
  it("the first run of a new conversation reads no journal; the second reads it and its model sees the first", async () => {
    const environment = await Phronomy.open({ store: `${postgresUrl}?schema=${freshSchema()}&lease_ms=60000`, logger: recordingLogger() });
    atEnd(() => environment.close());
    const seen: string[][] = [];
    const model = scriptedModel(({ messages }) => {
      seen.push(messages.map((message) => message.role));
      return { text: `Answer ${seen.length}.` };
    });
    const conversation = environment.agent({ name: "support", model }).conversation(`user-${randomUUID()}`);
    const sent = statementsOf(environment.store as PostgresStore);

    await expect(conversation.start("Where is order 42?").result).resolves.toMatchObject({ outcome: "completed" });
    expect(sent.filter(readsJournal)).toEqual([]);
    expect(seen[0]).toEqual(["user"]);

    sent.length = 0;
    await expect(conversation.start("And order 43?").result).resolves.toMatchObject({ outcome: "completed" });
    expect(sent.filter(readsJournal)).toHaveLength(1);
    expect(seen[1]).toEqual(["user", "assistant", "user"]);
  });

  it("says it for an agent's first preparation only: an ensured root, a root the preparation writes, not after a blocked one", async () => {
    const store = await PostgresStore.open(postgresUrl, { schema: freshSchema() });
    atEnd(() => store.close());
    await store.ensureAgent("support", 1);
    expect(await store.run(prepare("e1", "support"))).toEqual({ outcome: "active", revision: 1, firstOfAgent: true });
    await store.run(terminalCommit("e1", 1));
    expect(await store.run(prepare("e2", "support"))).toEqual({ outcome: "active", revision: 1 });
    expect(await store.run(prepare("n1", "never-ensured", { firstBarrier: { callId: "m" } }))).toEqual({
      outcome: "active",
      revision: 1,
      firstBarrierRevision: 2,
      firstOfAgent: true,
    });
    // A blocked input, stored terminal, is never run: nothing said of it.
    expect(await store.run(prepare("b1", "blocked", { blockedBy: { code: "INPUT_BLOCKED", message: "no" } }))).toEqual({
      outcome: "terminal",
      revision: 1,
      error: { code: "INPUT_BLOCKED", message: "no" },
    });
    expect(await store.run(prepare("b2", "blocked"))).toEqual({ outcome: "active", revision: 1 });
    // Refused (the id is taken): nothing said, the root's revision unchanged.
    expect(await store.run(prepare("e1", "fresh"))).toMatchObject({ outcome: "not_established" });
    expect(await store.run(prepare("f1", "fresh"))).toEqual({ outcome: "active", revision: 1, firstOfAgent: true });
  });

  it("migrates a version 27 schema; the prepare_execution of the version before still answers 1 for a first preparation", async () => {
    const schema = freshSchema();
    const before = await PostgresStore.open(postgresUrl, { schema });
    await before.close();
    // Migration 28 taken back.
    await withClient(async (client) => {
      await client.query(`SET search_path = "${schema}"`);
      await client.query(
        `DROP FUNCTION prepare_execution_reporting_first; UPDATE store_version SET version = ${migrations.indexOf(createPrepareReportingFirst)}`,
      );
    });
    // Migration 29 (docs/decisions/0120) runs again after it: it replaces the reporting preparation's body.
    expect(migrations.slice(migrations.indexOf(createPrepareReportingFirst))).toEqual([
      createPrepareReportingFirst,
      roomAndDocumentsInline,
      indexInboxByAgent,
      roomForEveryBarrier,
    ]);
    const after = await PostgresStore.open(postgresUrl, { schema });
    atEnd(() => after.close());
    expect(await after.run(prepare("e1", "support"))).toEqual({ outcome: "active", revision: 1, firstOfAgent: true });
    // What a process of version 27 sends: `prepare_execution`, kept as it was.
    const old = prepareStatement(prepare("o1", "old-process"), undefined, randomUUID()).sql.replace("prepare_execution_reporting_first(", "prepare_execution(");
    const applied = await withClient(async (client) => {
      await client.query(`SET search_path = "${schema}"`);
      return (await client.query<{ applied: number }>(old)).rows[0]!.applied;
    });
    expect(applied).toBe(1);
    expect(await after.getExecution("o1")).toMatchObject({ status: "active", revision: 1 });
  });
});
