// A group's barriers as one set-based call (docs/decisions/0142): the
// group commit (`group-commit.ts`) sends the barriers of a group whose
// members are all function calls as ONE call of `barriers(…)` over arrays,
// which takes the group's fence locks in order, checks each member's fence,
// updates every barrier's row in one UPDATE and appends all their steps in
// one INSERT — where each `barrier(…)` call (`functions.ts`) ran its own
// UPDATE and INSERT, each an executor started, run and ended.
//
// Rules kept here:
// * Every row written is the row `barrier(…)` writes: the same columns,
//   the same values, the steps numbered after `last_seq`, the last one of
//   each member carrying its write id.
// * Each member is answered as `barrier(…)` answers it: 1 applied, 0
//   refused (no row at the expected revision and `active`, or its fence
//   not held), nothing written for a refused member.
// * The fence locks of the whole group (the partitions of its fenced
//   members, given by the caller) are taken first, in ascending order, the
//   order a takeover takes them in (0042): the UPDATE's join visits rows in
//   no promised order, and the calls after this one (the group's
//   preparations and terminal commits) find their partitions' locks held.
//   Then each member's fence (`partition_fence_held`), in the members'
//   order, as each barrier checked it; under the lock, a partition's owner
//   and epoch cannot change before the group commits.
// * Functions are part of the schema version: a change is a new migration.

import type pg from "pg";
import { fenceLockClass } from "./partitions.js";
import { integer } from "./literals.js";

/** A barrier's arguments as SQL literals (`compareAndSetStatement`). */
export interface BarrierArguments {
  readonly executionId: string;
  readonly expected: string;
  readonly phase: string;
  readonly metadata: string;
  readonly usage: string;
  readonly at: string;
  readonly fenceOwner: string;
  readonly fenceEpoch: string;
  readonly writeId: string;
  readonly steps: readonly { readonly kind: string; readonly at: string; readonly payload: string }[];
}

/** Migration 31: `barriers(…)`, the set-based barrier of a group. */
export async function createBarrierGroup(client: pg.ClientBase, schema: string): Promise<void> {
  const key = await fenceLockClass(client, schema);
  await client.query(`
    CREATE OR REPLACE FUNCTION barriers(
      p_partitions integer[], p_execution_ids text[], p_expected bigint[], p_phases text[], p_metadata text[], p_usages text[],
      p_ats bigint[], p_fence_owners text[], p_fence_epochs bigint[], p_write_ids text[], p_step_counts integer[],
      p_step_members integer[], p_step_ordinals integer[], p_step_kinds text[], p_step_ats bigint[], p_step_payloads text[])
    RETURNS integer[] LANGUAGE plpgsql AS $$
    DECLARE
      members integer := cardinality(p_execution_ids);
      locked integer;
      row_agents text[];
      fence_held boolean[] := array_fill(false, ARRAY[members]);
      applied integer[] := array_fill(0, ARRAY[members]);
      done integer[];
      i integer;
    BEGIN
      FOREACH locked IN ARRAY p_partitions LOOP
        PERFORM pg_advisory_xact_lock_shared(${key}, locked);
      END LOOP;
      -- The agent of each row the write may apply to (the UPDATE's own
      -- conditions, checked again there), whose fence is checked.
      SELECT array_agg(executions.agent_id ORDER BY member.ordinal) INTO row_agents
      FROM unnest(p_execution_ids, p_expected) WITH ORDINALITY AS member(execution_id, expected, ordinal)
      LEFT JOIN executions ON executions.execution_id = member.execution_id AND executions.revision = member.expected
                              AND executions.status = 'active';
      FOR i IN 1..members LOOP
        fence_held[i] := row_agents[i] IS NOT NULL
          AND (p_fence_owners[i] IS NULL OR partition_fence_held(row_agents[i], p_fence_owners[i], p_fence_epochs[i], false));
      END LOOP;
      WITH member AS (
        SELECT * FROM unnest(p_execution_ids, p_expected, p_phases, p_metadata, p_usages, p_ats, p_write_ids, p_step_counts, fence_held)
          WITH ORDINALITY AS member(execution_id, expected, phase, metadata, usage, at, write_id, step_count, held, ordinal)
        WHERE member.held
      ), updated AS (
        UPDATE executions SET revision = member.expected + 1, phase = member.phase, metadata = member.metadata, usage = member.usage,
               updated_at = member.at,
               last_seq = coalesce(executions.last_seq, (SELECT coalesce(max(steps.seq), 0) FROM steps WHERE steps.execution_id = member.execution_id))
                          + member.step_count
        FROM member
        WHERE executions.execution_id = member.execution_id AND executions.revision = member.expected AND executions.status = 'active'
        RETURNING member.ordinal, member.execution_id, member.step_count, member.write_id, executions.last_seq
      ), appended AS (
        INSERT INTO steps (execution_id, seq, kind, at, payload, write_id)
        SELECT updated.execution_id, updated.last_seq - updated.step_count + step.ordinal, step.kind, step.at, step.payload,
               CASE WHEN step.ordinal = updated.step_count THEN updated.write_id END
        FROM updated
        JOIN unnest(p_step_members, p_step_ordinals, p_step_kinds, p_step_ats, p_step_payloads) AS step(member, ordinal, kind, at, payload)
          ON step.member = updated.ordinal
        ORDER BY updated.ordinal, step.ordinal
      )
      SELECT array_agg(updated.ordinal) INTO done FROM updated;
      FOREACH i IN ARRAY coalesce(done, '{}') LOOP
        applied[i] := 1;
      END LOOP;
      RETURN applied;
    END $$;
  `);
}

