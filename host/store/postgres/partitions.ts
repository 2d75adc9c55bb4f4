// Ownership by partitions on PostgreSQL (issue 13, docs/decisions/0030):
// every agent id (a conversation) belongs to one of a fixed number of
// partitions, and coordinator processes hold leases on partitions, not on
// agents. This file holds the SQL: the tables, the hash, the one statement
// a process sends per tick, taking and giving partitions up.
//
// Rules kept here:
// * The partition of an agent is `md5(agent id)`'s first 32 bits modulo the
//   partition count, computed the same way here (`partitionOf`) and in the
//   database (`partition_of`, an IMMUTABLE function with the count written
//   into it when the schema was created). md5 is stable across PostgreSQL
//   and Node versions; `hashtext` is not documented to be.
// * The count is fixed when the schema is created (`partition_count`):
//   changing it would move agents between partitions under live leases.
// * Expiry is the database's clock, as for the agent leases of 0010. A
//   partition taken (free, expired, released, or reclaimed by its own
//   instance) gets epoch + 1; renewing keeps the epoch.
// * Releasing expires the row now and keeps it: the epoch keeps growing.
// * The fence lock (migration 12, docs/decisions/0042): every write takes
//   its partition's advisory lock shared before reading the fence; every
//   take (owner or epoch changed) takes it exclusive first. Renewals and
//   releases change only the expiry and take no lock. The lock's first key
//   is computed once, when the migration runs, and written into the
//   functions (so `hashtext`'s version does not matter).

import { createHash } from "node:crypto";
import type pg from "pg";
import { InvalidInputError } from "../../errors.js";

/** Partitions of a new schema unless the `partitions` option names
 * another count: enough for 256 processes to hold one each, and one row
 * each in the tick's read (256 rows ≈ 10 kB per tick). */
export const partitionCountDefault = 256;
export const partitionCountMin = 1;
/** A tick reads every partition row: 4,096 is ≈ 160 kB per tick. */
export const partitionCountMax = 4_096;

/** Partitions a live process gives up per tick when it holds more than its
 * share: gradual, so a join moves executions a few partitions at a time. */
export const partitionsReleasedPerTickMax = 16;

/** Members not seen for this long are deleted from `partition_members`. */
const memberForgottenAfterMs = 3_600_000;

type Queryable = pg.Pool | pg.ClientBase;

/** The partition of an agent id (the database's `partition_of`). */
export function partitionOf(agentId: string, count: number): number {
  const digest = createHash("md5").update(agentId, "utf8").digest();
  return digest.readUInt32BE(0) % count;
}

export function checkPartitionCount(value: unknown, what: string): asserts value is number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < partitionCountMin || value > partitionCountMax) {
    throw new InvalidInputError(
      `${what} (the number of partitions a new schema is created with) must be an integer from ${partitionCountMin} to ${partitionCountMax}, got ${typeof value === "number" ? String(value) : JSON.stringify(value)}`,
    );
  }
}

/** Migration 10: the partition table (every partition a row, free), the
 * members that balance them, the count, and `partition_of`. */
export async function createPartitions(client: pg.ClientBase, count: number): Promise<void> {
  checkPartitionCount(count, "partitions");
  await client.query(`
    CREATE TABLE partition_settings (partition_count integer NOT NULL);
    INSERT INTO partition_settings (partition_count) VALUES (${count});
    -- One row per partition, created free (never held: epoch 0, expired).
    CREATE TABLE partitions (
      partition  integer PRIMARY KEY,
      owner      text NOT NULL,
      epoch      bigint NOT NULL,
      expires_at timestamptz NOT NULL
    );
    INSERT INTO partitions (partition, owner, epoch, expires_at)
    SELECT n, '', 0, 'epoch' FROM generate_series(0, ${count - 1}) AS n;
    -- The processes sharing the partitions: each renews its row on its tick;
    -- the live ones divide the partitions among themselves.
    CREATE TABLE partition_members (
      instance_id text PRIMARY KEY,
      expires_at  timestamptz NOT NULL
    );
    CREATE FUNCTION partition_of(p_agent_id text) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT (('x' || substr(md5(p_agent_id), 1, 8))::bit(32)::bigint % ${count})::integer
    $$;
    -- Recovery of a partition taken over reads its unfinished executions.
    CREATE INDEX executions_unfinished_by_partition ON executions (partition_of(agent_id)) WHERE status IN ('preparing', 'active', 'suspended');
  `);
}

