// Conversation homes (docs/decisions/0101): a conversation that has
// nothing anywhere may be moved, once, from its partition (`partition_of`,
// 0030) to a partition held by the process its first start landed at. The
// row `conversation_homes (agent_id, partition)` records it; from then on
// the conversation belongs to that partition as any other member does: its
// writes are fenced by that partition's owner and epoch, it is recovered
// by whoever takes that partition over (a kill -9 of the process that moved
// it included), and it moves with that partition when balancing gives the
// partition up. A home is never changed again (immutable once written), so
// a fence that read it needs no lock for it. A write of a conversation
// without a home takes, after its natural partition's fence lock (0042),
// the conversation's own lock SHARED; the move takes that lock EXCLUSIVE,
// so a write that passed the natural fence commits first and the move then
// sees what it wrote (and refuses), and a write arriving meanwhile waits
// and then sees the home. (A first version took the natural partition's
// fence lock exclusive: every move then waited for every write in flight
// of that partition and held new ones behind it — measured, decision 0101.)

import type pg from "pg";
import { fenceLockClass } from "./partitions.js";

type Queryable = Pick<pg.Pool, "query">;

/** The class of the conversations' own move locks, from the fence locks'
 * (`key`): another key, so a conversation's lock never waits for a
 * partition's (a collision of two conversations' hashes only makes one wait). */
export function moveLockClass(key: number): number {
  return key === 2_147_483_647 ? key - 1 : key + 1;
}

/** Migration 24: the homes table, the conversation's partition as the
 * fences read it (`conversation_partition`), the move (`home_conversation`)
 * and the fence (`partition_fence_held`) replaced to read a home. */
