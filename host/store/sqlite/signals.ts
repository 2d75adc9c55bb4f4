// Keyed signals in a SQLite store (docs/decisions/0077, the rules in
// `signal-records.ts`): each function is one IMMEDIATE transaction, so a
// signal and the wait committed with its key are serialized by SQLite's one
// writer. The owner and its visitors call them alike (a visitor's signal
// for a wait owned by the owner goes on through the approval inbox).

import type { Json } from "../records.js";
import { expiredSignalsSweptMax, type SignalSending, type SignalSent } from "../signal-records.js";
import { alreadyStored, eventWaitOf, notWaiting } from "../signal-lookup.js";
import type { SqliteConnection } from "./driver.js";
import { rollbackQuietly } from "./rollback.js";

/** Migration 8: the signals kept for a wait not committed yet, and the
 * index a signal finds its wait by (the key inside the pending request). */
export function createEventSignals(connection: SqliteConnection): void {
  connection.exec(`
    CREATE TABLE event_signals (
      signal_key TEXT PRIMARY KEY NOT NULL,
      payload    TEXT NOT NULL,
      sent_at    INTEGER NOT NULL,
      expires_at INTEGER NOT NULL,
      offered_to TEXT
    );
    CREATE INDEX event_signals_expiry ON event_signals (expires_at);
    CREATE INDEX executions_wait_key ON executions (json_extract(approval_request, '$.key')) WHERE status = 'suspended';
  `);
}

function transaction<T>(connection: SqliteConnection, body: () => T): T {
  connection.exec("BEGIN IMMEDIATE");
  try {
    const result = body();
    connection.exec("COMMIT");
    return result;
  } catch (error) {
    rollbackQuietly(connection);
    throw error;
  }
}

export function sendSignal(connection: SqliteConnection, sending: SignalSending): SignalSent {
  return transaction(connection, () => {
    const { key, at } = sending;
    connection
      .prepare(`DELETE FROM event_signals WHERE signal_key IN (SELECT signal_key FROM event_signals WHERE expires_at <= ? LIMIT ${expiredSignalsSweptMax})`)
      .run(at);
    const rows = connection
      .prepare(
        "SELECT execution_id, agent_id, approval_request FROM executions WHERE status = 'suspended' AND json_extract(approval_request, '$.key') = ? ORDER BY updated_at LIMIT 8",
      )
      .all(key);
    for (const row of rows) {
      const wait = eventWaitOf(
        { executionId: String(row["execution_id"]), agentId: String(row["agent_id"]), approvalRequest: String(row["approval_request"]) },
        key,
      );
      if (wait !== undefined) return { kind: "waiting", wait };
    }
    const stored = connection.prepare("SELECT sent_at, offered_to FROM event_signals WHERE signal_key = ?").get(key);
    // A signal offered to a wait no longer waiting (a cancel won the race
    // with its answer) is stored still, not a slot free for another one.
    if (stored !== undefined && (stored["offered_to"] === null || !offeredToWaiting(connection, key, String(stored["offered_to"]))))
      throw alreadyStored(key, Number(stored["sent_at"]));
    if (sending.ifWaiting) throw notWaiting(key);
    connection
      .prepare("INSERT OR REPLACE INTO event_signals (signal_key, payload, sent_at, expires_at, offered_to) VALUES (?, ?, ?, ?, NULL)")
      .run(key, JSON.stringify(sending.payload), at, sending.keepUntil);
    return { kind: "stored", keptUntil: sending.keepUntil };
  });
}

export function takeStoredSignal(connection: SqliteConnection, key: string, approvalId: string, at: number): Json | undefined {
  return transaction(connection, () => {
    const row = connection.prepare("SELECT payload, offered_to FROM event_signals WHERE signal_key = ? AND expires_at > ?").get(key, at);
    if (row === undefined) return undefined;
    const offeredTo = row["offered_to"];
    if (offeredTo !== null && offeredTo !== approvalId && offeredToWaiting(connection, key, String(offeredTo))) return undefined;
    connection.prepare("UPDATE event_signals SET offered_to = ? WHERE signal_key = ?").run(approvalId, key);
    return JSON.parse(String(row["payload"])) as Json;
  });
}

/** Whether the wait a stored signal was offered to still waits: one that
 * does not (its execution cancelled before the answer's commit) lets the
 * signal be taken by the next wait of its key (docs/decisions/0086). */
function offeredToWaiting(connection: SqliteConnection, key: string, approvalId: string): boolean {
  return (
    connection
      .prepare(
        "SELECT 1 FROM executions WHERE status = 'suspended' AND json_extract(approval_request, '$.key') = ? AND json_extract(approval_request, '$.approvalId') = ?",
      )
      .get(key, approvalId) !== undefined
  );
}

export function dropSignal(connection: SqliteConnection, key: string, approvalId: string): void {
  connection.prepare("DELETE FROM event_signals WHERE signal_key = ? AND offered_to = ?").run(key, approvalId);
}
