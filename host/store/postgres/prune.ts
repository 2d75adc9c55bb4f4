// Pruning in the PostgreSQL store (`../prune.ts` holds the rules; the
// SQLite body, `../sqlite/prune.ts`, is the reference): one
// `pruneExecutions` operation as one short transaction on a pooled
// connection, and the migration that adds the indexes it reads by.
//
// Rules that PostgreSQL's concurrency asks for:
// * The candidates are chosen and deleted by one statement: `FOR UPDATE
//   SKIP LOCKED` passes over a row another transaction holds (a retry
//   reopening it, another process's prune), and the DELETE's own condition
//   (terminal, at the revision and finish read) is checked again on the row
//   as it is when locked (READ COMMITTED re-evaluates an updated row), so a
//   row reopened before the prune's lock is never deleted; a retry that
//   comes after finds no row.
// * Nothing waits long: `lock_timeout` bounds any wait for a row lock (the
//   batch then fails and the next pass tries again), and a batch holds the
//   locks of at most `postgresPruneBatchExecutions` rows nobody else writes
//   (terminal executions, their steps, inbox rows and old journal records).
// * Several processes may prune one store at once: they skip each other's rows.
// * Filed starts their owner refused have no execution: they go on their
//   own, settled before `finishedBefore`, at most a batch per request
//   (counted with the inbox rows, `approvals`; docs/decisions/0047).
// * A conversation's home (docs/decisions/0101) goes once the conversation
//   has nothing left anywhere (after a purge), last in the transaction
//   (`pruneHomes`, docs/decisions/0112); not counted.

import type pg from "pg";
import { journalRecordsKept, type PruneCounts, type PruneExecutionsOperation } from "../prune.js";
import { pruneHomes } from "./homes.js";

/** The batch the runtime prunes a PostgreSQL store in: its transaction has
 * a connection of its own and locks only rows nobody writes, so it delays
 * no barrier; a batch is ≈4–5 statements and a round trip whatever its
 * size, and 32 per batch fell behind 600 runs/s in the bench, 100 keeps up. */
export const postgresPruneBatchExecutions = 100;

/** How long a prune waits for a row lock before giving the batch up. */
export const pruneLockTimeoutMs = 1_000;

/** Migration 5: find finished executions by finish time, and an
 * execution's inbox rows, without a scan. (The partial index held terminal
 * rows only, but it named `updated_at`, which every barrier writes, so no
 * barrier could update its row in place: migration 25 moved it onto
 * `finished_at`, `hot-barriers.ts`, docs/decisions/0108.) Built inside the
 * migration's transaction: on a large existing store the first open after
 * the upgrade blocks writes to these tables while it builds. */
export async function createPruneIndexes(client: pg.ClientBase): Promise<void> {
  await client.query(`
    CREATE INDEX executions_finished ON executions (updated_at) WHERE status = 'terminal';
    CREATE INDEX approval_inbox_by_execution ON approval_inbox (execution_id);
  `);
}

/** Migration 13 (docs/decisions/0047): find refused filed starts by
 * settlement time, without a scan. A start its owner refused (busy, not
 * defined there, cancelled while filed) wrote no execution, so it is not
 * pruned with one: the prune deletes it on its own once settled before
 * `finishedBefore`, like a finished execution. */
export async function indexRefusedStarts(client: pg.ClientBase): Promise<void> {
  await client.query("CREATE INDEX approval_inbox_refused_starts ON approval_inbox (settled_at) WHERE kind = 'start' AND state = 'refused'");
}

/** Runs inside the caller's transaction (`BEGIN` … `COMMIT`); `schema`: the store's. */
export async function pruneExecutions(client: pg.ClientBase, operation: PruneExecutionsOperation, schema: string): Promise<PruneCounts> {
  const counts = await pruneExecutionRows(client, operation);
  const except = operation.agentId === undefined ? (operation.exceptAgentIds ?? []) : [];
  await pruneHomes(client, schema, operation.finishedBefore, operation.agentId, except);
  return counts;
}

