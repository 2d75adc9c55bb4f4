// The bodies of the store operations (SPEC §4.1) and of the agent lifecycle
// on PostgreSQL, with exactly the SQLite store's semantics and errors
// (`../sqlite/operations.ts` is the reference; the pure parts — the
// approval request check, the metadata of a terminal commit, row decoding —
// are shared, not copied). A body does not open or close a transaction: the
// store runs each one inside a transaction of its own.
//
// Differences that PostgreSQL's concurrency asks for, none visible to a caller:
// * The row about to be replaced is read `FOR UPDATE`, so two writers of one
//   execution serialize on its row lock and the second one sees the
//   revision the first wrote (READ COMMITTED re-reads a locked row).
// * A prepare locks the agent's root row, so admissions of one agent
//   serialize; a reused execution id is found by `ON CONFLICT DO NOTHING`.
// * The last step each write appends carries the operation's `writeId`:
//   after a lost connection, finding that step is proof the write committed.
// * With fencing (`fence`), every compare-and-set UPDATE and every admission
//   also requires, in the same statement, that this process holds the
//   agent's lease at its epoch (docs/decisions/0009).

import type pg from "pg";
import { AgentClosedError, ExecutionRehydrationRequiredError, InvalidInputError } from "../../errors.js";
import type {
  AgentRow, ApprovalCommitOperation, CloseAgentOperation, CommittedRevision, EnsureAgentOperation, ExecutionMetadata,
  ExecutionStatusName, Json, JournalRecord, OffloadOperation, PrepareExecutionOperation, PrepareExecutionResult,
  ProviderBarrierOperation, PurgeAgentOperation, PurgeAgentResult, StepRecord, TerminalCommitOperation,
  ToolBarrierOperation,
} from "../records.js";
import { checkRequest } from "../sqlite/approval-commit.js";
import { jsonOf } from "../sqlite/compare-and-set.js";
import { terminalMetadata } from "../sqlite/operations.js";
import { agentFromRow, jsonText, zeroUsage } from "../sqlite/rows.js";
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
}

type Row = SqliteRow;

export function applyOperation(context: OperationContext, operation: OffloadOperation): Promise<unknown> {
  switch (operation.type) {
    case "prepareExecution": return prepareExecution(context, operation);
    case "providerBarrier": return providerBarrier(context, operation);
    case "toolBarrier": return toolBarrier(context, operation);
    case "terminalCommit": return terminalCommit(context, operation);
    case "approvalCommit": return approvalCommit(context, operation);
    case "ensureAgent": return ensureAgent(context, operation);
    case "closeAgent": return closeAgent(context, operation);
    case "purgeAgent": return purgeAgent(context, operation);
  }
}

async function query(context: OperationContext, sql: string, values: readonly unknown[] = []): Promise<pg.QueryResult<Row>> {
  return context.client.query<Row>(sql, values as unknown[]);
}

// -- executions -------------------------------------------------------------------

async function prepareExecution(context: OperationContext, operation: PrepareExecutionOperation): Promise<PrepareExecutionResult> {
  const agentRow = (await query(context, "SELECT * FROM agents WHERE agent_id = $1 FOR UPDATE", [operation.agentId])).rows[0];
  if (agentRow === undefined) {
    return notEstablished(new InvalidInputError(`agent "${operation.agentId}" has no root in the store; ensure the agent before starting execution ${operation.executionId}`, { agentId: operation.agentId, executionId: operation.executionId }));
  }
  if (agentFromRow(agentRow, context.where).lifecycle === "closed") return notEstablished(new AgentClosedError(operation.agentId));
  const blocked = operation.blockedBy !== undefined;
  const metadata: ExecutionMetadata = { config: operation.config };
  const inserted = await query(context, `
    INSERT INTO executions (execution_id, agent_id, revision, status, phase, mode, input, metadata, outcome, output,
                            error, usage, approval_request, created_at, updated_at)
    VALUES ($1, $2, 1, $3, $4, $5, $6, $7, $8, 'null', $9, $10, 'null', $11, $11)
    ON CONFLICT (execution_id) DO NOTHING
  `, [
    operation.executionId, operation.agentId, blocked ? "terminal" : "active", blocked ? "terminal" : "calling_llm",
    operation.mode, jsonText(operation.input), jsonText(metadata), blocked ? "failed" : null,
    jsonText(operation.blockedBy ?? null), jsonText(zeroUsage), operation.at,
  ]);
  if (inserted.rowCount !== 1) {
    return notEstablished(new InvalidInputError(`execution id ${operation.executionId} is already in the store; every start needs a new execution id`, { agentId: operation.agentId, executionId: operation.executionId }));
  }
  await admitUnderLease(context, operation);
  const steps: StepRecord[] = [{ kind: "input", at: operation.at, payload: operation.input }];
  if (operation.blockedBy !== undefined) {
    // A blocked input never enters the conversation memory: no journal.
    steps.push({ kind: "terminal", at: operation.at, payload: { outcome: "failed", revision: 1 } });
    await appendSteps(context, operation.executionId, steps);
    return { outcome: "terminal", revision: 1, error: operation.blockedBy };
  }
  await appendSteps(context, operation.executionId, steps);
  await appendJournal(context, operation.agentId, operation.journal);
  return { outcome: "active", revision: 1 };
}

