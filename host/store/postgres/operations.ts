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

import { fenceHeldSql } from "./partitions.js";
import type pg from "pg";
import { ExecutionRehydrationRequiredError, InvalidInputError } from "../../errors.js";
import { agentHasUnfinishedExecutions } from "../purge-refusal.js";
import type {
  AgentRow, ApprovalCommitOperation, CloseAgentOperation, CommittedRevision, EnsureAgentOperation, ExecutionMetadata,
  ExecutionStatusName, Json, PurgeAgentOperation, PurgeAgentResult, ReopenExecutionOperation, StepRecord,
} from "../records.js";
import { checkRequest } from "../sqlite/approval-commit.js";
import { agentFromRow, jsonText } from "../sqlite/rows.js";
import { leaseLost } from "./statements.js";
import { pruneExecutions } from "./prune.js";
import type { PruneExecutionsOperation } from "../prune.js";
import { cancelQueued, enqueueMessage } from "./queue.js";
import type { QueueOperation } from "../queue.js";
import { reopenExecution } from "./reopen.js";
import type { SqliteRow } from "../sqlite/driver.js";

/** The lease a write must still hold: owner and epoch (docs/decisions/0009). */
export interface Fence {
  readonly owner: string;
  readonly epoch: number;
}

export interface OperationContext {
  readonly client: pg.ClientBase;
  /** For messages: the store's redacted URL. */
  readonly where: string;
  /** Marks the write's last step (outcome resolution after a lost connection). */
  readonly writeId: string;
  /** The lease this process holds on an agent, when leases are on. */
  readonly fenceOf: (agentId: string) => Fence | undefined;
  /** Whether this process takes itself for the holder of the agent's
   * partition now (renewed in time or not). */
  readonly holdsPartitionOf?: (agentId: string) => boolean;
  /** The store's schema and this process's instance id: a write that ends
   * a start another process filed tells that filer (`filerChannelSql`,
   * docs/decisions/0047). */
  readonly schema: string;
  readonly instanceId: string;
}

type Row = SqliteRow;

/** The operations run here; the hot ones are statements of a group
 * (`statements.ts`, `group-commit.ts`). */
export type TransactionOperation = ReopenExecutionOperation | EnsureAgentOperation | CloseAgentOperation | PurgeAgentOperation | PruneExecutionsOperation | QueueOperation;

export function applyOperation(context: OperationContext, operation: TransactionOperation): Promise<unknown> {
  switch (operation.type) {
    case "reopenExecution": return reopenExecution(context, operation);
    case "ensureAgent": return ensureAgent(context, operation);
    case "closeAgent": return closeAgent(context, operation);
    case "purgeAgent": return purgeAgent(context, operation);
    case "pruneExecutions": return pruneExecutions(context.client, operation);
    case "enqueueMessage": return enqueueMessage(context, operation);
    case "cancelQueued": return cancelQueued(context, operation);
  }
}

// -- executions -------------------------------------------------------------------

async function query(context: OperationContext, sql: string, values: readonly unknown[] = []): Promise<pg.QueryResult<Row>> {
  return context.client.query<Row>(sql, values as unknown[]);
}

interface CompareAndSetOperation {
  readonly type: string;
  readonly executionId: string;
  readonly expectedRevision: number;
}

interface CurrentExecution {
  readonly agentId: string;
  readonly metadata: ExecutionMetadata;
  readonly approvalRequest: Json;
}

/** Locks and reads the row; refuses, before writing anything, when the
 * execution moved on, never existed, or is in the wrong status. */
export async function selectForUpdate(context: OperationContext, operation: CompareAndSetOperation, statuses: readonly ExecutionStatusName[]): Promise<CurrentExecution> {
  const row = (await query(context, "SELECT agent_id, revision, status, metadata, approval_request FROM executions WHERE execution_id = $1 FOR UPDATE", [operation.executionId])).rows[0];
  const details = { expectedRevision: operation.expectedRevision, operation: operation.type };
  if (row === undefined) {
    throw new ExecutionRehydrationRequiredError(`execution ${operation.executionId} is not in the store (${operation.type} expected revision ${operation.expectedRevision})`, { executionId: operation.executionId, details });
  }
  const status = row["status"] as ExecutionStatusName;
  if (row["revision"] !== operation.expectedRevision || !statuses.includes(status)) {
    throw new ExecutionRehydrationRequiredError(
      `execution ${operation.executionId} moved on: ${operation.type} expected revision ${operation.expectedRevision} with status ${statuses.join(" or ")}, the store holds revision ${String(row["revision"])} with status ${status}`,
      { executionId: operation.executionId, agentId: String(row["agent_id"]), details },
    );
  }
  return {
    agentId: String(row["agent_id"]),
    metadata: JSON.parse(String(row["metadata"])) as ExecutionMetadata,
    approvalRequest: JSON.parse(String(row["approval_request"])) as Json,
  };
}

/** The compare-and-set UPDATE: `$1` is the new revision, `values` follow as
 * `$2…`; the id, the expected revision and (with leases) the fence are
 * appended. Returns the new revision. */
