// Migration 31 (docs/decisions/0127): the move (`home_conversation`, 0101,
// 0107, 0116) without a subtransaction when no lock it takes is contended.
//
// A moving preparation (0119) runs the move inside its group's statement,
// once for each conversation that lands on a process not owning it. The
// move's waits are bounded (`lock_timeout` = its `wait_ms`, a wait that
// times out or deadlocks answers `refused`), so its locks were taken inside
// a PL/pgSQL `BEGIN … EXCEPTION` block: a subtransaction, and two
// `set_config` calls, for every move — ≈ 60% of the function's time when
// nothing waits, which under random routing is nearly always.
//
// Rules kept here:
// * The fast path tries every lock the move takes without waiting: its
//   natural partition's fence lock SHARED (only when the partition's
//   `moved_out` flag is set; an unflagged partition's first move out takes
//   the slow path), the flag read again in a statement of its own after
//   that lock (a prune that cleared it has committed), the conversation's
//   own lock EXCLUSIVE, and the target partition's fence lock SHARED (which
//   `partition_fence_held_at` takes again, at once). With all of them held,
//   nothing after can wait, so the checks run outside any subtransaction:
//   the home read again, the target's fence, `conversation_has_rows`, each a
//   statement of its own after the locks, as before.
// * When any try is refused the move takes the slow path, migration 26's
//   block unchanged: the locks it already holds are re-granted at once (a
//   transaction never waits for its own locks), the others waited for up to
//   `wait_ms`. The answers are the same on both paths.

import type pg from "pg";
import { moveLockClass } from "./homes.js";
import { fenceLockClass } from "./partitions.js";

/** Migration 31: `home_conversation` with its uncontended fast path. */
export async function moveWithoutSubtransaction(client: pg.ClientBase, schema: string): Promise<void> {
  const key = await fenceLockClass(client, schema);
  const moveKey = moveLockClass(key);
  await client.query(`
    CREATE OR REPLACE FUNCTION home_conversation(p_agent_id text, p_owner text, p_partition integer, p_epoch bigint, p_wait_ms integer)
    RETURNS TABLE (home_outcome text, home_partition integer)
    LANGUAGE plpgsql VOLATILE AS $$
    DECLARE
      natural_partition integer := partition_of(p_agent_id);
      existing integer;
      locked boolean := false;
      saved_timeout text;
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
      -- The fast path: every lock granted without waiting.
      IF (SELECT partitions.moved_out FROM partitions WHERE partitions.partition = natural_partition)
         AND pg_try_advisory_xact_lock_shared(${key}, natural_partition) THEN
        -- A statement of its own, after the lock.
        locked := (SELECT partitions.moved_out FROM partitions WHERE partitions.partition = natural_partition)
          AND pg_try_advisory_xact_lock(${moveKey}, hashtext(p_agent_id))
          AND pg_try_advisory_xact_lock_shared(${key}, p_partition);
      END IF;
      IF locked THEN
        SELECT homes.partition INTO existing FROM conversation_homes AS homes WHERE homes.agent_id = p_agent_id;
        IF existing IS NOT NULL THEN
          RETURN QUERY SELECT 'home'::text, existing;
          RETURN;
        END IF;
        IF NOT partition_fence_held_at(p_partition, p_owner, p_epoch) OR conversation_has_rows(p_agent_id) THEN
          RETURN QUERY SELECT 'refused'::text, natural_partition;
          RETURN;
        END IF;
      ELSE
        -- The slow path: migration 26's, each wait bounded by p_wait_ms.
        saved_timeout := current_setting('lock_timeout');
        BEGIN
          PERFORM set_config('lock_timeout', greatest(p_wait_ms, 1) || 'ms', true);
          IF (SELECT partitions.moved_out FROM partitions WHERE partitions.partition = natural_partition) THEN
            PERFORM pg_advisory_xact_lock_shared(${key}, natural_partition);
          END IF;
          IF NOT (SELECT partitions.moved_out FROM partitions WHERE partitions.partition = natural_partition) THEN
            PERFORM pg_advisory_xact_lock(${key}, natural_partition);
            UPDATE partitions SET moved_out = true WHERE partitions.partition = natural_partition;
          END IF;
          PERFORM pg_advisory_xact_lock(${moveKey}, hashtext(p_agent_id));
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
      END IF;
      INSERT INTO conversation_homes (agent_id, partition, moved_by) VALUES (p_agent_id, p_partition, p_owner);
      RETURN QUERY SELECT 'moved'::text, p_partition;
    END $$;
  `);
}