/** The partition count a schema was created with. */
export async function readPartitionCount(client: Queryable): Promise<number> {
  const row = (await client.query<{ partition_count: number }>("SELECT partition_count FROM partition_settings")).rows[0];
  if (row === undefined) throw new Error("partition_settings holds no row");
  return Number(row.partition_count);
}

/** A partition as the tick read it. */
export interface PartitionRow {
  readonly partition: number;
  readonly owner: string;
  readonly epoch: number;
  /** Server time, ms since the epoch. */
  readonly expiresAt: number;
  /** This tick renewed it (held by this process at the epoch it sent). */
  readonly renewed: boolean;
}

export interface Tick {
  readonly partitions: readonly PartitionRow[];
  /** The database's clock when the statement ran. */
  readonly now: number;
  /** Live members, this one included when it is one. */
  readonly members: number;
}

/** The one statement of a tick: this member's heartbeat, the renewal of
 * every partition it holds (at the epochs it holds), and the whole
 * partition table as it is after the renewal. */
export async function tick(
  client: Queryable,
  instanceId: string,
  held: readonly { readonly partition: number; readonly epoch: number }[],
  leaseMs: number,
  member: boolean,
): Promise<Tick> {
  const { rows } = await client.query<{
    partition: number;
    owner: string;
    epoch: string;
    expires_ms: string;
    renewed: boolean;
    now_ms: string;
    members: string;
  }>(
    `
    WITH member AS (
      INSERT INTO partition_members (instance_id, expires_at) SELECT $1, clock_timestamp() + $4 * interval '1 millisecond' WHERE $6::boolean
      ON CONFLICT (instance_id) DO UPDATE SET expires_at = excluded.expires_at
      RETURNING instance_id
    ), forgotten AS (
      DELETE FROM partition_members WHERE expires_at < clock_timestamp() - $5 * interval '1 millisecond' AND instance_id <> $1
    ), renewed AS (
      UPDATE partitions SET expires_at = clock_timestamp() + $4 * interval '1 millisecond'
      FROM unnest($2::integer[], $3::bigint[]) AS held(partition, epoch)
      WHERE partitions.partition = held.partition AND partitions.epoch = held.epoch AND partitions.owner = $1
        AND partitions.expires_at > clock_timestamp()
      RETURNING partitions.partition, partitions.expires_at
    )
    SELECT p.partition, p.owner, p.epoch,
           floor(extract(epoch FROM coalesce(r.expires_at, p.expires_at)) * 1000)::bigint AS expires_ms,
           (r.partition IS NOT NULL) AS renewed,
           floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms,
           CASE WHEN $6::boolean THEN 1 ELSE 0 END + (SELECT count(*) FROM partition_members m WHERE m.expires_at > clock_timestamp() AND m.instance_id <> $1) AS members
    FROM partitions p LEFT JOIN renewed r USING (partition)
    ORDER BY p.partition
  `,
    [instanceId, held.map((lease) => lease.partition), held.map((lease) => lease.epoch), leaseMs, memberForgottenAfterMs, member],
  );
  return {
    partitions: rows.map((row) => ({
      partition: Number(row.partition),
      owner: row.owner,
      epoch: Number(row.epoch),
      expiresAt: Number(row.expires_ms),
      renewed: row.renewed,
    })),
    now: Number(rows[0]?.now_ms ?? Date.now()),
    members: Number(rows[0]?.members ?? 1),
  };
}

export interface PartitionGrant {
  readonly partition: number;
  readonly owner: string;
  readonly epoch: number;
  readonly expiresAt: number;
}

/** Takes these partitions where they are free or expired (epoch + 1); a
 * partition another live process holds is left alone, and so is one whose
 * fence a write still holds after `fenceWaitFraction` of the lease (taken
 * at a later tick). */
export async function take(client: Queryable, instanceId: string, partitions: readonly number[], leaseMs: number): Promise<PartitionGrant[]> {
  if (partitions.length === 0) return [];
  const { rows } = await client.query<TakenRow>("SELECT * FROM take_partitions($1, $2::integer[], $3, $4)", [
    instanceId,
    partitions,
    leaseMs,
    Math.ceil(leaseMs * fenceWaitFraction),
  ]);
  return rows.map(grantOfTaken);
}

/** Instant reclaim (docs/decisions/0030): a process opening with the
 * instance id of the partitions' holder — which it knows is dead, since it
 * holds that instance's session lock — takes them at once, epoch + 1 (once
 * the dead process's last writes, if any are still running, have ended). */