async function pruneExecutionRows(client: pg.ClientBase, operation: PruneExecutionsOperation): Promise<PruneCounts> {
  await client.query(`SET LOCAL lock_timeout = ${pruneLockTimeoutMs}`);
  const except = operation.agentId === undefined ? (operation.exceptAgentIds ?? []) : [];
  // A materialized CTE: chosen once, so the LIMIT bounds the delete (an
  // `IN (subquery)` may be rescanned by the plan and delete more).
  const deleted = await client.query<{ execution_id: string; agent_id: string }>(
    `
    WITH candidates AS MATERIALIZED (
      SELECT execution_id, revision, updated_at FROM executions
      WHERE status = 'terminal' AND finished_at < $1
        AND ($2::text IS NULL OR agent_id = $2) AND agent_id <> ALL($3::text[])
      ORDER BY finished_at LIMIT $4
      FOR UPDATE SKIP LOCKED
    )
    DELETE FROM executions USING candidates
    WHERE executions.execution_id = candidates.execution_id AND executions.status = 'terminal'
      AND executions.revision = candidates.revision AND executions.updated_at = candidates.updated_at
    RETURNING executions.execution_id, executions.agent_id
  `,
    [operation.finishedBefore, operation.agentId ?? null, except, operation.executionsMax],
  );
  const executionIds = deleted.rows.map((row) => row.execution_id);
  const refusedStarts = await pruneRefusedStarts(client, operation, except);
  if (executionIds.length === 0) return { executions: 0, steps: 0, journal: 0, approvals: refusedStarts };
  const steps = await client.query("DELETE FROM steps WHERE execution_id = ANY($1::text[])", [executionIds]);
  const approvals = await client.query("DELETE FROM approval_inbox WHERE execution_id = ANY($1::text[])", [executionIds]);
  const agents = [...new Set(deleted.rows.map((row) => row.agent_id))];
  // Per agent touched: records older than its newest `journalRecordsKept`
  // whose execution is gone (now or in an earlier prune).
  const journal = await client.query(
    `
    DELETE FROM journal AS record
    USING (
      SELECT agent.id, (SELECT position FROM journal WHERE agent_id = agent.id ORDER BY position DESC OFFSET $2 LIMIT 1) AS kept_from
      FROM unnest($1::text[]) AS agent(id)
    ) AS kept
    WHERE record.agent_id = kept.id AND record.position < kept.kept_from
      AND NOT EXISTS (SELECT 1 FROM executions WHERE executions.execution_id = record.execution_id)
  `,
    [agents, (operation.journalRecordsKept ?? journalRecordsKept) - 1],
  );
  return { executions: executionIds.length, steps: steps.rowCount ?? 0, journal: journal.rowCount ?? 0, approvals: (approvals.rowCount ?? 0) + refusedStarts };
}

/** Deletes at most `executionsMax` filed starts refused before
 * `finishedBefore` (no execution goes with them), chosen and deleted by
 * one statement as above: one filed again meanwhile (the same key, state
 * `filed` again) is left alone. How many went. */
async function pruneRefusedStarts(client: pg.ClientBase, operation: PruneExecutionsOperation, except: readonly string[]): Promise<number> {
  const deleted = await client.query(
    `
    WITH candidates AS MATERIALIZED (
      SELECT decision_id, settled_at FROM approval_inbox
      WHERE kind = 'start' AND state = 'refused' AND settled_at < $1
        AND ($2::text IS NULL OR agent_id = $2) AND agent_id <> ALL($3::text[])
      ORDER BY settled_at LIMIT $4
      FOR UPDATE SKIP LOCKED
    )
    DELETE FROM approval_inbox USING candidates
    WHERE approval_inbox.decision_id = candidates.decision_id AND approval_inbox.state = 'refused' AND approval_inbox.settled_at = candidates.settled_at
  `,
    [operation.finishedBefore, operation.agentId ?? null, except, operation.executionsMax],
  );
  return deleted.rowCount ?? 0;
}
