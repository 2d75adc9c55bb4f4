// Conversation homes in the whole-host simulation's store (docs/decisions
// 0101, 0112) as PostgreSQL keeps them (host/store/postgres/homes.ts,
// homes-rows.ts), on the shared SQLite database. The simulated store leases
// each conversation on its own (no partitions), so a conversation's
// "partition" is its own lease: a move of a conversation that has nothing
// anywhere hands its lease to the mover at the next epoch — its holder's
// writes are fenced from then on, as the natural partition's holder's are
// by a home — and writes the home row, which the fence's refusal names
// (`movedTo`) and a later move answers (`home`). A home never changes; it
// goes with its conversation's last row (the prune, `pruneHomes`).

import type { SqliteConnection } from "../../host/store/sqlite/driver.js";

export function createHomes(connection: SqliteConnection): void {
  connection.exec(`
    CREATE TABLE IF NOT EXISTS sim_conversation_homes (
      agent_id TEXT PRIMARY KEY,
      moved_by TEXT NOT NULL,
      epoch    INTEGER NOT NULL,
      moved_at INTEGER NOT NULL
    )`);
}

/** The conversation's home: who moved it, at the lease epoch it took. */
export interface Home {
  readonly movedBy: string;
  readonly epoch: number;
}

export function homeOf(connection: SqliteConnection, agentId: string): Home | undefined {
  const row = connection.prepare("SELECT moved_by, epoch FROM sim_conversation_homes WHERE agent_id = ?").get(agentId);
  return row === undefined ? undefined : { movedBy: String(row["moved_by"]), epoch: Number(row["epoch"]) };
}

/** Whether the conversation has anything anywhere (`conversation_has_rows`):
 * its agents row, an execution, a journal record, a queued message, a row
 * of either inbox, a schedule. */
export function conversationHasRows(connection: SqliteConnection, agentId: string): boolean {
  return ["agents", "executions", "journal", "queued_messages", "approval_inbox", "sim_start_inbox", "schedules"].some(
    (table) => connection.prepare(`SELECT 1 FROM ${table} WHERE agent_id = ? LIMIT 1`).get(agentId) !== undefined,
  );
}

export function insertHome(connection: SqliteConnection, agentId: string, movedBy: string, epoch: number, at: number): void {
  connection.prepare("INSERT INTO sim_conversation_homes (agent_id, moved_by, epoch, moved_at) VALUES (?, ?, ?, ?)").run(agentId, movedBy, epoch, at);
}

/** The prune's last statement (0112): a home whose conversation has
 * nothing left anywhere, moved before `before`, goes. The homes pruned. */
export function pruneHomes(connection: SqliteConnection, before: number): string[] {
  const pruned = connection
    .prepare("SELECT agent_id FROM sim_conversation_homes WHERE moved_at < ? ORDER BY agent_id")
    .all(before)
    .map((row) => String(row["agent_id"]))
    .filter((agentId) => !conversationHasRows(connection, agentId));
  for (const agentId of pruned) connection.prepare("DELETE FROM sim_conversation_homes WHERE agent_id = ?").run(agentId);
  return pruned;
}