export async function createConversationHomes(client: pg.ClientBase, schema: string): Promise<void> {
  const key = await fenceLockClass(client, schema);
  const moveKey = moveLockClass(key);
  await client.query(`
    CREATE TABLE conversation_homes (
      agent_id  text PRIMARY KEY,
      partition integer NOT NULL,
      moved_by  text NOT NULL,
      moved_at  timestamptz NOT NULL DEFAULT clock_timestamp()
    );
    CREATE INDEX conversation_homes_by_partition ON conversation_homes (partition);
    CREATE INDEX conversation_homes_by_natural ON conversation_homes (partition_of(agent_id));

    -- The partition a conversation belongs to: its home, else partition_of.
    CREATE FUNCTION conversation_partition(p_agent_id text) RETURNS integer
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
      SELECT coalesce((SELECT homes.partition FROM conversation_homes AS homes WHERE homes.agent_id = p_agent_id), partition_of(p_agent_id))
    $$;

    -- The fence (0042), reading a home: a homed conversation is fenced by
    -- its home partition's lock and row. When no home was seen, the
    -- natural partition's lock, then the conversation's own (a move holds
    -- it exclusive), so a home read after them is the one that stays
    -- (homes never change).
    CREATE OR REPLACE FUNCTION partition_fence_held(p_agent_id text, p_owner text, p_epoch bigint, p_live boolean)
    RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
    DECLARE
      fenced integer;
      moved integer;
    BEGIN
      SELECT homes.partition INTO fenced FROM conversation_homes AS homes WHERE homes.agent_id = p_agent_id;
      IF fenced IS NULL THEN
        fenced := partition_of(p_agent_id);
        PERFORM pg_advisory_xact_lock_shared(${key}, fenced);
        -- The conversation's own lock, which a move takes exclusive: a
        -- write that passed here commits before a move reads its rows.
        PERFORM pg_advisory_xact_lock_shared(${moveKey}, hashtext(p_agent_id));
        -- A move committed while this write waited for the lock.
        SELECT homes.partition INTO moved FROM conversation_homes AS homes WHERE homes.agent_id = p_agent_id;
        IF moved IS NOT NULL THEN
          fenced := moved;
          PERFORM pg_advisory_xact_lock_shared(${key}, fenced);
        END IF;
      ELSE
        PERFORM pg_advisory_xact_lock_shared(${key}, fenced);
      END IF;
      RETURN EXISTS (SELECT 1 FROM partitions WHERE partitions.partition = fenced AND partitions.owner = p_owner
                       AND partitions.epoch = p_epoch AND (NOT p_live OR partitions.expires_at > clock_timestamp()));
    END $$;

    -- Moves p_agent_id to p_partition, which p_owner must hold live at
    -- p_epoch, if the conversation has nothing anywhere: no agents row (a
    -- preparation writes it), no execution, no message queued, no inbox
    -- row, no schedule, no home. Answers 'moved' or 'home' (already homed:
    -- its partition) or 'refused' (its partition: where it lives now).
    CREATE FUNCTION home_conversation(p_agent_id text, p_owner text, p_partition integer, p_epoch bigint, p_wait_ms integer)
    RETURNS TABLE (home_outcome text, home_partition integer)
    LANGUAGE plpgsql VOLATILE AS $$
    DECLARE
      natural_partition integer := partition_of(p_agent_id);
      existing integer;
      saved_timeout text := current_setting('lock_timeout');
    BEGIN
      SELECT homes.partition INTO existing FROM conversation_homes AS homes WHERE homes.agent_id = p_agent_id;
      IF existing IS NOT NULL THEN
        RETURN QUERY SELECT 'home'::text, existing;
        RETURN;
      END IF;
      IF natural_partition = p_partition THEN
        RETURN QUERY SELECT 'refused'::text, natural_partition;
        RETURN;
      END IF;
      BEGIN
        PERFORM set_config('lock_timeout', greatest(p_wait_ms, 1) || 'ms', true);
        -- The conversation's own lock, exclusive: every write of it that
        -- passed its natural fence has committed (and is seen below).
        PERFORM pg_advisory_xact_lock(${moveKey}, hashtext(p_agent_id));
        -- After the lock: statements of their own see those writes, and a
        -- move that committed meanwhile.
        SELECT homes.partition INTO existing FROM conversation_homes AS homes WHERE homes.agent_id = p_agent_id;
        IF existing IS NOT NULL THEN
          PERFORM set_config('lock_timeout', saved_timeout, true);
          RETURN QUERY SELECT 'home'::text, existing;
          RETURN;
        END IF;
        IF NOT partition_fence_held_at(p_partition, p_owner, p_epoch)
           OR EXISTS (SELECT 1 FROM agents WHERE agents.agent_id = p_agent_id)
           OR EXISTS (SELECT 1 FROM executions WHERE executions.agent_id = p_agent_id)
           OR EXISTS (SELECT 1 FROM queued_messages WHERE queued_messages.agent_id = p_agent_id)
           OR EXISTS (SELECT 1 FROM approval_inbox WHERE approval_inbox.agent_id = p_agent_id)
           OR EXISTS (SELECT 1 FROM schedules WHERE schedules.agent_id = p_agent_id) THEN
          PERFORM set_config('lock_timeout', saved_timeout, true);
          RETURN QUERY SELECT 'refused'::text, natural_partition;
          RETURN;
        END IF;
        PERFORM set_config('lock_timeout', saved_timeout, true);
      EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
        PERFORM set_config('lock_timeout', saved_timeout, true);
        RETURN QUERY SELECT 'refused'::text, natural_partition;
        RETURN;
      END;
      INSERT INTO conversation_homes (agent_id, partition, moved_by) VALUES (p_agent_id, p_partition, p_owner);
      RETURN QUERY SELECT 'moved'::text, p_partition;
    END $$;

    -- The fence of a partition itself (the move's target): its lock
    -- shared, then its row, owner and epoch and unexpired.
    CREATE FUNCTION partition_fence_held_at(p_partition integer, p_owner text, p_epoch bigint)
    RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
    BEGIN
      PERFORM pg_advisory_xact_lock_shared(${key}, p_partition);
      RETURN EXISTS (SELECT 1 FROM partitions WHERE partitions.partition = p_partition AND partitions.owner = p_owner
                       AND partitions.epoch = p_epoch AND partitions.expires_at > clock_timestamp());
    END $$;
  `);
}

