// The PostgreSQL store's reads: one statement each on any pooled
// connection, so each reads one committed snapshot and never waits for a
// writer (MVCC). Rows decode through the same checked converters as the
// SQLite store's (`../sqlite/rows.ts`).

import type pg from "pg";
import type { AgentRow, ExecutionListFilter, ExecutionRow, JournalRecord, StoredStep } from "../records.js";
import type { SqliteRow } from "../sqlite/driver.js";
import { executionListDefault } from "../sqlite/reads.js";
import { agentFromRow, executionFromRow, journalFromRow, stepFromRow } from "../sqlite/rows.js";
import { bind } from "./literals.js";

type Queryable = Pick<pg.Pool, "query">;

const executionColumns =
  "execution_id, agent_id, revision, status, phase, mode, input, metadata, outcome, output, error, usage, approval_request, created_at, updated_at";

/** One simple query with the values written in (`bind`): one write to the
 * socket instead of five — reads such as the journal one run before every
 * start are on the hot path. */
async function rows(pool: Queryable, sql: string, values: unknown[]): Promise<SqliteRow[]> {
  return (await pool.query<SqliteRow>(bind(sql, values))).rows;
}

export async function getAgent(pool: Queryable, where: string, agentId: string): Promise<AgentRow | undefined> {
  const row = (await rows(pool, "SELECT * FROM agents WHERE agent_id = $1", [agentId]))[0];
  return row === undefined ? undefined : agentFromRow(row, where);
}

export async function getExecution(pool: Queryable, where: string, executionId: string): Promise<ExecutionRow | undefined> {
  const row = (await rows(pool, `SELECT ${executionColumns} FROM executions WHERE execution_id = $1`, [executionId]))[0];
  return row === undefined ? undefined : executionFromRow(row, where);
}

/** Newest first. The limit is checked by the caller. */
export async function listExecutions(pool: Queryable, where: string, filter: ExecutionListFilter): Promise<ExecutionRow[]> {
  const conditions: string[] = [];
  const values: unknown[] = [];
  if (filter.status !== undefined) {
    values.push(filter.status);
    conditions.push(`status = $${values.length}`);
  }
  if (filter.outcome !== undefined) {
    values.push(filter.outcome);
    conditions.push(`outcome = $${values.length}`);
  }
  if (filter.agentId !== undefined) {
    values.push(filter.agentId);
    conditions.push(`agent_id = $${values.length}`);
  }
  values.push(filter.limit ?? executionListDefault);
  const condition = conditions.length === 0 ? "" : `WHERE ${conditions.join(" AND ")}`;
  const found = await rows(
    pool,
    `SELECT ${executionColumns} FROM executions ${condition} ORDER BY created_at DESC, execution_id DESC LIMIT $${values.length}`,
    values,
  );
  return found.map((row) => executionFromRow(row, where));
}

export async function unfinishedExecutions(pool: Queryable, where: string, agentIds?: readonly string[]): Promise<ExecutionRow[]> {
  const byAgent = agentIds === undefined ? "" : "AND agent_id = ANY($1::text[])";
  const found = await rows(
    pool,
    `SELECT ${executionColumns} FROM executions WHERE status IN ('preparing', 'active', 'suspended') ${byAgent} ORDER BY created_at, execution_id`,
    agentIds === undefined ? [] : [agentIds],
  );
  return found.map((row) => executionFromRow(row, where));
}

/** The unfinished executions of the agents in these partitions (a
 * partition taken over is recovered, docs/decisions/0030). */
export async function unfinishedExecutionsInPartitions(pool: Queryable, where: string, partitions: readonly number[]): Promise<ExecutionRow[]> {
  const found = await rows(
    pool,
    // A conversation belongs to its home when it has one (docs/decisions/0101):
    // the natural members without a home (the partial index by
    // partition_of), then the conversations homed in these partitions.
    `SELECT * FROM (
       SELECT ${executionColumns} FROM executions WHERE status IN ('preparing', 'active', 'suspended') AND partition_of(agent_id) = ANY($1::integer[])
         AND NOT EXISTS (SELECT 1 FROM conversation_homes AS homes WHERE homes.agent_id = executions.agent_id)
       UNION ALL
       SELECT ${executionColumns} FROM executions WHERE status IN ('preparing', 'active', 'suspended')
         AND agent_id IN (SELECT homes.agent_id FROM conversation_homes AS homes WHERE homes.partition = ANY($1::integer[]))
     ) AS unfinished ORDER BY created_at, execution_id`,
    [partitions],
  );
  return found.map((row) => executionFromRow(row, where));
}

export async function listSteps(pool: Queryable, where: string, executionId: string): Promise<StoredStep[]> {
  const found = await rows(pool, "SELECT seq, kind, at, payload FROM steps WHERE execution_id = $1 ORDER BY seq", [executionId]);
  return found.map((row) => stepFromRow(row, where));
}

/** The steps of each of these executions, in order (one statement, for
 * the recovery of many at once: `read-batches.ts`). */
export async function listStepsOf(pool: Queryable, where: string, executionIds: readonly string[]): Promise<Map<string, StoredStep[]>> {
  const found = await rows(pool, "SELECT execution_id, seq, kind, at, payload FROM steps WHERE execution_id = ANY($1::text[]) ORDER BY execution_id, seq", [
    executionIds,
  ]);
  const byExecution = new Map<string, StoredStep[]>(executionIds.map((executionId) => [executionId, []]));
  for (const row of found) byExecution.get(String(row["execution_id"]))?.push(stepFromRow(row, where));
  return byExecution;
}

/** The agent's last `limit` journal records, oldest first. */
export async function readJournal(pool: Queryable, where: string, agentId: string, limit: number): Promise<JournalRecord[]> {
  const found = await rows(
    pool,
    `
    SELECT * FROM (SELECT execution_id, role, content, at, position FROM journal WHERE agent_id = $1 ORDER BY position DESC LIMIT $2) AS last
    ORDER BY position
  `,
    [agentId, limit],
  );
  return found.map((row) => journalFromRow(row, where));
}

/** The last `limit` journal records of each of these agents, oldest first
 * (one statement: an index scan per agent, `LATERAL`). */
export async function readJournals(pool: Queryable, where: string, agentIds: readonly string[], limit: number): Promise<Map<string, JournalRecord[]>> {
  const found = await rows(
    pool,
    `
    SELECT asked.agent_id, last.execution_id, last.role, last.content, last.at, last.position
    FROM unnest($1::text[]) AS asked(agent_id)
    CROSS JOIN LATERAL (SELECT execution_id, role, content, at, position FROM journal WHERE journal.agent_id = asked.agent_id ORDER BY position DESC LIMIT $2) AS last
    ORDER BY asked.agent_id, last.position
  `,
    [agentIds, limit],
  );
  const byAgent = new Map<string, JournalRecord[]>(agentIds.map((agentId) => [agentId, []]));
  for (const row of found) byAgent.get(String(row["agent_id"]))?.push(journalFromRow(row, where));
  return byAgent;
}
