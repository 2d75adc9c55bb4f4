// Whether a conversation has rows is one probe of the inbox, not a scan
// (migration 30, docs/decisions/0128): `conversation_has_rows` — which the
// move of a new conversation and the prune of homes ask — finds a
// conversation's inbox rows of any state through `approval_inbox_by_agent`,
// on a new schema and on one migrated from version 29.

import { describe, expect, it } from "vitest";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { migrations } from "../../host/store/postgres/schema.js";
import { indexInboxByAgent } from "../../host/store/postgres/inbox-by-agent.js";
import { roomForEveryBarrier } from "../../host/store/postgres/hot-barriers.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "./database.js";

/** Settled inbox rows of `count` other conversations, and the statistics. */
async function settledInbox(schema: string, count: number): Promise<void> {
  await withClient(async (client) => {
    await client.query(`
      INSERT INTO "${schema}".approval_inbox (decision_id, execution_id, agent_id, approval_id, approved, execution_revision, filed_by, filed_at, state, settled_at)
      SELECT 'd-' || n, 'e-' || n, 'other-' || n, 'a-' || n, true, 1, 'p', n, 'applied', n FROM generate_series(1, ${count}) AS n`);
    await client.query(`ANALYZE "${schema}".approval_inbox`);
  });
}

/** The inbox's part of `conversation_has_rows` (homes-rows.ts), as the function holds it. */
const inboxPart = "EXISTS (SELECT 1 FROM approval_inbox WHERE approval_inbox.agent_id = p_agent_id)";

/** The plan of the inbox's part of `conversation_has_rows`, and its answer. */
async function probe(schema: string, agentId: string): Promise<{ plan: string; hasRows: boolean }> {
  return withClient(async (client) => {
    await client.query(`SET search_path = "${schema}"`);
    // The statement explained below is the function's own (checked, so the two cannot drift apart).
    const source = (
      await client.query<{ prosrc: string }>("SELECT prosrc FROM pg_proc WHERE proname = 'conversation_has_rows' AND pronamespace = $1::regnamespace", [schema])
    ).rows[0]!.prosrc;
    expect(source).toContain(inboxPart);
    const plan = (await client.query<{ "QUERY PLAN": string }>(`EXPLAIN SELECT ${inboxPart.replace("p_agent_id", "$1")}`, [agentId])).rows
      .map((row) => row["QUERY PLAN"])
      .join("\n");
    const hasRows = (await client.query<{ has: boolean }>("SELECT conversation_has_rows($1) AS has", [agentId])).rows[0]!.has;
    return { plan, hasRows };
  });
}

describe("the inbox indexed by conversation (PostgreSQL, migration 30)", () => {
  it("answers whether a conversation has inbox rows through the index, settled rows included", async () => {
    const schema = freshSchema();
    const store = await PostgresStore.open(postgresUrl, { schema });
    atEnd(() => store.close());
    await settledInbox(schema, 5_000);

    const none = await probe(schema, "new-conversation");
    expect(none.plan).toContain("approval_inbox_by_agent");
    expect(none.plan).not.toContain("Seq Scan");
    expect(none.hasRows).toBe(false);
    // A settled row is a row: the conversation is not moved nor its home pruned.
    expect(await probe(schema, "other-4321")).toMatchObject({ hasRows: true });
  });

  it("is created by the migration from version 29, and the rows written before it are found", async () => {
    const schema = freshSchema();
    const before = await PostgresStore.open(postgresUrl, { schema });
    await before.close();
    await settledInbox(schema, 5_000);
    await withClient(async (client) => {
      await client.query(`SET search_path = "${schema}"`);
      await client.query(`DROP INDEX approval_inbox_by_agent; UPDATE store_version SET version = ${migrations.indexOf(indexInboxByAgent)}`);
    });
    expect(migrations.slice(migrations.indexOf(indexInboxByAgent))).toEqual([indexInboxByAgent, roomForEveryBarrier]);
    expect((await probe(schema, "new-conversation")).plan).toContain("Seq Scan");

    const after = await PostgresStore.open(postgresUrl, { schema });
    atEnd(() => after.close());
    const version = await withClient(
      async (client) => (await client.query<{ version: number }>(`SELECT version FROM "${schema}".store_version`)).rows[0]!.version,
    );
    expect(version).toBe(migrations.length);
    expect(await probe(schema, "new-conversation")).toMatchObject({ hasRows: false, plan: expect.stringContaining("approval_inbox_by_agent") });
    expect(await probe(schema, "other-17")).toMatchObject({ hasRows: true });
  });
});
