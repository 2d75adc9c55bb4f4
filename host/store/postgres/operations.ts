// The store operations PostgreSQL runs as transactions of their own — the
// reopen of a retry, the queue and the agent lifecycle (ensure, close, purge) —
// with exactly the SQLite store's semantics and errors
// (`../sqlite/operations.ts` is the reference; the pure parts — the
// approval request check, row decoding — are shared, not copied). The hot
// operations (prepare, barriers, terminal commit) are single statements
// sent in groups (`statements.ts`, `group-commit.ts`). A body does not open
// or close a transaction: the store runs each one inside a transaction of
// its own.
//
// Differences that PostgreSQL's concurrency asks for, none visible to a caller:
// * The row about to be replaced is read `FOR UPDATE`, so two writers of one
//   execution serialize on its row lock and the second one sees the
//   revision the first wrote (READ COMMITTED re-reads a locked row).
// * The last step each write appends carries the operation's `writeId`:
//   after a lost connection, finding that step is proof the write committed.
// * With fencing (`fence`), the compare-and-set UPDATE also requires, in
//   the same statement, that this process holds the agent's lease at its
//   epoch (docs/decisions/0010).
// The row lock, the compare-and-set and the step append are
// `compare-and-set.ts`'s, shared with `queue.ts` and `reopen.ts`.

import { agentHasUnfinishedExecutions } from "../purge-refusal.js";
import type { PruneExecutionsOperation } from "../prune.js";
import type { QueueOperation } from "../queue.js";
import type { AgentRow, CloseAgentOperation, EnsureAgentOperation, PurgeAgentOperation, PurgeAgentResult, ReopenExecutionOperation } from "../records.js";
import { agentFromRow } from "../sqlite/rows.js";
import { query, type OperationContext } from "./compare-and-set.js";
import { pruneExecutions } from "./prune.js";
import { cancelQueued, enqueueMessage } from "./queue.js";
import { reopenExecution } from "./reopen.js";

/** The operations run here; the hot ones are statements of a group
 * (`statements.ts`, `group-commit.ts`). */
export type TransactionOperation =
  | ReopenExecutionOperation
  | EnsureAgentOperation
  | CloseAgentOperation
  | PurgeAgentOperation
  | PruneExecutionsOperation
  | QueueOperation;

export function applyOperation(context: OperationContext, operation: TransactionOperation): Promise<unknown> {
  switch (operation.type) {
    case "reopenExecution":
      return reopenExecution(context, operation);
    case "ensureAgent":
      return ensureAgent(context, operation);
    case "closeAgent":
      return closeAgent(context, operation);
    case "purgeAgent":
      return purgeAgent(context, operation);
    case "pruneExecutions":
      return pruneExecutions(context.client, operation, context.schema);
    case "enqueueMessage":
      return enqueueMessage(context, operation);
    case "cancelQueued":
      return cancelQueued(context, operation);
  }
}

// -- agents (the root) ----------------------------------------------------------------

async function requireAgent(context: OperationContext, agentId: string): Promise<AgentRow> {
  const row = (await query(context, "SELECT * FROM agents WHERE agent_id = $1", [agentId])).rows[0];
  if (row === undefined) throw new Error(`phronomy: agent "${agentId}" vanished inside its own transaction`);
  return agentFromRow(row, context.where);
}

async function ensureAgent(context: OperationContext, operation: EnsureAgentOperation): Promise<AgentRow> {
  const inserted = (
    await query(
      context,
      `
    INSERT INTO agents (agent_id, lifecycle, revision, created_at, updated_at) VALUES ($1, 'open', 1, $2, $2)
    ON CONFLICT (agent_id) DO NOTHING RETURNING *
  `,
      [operation.agentId, operation.at],
    )
  ).rows[0];
  return inserted === undefined ? requireAgent(context, operation.agentId) : agentFromRow(inserted, context.where);
}

async function closeAgent(context: OperationContext, operation: CloseAgentOperation): Promise<AgentRow> {
  await query(
    context,
    `
    INSERT INTO agents AS agent (agent_id, lifecycle, revision, created_at, updated_at) VALUES ($1, 'closed', 1, $2, $2)
    ON CONFLICT (agent_id) DO UPDATE SET lifecycle = 'closed', revision = agent.revision + 1, updated_at = excluded.updated_at
    WHERE agent.lifecycle = 'open'
  `,
    [operation.agentId, operation.at],
  );
  return requireAgent(context, operation.agentId);
}

/** How many unfinished execution ids a refused purge names in its error. */
const unfinishedNamedMax = 5;

async function purgeAgent(context: OperationContext, operation: PurgeAgentOperation): Promise<PurgeAgentResult> {
  const agentId = operation.agentId;
  // Lock the root first so an admission cannot slip in between the check and the deletes.
  await query(context, "SELECT 1 FROM agents WHERE agent_id = $1 FOR UPDATE", [agentId]);
  const unfinished = await query(
    context,
    `SELECT execution_id FROM (SELECT execution_id, created_at FROM executions WHERE agent_id = $1 AND status IN ('preparing', 'active', 'suspended') UNION ALL SELECT execution_id, created_at FROM queued_messages WHERE agent_id = $1) AS unfinished ORDER BY created_at, execution_id LIMIT ${unfinishedNamedMax}`,
    [agentId],
  );
  if (unfinished.rows.length > 0) {
    throw agentHasUnfinishedExecutions(
      agentId,
      unfinished.rows.map((row) => String(row["execution_id"])),
    );
  }
  await query(context, "DELETE FROM steps WHERE execution_id IN (SELECT execution_id FROM executions WHERE agent_id = $1)", [agentId]);
  const executionsDeleted = (await query(context, "DELETE FROM executions WHERE agent_id = $1", [agentId])).rowCount ?? 0;
  const journalDeleted = (await query(context, "DELETE FROM journal WHERE agent_id = $1", [agentId])).rowCount ?? 0;
  const agentsDeleted = (await query(context, "DELETE FROM agents WHERE agent_id = $1", [agentId])).rowCount ?? 0;
  return { purged: executionsDeleted + journalDeleted + agentsDeleted > 0, executionsDeleted };
}
