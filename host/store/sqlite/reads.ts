// The store's reads, as functions over a connection. Each is one statement,
// so it reads one committed snapshot; in WAL mode a reader never blocks the
// writer (nor waits for it), which is why reads run on the calling thread.

import type { AgentRow, ExecutionListFilter, ExecutionRow, JournalRecord } from "../records.js";
import type { SqliteConnection, SqliteValue } from "./driver.js";
import { agentFromRow, executionFromRow, journalFromRow } from "./rows.js";

export { listSteps } from "./timeline.js";

/** Rows `listExecutions` returns when no limit is given. */
export const executionListDefault = 100;

/** Most rows one `listExecutions` returns: a listing is for people and
 * dashboards, and a page of 1,000 rows (inputs and outputs included) is
 * already megabytes; page with `agentId`/`status` filters instead. */
export const executionListMax = 1_000;

/** Most journal records one `readJournal` returns: an agent's memory window
 * is a few dozen turns; 10,000 guards against a window set by mistake. */
export const journalReadMax = 10_000;

export function getAgent(connection: SqliteConnection, agentId: string): AgentRow | undefined {
  const row = connection.prepare("SELECT * FROM agents WHERE agent_id = ?").get(agentId);
  return row === undefined ? undefined : agentFromRow(row, connection.path);
}

export function getExecution(connection: SqliteConnection, executionId: string): ExecutionRow | undefined {
  const row = connection.prepare("SELECT * FROM executions WHERE execution_id = ?").get(executionId);
  return row === undefined ? undefined : executionFromRow(row, connection.path);
}

/** Newest first. The limit is checked by the caller (`SqliteStore`). */
export function listExecutions(connection: SqliteConnection, filter: ExecutionListFilter): ExecutionRow[] {
  const conditions: string[] = [];
  const parameters: SqliteValue[] = [];
  if (filter.status !== undefined) {
    conditions.push("status = ?");
    parameters.push(filter.status);
  }
  if (filter.outcome !== undefined) {
    conditions.push("outcome = ?");
    parameters.push(filter.outcome);
  }
  if (filter.agentId !== undefined) {
    conditions.push("agent_id = ?");
    parameters.push(filter.agentId);
  }
  // Eight fixed texts at most (each filter present or not), so the statement cache stays bounded.
  const where = conditions.length === 0 ? "" : `WHERE ${conditions.join(" AND ")}`;
  const sql = `SELECT * FROM executions ${where} ORDER BY created_at DESC, execution_id DESC LIMIT ?`;
  const rows = connection.prepare(sql).all(...parameters, filter.limit ?? executionListDefault);
  return rows.map((row) => executionFromRow(row, connection.path));
}

/** Every execution whose status is not `terminal` (suspended ones
 * included): what recovery must resolve. Oldest first. */
export function unfinishedExecutions(connection: SqliteConnection): ExecutionRow[] {
  const rows = connection.prepare("SELECT * FROM executions WHERE status IN ('preparing', 'active', 'suspended') ORDER BY created_at, execution_id").all();
  return rows.map((row) => executionFromRow(row, connection.path));
}

/** The agent's last `limit` journal records, oldest first. */
export function readJournal(connection: SqliteConnection, agentId: string, limit: number): JournalRecord[] {
  const rows = connection
    .prepare(`
    SELECT * FROM (SELECT * FROM journal WHERE agent_id = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq
  `)
    .all(agentId, limit);
  return rows.map((row) => journalFromRow(row, connection.path));
}
