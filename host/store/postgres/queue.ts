// The PostgreSQL store's conversation queues (`../queue.ts` says what they
// keep and why; `../sqlite/queue.ts` is the reference): the table and its
// trigger (schema version 6), the two writes — each a transaction of its
// own, fenced by the agent's partition like every write (docs/decisions/0010,
// 0042; the cancel too since 0047),
// its last step carrying the write id so a lost connection's outcome is
// read back (`outcome.ts`) — and the read.

import { filerChannelSql } from "./inbox.js";
import { fenceHeldSql } from "./partitions.js";
import type pg from "pg";
import { AgentClosedError, InvalidInputError, QueueFullError } from "../../errors.js";
import type { CancelQueuedOperation, CancelQueuedResult, EnqueueMessageOperation, EnqueueMessageResult, QueuedMessage } from "../queue.js";
import { queuedFromRow } from "../sqlite/queue.js";
import { jsonText, zeroUsage } from "../sqlite/rows.js";
import type { SqliteRow } from "../sqlite/driver.js";
import type { OperationContext } from "./compare-and-set.js";
import { leaseLost } from "./statements.js";

/** Migration 6: the queue, and the trigger that removes a queued message
 * when its execution is inserted (prepared or cancelled). A new migration:
 * `prepare_execution` is not touched. */
export async function createConversationQueues(client: pg.ClientBase): Promise<void> {
  await client.query(`
    CREATE TABLE queued_messages (
      execution_id text PRIMARY KEY,
      agent_id     text NOT NULL,
      seq          bigint NOT NULL,
      input        text NOT NULL,
      config       text NOT NULL,
      created_at   bigint NOT NULL
    );
    CREATE UNIQUE INDEX queued_messages_by_agent ON queued_messages (agent_id, seq);
    CREATE FUNCTION queued_message_admitted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM queued_messages WHERE execution_id = NEW.execution_id;
      RETURN NULL;
    END $$;
    CREATE TRIGGER queued_message_admitted AFTER INSERT ON executions
    FOR EACH ROW EXECUTE FUNCTION queued_message_admitted();
  `);
}

async function query(context: OperationContext, sql: string, values: readonly unknown[] = []): Promise<pg.QueryResult<SqliteRow>> {
  return context.client.query<SqliteRow>(sql, values as unknown[]);
}

export async function enqueueMessage(context: OperationContext, operation: EnqueueMessageOperation): Promise<EnqueueMessageResult> {
  const ids = { agentId: operation.agentId, executionId: operation.executionId };
  // A message to a conversation whose first preparation has not committed
  // yet writes its root, as that preparation would (docs/decisions/0024).
  await query(
    context,
    "INSERT INTO agents (agent_id, lifecycle, revision, created_at, updated_at) VALUES ($1, 'open', 1, $2, $2) ON CONFLICT (agent_id) DO NOTHING",
    [operation.agentId, operation.at],
  );
  // The root's row lock orders the enqueues of one agent (count, then insert).
  const agent = (await query(context, "SELECT lifecycle FROM agents WHERE agent_id = $1 FOR UPDATE", [operation.agentId])).rows[0]!;
  if (agent["lifecycle"] === "closed") throw new AgentClosedError(operation.agentId);
  const fence = context.fenceOf(operation.agentId);
  if (fence !== undefined) {
    const held = await query(context, `SELECT 1 WHERE ${fenceHeldSql("$1", "$2", "$3", true)}`, [operation.agentId, fence.owner, fence.epoch]);
    if (held.rowCount !== 1) throw leaseLost(operation.type, operation.executionId, operation.agentId, fence);
  }
  const taken = await query(context, "SELECT 1 FROM executions WHERE execution_id = $1 UNION ALL SELECT 1 FROM queued_messages WHERE execution_id = $1", [
    operation.executionId,
  ]);
  if ((taken.rowCount ?? 0) > 0)
    throw new InvalidInputError(`execution id ${operation.executionId} is already in the store; every message needs a new execution id`, {
      ...ids,
      details: { reason: "execution_exists" },
    });
  const bounds = (
    await query(context, "SELECT count(*) AS waiting, min(seq) AS head, max(seq) AS tail FROM queued_messages WHERE agent_id = $1", [operation.agentId])
  ).rows[0]!;
  const waiting = Number(bounds["waiting"]);
  if (waiting >= operation.limit) throw new QueueFullError(operation.agentId, operation.limit);
  const seq = waiting === 0 ? 1 : operation.front ? Number(bounds["head"]) - 1 : Number(bounds["tail"]) + 1;
  await query(context, "INSERT INTO queued_messages (execution_id, agent_id, seq, input, config, created_at) VALUES ($1, $2, $3, $4, $5, $6)", [
    operation.executionId,
    operation.agentId,
    seq,
    jsonText(operation.input),
    jsonText(operation.config),
    operation.at,
  ]);
  const position = operation.front ? 1 : waiting + 1;
  await query(context, "INSERT INTO steps (execution_id, seq, kind, at, payload, write_id) VALUES ($1, 0, 'queued', $2, $3, $4)", [
    operation.executionId,
    operation.at,
    jsonText({ position, interrupt: operation.front }),
    context.writeId,
  ]);
  return { seq, position };
}

