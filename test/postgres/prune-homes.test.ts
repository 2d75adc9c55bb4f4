// Conversation homes are pruned with the conversation's last row
// (docs/decisions/0112), at the store, two processes: the prune of
// executions never leaves a conversation with no rows (its `agents` row
// stays), so a home stays while anything of its conversation does — an
// `agents` row, an execution, a filed start — and goes once a purge took
// the last of them (and only when moved before the prune's cutoff: a home
// just moved has no rows yet). A process that noted the pruned home is
// fenced out of its stale placement without losing its partition, and is
// told where the conversation lives now (its natural partition).

import pg from "pg";
import { describe, expect, it } from "vitest";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { prepare } from "../store/fixtures.js";
import { atEnd, postgresUrl, withClient } from "./database.js";
import { conversationIn, twoStoresOnePartitionEach } from "./fixtures/two-stores.js";
import { eventually } from "./fixtures/free-schema.js";

const leaseMs = 1_000;

const setUp = () => twoStoresOnePartitionEach(leaseMs);

async function homesIn(schema: string): Promise<string[]> {
  return withClient(async (client) =>
    (await client.query<{ agent_id: string }>(`SELECT agent_id FROM ${schema}.conversation_homes ORDER BY agent_id`)).rows.map((row) => row.agent_id),
  );
}

async function movedOut(schema: string): Promise<Record<number, boolean>> {
  const rows = await withClient((client) => client.query<{ partition: number; moved_out: boolean }>(`SELECT partition, moved_out FROM ${schema}.partitions`));
  return Object.fromEntries(rows.rows.map((row) => [row.partition, row.moved_out]));
}

const prune = (store: PostgresStore, finishedBefore: number) => store.pruneExecutions({ type: "pruneExecutions", finishedBefore, executionsMax: 100 });

