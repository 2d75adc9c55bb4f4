// The pieces every write to an existing execution is built from: read the
// row and refuse before writing anything when it moved on
// (`selectForUpdate`), the compare-and-set UPDATE on (execution_id,
// revision) (`compareAndSet`), and the append-only journal insert (the
// timeline's is in `timeline.ts`). A mismatch is `ExecutionRehydrationRequiredError` naming the
// execution, the revision expected and what the store holds.

import { ExecutionRehydrationRequiredError } from "../../errors.js";
import type { ExecutionMetadata, ExecutionStatusName, Json, JournalRecord } from "../records.js";
import type { SqliteConnection } from "./driver.js";
import { jsonText } from "./rows.js";
import { timelineEndOf, type TimelineEnd } from "./timeline.js";

export interface CompareAndSetOperation {
  readonly type: string;
  readonly executionId: string;
  readonly expectedRevision: number;
}

/** What a write needs from the row it is about to replace. */
export interface CurrentExecution {
  readonly agentId: string;
  readonly metadata: ExecutionMetadata;
  readonly approvalRequest: Json;
  /** Where the write's steps go (`appendStepsAt`): every write that reads
   * the row here appends steps after its UPDATE, which writes no step. */
  readonly end: TimelineEnd;
}

/** Reads what the write needs and refuses, before writing anything, when
 * the execution moved on (or never existed, or is in the wrong status). */
export function selectForUpdate(connection: SqliteConnection, operation: CompareAndSetOperation, statuses: readonly ExecutionStatusName[]): CurrentExecution {
  const row = connection.prepare(selectedForUpdate).get(operation.executionId);
  if (row === undefined) {
    throw new ExecutionRehydrationRequiredError(
      `execution ${operation.executionId} is not in the store (${operation.type} expected revision ${operation.expectedRevision})`,
      refusalContext(operation),
    );
  }
  const status = row["status"] as ExecutionStatusName;
  if (row["revision"] !== operation.expectedRevision || !statuses.includes(status)) {
    throw new ExecutionRehydrationRequiredError(
      `execution ${operation.executionId} moved on: ${operation.type} expected revision ${operation.expectedRevision} with status ${statuses.join(" or ")}, the store holds revision ${String(row["revision"])} with status ${status}`,
      { ...refusalContext(operation), agentId: String(row["agent_id"]) },
    );
  }
  return {
    agentId: String(row["agent_id"]),
    metadata: JSON.parse(String(row["metadata"])) as ExecutionMetadata,
    approvalRequest: JSON.parse(String(row["approval_request"])) as Json,
    end: timelineEndOf(row),
  };
}

/** `selectForUpdate`'s read, with the timeline's end (`lastStep`'s columns). */
export const selectedForUpdate = `
  SELECT agent_id, revision, status, metadata, approval_request, rowid AS execution_rowid,
         coalesce((SELECT max(seq) FROM steps WHERE steps.execution_rowid = executions.rowid), 0) AS last
  FROM executions WHERE execution_id = ?`;

/** What a refusal of `selectForUpdate` names (built only for a refusal:
 * every write of every run passes here). */
function refusalContext(operation: CompareAndSetOperation) {
  return { executionId: operation.executionId, details: { expectedRevision: operation.expectedRevision, operation: operation.type } };
}

/** The compare-and-set itself: `values` are the SET values after the new
 * revision; the WHERE clause takes the id and the expected revision. */
export function compareAndSet(
  connection: SqliteConnection,
  operation: CompareAndSetOperation,
  sql: string,
  values: readonly (string | number | null)[],
): number {
  const revision = operation.expectedRevision + 1;
  const { changes } = connection.prepare(sql).run(revision, ...values, operation.executionId, operation.expectedRevision);
  if (changes !== 1) {
    throw new ExecutionRehydrationRequiredError(
      `execution ${operation.executionId} moved on: ${operation.type} expected revision ${operation.expectedRevision} and updated no row`,
      { executionId: operation.executionId },
    );
  }
  return revision;
}

export function appendJournal(connection: SqliteConnection, agentId: string, records: readonly JournalRecord[]): void {
  const insert = connection.prepare(`
    INSERT INTO journal (agent_id, seq, execution_id, role, content, at)
    VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM journal WHERE agent_id = ?), ?, ?, ?, ?)
  `);
  for (const record of records) insert.run(agentId, agentId, record.executionId, record.role, jsonText(record.content), record.at);
}

/** A plain JSON copy (drops `undefined`, class instances become objects). */
export function jsonOf(value: unknown): Json {
  return JSON.parse(JSON.stringify(value)) as Json;
}