/** What a move answered: `moved` here, `home` (moved before, to that
 * partition), `refused` (it has rows, or the target is not held at that
 * epoch, or the natural partition stayed locked: it lives at `partition`). */
export interface HomeOutcome {
  readonly outcome: "moved" | "home" | "refused";
  readonly partition: number;
}

/** One conversation of a batch of moves: the partition held here it goes to, at that epoch. */
export interface MoveAsked {
  readonly agentId: string;
  readonly partition: number;
  readonly epoch: number;
}

/** Moves conversations that have nothing anywhere, each to the partition
 * asked, which `owner` holds at that epoch: one statement, one transaction
 * for the batch (docs/decisions/0113), each move answered as if alone (the
 * conversations' own locks are taken in the order asked; one not granted
 * within `waitMs` refuses that move only), in the order asked.
 *
 * Its commit does not wait for its WAL flush (`synchronous_commit` off for
 * this transaction only): sampled, a move's backend spent ≈90% of its time
 * waiting for the flush (`WALWrite`, `WALSync`), never for a lock. Nothing
 * durable rests on the move alone. Every write that depends on a home
 * commits after it and durably (the preparation, a filing for the home's
 * holder), and its flush carries the WAL before it, the move's commit
 * included: a durable write of a moved conversation implies its home is.
 * A server crash before such a flush loses the home and the writes after it
 * together, as if the move never happened; the conversation still has
 * nothing anywhere, and a process that noted the home (the mover, one that
 * read it) is refused its next preparation by the natural fence and places
 * the start again, as for a pruned home (0112). */
export async function homeConversations(pool: Queryable, owner: string, asked: readonly MoveAsked[], waitMs: number): Promise<HomeOutcome[]> {
  if (asked.length === 0) return [];
  const rows = (
    await pool.query<{ ordinal: string; home_outcome: HomeOutcome["outcome"]; home_partition: number }>(
      `SELECT asked.ordinal, moved.home_outcome, moved.home_partition
       FROM unnest($1::text[], $2::integer[], $3::bigint[]) WITH ORDINALITY AS asked(agent_id, partition, epoch, ordinal)
       CROSS JOIN LATERAL home_conversation(asked.agent_id, $4, asked.partition, asked.epoch, $5) AS moved,
       set_config('synchronous_commit', 'off', true) AS unflushed
       ORDER BY asked.ordinal`,
      [asked.map((move) => move.agentId), asked.map((move) => move.partition), asked.map((move) => move.epoch), owner, Math.max(1, Math.floor(waitMs))],
    )
  ).rows;
  if (rows.length !== asked.length) throw new Error(`home_conversation answered ${rows.length} moves of ${asked.length}`);
  return rows.map((row) => ({ outcome: row.home_outcome, partition: Number(row.home_partition) }));
}

/** The homes of these conversations (those that have one). */
export async function readHomes(pool: Queryable, agentIds: readonly string[]): Promise<Map<string, number>> {
  const found = await pool.query<{ agent_id: string; partition: number }>(
    "SELECT agent_id, partition FROM conversation_homes WHERE agent_id = ANY($1::text[])",
    [agentIds],
  );
  return new Map(found.rows.map((row) => [row.agent_id, Number(row.partition)]));
}

/** The homes that concern these partitions: conversations homed in them,
 * and conversations of theirs homed elsewhere (a takeover's scan notes
 * both, so its first uses find where each lives). */
export async function homesOfPartitions(pool: Queryable, partitions: readonly number[]): Promise<Map<string, number>> {
  const found = await pool.query<{ agent_id: string; partition: number }>(
    "SELECT agent_id, partition FROM conversation_homes WHERE partition = ANY($1::integer[]) OR partition_of(agent_id) = ANY($1::integer[])",
    [partitions],
  );
  return new Map(found.rows.map((row) => [row.agent_id, Number(row.partition)]));
}

/** How many homes one prune batch deletes at most. */
export const homesPrunedMax = 100;

