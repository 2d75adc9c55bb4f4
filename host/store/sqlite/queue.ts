// The SQLite store's conversation queues (`../queue.ts` says what they
// keep and why): the table and its trigger (schema version 4), the two
// writes (run by the store worker, each in the transaction or savepoint
// `transaction.ts` gives it) and the read.

import { AgentClosedError, InvalidInputError, QueueFullError } from "../../errors.js";
import type { CancelQueuedOperation, CancelQueuedResult, EnqueueMessageOperation, EnqueueMessageResult, QueuedMessage } from "../queue.js";
import type { Json } from "../records.js";
import { appendSteps, queuedStepPayload } from "./timeline.js";
import type { SqliteConnection, SqliteRow } from "./driver.js";
import { definitionOf } from "./page-counts.js";
import { jsonText, zeroUsage } from "./rows.js";

/** Migration to version 4: the queue, and the trigger that removes a
 * queued message when its execution is written (prepared or cancelled);
 * version 14 gives the queue its `queued` step and the trigger moves it
 * into the timeline (`timeline.ts`). */
export function createConversationQueues(connection: SqliteConnection): void {
  connection.exec(`
    CREATE TABLE queued_messages (
      execution_id TEXT PRIMARY KEY NOT NULL,
      agent_id     TEXT NOT NULL,
      seq          INTEGER NOT NULL,
      input        TEXT NOT NULL,
      config       TEXT NOT NULL,
      created_at   INTEGER NOT NULL
    );
    CREATE UNIQUE INDEX queued_messages_by_agent ON queued_messages (agent_id, seq);
    CREATE TRIGGER queued_message_admitted AFTER INSERT ON executions
    BEGIN
      DELETE FROM queued_messages WHERE execution_id = NEW.execution_id;
    END;
  `);
}

export function enqueueMessage(connection: SqliteConnection, operation: EnqueueMessageOperation): EnqueueMessageResult {
  const context = { agentId: operation.agentId, executionId: operation.executionId };
  // A message to a conversation whose first preparation has not committed
  // yet writes its root, as that preparation would (docs/decisions/0024).
  connection
    .prepare("INSERT INTO agents (agent_id, lifecycle, revision, created_at, updated_at) VALUES (?, 'open', 1, ?, ?) ON CONFLICT (agent_id) DO NOTHING")
    .run(operation.agentId, operation.at, operation.at);
  const agent = connection.prepare("SELECT lifecycle FROM agents WHERE agent_id = ?").get(operation.agentId)!;
  if (agent["lifecycle"] === "closed") throw new AgentClosedError(operation.agentId);
  const taken = connection
    .prepare("SELECT 1 AS found FROM executions WHERE execution_id = ? UNION ALL SELECT 1 FROM queued_messages WHERE execution_id = ?")
    .get(operation.executionId, operation.executionId);
  if (taken !== undefined)
    throw new InvalidInputError(`execution id ${operation.executionId} is already in the store; every message needs a new execution id`, {
      ...context,
      details: { reason: "execution_exists" },
    });
  const bounds = connection
    .prepare("SELECT count(*) AS waiting, min(seq) AS head, max(seq) AS tail FROM queued_messages WHERE agent_id = ?")
    .get(operation.agentId)!;
  const waiting = Number(bounds["waiting"]);
  if (waiting >= operation.limit) throw new QueueFullError(operation.agentId, operation.limit);
  const seq = waiting === 0 ? 1 : operation.front ? Number(bounds["head"]) - 1 : Number(bounds["tail"]) + 1;
  const position = operation.front ? 1 : waiting + 1;
  // The `queued` step, seq 0 of the timeline once the execution is written
  // (`timeline.ts`); the preparation appends its steps from 1 on.
  connection
    .prepare("INSERT INTO queued_messages (execution_id, agent_id, seq, input, config, created_at, queued_step) VALUES (?, ?, ?, ?, ?, ?, ?)")
    .run(
      operation.executionId,
      operation.agentId,
      seq,
      jsonText(operation.input),
      jsonText(operation.config),
      operation.at,
      queuedStepPayload(position, operation.front),
    );
  return { seq, position };
}

export function cancelQueued(connection: SqliteConnection, operation: CancelQueuedOperation): CancelQueuedResult {
  const row = connection.prepare("SELECT * FROM queued_messages WHERE execution_id = ?").get(operation.executionId);
  if (row === undefined) return { cancelled: false };
  const message = queuedFromRow(row);
  // The trigger removes the queued row with this insert.
  connection
    .prepare(`
    INSERT INTO executions (execution_id, agent_id, revision, status, phase, mode, input, metadata, definition, outcome, output,
                            error, usage, approval_request, created_at, updated_at)
    VALUES (?, ?, 1, 'terminal', 'terminal', 'invoke', ?, ?, ?, 'failed', 'null', ?, ?, 'null', ?, ?)
  `)
    .run(
      message.executionId,
      message.agentId,
      jsonText(message.input),
      jsonText({ config: message.config }),
      definitionOf(message.config),
      jsonText(operation.error),
      jsonText(zeroUsage),
      message.createdAt,
      operation.at,
    );
  appendSteps(connection, message.executionId, [{ kind: "terminal", at: operation.at, payload: { outcome: "failed", revision: 1, whileQueued: true } }]);
  return { cancelled: true };
}

export function queuedMessages(connection: SqliteConnection, agentId: string): QueuedMessage[] {
  return connection.prepare("SELECT * FROM queued_messages WHERE agent_id = ? ORDER BY seq").all(agentId).map(queuedFromRow);
}

export function queueHeads(connection: SqliteConnection): QueuedMessage[] {
  return connection
    .prepare("SELECT * FROM queued_messages AS q WHERE seq = (SELECT MIN(seq) FROM queued_messages WHERE agent_id = q.agent_id)")
    .all()
    .map(queuedFromRow);
}

export function queuedMessage(connection: SqliteConnection, executionId: string): QueuedMessage | undefined {
  const row = connection.prepare("SELECT * FROM queued_messages WHERE execution_id = ?").get(executionId);
  return row === undefined ? undefined : queuedFromRow(row);
}

export function listQueuedMessages(connection: SqliteConnection, filter: { readonly agentId?: string; readonly limit: number }): QueuedMessage[] {
  const rows =
    filter.agentId === undefined
      ? connection.prepare("SELECT * FROM queued_messages ORDER BY created_at DESC, execution_id DESC LIMIT ?").all(filter.limit)
      : connection
          .prepare("SELECT * FROM queued_messages WHERE agent_id = ? ORDER BY created_at DESC, execution_id DESC LIMIT ?")
          .all(filter.agentId, filter.limit);
  return rows.map(queuedFromRow);
}

export function queuedFromRow(row: SqliteRow): QueuedMessage {
  return {
    executionId: String(row["execution_id"]),
    agentId: String(row["agent_id"]),
    seq: Number(row["seq"]),
    input: JSON.parse(String(row["input"])) as Json,
    config: JSON.parse(String(row["config"])) as { [key: string]: Json },
    createdAt: Number(row["created_at"]),
  };
}
