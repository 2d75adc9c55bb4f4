// A partition's writes read the homes only once a conversation of it was
// moved out (docs/decisions/0107). Since migration 24 (0101) every fenced
// write read `conversation_homes` twice and took the conversation's own
// lock, whether any process moves conversations or not. From migration 25
// the partition row carries `moved_out`: false until the first move of one
// of its conversations into another partition, then true until the last
// such home is pruned (0116). The
// fence takes the natural partition's fence lock shared (0042) and reads
// its row, as before 0101; only when `moved_out` is set does it go on to
// the conversation's own lock and its home (0101's rule, unchanged).
//
// Rules kept here:
// * The rule is the database's, not a process option's: a process opened
//   without `takeIdleHere` beside one opened with it fences the same way
//   (both call these functions). A store where no process moves anything
//   pays nothing for homes; a partition pays from its first move out on.
// * The first move out of a partition sets the flag under that
//   partition's fence lock taken EXCLUSIVE, so every write that read the
//   flag false (under the lock shared) has committed before the flag is
//   set, and the move then sees what they wrote; every write after it
//   reads the flag true. Later moves out of that partition take only the
//   conversation's lock (0101: measured, the partition lock per move held
//   every write of the partition behind it).
// * A process opened with `takeIdleHere` flags every partition whose
//   fence lock is free at once, at open (`flag_partitions_moved_out`,
//   try-locks: it never waits for a write nor holds one back), so its
//   moves seldom wait for a partition's writes in flight: a store where
//   such a process opened reads homes in every partition's writes; one
//   where none ever did, in none.
// * The flag is cleared by the prune that deletes the last home moved out
//   of the partition, under the partition's fence lock EXCLUSIVE (0112's
//   prune already holds it; migration 26, `homes-rows.ts`, 0116); a move
//   after that sets it again as the first move out does.

import type pg from "pg";
import { moveLockClass } from "./homes.js";
import { fenceLockClass } from "./partitions.js";

/** Migration 25, its first part: `partitions.moved_out` (set for the
 * partitions that have conversations homed elsewhere already), the fence
 * and the move replaced to keep it, and `flag_partitions_moved_out`. */
export async function fenceHomesOfMovedPartitions(client: pg.ClientBase, schema: string): Promise<void> {
  const key = await fenceLockClass(client, schema);
  const moveKey = moveLockClass(key);
  await client.query(`
    ALTER TABLE partitions ADD COLUMN moved_out boolean NOT NULL DEFAULT false;
    UPDATE partitions SET moved_out = true WHERE partition IN (SELECT partition_of(agent_id) FROM conversation_homes);

    -- The fence (0042, 0101): the natural partition's lock shared, then its
    -- row, in one statement with the conversation's home — read only when
    -- the row's moved_out is set (a CASE evaluates its subquery only when
    -- taken). A partition none of whose conversations was moved out answers
    -- from its row. A home seen is final (homes never change): the home
    -- partition's lock and row fence the write. No home seen in a flagged
    -- partition: the conversation's own lock (a move holds it exclusive),
    -- then its home read again, as migration 24's fence did.
    CREATE OR REPLACE FUNCTION partition_fence_held(p_agent_id text, p_owner text, p_epoch bigint, p_live boolean)
    RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
    DECLARE
      fenced integer := partition_of(p_agent_id);
      held boolean;
      moved boolean;
      homed integer;
    BEGIN
      PERFORM pg_advisory_xact_lock_shared(${key}, fenced);
      -- A statement of its own, after the lock (0042).
      SELECT partitions.owner = p_owner AND partitions.epoch = p_epoch AND (NOT p_live OR partitions.expires_at > clock_timestamp()),
             partitions.moved_out,
             CASE WHEN partitions.moved_out THEN (SELECT homes.partition FROM conversation_homes AS homes WHERE homes.agent_id = p_agent_id) END
        INTO held, moved, homed FROM partitions WHERE partitions.partition = fenced;
      IF NOT coalesce(moved, false) THEN
        RETURN coalesce(held, false);
      END IF;
      IF homed IS NULL THEN
        PERFORM pg_advisory_xact_lock_shared(${moveKey}, hashtext(p_agent_id));
        SELECT homes.partition INTO homed FROM conversation_homes AS homes WHERE homes.agent_id = p_agent_id;
        IF homed IS NULL THEN
          RETURN coalesce(held, false);
        END IF;
      END IF;
      PERFORM pg_advisory_xact_lock_shared(${key}, homed);
      RETURN EXISTS (SELECT 1 FROM partitions WHERE partitions.partition = homed AND partitions.owner = p_owner
                       AND partitions.epoch = p_epoch AND (NOT p_live OR partitions.expires_at > clock_timestamp()));
    END $$;

    -- Flags the partitions not flagged yet whose fence lock is free now
    -- (taken exclusive without waiting: no write of theirs is in flight,
    -- so none read the flag false and is still to commit); answers how many
    -- are left. A process opened with takeIdleHere calls it at open, so its
    -- moves rarely find a partition unflagged (and wait for its writes).
    CREATE FUNCTION flag_partitions_moved_out() RETURNS integer
    LANGUAGE plpgsql VOLATILE AS $$
    BEGIN
      UPDATE partitions SET moved_out = true
      WHERE partitions.partition IN (SELECT candidate.partition FROM partitions AS candidate WHERE NOT candidate.moved_out FOR UPDATE SKIP LOCKED)
        AND pg_try_advisory_xact_lock(${key}, partitions.partition);
      RETURN (SELECT count(*)::integer FROM partitions WHERE NOT partitions.moved_out);
    END $$;

    -- The move (0101), setting its natural partition's flag first when it
    -- is the first move out of it: under that partition's fence lock
    -- exclusive, which waits for the writes that read the flag false.
    CREATE OR REPLACE FUNCTION home_conversation(p_agent_id text, p_owner text, p_partition integer, p_epoch bigint, p_wait_ms integer)
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
        IF NOT (SELECT partitions.moved_out FROM partitions WHERE partitions.partition = natural_partition) THEN
          PERFORM pg_advisory_xact_lock(${key}, natural_partition);
          UPDATE partitions SET moved_out = true WHERE partitions.partition = natural_partition;
        END IF;
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
  `);
}

/** Tries this often at open to flag every partition (a partition whose
 * writes hold its fence lock at that instant is tried again). */
const flagAttemptsMax = 5;
const flagRetryMs = 20;

/** A process opened with `takeIdleHere`: flags the partitions, without
 * waiting for any write (those left are flagged by their first move out). */
export async function flagPartitionsMovedOut(pool: Pick<pg.Pool, "query">): Promise<number> {
  let left = 0;
  for (let attempt = 0; attempt < flagAttemptsMax; attempt += 1) {
    left = Number((await pool.query<{ left: number }>("SELECT flag_partitions_moved_out() AS left")).rows[0]!.left);
    if (left === 0) return 0;
    await new Promise((resolve) => setTimeout(resolve, flagRetryMs));
  }
  return left;
}