/**
 * Deletes the homes whose conversation has nothing left anywhere
 * (docs/decisions/0112): moved before `movedBefore` (ms since the epoch, the
 * prune's cutoff: a home just moved has no rows yet, its first preparation
 * is on its way), and no `agents` row, execution, journal record, queued
 * message, inbox row or schedule — the rows `home_conversation` checks, and
 * the journal. The prune of executions never leaves a conversation so (its
 * `agents` row and newest journal records stay): a home goes once a purge
 * (`purgeAgent`) took the last of them, and the conversation is new again.
 *
 * Every fenced write of a conversation takes its natural partition's fence
 * lock shared first (0107) and keeps it to its commit, so that lock taken
 * EXCLUSIVE — without waiting (`pg_try_advisory_xact_lock`: a partition
 * with a write in flight keeps its homes until a later prune) — means no
 * write that read the home is still to commit, and every later one reads
 * it gone; the rows are checked in a statement after the lock. Runs inside
 * the prune's transaction, last (the lock is held to its commit); the
 * natural partitions left with no home moved out of them have their
 * `moved_out` flag cleared there too (0116). How many homes went.
 */
export async function pruneHomes(
  client: pg.ClientBase,
  schema: string,
  movedBefore: number,
  agentId: string | undefined,
  except: readonly string[],
): Promise<number> {
  const candidates = await client.query<{ agent_id: string }>(
    `
    SELECT homes.agent_id FROM conversation_homes AS homes
    WHERE homes.moved_at < to_timestamp($1::double precision / 1000)
      AND ($2::text IS NULL OR homes.agent_id = $2) AND homes.agent_id <> ALL($3::text[])
      AND NOT EXISTS (SELECT 1 FROM agents WHERE agents.agent_id = homes.agent_id)
    ORDER BY homes.moved_at LIMIT $4
  `,
    [movedBefore, agentId ?? null, except, homesPrunedMax],
  );
  if (candidates.rows.length === 0) return 0;
  const key = await fenceLockClass(client, schema);
  const locked = await client.query<{ agent_id: string }>(
    "SELECT candidate.agent_id FROM unnest($1::text[]) AS candidate(agent_id) WHERE pg_try_advisory_xact_lock($2, partition_of(candidate.agent_id))",
    [candidates.rows.map((row) => row.agent_id), key],
  );
  if (locked.rows.length === 0) return 0;
  // A statement of its own, after the locks: it sees every write that
  // passed the fence before them. The rows: the move's own list (0116).
  const deleted = await client.query<{ natural: number }>(
    `
    DELETE FROM conversation_homes AS homes
    WHERE homes.agent_id = ANY($1::text[]) AND NOT conversation_has_rows(homes.agent_id)
    RETURNING partition_of(homes.agent_id) AS natural
  `,
    [locked.rows.map((row) => row.agent_id)],
  );
  if (deleted.rows.length === 0) return 0;
  await clearMovedOut(client, [...new Set(deleted.rows.map((row) => Number(row.natural)))]);
  return deleted.rows.length;
}

/**
 * Clears `moved_out` (0107) of these partitions — whose fence locks the
 * prune holds EXCLUSIVE, and a home of whose conversations it just deleted
 * — where none of their conversations is homed elsewhere any more
 * (docs/decisions/0116): no write that read the flag set is in flight, a
 * move out of them waits for the prune's commit (it reads the flag under
 * the lock shared, migration 26), so the check holds to the commit. A
 * partition row another transaction holds (a take waiting for the lock the
 * prune holds, a renewal) is skipped, never waited for: its flag stays set
 * (the fence then reads homes there, as before 0116), until a later prune
 * deletes another home moved out of it.
 */
async function clearMovedOut(client: pg.ClientBase, naturals: readonly number[]): Promise<void> {
  await client.query(
    `
    UPDATE partitions SET moved_out = false
    WHERE partitions.partition IN (
      SELECT candidate.partition FROM partitions AS candidate
      WHERE candidate.partition = ANY($1::integer[]) AND candidate.moved_out
        AND NOT EXISTS (SELECT 1 FROM conversation_homes AS homes WHERE partition_of(homes.agent_id) = candidate.partition)
      FOR UPDATE SKIP LOCKED
    )
  `,
    [naturals],
  );
}
