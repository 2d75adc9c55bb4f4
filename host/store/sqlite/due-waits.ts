// Due waits in the SQLite store (`../due-waits.ts` holds the rules): the
// migration that indexes suspended rows by their wait's `dueAt`, and the
// two reads of the due sweep. The index is a partial expression index on
// the wait record the suspension commit already writes: nothing else
// writes it, so it cannot disagree with the wait.

import { checkDueRead, dueWaitOf, type DueCursor, type DueWait } from "../due-waits.js";
import type { SqliteConnection } from "./driver.js";

/** The expression the index holds and every read names (the planner uses
 * the index only for the same text). */
const dueAt = "json_extract(approval_request, '$.dueAt')";

/** Migration 8 (docs/decisions/0076): suspended rows by due time. */
export function createDueWaitIndex(connection: SqliteConnection): void {
  connection.exec(`CREATE INDEX executions_due ON executions (${dueAt}, execution_id) WHERE status = 'suspended'`);
}

const dueFirst = `
  SELECT execution_id, agent_id, json_extract(approval_request, '$.approvalId') AS wait_id, ${dueAt} AS due_at
  FROM executions WHERE status = 'suspended' AND ${dueAt} <= ?
  ORDER BY ${dueAt}, execution_id LIMIT ?`;
const dueAfter = `
  SELECT execution_id, agent_id, json_extract(approval_request, '$.approvalId') AS wait_id, ${dueAt} AS due_at
  FROM executions WHERE status = 'suspended' AND ${dueAt} <= ? AND (${dueAt}, execution_id) > (?, ?)
  ORDER BY ${dueAt}, execution_id LIMIT ?`;
const nextDue = `SELECT min(${dueAt}) AS due_at FROM executions WHERE status = 'suspended' AND ${dueAt} > ?`;

export function dueWaits(connection: SqliteConnection, through: number, limit: number, after?: DueCursor): DueWait[] {
  checkDueRead(through, limit);
  const found =
    after === undefined ? connection.prepare(dueFirst).all(through, limit) : connection.prepare(dueAfter).all(through, after.dueAt, after.executionId, limit);
  return found.map(dueWaitOf);
}

export function nextDueAt(connection: SqliteConnection, after: number): number | undefined {
  const value = connection.prepare(nextDue).get(after)?.["due_at"];
  return value === null || value === undefined ? undefined : Number(value);
}
