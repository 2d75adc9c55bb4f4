// The pieces every write to an existing execution is built from, as in
// ../sqlite/compare-and-set.ts: lock and read the row and refuse before
// writing anything when it moved on (`selectForUpdate`), the
// compare-and-set UPDATE on (execution_id, revision), fenced by the lease
// when leases are on (`compareAndSet`), and the timeline's append. The
// operations (operations.ts, queue.ts, reopen.ts) build on them; they live
// apart from operations.ts, which dispatches to those files.

import type pg from "pg";
import { ExecutionRehydrationRequiredError } from "../../errors.js";
import type { ExecutionMetadata, ExecutionStatusName, Json, StepRecord } from "../records.js";
import type { SqliteRow } from "../sqlite/driver.js";
import { jsonText } from "../sqlite/rows.js";
import type { Fence } from "./leases.js";
import { fenceHeldSql } from "./partitions.js";
import { leaseLost } from "./statements.js";

/** What every operation body runs with: its transaction's client and the store's identity. */
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

export async function query(context: OperationContext, sql: string, values: readonly unknown[] = []): Promise<pg.QueryResult<Row>> {
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
export async function selectForUpdate(
  context: OperationContext,
  operation: CompareAndSetOperation,
  statuses: readonly ExecutionStatusName[],
): Promise<CurrentExecution> {
  const row = (
    await query(context, "SELECT agent_id, revision, status, metadata, approval_request FROM executions WHERE execution_id = $1 FOR UPDATE", [
      operation.executionId,
    ])
  ).rows[0];
  const details = { expectedRevision: operation.expectedRevision, operation: operation.type };
  if (row === undefined) {
    throw new ExecutionRehydrationRequiredError(
      `execution ${operation.executionId} is not in the store (${operation.type} expected revision ${operation.expectedRevision})`,
      { executionId: operation.executionId, details },
    );
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
export async function compareAndSet(
  context: OperationContext,
  operation: CompareAndSetOperation,
  agentId: string,
  setClause: string,
  values: readonly unknown[],
): Promise<number> {
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
    throw new ExecutionRehydrationRequiredError(
      `execution ${operation.executionId} moved on: ${operation.type} expected revision ${operation.expectedRevision} and updated no row`,
      { executionId: operation.executionId },
    );
  }
  return revision;
}

/** Appends the steps in one statement; the last carries the write id. The
 * execution's row lock (or its insertion in this transaction) makes the
 * `max(seq)` safe from concurrent appends. */
export async function appendSteps(context: OperationContext, executionId: string, steps: readonly StepRecord[]): Promise<void> {
  if (steps.length === 0) return;
  await query(
    context,
    `
    INSERT INTO steps (execution_id, seq, kind, at, payload, write_id)
    SELECT $1, base.seq + step.ordinal, step.kind, step.at, step.payload,
           CASE WHEN step.ordinal = $5 THEN $6 END
    FROM (SELECT coalesce(max(seq), 0) AS seq FROM steps WHERE execution_id = $1) AS base,
         unnest($2::text[], $3::bigint[], $4::text[]) WITH ORDINALITY AS step(kind, at, payload, ordinal)
  `,
    [executionId, steps.map((step) => step.kind), steps.map((step) => step.at), steps.map((step) => jsonText(step.payload)), steps.length, context.writeId],
  );
}