export async function cancelQueued(context: OperationContext, operation: CancelQueuedOperation): Promise<CancelQueuedResult> {
  const row = (await query(context, "SELECT * FROM queued_messages WHERE execution_id = $1 FOR UPDATE", [operation.executionId])).rows[0];
  if (row === undefined) return { cancelled: false };
  const message = queuedFromRow(row);
  // Fenced like every write of the agent (docs/decisions/0042, 0047): a
  // process that takes itself for the partition's holder and lost it (a
  // stale fence) writes nothing; owner and epoch, as a terminal commit. A
  // process that knows another one holds it cancels as any process may
  // (`env.cancel` from anywhere, 0025): the message's row lock orders the
  // cancel and the owner's admission, whichever comes first wins.
  const fence = context.holdsPartitionOf?.(message.agentId) === false ? undefined : context.fenceOf(message.agentId);
  if (fence !== undefined) {
    const held = await query(context, `SELECT 1 WHERE ${fenceHeldSql("$1", "$2", "$3", false)}`, [message.agentId, fence.owner, fence.epoch]);
    if (held.rowCount !== 1) throw leaseLost(operation.type, operation.executionId, message.agentId, fence);
  }
  await query(
    context,
    `
    INSERT INTO executions (execution_id, agent_id, revision, status, phase, mode, input, metadata, outcome, output,
                            error, usage, approval_request, created_at, updated_at)
    VALUES ($1, $2, 1, 'terminal', 'terminal', 'invoke', $3, $4, 'failed', 'null', $5, $6, 'null', $7, $8)
  `,
    [
      message.executionId,
      message.agentId,
      jsonText(message.input),
      jsonText({ config: message.config }),
      jsonText(operation.error),
      jsonText(zeroUsage),
      message.createdAt,
      operation.at,
    ],
  );
  // A start filed by another process (claimed, then queued here): its
  // filer hears the cancel in this statement, at commit, as it hears the
  // owner's writes (docs/decisions/0047); the filer's own cancel settles
  // its Run itself.
  await query(
    context,
    `
    WITH written AS (
      INSERT INTO steps (execution_id, seq, kind, at, payload, write_id) VALUES ($1, 1, 'terminal', $2, $3, $4)
      RETURNING execution_id
    )
    SELECT pg_notify(${filerChannelSql("$5::text", "inbox.filed_by")}, written.execution_id) AS told
    FROM written JOIN approval_inbox AS inbox ON inbox.execution_id = written.execution_id AND inbox.kind = 'start' AND inbox.filed_by <> $6
  `,
    [message.executionId, operation.at, jsonText({ outcome: "failed", revision: 1, whileQueued: true }), context.writeId, context.schema, context.instanceId],
  );
  return { cancelled: true };
}

/** A queue write whose connection was lost committed (its step with the
 * write id was found): its result, read back. */
export async function committedQueueWrite(client: pg.ClientBase, operation: EnqueueMessageOperation | CancelQueuedOperation): Promise<unknown> {
  if (operation.type === "cancelQueued") return { cancelled: true };
  const row = (
    await client.query<SqliteRow>(
      "SELECT seq, (SELECT count(*) FROM queued_messages AS ahead WHERE ahead.agent_id = queued.agent_id AND ahead.seq <= queued.seq) AS position FROM queued_messages AS queued WHERE execution_id = $1",
      [operation.executionId],
    )
  ).rows[0];
  // Already prepared (or cancelled) since: it was the head.
  return row === undefined ? { seq: 0, position: 1 } : { seq: Number(row["seq"]), position: Number(row["position"]) };
}

type Queryable = Pick<pg.Pool, "query">;

export async function queuedMessages(pool: Queryable, agentId: string): Promise<QueuedMessage[]> {
  return (await pool.query<SqliteRow>("SELECT * FROM queued_messages WHERE agent_id = $1 ORDER BY seq", [agentId])).rows.map(queuedFromRow);
}

/** The queued messages of each of these agents, in order (one statement,
 * for the recovery of many conversations at once: `read-batches.ts`). */
export async function queuedMessagesOf(pool: Queryable, agentIds: readonly string[]): Promise<Map<string, QueuedMessage[]>> {
  const found = await pool.query<SqliteRow>("SELECT * FROM queued_messages WHERE agent_id = ANY($1::text[]) ORDER BY agent_id, seq", [agentIds]);
  const byAgent = new Map<string, QueuedMessage[]>(agentIds.map((agentId) => [agentId, []]));
  for (const row of found.rows) {
    const message = queuedFromRow(row);
    byAgent.get(message.agentId)?.push(message);
  }
  return byAgent;
}

export async function queueHeads(pool: Queryable): Promise<QueuedMessage[]> {
  return (await pool.query<SqliteRow>("SELECT DISTINCT ON (agent_id) * FROM queued_messages ORDER BY agent_id, seq")).rows.map(queuedFromRow);
}

export async function queuedMessage(pool: Queryable, executionId: string): Promise<QueuedMessage | undefined> {
  const row = (await pool.query<SqliteRow>("SELECT * FROM queued_messages WHERE execution_id = $1", [executionId])).rows[0];
  return row === undefined ? undefined : queuedFromRow(row);
}

export async function listQueuedMessages(pool: Queryable, filter: { readonly agentId?: string; readonly limit: number }): Promise<QueuedMessage[]> {
  const found =
    filter.agentId === undefined
      ? await pool.query<SqliteRow>("SELECT * FROM queued_messages ORDER BY created_at DESC, execution_id DESC LIMIT $1", [filter.limit])
      : await pool.query<SqliteRow>("SELECT * FROM queued_messages WHERE agent_id = $1 ORDER BY created_at DESC, execution_id DESC LIMIT $2", [
          filter.agentId,
          filter.limit,
        ]);
  return found.rows.map(queuedFromRow);
}