export async function compareAndSet(context: OperationContext, operation: CompareAndSetOperation, agentId: string, setClause: string, values: readonly unknown[]): Promise<number> {
  const revision = operation.expectedRevision + 1;
  const parameters: unknown[] = [revision, ...values, operation.executionId, operation.expectedRevision];
  const idIndex = values.length + 2;
  // last_seq NULL: the steps this transaction appends (`appendSteps`) are
  // numbered after max(seq), and so is the next write's (migration 14).
  let sql = `UPDATE executions SET revision = $1, ${setClause}, last_seq = NULL WHERE execution_id = $${idIndex} AND revision = $${idIndex + 1}`;
  const fence = context.fenceOf(agentId);
  if (fence !== undefined) {
    parameters.push(fence.owner, fence.epoch);
    sql += ` AND ${fenceHeldSql("executions.agent_id", `$${idIndex + 2}`, `$${idIndex + 3}`, false)}`;
  }
  const { rowCount } = await query(context, sql, parameters);
  if (rowCount !== 1) {
    if (fence !== undefined) throw leaseLost(operation.type, operation.executionId, agentId, fence);
    throw new ExecutionRehydrationRequiredError(`execution ${operation.executionId} moved on: ${operation.type} expected revision ${operation.expectedRevision} and updated no row`, { executionId: operation.executionId });
  }
  return revision;
}

/** Appends the steps in one statement; the last carries the write id. The
 * execution's row lock (or its insertion in this transaction) makes the
 * `max(seq)` safe from concurrent appends. */
export async function appendSteps(context: OperationContext, executionId: string, steps: readonly StepRecord[]): Promise<void> {
  if (steps.length === 0) return;
  await query(context, `
    INSERT INTO steps (execution_id, seq, kind, at, payload, write_id)
    SELECT $1, base.seq + step.ordinal, step.kind, step.at, step.payload,
           CASE WHEN step.ordinal = $5 THEN $6 END
    FROM (SELECT coalesce(max(seq), 0) AS seq FROM steps WHERE execution_id = $1) AS base,
         unnest($2::text[], $3::bigint[], $4::text[]) WITH ORDINALITY AS step(kind, at, payload, ordinal)
  `, [
    executionId, steps.map((step) => step.kind), steps.map((step) => step.at), steps.map((step) => jsonText(step.payload)),
    steps.length, context.writeId,
  ]);
}

// -- agents (the root) ----------------------------------------------------------------

async function requireAgent(context: OperationContext, agentId: string): Promise<AgentRow> {
  const row = (await query(context, "SELECT * FROM agents WHERE agent_id = $1", [agentId])).rows[0];
  if (row === undefined) throw new Error(`phronomy: agent "${agentId}" vanished inside its own transaction`);
  return agentFromRow(row, context.where);
}

async function ensureAgent(context: OperationContext, operation: EnsureAgentOperation): Promise<AgentRow> {
  const inserted = (await query(context, `
    INSERT INTO agents (agent_id, lifecycle, revision, created_at, updated_at) VALUES ($1, 'open', 1, $2, $2)
    ON CONFLICT (agent_id) DO NOTHING RETURNING *
  `, [operation.agentId, operation.at])).rows[0];
  return inserted === undefined ? requireAgent(context, operation.agentId) : agentFromRow(inserted, context.where);
}

async function closeAgent(context: OperationContext, operation: CloseAgentOperation): Promise<AgentRow> {
  await query(context, `
    INSERT INTO agents AS agent (agent_id, lifecycle, revision, created_at, updated_at) VALUES ($1, 'closed', 1, $2, $2)
    ON CONFLICT (agent_id) DO UPDATE SET lifecycle = 'closed', revision = agent.revision + 1, updated_at = excluded.updated_at
    WHERE agent.lifecycle = 'open'
  `, [operation.agentId, operation.at]);
  return requireAgent(context, operation.agentId);
}

/** How many unfinished execution ids a refused purge names in its error. */
const unfinishedNamedMax = 5;

async function purgeAgent(context: OperationContext, operation: PurgeAgentOperation): Promise<PurgeAgentResult> {
  const agentId = operation.agentId;
  // Lock the root first so an admission cannot slip in between the check and the deletes.
  await query(context, "SELECT 1 FROM agents WHERE agent_id = $1 FOR UPDATE", [agentId]);
  const unfinished = await query(context, `SELECT execution_id FROM (SELECT execution_id, created_at FROM executions WHERE agent_id = $1 AND status IN ('preparing', 'active', 'suspended') UNION ALL SELECT execution_id, created_at FROM queued_messages WHERE agent_id = $1) AS unfinished ORDER BY created_at, execution_id LIMIT ${unfinishedNamedMax}`, [agentId]);
  if (unfinished.rows.length > 0) {
    throw agentHasUnfinishedExecutions(agentId, unfinished.rows.map((row) => String(row["execution_id"])));
  }
  await query(context, "DELETE FROM steps WHERE execution_id IN (SELECT execution_id FROM executions WHERE agent_id = $1)", [agentId]);
  const executionsDeleted = (await query(context, "DELETE FROM executions WHERE agent_id = $1", [agentId])).rowCount ?? 0;
  const journalDeleted = (await query(context, "DELETE FROM journal WHERE agent_id = $1", [agentId])).rowCount ?? 0;
  const agentsDeleted = (await query(context, "DELETE FROM agents WHERE agent_id = $1", [agentId])).rowCount ?? 0;
  return { purged: executionsDeleted + journalDeleted + agentsDeleted > 0, executionsDeleted };
}