/** The call of `barriers(…)` for `members` (at least one), the fence locks
 * of `partitions` (the group's fenced partitions, any order) taken first.
 * Built by appending (V8 keeps the pieces as a rope, flattened once when
 * the query is written), not by joining arrays of arrays: a group's
 * barriers carry ≈ 30 KB of text, and each join copies it. */
export function barriersCall(members: readonly BarrierArguments[], partitions: readonly number[]): string {
  const column = (pick: (member: BarrierArguments) => string, type: string) => {
    let array = "ARRAY[";
    for (let index = 0; index < members.length; index += 1) array += (index === 0 ? "" : ",") + pick(members[index]!);
    return `${array}]::${type}[]`;
  };
  let stepMembers = "";
  let stepOrdinals = "";
  let stepKinds = "";
  let stepAts = "";
  let stepPayloads = "";
  members.forEach((member, index) => {
    member.steps.forEach((step, ordinal) => {
      const separator = stepMembers === "" ? "" : ",";
      stepMembers += separator + String(index + 1);
      stepOrdinals += separator + String(ordinal + 1);
      stepKinds += separator + step.kind;
      stepAts += separator + step.at;
      stepPayloads += separator + step.payload;
    });
  });
  const locked = [...new Set(partitions)].sort((a, b) => a - b).map((partition) => integer(partition, "partition"));
  return (
    `barriers(ARRAY[${locked.join(",")}]::integer[], `
    + column((member) => member.executionId, "text")
    + ", "
    + column((member) => member.expected, "bigint")
    + ", "
    + column((member) => member.phase, "text")
    + ", "
    + column((member) => member.metadata, "text")
    + ", "
    + column((member) => member.usage, "text")
    + ", "
    + column((member) => member.at, "bigint")
    + ", "
    + column((member) => member.fenceOwner, "text")
    + ", "
    + column((member) => member.fenceEpoch, "bigint")
    + ", "
    + column((member) => member.writeId, "text")
    + ", "
    + column((member) => String(member.steps.length), "integer")
    + `, ARRAY[${stepMembers}]::integer[], ARRAY[${stepOrdinals}]::integer[], ARRAY[${stepKinds}]::text[], ARRAY[${stepAts}]::bigint[], ARRAY[${stepPayloads}]::text[])`
  );
}
