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

// `INDEXED BY`: with every row suspended the planner may prefer the status
// index and sort, which reads every suspended row for one batch. The
// cursor is written as a range the index can seek to (`>= dueAt`, then the
// tie on execution id), not as a row-value comparison, which SQLite only
// filters; the next due time is the first index entry past a bound (a
// `min()` with a range reads the whole range).
const dueFirst = `
  SELECT execution_id, agent_id, json_extract(approval_request, '$.approvalId') AS wait_id, ${dueAt} AS due_at
  FROM executions INDEXED BY executions_due WHERE status = 'suspended' AND ${dueAt} <= ?
  ORDER BY ${dueAt}, execution_id LIMIT ?`;
const dueAfter = `
  SELECT execution_id, agent_id, json_extract(approval_request, '$.approvalId') AS wait_id, ${dueAt} AS due_at
  FROM executions INDEXED BY executions_due
  WHERE status = 'suspended' AND ${dueAt} <= ? AND ${dueAt} >= ? AND (${dueAt} > ? OR execution_id > ?)
  ORDER BY ${dueAt}, execution_id LIMIT ?`;
const nextDue = `
  SELECT ${dueAt} AS due_at FROM executions INDEXED BY executions_due
  WHERE status = 'suspended' AND ${dueAt} > ? ORDER BY ${dueAt} LIMIT 1`;

export function dueWaits(connection: SqliteConnection, through: number, limit: number, after?: DueCursor): DueWait[] {
  checkDueRead(through, limit);
  const found =
    after === undefined
      ? connection.prepare(dueFirst).all(through, limit)
      : connection.prepare(dueAfter).all(through, after.dueAt, after.dueAt, after.executionId, limit);
  return found.map(dueWaitOf);
}

export function nextDueAt(connection: SqliteConnection, after: number): number | undefined {
  const value = connection.prepare(nextDue).get(after)?.["due_at"];
  return value === null || value === undefined ? undefined : Number(value);
}
