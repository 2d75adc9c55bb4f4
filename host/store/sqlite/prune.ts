// Pruning in the SQLite store (`../prune.ts` holds the rules): the body of
// one `pruneExecutions` operation, run like every write through the offload
// (one writer; the worker's connection whenever it is ready, so the
// deletes never run on the control loop's thread), and the migration that
// adds the indexes it reads by.
//
// The candidates are read and deleted inside the one write transaction the
// offload runs the operation in; no other writer exists meanwhile, so a
// retry that reopens a row either committed before (the row is not
// terminal: not a candidate) or runs after (the row is gone: the retry
// finds no execution). The DELETE re-checks the status, revision and
// finish it read anyway.

import type { PruneCounts, PruneExecutionsOperation } from "../prune.js";
import { journalRecordsKept } from "../prune.js";
import type { SqliteConnection } from "./driver.js";

/** The batch the runtime prunes a SQLite store in. A batch costs ≈210–260
 * µs per execution of the bench's shape with nothing else running
 * (`npm run bench:retention`: 100 took ≈15 ms), and it holds the one
 * writer the hot path's barriers wait for; 32 hold it ≈5–7 ms, no longer
 * than a large group of barriers, which it shares a commit with. Smaller
 * batches add no fsync (they ride in group commits), only statements. */
export const sqlitePruneBatchExecutions = 32;

/** Migration 3: find finished executions by finish time, and an
 * execution's inbox rows, without a scan. The partial index holds terminal
 * rows only, so the hot path's barriers (active rows) never touch it. */
export function createPruneIndexes(connection: SqliteConnection): void {
  connection.exec(`
    CREATE INDEX executions_finished ON executions (updated_at) WHERE status = 'terminal';
    CREATE INDEX approval_inbox_by_execution ON approval_inbox (execution_id);
  `);
}

// Three fixed texts (the connection caches statements by text).
const candidatesOfAll = `
  SELECT execution_id, agent_id, revision, updated_at FROM executions
  WHERE status = 'terminal' AND updated_at < ? ORDER BY updated_at LIMIT ?`;
const candidatesOfAgent = `
  SELECT execution_id, agent_id, revision, updated_at FROM executions
  WHERE status = 'terminal' AND updated_at < ? AND agent_id = ? ORDER BY updated_at LIMIT ?`;
const candidatesExcept = `
  SELECT execution_id, agent_id, revision, updated_at FROM executions
  WHERE status = 'terminal' AND updated_at < ? AND agent_id NOT IN (SELECT value FROM json_each(?))
  ORDER BY updated_at LIMIT ?`;

const prunedRow = "execution_id = ? AND status = 'terminal' AND revision = ? AND updated_at = ?";

/** Deletes up to `executionsMax` terminal executions finished before
 * `finishedBefore`, with their steps and inbox rows, and trims the journal
 * of the agents touched. Runs inside the caller's transaction. */
export function pruneExecutions(connection: SqliteConnection, operation: PruneExecutionsOperation): PruneCounts {
  const { finishedBefore, executionsMax } = operation;
  const candidates =
    operation.agentId !== undefined
      ? connection.prepare(candidatesOfAgent).all(finishedBefore, operation.agentId, executionsMax)
      : operation.exceptAgentIds !== undefined && operation.exceptAgentIds.length > 0
        ? connection.prepare(candidatesExcept).all(finishedBefore, JSON.stringify(operation.exceptAgentIds), executionsMax)
        : connection.prepare(candidatesOfAll).all(finishedBefore, executionsMax);
  let executions = 0;
  let steps = 0;
  let approvals = 0;
  const agents = new Set<string>();
  for (const candidate of candidates) {
    const executionId = String(candidate["execution_id"]);
    // The row as read: terminal, at the revision and finish read. Its steps
    // first, counted (the trigger of `timeline.ts` would take them uncounted).
    const row = [executionId, candidate["revision"] ?? null, candidate["updated_at"] ?? null];
    const stepsDeleted = connection.prepare(`DELETE FROM steps WHERE execution_rowid = (SELECT rowid FROM executions WHERE ${prunedRow})`).run(...row).changes;
    const deleted = connection.prepare(`DELETE FROM executions WHERE ${prunedRow}`).run(...row).changes;
    if (deleted === 0) continue;
    executions += deleted;
    steps += stepsDeleted;
    approvals += connection.prepare("DELETE FROM approval_inbox WHERE execution_id = ?").run(executionId).changes;
    agents.add(String(candidate["agent_id"]));
  }
  let journal = 0;
  const kept = operation.journalRecordsKept ?? journalRecordsKept;
  for (const agentId of agents) journal += trimJournal(connection, agentId, kept);
  return { executions, steps, journal, approvals };
}

/** Deletes the agent's journal records older than its newest `kept`
 * whose execution is no longer in the store. */
function trimJournal(connection: SqliteConnection, agentId: string, kept: number): number {
  return connection
    .prepare(`
    DELETE FROM journal
    WHERE agent_id = ?
      AND seq < coalesce((SELECT seq FROM journal WHERE agent_id = ? ORDER BY seq DESC LIMIT 1 OFFSET ?), -1)
      AND NOT EXISTS (SELECT 1 FROM executions WHERE executions.execution_id = journal.execution_id)
  `)
    .run(agentId, agentId, kept - 1).changes;
}