describe("conversation homes are pruned with the conversation's last row (PostgreSQL)", () => {
  it("keeps a home while its conversation has an agents row, an execution or a filed start; deletes it once nothing is left", async () => {
    const { schema, a, b, pa, pb } = await setUp();
    const [ran, filed, purged] = [conversationIn(pa, "ran"), conversationIn(pa, "filed"), conversationIn(pa, "purged")];
    const before = Date.now() - 1;
    for (const id of [ran, filed, purged]) expect(await b.takeConversationHere(id)).toEqual({ outcome: "moved", partition: pb });
    // Moved after the prune's cutoff: kept though nothing is written yet
    // (the mover's first preparation is on its way).
    await prune(b, before);
    expect(await homesIn(schema)).toEqual([filed, purged, ran].sort());

    // Rows of each: an execution, a filed start, an agents row.
    expect(await b.run(prepare("e-ran", ran))).toMatchObject({ outcome: "active" });
    await a.fileStart({ decisionId: "d-filed", executionId: "e-filed", agentId: filed, start: { input: "hi", options: {} }, filedAt: 1 });
    await b.ensureAgent(purged, 1);
    const later = Date.now() + 60_000;
    await prune(a, later);
    expect(await homesIn(schema)).toEqual([filed, purged, ran].sort());

    // The purge takes the last row of one: its home goes with the next prune.
    expect(await b.purgeAgent(purged)).toMatchObject({ purged: true });
    await prune(a, later);
    expect(await homesIn(schema)).toEqual([filed, ran].sort());
    // Restricted to one conversation, or with it excepted: only as asked.
    await withClient((client) => client.query(`DELETE FROM ${schema}.approval_inbox WHERE agent_id = $1`, [filed]));
    await b.pruneExecutions({ type: "pruneExecutions", finishedBefore: later, executionsMax: 100, exceptAgentIds: [filed] });
    expect(await homesIn(schema)).toEqual([filed, ran].sort());
    await b.pruneExecutions({ type: "pruneExecutions", finishedBefore: later, executionsMax: 100, agentId: filed });
    expect(await homesIn(schema)).toEqual([ran]);
  });

  it("a process that noted a pruned home is fenced out of it, keeps its partition, and learns where the conversation lives now", async () => {
    const { schema, a, b, pa, pb } = await setUp();
    const id = conversationIn(pa, "again");
    expect(await b.takeConversationHere(id)).toEqual({ outcome: "moved", partition: pb });
    expect(b.conversationPartition(id)).toBe(pb);
    await prune(a, Date.now() + 60_000);
    expect(await homesIn(schema)).toEqual([]);

    // b still places it in its home: its preparation is fenced by the
    // natural partition's holder (a), nothing is written, and the refusal
    // names where it lives now; b keeps its partition.
    const refused = (await b.run(prepare("e-b", id))) as { outcome: string; error?: { code: string; details?: Record<string, unknown> } };
    expect(refused.outcome).toBe("not_established");
    expect(refused.error?.details).toMatchObject({ movedTo: pa });
    expect(b.conversationPartition(id)).toBe(pa);
    expect(b.heldPartitions().map((grant) => grant.partition)).toEqual([pb]);
    const executions = await withClient((client) => client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.executions`));
    expect(executions.rows[0]!.n).toBe(0);
    // The natural holder writes it.
    expect(await a.run(prepare("e-a", id))).toMatchObject({ outcome: "active" });
  });

  it("a partition with a write in flight keeps its homes until a later prune", async () => {
    const { schema, a, b, pa, pb } = await setUp();
    const id = conversationIn(pa, "busy");
    expect(await b.takeConversationHere(id)).toEqual({ outcome: "moved", partition: pb });
    // A write of the natural partition holds its fence lock (shared) until it commits.
    const key = await withClient(
      async (client) => (await client.query<{ key: number }>("SELECT hashtext($1) AS key", [`phronomy partition fence:${schema}`])).rows[0]!.key,
    );
    await withClient(async (client) => {
      await client.query("BEGIN");
      await client.query("SELECT pg_advisory_xact_lock_shared($1, $2)", [key, pa]);
      await prune(a, Date.now() + 60_000);
      expect(await homesIn(schema)).toEqual([id]);
      await client.query("COMMIT");
    });
    await prune(a, Date.now() + 60_000);
    expect(await homesIn(schema)).toEqual([]);
  });

  it("clears a partition's moved_out with the last home moved out of it, in the prune's transaction; a second moved conversation keeps it set", async () => {
    const { schema, a, b, pa, pb } = await setUp();
    const [first, second] = [conversationIn(pa, "first"), conversationIn(pa, "second")];
    expect(await b.takeConversationHere(first)).toMatchObject({ outcome: "moved" });
    expect(await b.takeConversationHere(second)).toMatchObject({ outcome: "moved" });
    for (const id of [first, second]) await b.ensureAgent(id, 1);
    expect(await movedOut(schema)).toEqual({ [pa]: true, [pb]: false });
    const later = Date.now() + 60_000;

    // One of the two purged and pruned: the other is still homed elsewhere.
    expect(await b.purgeAgent(first)).toMatchObject({ purged: true });
    await prune(a, later);
    expect(await homesIn(schema)).toEqual([second]);
    expect(await movedOut(schema)).toEqual({ [pa]: true, [pb]: false });

    // The last one: its home and the flag go in one prune.
    expect(await b.purgeAgent(second)).toMatchObject({ purged: true });
    await prune(a, later);
    expect(await homesIn(schema)).toEqual([]);
    expect(await movedOut(schema)).toEqual({ [pa]: false, [pb]: false });
    // The natural holder writes the partition's conversations from its row
    // again, the pruned ones included; a move out of it flags it again.
    expect(await a.run(prepare("e-again", first))).toMatchObject({ outcome: "active" });
    expect(await b.takeConversationHere(conversationIn(pa, "third"))).toMatchObject({ outcome: "moved" });
    expect(await movedOut(schema)).toEqual({ [pa]: true, [pb]: false });
  });

  it("a move out of the partition in flight keeps the flag and the homes until a later prune; the flag cleared, a move reads it under the lock and sets it again", async () => {
    const { schema, a, b, pa, pb } = await setUp();
    const id = conversationIn(pa, "pruned");
    expect(await b.takeConversationHere(id)).toEqual({ outcome: "moved", partition: pb });
    const { epoch } = b.heldPartitions()[0]!;
    const client = new pg.Client({ connectionString: postgresUrl });
    await client.connect();
    atEnd(() => client.end());
    await client.query(`SET search_path = "${schema}"`);
    // Another conversation of the partition moved out, not committed: the
    // move holds the partition's fence lock shared (the flag was set).
    const inFlight = conversationIn(pa, "in-flight");
    await client.query("BEGIN");
    const moved = await client.query("SELECT home_outcome FROM home_conversation($1, 'b', $2, $3, 1000)", [inFlight, pb, epoch]);
    expect(moved.rows).toEqual([{ home_outcome: "moved" }]);
    await prune(a, Date.now() + 60_000);
    expect(await homesIn(schema)).toEqual([id]);
    expect(await movedOut(schema)).toEqual({ [pa]: true, [pb]: false });
    await client.query("COMMIT");
    await b.ensureAgent(inFlight, 1);
    // Committed: the first home goes, the flag stays (the second is homed elsewhere).
    await prune(a, Date.now() + 60_000);
    expect(await homesIn(schema)).toEqual([inFlight]);
    expect(await movedOut(schema)).toEqual({ [pa]: true, [pb]: false });

    // A prune that clears the flag, not committed (its statements played
    // here): a move out of the partition waits for it (the lock shared),
    // then reads the flag cleared and sets it again (the lock exclusive),
    // so the fence reads its home.
    expect(await b.purgeAgent(inFlight)).toMatchObject({ purged: true });
    const key = await withClient(
      async (other) => (await other.query<{ key: number }>("SELECT hashtext($1) AS key", [`phronomy partition fence:${schema}`])).rows[0]!.key,
    );
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock($1, $2)", [key, pa]);
    await client.query("DELETE FROM conversation_homes WHERE agent_id = $1", [inFlight]);
    await client.query("UPDATE partitions SET moved_out = false WHERE partition = $1", [pa]);
    const waiting = b.takeConversationHere(conversationIn(pa, "after"), 5_000);
    // The move waits for the partition's fence lock (held here exclusive).
    await eventually(
      () =>
        withClient(
          async (other) =>
            (
              await other.query<{ n: number }>(
                "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid::bigint = ($1::bigint & 4294967295) AND objid::bigint = $2 AND objsubid = 2",
                [key, pa],
              )
            ).rows[0]!.n,
        ),
      (waiting) => waiting === 1,
      "the move waits for the partition's fence lock",
    );
    await client.query("COMMIT");
    expect(await waiting).toMatchObject({ outcome: "moved" });
    expect(await movedOut(schema)).toEqual({ [pa]: true, [pb]: false });
    const refused = (await a.run(prepare("e-after", conversationIn(pa, "after")))) as { outcome: string; error?: { details?: Record<string, unknown> } };
    expect(refused).toMatchObject({ outcome: "not_established", error: { details: { movedTo: pb } } });
  });
});
