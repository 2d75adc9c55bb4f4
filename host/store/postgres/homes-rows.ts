// Migration 26 (docs/decisions/0116): what "the conversation has rows"
// means, once, for the move and the prune of homes; and a partition's
// `moved_out` flag (0107) cleared when the prune takes the last home moved
// out of it.
//
// Rules kept here:
// * `conversation_has_rows(agent_id)` is the one list of the rows a
//   conversation may have anywhere: its `agents` row, an execution, a journal
//   record, a queued message, an inbox row (of any kind), a schedule. The
//   move (`home_conversation`) refuses a conversation that has any; the prune
//   (`pruneHomes`) deletes only a home whose conversation has none. Before
//   this, the two wrote the list out each, and the move's left out the
//   journal (a conversation's journal never outlives its `agents` row — a
//   purge deletes both — so the move's answer does not change).
// * The flag is cleared by the prune of homes, in its transaction, only for
//   a partition whose home it deleted and of whose conversations none is
//   homed elsewhere any more: under that partition's fence lock, which the
//   prune already holds EXCLUSIVE (so no write that read the flag true is
//   still in flight, and every later one reads it false and answers from the
//   partition's row, 0042).
// * A move that read the flag set takes its natural partition's fence lock
//   SHARED and reads the flag again in a statement of its own: a prune that
//   cleared it either committed first (the move then flags it again under
//   the lock EXCLUSIVE, as the first move out of a partition does, 0107) or
//   waits for the move's commit (and then sees its home, and leaves the flag
//   set). Shared beside shared: a move still never waits for the writes of
//   its natural partition, only for a prune, a take or a first move out.

import type pg from "pg";
import { moveLockClass } from "./homes.js";
import { fenceLockClass } from "./partitions.js";

/** Migration 26: `conversation_has_rows`, and the move replaced to use it
 * and to read its natural partition's flag under that partition's fence
 * lock shared. */
export async function createConversationHasRows(client: pg.ClientBase, schema: string): Promise<void> {
  const key = await fenceLockClass(client, schema);
  const moveKey = moveLockClass(key);
  await client.query(`
    -- Whether the conversation has anything anywhere. PL/pgSQL for its
    -- plans (kept per session); STABLE, so it reads with the snapshot of
    -- the statement that calls it.
    CREATE OR REPLACE FUNCTION conversation_has_rows(p_agent_id text) RETURNS boolean
    LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
    BEGIN
      RETURN EXISTS (SELECT 1 FROM agents WHERE agents.agent_id = p_agent_id)
          OR EXISTS (SELECT 1 FROM executions WHERE executions.agent_id = p_agent_id)
          OR EXISTS (SELECT 1 FROM journal WHERE journal.agent_id = p_agent_id)
          OR EXISTS (SELECT 1 FROM queued_messages WHERE queued_messages.agent_id = p_agent_id)
          OR EXISTS (SELECT 1 FROM approval_inbox WHERE approval_inbox.agent_id = p_agent_id)
          OR EXISTS (SELECT 1 FROM schedules WHERE schedules.agent_id = p_agent_id);
    END $$;

    -- The move (0101, 0107): its natural partition's flag read under that
    -- partition's fence lock, shared when set (a prune clearing it holds
    -- it exclusive), exclusive when not (the first move out sets it); the
    -- rows checked by conversation_has_rows.
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
        IF (SELECT partitions.moved_out FROM partitions WHERE partitions.partition = natural_partition) THEN
          PERFORM pg_advisory_xact_lock_shared(${key}, natural_partition);
        END IF;
        -- A statement of its own, after the lock: a prune that cleared the
        -- flag meanwhile has committed.
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
        IF NOT partition_fence_held_at(p_partition, p_owner, p_epoch) OR conversation_has_rows(p_agent_id) THEN
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