export async function reclaim(client: Queryable, instanceId: string, leaseMs: number): Promise<PartitionGrant[]> {
  const { rows } = await client.query<TakenRow>("SELECT * FROM take_partitions($1, NULL, $2, $3)", [
    instanceId,
    leaseMs,
    Math.ceil(leaseMs * reclaimWaitFraction),
  ]);
  return rows.map(grantOfTaken);
}

/** How long a take waits, in all, for the writes holding the fences of the
 * partitions it takes (docs/decisions/0042): a tick's take must leave the
 * next renewal time; a partition still fenced then is taken at a later tick. */
const fenceWaitFraction = 1 / 6;
/** The same at open (reclaim): nothing else waits for it. */
const reclaimWaitFraction = 1 / 2;

interface TakenRow {
  taken_partition: number;
  taken_owner: string;
  taken_epoch: string;
  taken_expires_ms: string;
}

function grantOfTaken(row: TakenRow): PartitionGrant {
  return { partition: Number(row.taken_partition), owner: row.taken_owner, epoch: Number(row.taken_epoch), expiresAt: Number(row.taken_expires_ms) };
}

/** Expires the partitions this owner holds at these epochs (the rows and
 * epochs stay), so another process takes them at once. */
export async function release(
  client: Queryable,
  instanceId: string,
  held: readonly { readonly partition: number; readonly epoch: number }[],
  channel?: string,
): Promise<void> {
  if (held.length === 0) return;
  // Told on `channel` (the partitions released, comma-separated), sent at
  // commit and only for rows released: the other processes stop taking
  // their view's word that this one holds them (docs/decisions/0068).
  await client.query(
    `
    WITH released AS (
      UPDATE partitions SET expires_at = clock_timestamp()
      FROM unnest($2::integer[], $3::bigint[]) AS held(partition, epoch)
      WHERE partitions.partition = held.partition AND partitions.epoch = held.epoch AND partitions.owner = $1
        AND partitions.expires_at > clock_timestamp()
      RETURNING partitions.partition
    )
    SELECT CASE WHEN $4::text IS NOT NULL THEN pg_notify($4::text, string_agg(partition::text, ',')) END AS told FROM released HAVING count(*) > 0
  `,
    [instanceId, held.map((lease) => lease.partition), held.map((lease) => lease.epoch), channel ?? null],
  );
}

/** Leaves the members (on close), so the others' share grows at once. */
export async function leave(client: Queryable, instanceId: string): Promise<void> {
  await client.query("DELETE FROM partition_members WHERE instance_id = $1", [instanceId]);
}

/** Who holds an agent's partition as the database says now. */
export async function holderOf(
  client: Queryable,
  agentId: string,
): Promise<{ readonly owner: string; readonly epoch: number; readonly expiresAt: number } | undefined> {
  const row = (
    await client.query<{ owner: string; epoch: string; expires_ms: string }>(
      "SELECT owner, epoch, floor(extract(epoch FROM expires_at) * 1000)::bigint AS expires_ms FROM partitions WHERE partition = conversation_partition($1) AND expires_at > clock_timestamp()",
      [agentId],
    )
  ).rows[0];
  return row === undefined ? undefined : { owner: row.owner, epoch: Number(row.epoch), expiresAt: Number(row.expires_ms) };
}

/** The SQL condition "the fence (`owner`, `epoch`) holds the partition of
 * `agent`" as a plain read, for the explanations of refusals (reads). A
 * write checks `fenceHeldSql` instead. `live` adds the expiry. */
export function partitionHeldSql(agent: string, owner: string, epoch: string, live: boolean): string {
  return `EXISTS (SELECT 1 FROM partitions WHERE partitions.partition = conversation_partition(${agent}) AND partitions.owner = ${owner} AND partitions.epoch = ${epoch}${live ? " AND partitions.expires_at > clock_timestamp()" : ""})`;
}

/** The SQL condition "the fence (`owner`, `epoch`) holds the partition of
 * `agent`" for a write, in the same statement as the write it guards: it
 * takes the partition's fence lock (shared) for the rest of the write's
 * transaction, then reads the partition row (docs/decisions/0042). `live`
 * adds the expiry (admissions); barriers check owner and epoch only (0010). */
export function fenceHeldSql(agent: string, owner: string, epoch: string, live: boolean): string {
  return `partition_fence_held(${agent}, ${owner}, ${epoch}, ${live ? "true" : "false"})`;
}

