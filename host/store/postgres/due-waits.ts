// Due waits in the PostgreSQL store (`../due-waits.ts` holds the rules):
// the migration that indexes suspended rows by their wait's `dueAt`, and
// the two reads of the due sweep, optionally of the partitions a process
// holds (only the holder fires a wait; docs/decisions/0076).

import type pg from "pg";
import { checkDueRead, dueWaitOf, type DueCursor, type DueWait } from "../due-waits.js";
import { bind } from "./literals.js";

type Queryable = Pick<pg.Pool, "query">;

/** The expression the index holds and every read names. */
const dueAt = "((approval_request::jsonb ->> 'dueAt')::bigint)";

/** Migration 17 (docs/decisions/0076): suspended rows by due time. */
export async function createDueWaitIndex(client: pg.ClientBase): Promise<void> {
  await client.query(`CREATE INDEX executions_due ON executions (${dueAt}, execution_id) WHERE status = 'suspended'`);
}

function partitionClause(partitions: readonly number[] | undefined, values: unknown[]): string {
  if (partitions === undefined) return "";
  values.push(partitions);
  return ` AND conversation_partition(agent_id) = ANY($${values.length}::integer[])`;
}

export async function dueWaits(
  pool: Queryable,
  through: number,
  limit: number,
  after: DueCursor | undefined,
  partitions: readonly number[] | undefined,
): Promise<DueWait[]> {
  checkDueRead(through, limit);
  const values: unknown[] = [Math.floor(through), limit];
  let where = `status = 'suspended' AND ${dueAt} <= $1`;
  if (after !== undefined) {
    values.push(Math.floor(after.dueAt), after.executionId);
    where += ` AND (${dueAt}, execution_id) > ($3, $4)`;
  }
  where += partitionClause(partitions, values);
  const sql = `SELECT execution_id, agent_id, approval_request::jsonb ->> 'approvalId' AS wait_id, ${dueAt} AS due_at
    FROM executions WHERE ${where} ORDER BY ${dueAt}, execution_id LIMIT $2`;
  const found = await pool.query<Record<string, unknown>>(bind(sql, values));
  return found.rows.map(dueWaitOf);
}

export async function nextDueAt(pool: Queryable, after: number, partitions: readonly number[] | undefined): Promise<number | undefined> {
  const values: unknown[] = [Math.floor(after)];
  const sql = `SELECT min(${dueAt}) AS due_at FROM executions WHERE status = 'suspended' AND ${dueAt} > $1${partitionClause(partitions, values)}`;
  const found = await pool.query<Record<string, unknown>>(bind(sql, values));
  const value = found.rows[0]?.["due_at"];
  return value === null || value === undefined ? undefined : Number(value);
}
