// Migration 31 (docs/decisions/0127): `home_conversation` takes its locks
// by trying them first and, when every one is granted at once, checks and
// moves without a subtransaction; a lock refused sends it down migration
// 26's path, each wait bounded by `wait_ms`. The answers are the same on
// both paths: these call the function directly on a schema of two
// partitions, one held by each store.

import pg from "pg";
import { describe, expect, it } from "vitest";
import { moveLockClass } from "../../host/store/postgres/homes.js";
import { fenceLockClass } from "../../host/store/postgres/partitions.js";
import { backendBlockedBy, postgresUrl, withClient } from "./database.js";
import { conversationIn, twoStoresOnePartitionEach } from "./fixtures/two-stores.js";

interface Target {
  readonly schema: string;
  readonly owner: string;
  readonly epoch: number;
  /** The partition the move goes to (held by `owner`), and the other. */
  readonly to: number;
  readonly from: number;
}

/** Short enough for the two stores to balance at once (conversation-homes' lease). */
const leaseMs = 2_000;

async function setUp(): Promise<Target> {
  const { schema, pb, pa } = await twoStoresOnePartitionEach(leaseMs);
  const row = await withClient(
    async (client) =>
      (await client.query<{ owner: string; epoch: string }>(`SELECT owner, epoch FROM ${schema}.partitions WHERE partition = $1`, [pb])).rows[0]!,
  );
  return { schema, owner: row.owner, epoch: Number(row.epoch), to: pb, from: pa };
}

async function move(client: pg.ClientBase, target: Target, agentId: string, waitMs: number): Promise<{ outcome: string; partition: number }> {
  // The functions call each other unqualified: the store's connections have the schema on their path.
  await client.query(`SET search_path = ${target.schema}`);
  const { rows } = await client.query<{ home_outcome: string; home_partition: number }>("SELECT * FROM home_conversation($1, $2, $3, $4, $5)", [
    agentId,
    target.owner,
    target.to,
    target.epoch,
    waitMs,
  ]);
  return { outcome: rows[0]!.home_outcome, partition: rows[0]!.home_partition };
}

async function flagged(client: pg.ClientBase, target: Target): Promise<boolean> {
  return (await client.query<{ moved_out: boolean }>(`SELECT moved_out FROM ${target.schema}.partitions WHERE partition = $1`, [target.from])).rows[0]!
    .moved_out;
}

async function advisoryLocksHeld(client: pg.ClientBase): Promise<string[]> {
  const { rows } = await client.query<{ lock: string }>(
    "SELECT classid::int || ':' || objid::int || ':' || mode AS lock FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()",
  );
  return rows.map((row) => row.lock).sort();
}

describe("the move's uncontended fast path (migration 31)", () => {
  it("moves with its locks held as migration 26's did, on a flagged partition and on its first move out alike", async () => {
    const target = await setUp();
    const key = await withClient((client) => fenceLockClass(client, target.schema));
    await withClient(async (client) => {
      // The first move out of the partition: the flag unset, the slow path sets it.
      const first = conversationIn(target.from, "first");
      await client.query("BEGIN");
      expect(await move(client, target, first, 1_000)).toEqual({ outcome: "moved", partition: target.to });
      await client.query("COMMIT");
      expect(await flagged(client, target)).toBe(true);
      // Flagged now: every lock tried and granted; the locks a move holds to
      // its commit are those of the slow path.
      const second = conversationIn(target.from, "second");
      await client.query("BEGIN");
      expect(await move(client, target, second, 1_000)).toEqual({ outcome: "moved", partition: target.to });
      const hash = (await client.query<{ hash: number }>("SELECT hashtext($1) AS hash", [second])).rows[0]!.hash;
      expect(await advisoryLocksHeld(client)).toEqual(
        [`${key}:${target.from}:ShareLock`, `${key}:${target.to}:ShareLock`, `${moveLockClass(key)}:${hash}:ExclusiveLock`].sort(),
      );
      await client.query("COMMIT");
      // Moved already: `home` at once; a conversation of the target's own partition: refused.
      expect(await move(client, target, second, 1_000)).toEqual({ outcome: "home", partition: target.to });
      expect(await move(client, target, conversationIn(target.to, "own"), 1_000)).toEqual({ outcome: "refused", partition: target.to });
      // A conversation with rows: refused on the fast path too.
      const withRows = conversationIn(target.from, "rows");
      await client.query(
        `INSERT INTO ${target.schema}.queued_messages (execution_id, agent_id, seq, input, config, created_at) VALUES ($1, $2, 1, '"hi"', '{}', 0)`,
        [`${withRows}-queued`, withRows],
      );
      expect(await move(client, target, withRows, 1_000)).toEqual({ outcome: "refused", partition: target.from });
    });
  });

  it("waits for a contended conversation lock (the slow path) and moves once it is let go, or refuses past wait_ms", async () => {
    const target = await setUp();
    const key = await withClient((client) => fenceLockClass(client, target.schema));
    await withClient(async (client) => {
      await client.query(`UPDATE ${target.schema}.partitions SET moved_out = true WHERE partition = $1`, [target.from]);
      const contended = conversationIn(target.from, "contended");
      const blocker = new pg.Client({ connectionString: postgresUrl });
      await blocker.connect();
      try {
        await blocker.query("BEGIN");
        await blocker.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [moveLockClass(key), contended]);
        // Held past wait_ms: refused, nothing written.
        expect(await move(client, target, contended, 50)).toEqual({ outcome: "refused", partition: target.from });
        // Let go while the move waits: moved.
        const moving = move(client, target, contended, 20_000);
        await backendBlockedBy(blocker);
        await blocker.query("COMMIT");
        expect(await moving).toEqual({ outcome: "moved", partition: target.to });
      } finally {
        await blocker.end();
      }
      // The session's lock_timeout is its own again on both paths.
      expect((await client.query<{ lock_timeout: string }>("SHOW lock_timeout")).rows[0]!.lock_timeout).toBe("0");
    });
  });
});
