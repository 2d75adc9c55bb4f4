// Keyed signals in a PostgreSQL store (docs/decisions/0077, the rules in
// `signal-records.ts`). `sendSignal` and `takeStoredSignal` take a
// transaction lock on the key (`signalLockClass`, the key's hash) before
// they read: a signal and the owner's look after committing a wait with
// the same key are serialized, so they always meet — at READ COMMITTED,
// without the lock, each could miss the other's uncommitted row.

import type pg from "pg";
import type { Json } from "../records.js";
import { expiredSignalsSweptMax, type SignalSending, type SignalSent } from "../signal-records.js";
import { alreadyStored, eventWaitOf, notWaiting } from "../signal-lookup.js";

/** The advisory lock class of signal keys (beside the schema's and the instance's). */
const signalLockClass = 0x50485253;

/** Migration 17: the signals kept for a wait not committed yet, and the
 * index a signal finds its wait by (the key inside the pending request). */
export async function createEventSignals(client: pg.ClientBase): Promise<void> {
  await client.query(`
    CREATE TABLE event_signals (
      signal_key text PRIMARY KEY,
      payload    text NOT NULL,
      sent_at    bigint NOT NULL,
      expires_at bigint NOT NULL,
      offered_to text
    );
    CREATE INDEX event_signals_expiry ON event_signals (expires_at);
    CREATE INDEX executions_wait_key ON executions (((approval_request::json) ->> 'key')) WHERE status = 'suspended';
  `);
}

async function underKeyLock<T>(pool: pg.Pool, key: string, body: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [signalLockClass, key]);
    const result = await body(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

export function sendSignal(pool: pg.Pool, sending: SignalSending): Promise<SignalSent> {
  const { key, at } = sending;
  return underKeyLock(pool, key, async (client) => {
    await client.query(
      `DELETE FROM event_signals WHERE signal_key IN (SELECT signal_key FROM event_signals WHERE expires_at <= $1 LIMIT ${expiredSignalsSweptMax} FOR UPDATE SKIP LOCKED)`,
      [at],
    );
    const waits = await client.query<{ execution_id: string; agent_id: string; approval_request: string }>(
      "SELECT execution_id, agent_id, approval_request FROM executions WHERE status = 'suspended' AND ((approval_request::json) ->> 'key') = $1 ORDER BY updated_at LIMIT 8",
      [key],
    );
    for (const row of waits.rows) {
      const wait = eventWaitOf({ executionId: row.execution_id, agentId: row.agent_id, approvalRequest: row.approval_request }, key);
      if (wait !== undefined) return { kind: "waiting", wait };
    }
    const stored = (
      await client.query<{ sent_at: string; offered_to: string | null }>("SELECT sent_at, offered_to FROM event_signals WHERE signal_key = $1", [key])
    ).rows[0];
    // A signal offered to a wait no longer waiting (a cancel won the race
    // with its answer) is stored still, not a slot free for another one.
    if (stored !== undefined && (stored.offered_to === null || !(await offeredToWaiting(client, key, stored.offered_to))))
      throw alreadyStored(key, Number(stored.sent_at));
    if (sending.ifWaiting) throw notWaiting(key);
    await client.query(
      `INSERT INTO event_signals (signal_key, payload, sent_at, expires_at, offered_to) VALUES ($1, $2, $3, $4, NULL)
       ON CONFLICT (signal_key) DO UPDATE SET payload = excluded.payload, sent_at = excluded.sent_at, expires_at = excluded.expires_at, offered_to = NULL`,
      [key, JSON.stringify(sending.payload), at, sending.keepUntil],
    );
    return { kind: "stored", keptUntil: sending.keepUntil };
  });
}

export function takeStoredSignal(pool: pg.Pool, key: string, approvalId: string, at: number): Promise<Json | undefined> {
  return underKeyLock(pool, key, async (client) => {
    const row = (
      await client.query<{ payload: string }>(
        `UPDATE event_signals SET offered_to = $3 WHERE signal_key = $1 AND expires_at > $2 AND (offered_to IS NULL OR offered_to = $3 OR NOT EXISTS (
           SELECT 1 FROM executions WHERE status = 'suspended' AND ((approval_request::json) ->> 'key') = $1 AND ((approval_request::json) ->> 'approvalId') = event_signals.offered_to
         )) RETURNING payload`,
        [key, at, approvalId],
      )
    ).rows[0];
    return row === undefined ? undefined : (JSON.parse(row.payload) as Json);
  });
}

/** Whether the wait a stored signal was offered to still waits: one that
 * does not (its execution cancelled before the answer's commit) lets the
 * signal be taken by the next wait of its key (docs/decisions/0086). */
async function offeredToWaiting(client: pg.ClientBase, key: string, approvalId: string): Promise<boolean> {
  const found = await client.query(
    "SELECT 1 FROM executions WHERE status = 'suspended' AND ((approval_request::json) ->> 'key') = $1 AND ((approval_request::json) ->> 'approvalId') = $2",
    [key, approvalId],
  );
  return found.rows.length > 0;
}

export async function dropSignal(pool: pg.Pool, key: string, approvalId: string): Promise<void> {
  await pool.query("DELETE FROM event_signals WHERE signal_key = $1 AND offered_to = $2", [key, approvalId]);
}