/** The first key of a schema's fence locks (the second is the partition):
 * a hash of the schema's name, so stores in different schemas of one
 * database do not wait for each other (a collision only makes them wait). */
export async function fenceLockClass(client: pg.ClientBase, schema: string): Promise<number> {
  const row = (await client.query<{ key: number }>("SELECT hashtext($1) AS key", [`phronomy partition fence:${schema}`])).rows[0]!;
  return Number(row.key);
}

/** Migration 12 (docs/decisions/0042): the partition fence lock. A write's
 * fence check (`partition_fence_held`) takes the partition's advisory lock
 * SHARED until its transaction ends, then reads the partition row — in a
 * statement of its own inside the function, so under READ COMMITTED with a
 * snapshot taken after the lock was granted. A take (`take_partitions`)
 * takes the same lock EXCLUSIVE before it changes owner and epoch, until
 * it commits. So a takeover waits for the writes that passed the former
 * fence to commit, and a write arriving meanwhile waits for the takeover
 * and then sees it: no write of a fenced epoch commits after the takeover.
 * Renewals and releases change only the expiry and take no lock, so they
 * never wait for writes (the reason a row lock on the partition row was
 * not used: a renewal updates every held row every tick). */
export async function lockPartitionFences(client: pg.ClientBase, schema: string): Promise<void> {
  const key = await fenceLockClass(client, schema);
  await client.query(`
    CREATE FUNCTION partition_fence_held(p_agent_id text, p_owner text, p_epoch bigint, p_live boolean)
    RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
    DECLARE
      fenced integer := partition_of(p_agent_id);
    BEGIN
      PERFORM pg_advisory_xact_lock_shared(${key}, fenced);
      -- A statement of its own (this function is VOLATILE): its snapshot is
      -- taken now, after the lock, so a takeover committed while this write
      -- waited for it is seen.
      RETURN EXISTS (SELECT 1 FROM partitions WHERE partitions.partition = fenced AND partitions.owner = p_owner
                       AND partitions.epoch = p_epoch AND (NOT p_live OR partitions.expires_at > clock_timestamp()));
    END $$;

    -- Takes partitions (epoch + 1): the listed ones that are free or expired,
    -- or (p_partitions NULL, instant reclaim) every one p_owner holds. Rows
    -- another take is changing are skipped. Each partition's fence lock is
    -- taken exclusive, in partition order, waiting p_wait_ms in all for the
    -- writes that hold it; a partition whose lock is not granted by then is
    -- left as it is (taken at a later tick).
    CREATE FUNCTION take_partitions(p_owner text, p_partitions integer[], p_lease_ms bigint, p_wait_ms integer)
    RETURNS TABLE (taken_partition integer, taken_owner text, taken_epoch bigint, taken_expires_ms bigint)
    LANGUAGE plpgsql VOLATILE AS $$
    DECLARE
      candidate integer;
      locked integer[] := '{}';
      deadline timestamptz := clock_timestamp() + p_wait_ms * interval '1 millisecond';
      wait_ms integer;
      saved_timeout text := current_setting('lock_timeout');
    BEGIN
      FOR candidate IN
        SELECT partitions.partition FROM partitions
        WHERE CASE WHEN p_partitions IS NULL THEN partitions.owner = p_owner
                   ELSE partitions.partition = ANY(p_partitions) AND partitions.expires_at <= clock_timestamp() END
        ORDER BY partitions.partition FOR UPDATE SKIP LOCKED
      LOOP
        IF pg_try_advisory_xact_lock(${key}, candidate) THEN
          locked := locked || candidate;
          CONTINUE;
        END IF;
        wait_ms := floor(extract(epoch FROM deadline - clock_timestamp()) * 1000)::integer;
        CONTINUE WHEN wait_ms < 1;
        BEGIN
          PERFORM set_config('lock_timeout', wait_ms || 'ms', true);
          PERFORM pg_advisory_xact_lock(${key}, candidate);
          locked := locked || candidate;
        EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
          NULL; -- still fenced by a write: left for a later take
        END;
      END LOOP;
      PERFORM set_config('lock_timeout', saved_timeout, true);
      RETURN QUERY
        UPDATE partitions SET owner = p_owner, epoch = partitions.epoch + 1, expires_at = clock_timestamp() + p_lease_ms * interval '1 millisecond'
        WHERE partitions.partition = ANY(locked)
        RETURNING partitions.partition, partitions.owner, partitions.epoch, floor(extract(epoch FROM partitions.expires_at) * 1000)::bigint;
    END $$;
  `);
}