/** Bumps the root's revision; with leases on, only while this process
 * holds the agent's unexpired lease at its epoch (same statement). */
async function admitUnderLease(context: OperationContext, operation: PrepareExecutionOperation): Promise<void> {
  const fence = context.fenceOf(operation.agentId);
  if (fence === undefined) {
    await query(context, "UPDATE agents SET revision = revision + 1, updated_at = $2 WHERE agent_id = $1", [operation.agentId, operation.at]);
    return;
  }
  const admitted = await query(context, `
    UPDATE agents SET revision = revision + 1, updated_at = $2
    WHERE agent_id = $1 AND EXISTS (SELECT 1 FROM leases WHERE agent_id = $1 AND owner = $3 AND epoch = $4 AND expires_at > clock_timestamp())
  `, [operation.agentId, operation.at, fence.owner, fence.epoch]);
  if (admitted.rowCount !== 1) throw leaseLost(operation.type, operation.executionId, operation.agentId, fence);
}

function notEstablished(error: InvalidInputError | AgentClosedError): PrepareExecutionResult {
  return { outcome: "not_established", error: error.toRecord() };
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
async function selectForUpdate(context: OperationContext, operation: CompareAndSetOperation, statuses: readonly ExecutionStatusName[]): Promise<CurrentExecution> {
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
async function compareAndSet(context: OperationContext, operation: CompareAndSetOperation, agentId: string, setClause: string, values: readonly unknown[]): Promise<number> {
  const revision = operation.expectedRevision + 1;
  const parameters: unknown[] = [revision, ...values, operation.executionId, operation.expectedRevision];
  const idIndex = values.length + 2;
  let sql = `UPDATE executions SET revision = $1, ${setClause} WHERE execution_id = $${idIndex} AND revision = $${idIndex + 1}`;
  const fence = context.fenceOf(agentId);
  if (fence !== undefined) {
    parameters.push(fence.owner, fence.epoch);
    sql += ` AND EXISTS (SELECT 1 FROM leases WHERE leases.agent_id = executions.agent_id AND owner = $${idIndex + 2} AND epoch = $${idIndex + 3})`;
  }
  const { rowCount } = await query(context, sql, parameters);
  if (rowCount !== 1) {
    if (fence !== undefined) throw leaseLost(operation.type, operation.executionId, agentId, fence);
    throw new ExecutionRehydrationRequiredError(`execution ${operation.executionId} moved on: ${operation.type} expected revision ${operation.expectedRevision} and updated no row`, { executionId: operation.executionId });
  }
  return revision;
}

/** A write refused by the fencing check: another process took the agent
 * over (or this one let its lease lapse); the execution is its now. */
function leaseLost(type: string, executionId: string, agentId: string, fence: Fence): ExecutionRehydrationRequiredError {
  return new ExecutionRehydrationRequiredError(
    `${type} of execution ${executionId} was refused by the fencing check: this process (${fence.owner}) no longer holds agent "${agentId}" at lease epoch ${fence.epoch}; another process took it over`,
    { executionId, agentId, details: { reason: "lease_lost", owner: fence.owner, epoch: fence.epoch } },
  );
}

async function providerBarrier(context: OperationContext, operation: ProviderBarrierOperation): Promise<CommittedRevision> {
  const current = await selectForUpdate(context, operation, ["active"]);
  const { toolBatch: _finished, ...kept } = current.metadata;
  const metadata: ExecutionMetadata = { ...kept, pendingModelCall: { callId: operation.callId, startedAt: operation.at }, turns: operation.turns };
  const revision = await compareAndSet(context, operation, current.agentId,
    "phase = 'calling_llm', metadata = $2, usage = $3, updated_at = $4",
    [jsonText(metadata), jsonText(operation.usage), operation.at]);
  await appendSteps(context, operation.executionId, [
    ...operation.steps,
    { kind: "provider_barrier", at: operation.at, payload: { callId: operation.callId, revision } },
  ]);
  return { revision };
}

async function toolBarrier(context: OperationContext, operation: ToolBarrierOperation): Promise<CommittedRevision> {
  const current = await selectForUpdate(context, operation, ["active"]);
  const { pendingModelCall: _answered, ...kept } = current.metadata;
  const metadata: ExecutionMetadata = { ...kept, toolBatch: operation.toolBatch, turns: operation.turns };
  const revision = await compareAndSet(context, operation, current.agentId,
    "phase = 'dispatching_tools', metadata = $2, usage = $3, updated_at = $4",
    [jsonText(metadata), jsonText(operation.usage), operation.at]);
  await appendSteps(context, operation.executionId, [
    ...operation.steps,
    { kind: "tool_barrier", at: operation.at, payload: { calls: jsonOf(operation.toolBatch), revision } },
  ]);
  return { revision };
}

async function terminalCommit(context: OperationContext, operation: TerminalCommitOperation): Promise<CommittedRevision> {
  const current = await selectForUpdate(context, operation, ["preparing", "active", "suspended"]);
  const suspended = operation.outcome === "suspended";
  const metadata = terminalMetadata(current.metadata, operation);
  const revision = await compareAndSet(context, operation, current.agentId, `
    status = $2, phase = $3, outcome = $4, output = $5, error = $6, usage = $7, approval_request = $8, metadata = $9,
    updated_at = $10`, [
    suspended ? "suspended" : "terminal", suspended ? "suspended" : "terminal", operation.outcome, jsonText(operation.output),
    jsonText(operation.error), jsonText(operation.usage), jsonText(operation.approvalRequest), jsonText(metadata), operation.at,
  ]);
  const finalStep: StepRecord = suspended
    ? { kind: "approval_requested", at: operation.at, payload: { revision, approvalRequest: operation.approvalRequest } }
    : { kind: "terminal", at: operation.at, payload: { outcome: operation.outcome, revision } };
  await appendSteps(context, operation.executionId, [...operation.steps, finalStep]);
  await appendJournal(context, current.agentId, operation.journal);
  return { revision };
}

async function approvalCommit(context: OperationContext, operation: ApprovalCommitOperation): Promise<CommittedRevision> {
  const current = await selectForUpdate(context, operation, ["suspended"]);
  const request = checkRequest(operation, current.agentId, current.approvalRequest);
  const decided = { ...request, decision: { approved: operation.approved, reason: operation.reason, decidedAt: operation.at } };
  const metadata: ExecutionMetadata = {
    ...current.metadata,
    approval: { approvalId: operation.approvalId, approved: operation.approved, reason: operation.reason },
  };
  const revision = await compareAndSet(context, operation, current.agentId,
    "status = 'active', phase = 'resuming', outcome = NULL, approval_request = $2, metadata = $3, updated_at = $4",
    [jsonText(decided), jsonText(metadata), operation.at]);
  await appendSteps(context, operation.executionId, [{
    kind: "approval_decided",
    at: operation.at,
    payload: { approvalId: operation.approvalId, approved: operation.approved, reason: operation.reason, revision },
  }]);
  return { revision };
}

/** Appends the steps in one statement; the last carries the write id. The
 * execution's row lock (or its insertion in this transaction) makes the
 * `max(seq)` safe from concurrent appends. */
async function appendSteps(context: OperationContext, executionId: string, steps: readonly StepRecord[]): Promise<void> {
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

async function appendJournal(context: OperationContext, agentId: string, records: readonly JournalRecord[]): Promise<void> {
  if (records.length === 0) return;
  await query(context, `
    INSERT INTO journal (agent_id, execution_id, role, content, at)
    SELECT $1, record.execution_id, record.role, record.content, record.at
    FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[]) WITH ORDINALITY AS record(execution_id, role, content, at, ordinal)
    ORDER BY record.ordinal
  `, [
    agentId, records.map((record) => record.executionId), records.map((record) => record.role),
    records.map((record) => jsonText(record.content)), records.map((record) => record.at),
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
  const unfinished = await query(context, `SELECT execution_id FROM executions WHERE agent_id = $1 AND status IN ('preparing', 'active', 'suspended') ORDER BY created_at, execution_id LIMIT ${unfinishedNamedMax}`, [agentId]);
  if (unfinished.rows.length > 0) {
    const ids = unfinished.rows.map((row) => String(row["execution_id"]));
    throw new InvalidInputError(`agent "${agentId}" cannot be purged: it has unfinished executions (${ids.join(", ")}); let them end (complete, cancel, or recover) first`, { agentId, details: { unfinishedExecutionIds: ids } });
  }
  await query(context, "DELETE FROM steps WHERE execution_id IN (SELECT execution_id FROM executions WHERE agent_id = $1)", [agentId]);
  const executionsDeleted = (await query(context, "DELETE FROM executions WHERE agent_id = $1", [agentId])).rowCount ?? 0;
  const journalDeleted = (await query(context, "DELETE FROM journal WHERE agent_id = $1", [agentId])).rowCount ?? 0;
  const agentsDeleted = (await query(context, "DELETE FROM agents WHERE agent_id = $1", [agentId])).rowCount ?? 0;
  return { purged: executionsDeleted + journalDeleted + agentsDeleted > 0, executionsDeleted };
}
