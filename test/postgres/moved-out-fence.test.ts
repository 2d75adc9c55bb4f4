// The fence reads homes only in a partition a conversation was moved out of
// (docs/decisions/0107, migration 25): writes of a store where nothing was
// moved leave every partition's `moved_out` false; the first move out of a
// partition sets it, after waiting for the writes in flight of that
// partition (its fence lock taken exclusive); the natural holder — opened
// without `takeIdleHere` — is fenced out of the moved conversation and
// still writes the partition's other conversations. A process opened with
// `takeIdleHere` flags every partition whose fence lock is free at open,
// without waiting for the others.

import { describe, expect, it } from "vitest";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { prepare, providerBarrier } from "../store/fixtures.js";
import { atEnd, postgresUrl, withClient } from "./database.js";
import pg from "pg";
import { conversationIn, twoStoresOnePartitionEach } from "./fixtures/two-stores.js";

const leaseMs = 1_000;

const setUp = () => twoStoresOnePartitionEach(leaseMs);

async function movedOut(schema: string): Promise<Record<number, boolean>> {
  const rows = await withClient((client) => client.query<{ partition: number; moved_out: boolean }>(`SELECT partition, moved_out FROM ${schema}.partitions`));
  return Object.fromEntries(rows.rows.map((row) => [row.partition, row.moved_out]));
}

describe("the fence of a partition nothing was moved out of (PostgreSQL)", () => {
  it("writes flag nothing; the first move out flags its natural partition only; the natural holder is fenced out of the moved conversation and writes its others", async () => {
    const { schema, a, b, pa, pb } = await setUp();
    // Writes of both processes, nothing moved: no partition is flagged.
    expect(await a.run(prepare("e-a", conversationIn(pa, "own")))).toMatchObject({ outcome: "active" });
    expect(await a.run(providerBarrier("e-a", 1))).toBeDefined();
    expect(await b.run(prepare("e-b", conversationIn(pb, "own")))).toMatchObject({ outcome: "active" });
    expect(await movedOut(schema)).toEqual({ [pa]: false, [pb]: false });

    const moved = conversationIn(pa, "moved");
    expect(await b.takeConversationHere(moved)).toEqual({ outcome: "moved", partition: pb });
    expect(await movedOut(schema)).toEqual({ [pa]: true, [pb]: false });
    // A second move out of the same partition keeps the flag.
    expect(await b.takeConversationHere(conversationIn(pa, "second"))).toMatchObject({ outcome: "moved" });
    expect(await movedOut(schema)).toEqual({ [pa]: true, [pb]: false });

    // The natural holder (opened without takeIdleHere) is fenced by the home…
    const refused = (await a.run(prepare("e-a2", moved))) as { outcome: string; error?: { code: string } };
    expect(refused).toMatchObject({ outcome: "not_established", error: { code: "AGENT_BUSY" } });
    // …and still writes the flagged partition's other conversations.
    expect(await a.run(providerBarrier("e-a", 2))).toBeDefined();
    expect(await a.run(prepare("e-a3", conversationIn(pa, "later")))).toMatchObject({ outcome: "active" });
    // The mover writes the moved one.
    expect(await b.run(prepare("e-b2", moved))).toMatchObject({ outcome: "active" });
  });

  it("the first move out of a partition waits for the writes in flight of it: a write holding its fence lock refuses the move until it commits", async () => {
    const { schema, b, pa, pb } = await setUp();
    const client = new pg.Client({ connectionString: postgresUrl });
    await client.connect();
    atEnd(() => client.end());
    // A write of another conversation of the partition, in flight: it
    // passed the fence (the lock shared, the flag read false) and has not committed.
    await client.query(`SET search_path = "${schema}"`);
    await client.query("BEGIN");
    const { epoch } = (await client.query<{ epoch: string }>(`SELECT epoch FROM partitions WHERE partition = $1`, [pa])).rows[0]!;
    const passed = await client.query<{ held: boolean }>(`SELECT partition_fence_held($1, 'a', $2, false) AS held`, [conversationIn(pa, "writing"), epoch]);
    expect(passed.rows[0]!.held).toBe(true);
    const moved = conversationIn(pa, "moved");
    // The move waits lease/6 for the partition's lock, is not granted it, and refuses.
    expect(await b.takeConversationHere(moved)).toEqual({ outcome: "refused", partition: pa });
    expect(await movedOut(schema)).toEqual({ [pa]: false, [pb]: false });
    await client.query("COMMIT");
    expect(await b.takeConversationHere(moved)).toEqual({ outcome: "moved", partition: pb });
    expect(await movedOut(schema)).toEqual({ [pa]: true, [pb]: false });
  });

  it("a process opened with takeIdleHere flags every partition whose fence lock is free, without waiting for a write in flight; that one is flagged later", async () => {
    const { schema, url, pa, pb } = await setUp();
    const client = new pg.Client({ connectionString: postgresUrl });
    await client.connect();
    atEnd(() => client.end());
    await client.query(`SET search_path = "${schema}"`);
    await client.query("BEGIN");
    const { epoch } = (await client.query<{ epoch: string }>("SELECT epoch FROM partitions WHERE partition = $1", [pa])).rows[0]!;
    await client.query("SELECT partition_fence_held($1, 'a', $2, false)", [conversationIn(pa, "writing"), epoch]);
    // Opened while a write of pa holds its lock: the open does not wait for it.
    const c = await PostgresStore.open(url, { instanceId: "c", takeIdleHere: true });
    atEnd(() => c.close());
    expect(await movedOut(schema)).toEqual({ [pa]: false, [pb]: true });
    await client.query("COMMIT");
    // Flagged once its lock is free. The function skips a partition whose
    // row a lease renewal holds locked at that instant (every lease/3), so
    // it is asked again until it answers none left, as at open.
    const left = await withClient(async (other) => {
      await other.query(`SET search_path = "${schema}"`);
      const until = Date.now() + 5_000;
      for (;;) {
        const answer = (await other.query<{ left: number }>("SELECT flag_partitions_moved_out() AS left")).rows[0]!.left;
        if (answer === 0 || Date.now() > until) return answer;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    });
    expect(left).toBe(0);
    expect(await movedOut(schema)).toEqual({ [pa]: true, [pb]: true });
  });
});
