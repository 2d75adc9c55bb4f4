// The approval resume commit on PostgreSQL (SPEC §4.1, docs/decisions/0048):
// one call of the server-side `approval_commit` function, sent in a group
// like a barrier (`group-commit.ts`), instead of a transaction of its own
// (BEGIN, SELECT … FOR UPDATE, UPDATE, INSERT, COMMIT: five round trips on
// a connection of its own). Semantics and errors are the SQLite store's
// (`../sqlite/approval-commit.ts`).
//
// Rules kept here:
// * The decided request and the new metadata are computed in the process
//   from the suspended row at `expectedRevision` (`SuspendedRow`: the row
//   the runtime read with `getExecution` just before, remembered by the
//   store, or read here), and stored as given — JSON text exactly as the
//   SQLite store writes it. The function's compare-and-set (revision,
//   status `suspended`, the fence) makes that row the one replaced.
// * The function checks the stored request again in the same statement —
//   same approval id, same arguments hash, no decision yet — so a row
//   changed without a new revision, or a second decision racing this one,
//   is refused there too, never overwritten.
// * A refusal writes nothing and returns 0; why is read afterwards
//   (`explainApprovalRefusal`), in the SQLite store's order: moved on,
//   then the request's mismatch, then the fence.
// * The `approval_decided` step carries the write id (`outcome.ts`).

import type pg from "pg";
import { ExecutionRehydrationRequiredError, type PhronomyError } from "../../errors.js";
import type { ApprovalCommitOperation, ExecutionMetadata, Json, StepRecord } from "../records.js";
import { checkRequest, decidedStepPayload, decisionWritten } from "../sqlite/approval-commit.js";
import { jsonText } from "../sqlite/rows.js";
import { countedStepsSql, insertStepsSql } from "./functions.js";
import { integer, text } from "./literals.js";
import type { Fence } from "./leases.js";
import { fenceHeldSql } from "./partitions.js";
import { fenceArguments, leaseLost, movedOn, stepArguments, type Statement } from "./statements.js";

/** An execution suspended for approval, as the store holds it at one revision. */
export interface SuspendedRow {
  readonly agentId: string;
  readonly revision: number;
  readonly metadata: ExecutionMetadata;
  readonly approvalRequest: Json;
}

/** Migration 14: `approval_commit`, the compare-and-set of a suspended
 * execution with its stored request checked, the decision applied and the
 * `approval_decided` step appended (numbered from `last_seq`). */
export async function createApprovalCommitFunction(client: pg.ClientBase): Promise<void> {
  await client.query(`
    CREATE FUNCTION approval_commit(
      p_execution_id text, p_expected bigint, p_approval_id text, p_arguments_hash text, p_approval_request text,
      p_metadata text, p_at bigint, p_fence_owner text, p_fence_epoch bigint,
      p_kinds text[], p_ats bigint[], p_payloads text[], p_write_id text)
    RETURNS integer LANGUAGE plpgsql AS $$
    DECLARE
      top bigint;
    BEGIN
      UPDATE executions SET revision = p_expected + 1, status = 'active', phase = 'resuming', outcome = NULL,
             approval_request = p_approval_request, metadata = p_metadata, updated_at = p_at,
             ${countedStepsSql}
      WHERE execution_id = p_execution_id AND revision = p_expected AND status = 'suspended'
        AND approval_request::json ->> 'approvalId' = p_approval_id
        AND approval_request::json ->> 'argumentsHash' = p_arguments_hash
        AND coalesce(json_typeof(approval_request::json -> 'decision'), 'null') = 'null'
        AND (p_fence_owner IS NULL OR ${fenceHeldSql("executions.agent_id", "p_fence_owner", "p_fence_epoch", false)})
      RETURNING last_seq INTO top;
      IF NOT FOUND THEN RETURN 0; END IF;
      ${insertStepsSql("top - cardinality(p_kinds)")}
      RETURN 1;
    END $$;
  `);
}

/** The approval commit replacing `known` (the suspended row at
 * `operation.expectedRevision`) as one statement. Throws
 * `ApprovalMismatchError` (nothing sent) when the request is not the one
 * decided on. */
export function approvalStatement(operation: ApprovalCommitOperation, known: SuspendedRow, fence: Fence | undefined, writeId: string): Statement {
  const request = checkRequest(operation, known.agentId, known.approvalRequest);
  const { decided, metadata } = decisionWritten(operation, request, known.metadata);
  const revision = operation.expectedRevision + 1;
  const step: StepRecord = { kind: "approval_decided", at: operation.at, payload: decidedStepPayload(operation, revision) };
  const call = `approval_commit(${[
    text(operation.executionId),
    integer(operation.expectedRevision, "approvalCommit.expectedRevision"),
    text(operation.approvalId),
    text(operation.argumentsHash),
    text(jsonText(decided)),
    text(jsonText(metadata)),
    integer(operation.at, "approvalCommit.at"),
    ...fenceArguments(fence),
    ...stepArguments([step]),
    text(writeId),
  ].join(", ")})`;
  return { sql: `SELECT ${call} AS applied`, call, value: { revision }, after: { agentId: known.agentId, revision, status: "active", metadata } };
}

interface SuspendedColumns {
  agent_id: string;
  revision: number;
  status: "preparing" | "active" | "suspended" | "terminal";
  metadata: string;
  approval_request: string;
}

async function readRow(client: pg.Pool | pg.ClientBase, executionId: string): Promise<SuspendedColumns | undefined> {
  return (
    await client.query<SuspendedColumns>("SELECT agent_id, revision, status, metadata, approval_request FROM executions WHERE execution_id = $1", [executionId])
  ).rows[0];
}

/** Reads the suspended row an approval is about to replace, refusing
 * (nothing written) when it is missing or moved on. */
export async function readSuspendedRow(client: pg.Pool | pg.ClientBase, operation: ApprovalCommitOperation): Promise<SuspendedRow> {
  const row = await readRow(client, operation.executionId);
  const refusal = movedOn(operation, ["suspended"], row);
  if (refusal !== undefined) throw refusal;
  return suspendedRowOf(row!);
}

function suspendedRowOf(row: SuspendedColumns): SuspendedRow {
  return {
    agentId: row.agent_id,
    revision: row.revision,
    metadata: JSON.parse(row.metadata) as ExecutionMetadata,
    approvalRequest: JSON.parse(row.approval_request) as Json,
  };
}

/** Why an `approval_commit` call wrote nothing, read now. */
export async function explainApprovalRefusal(
  client: pg.Pool | pg.ClientBase,
  operation: ApprovalCommitOperation,
  fence: Fence | undefined,
): Promise<PhronomyError> {
  const row = await readRow(client, operation.executionId);
  const refusal = movedOn(operation, ["suspended"], row);
  if (refusal !== undefined) return refusal;
  try {
    checkRequest(operation, row!.agent_id, JSON.parse(row!.approval_request) as Json);
  } catch (mismatch) {
    return mismatch as PhronomyError;
  }
  if (fence !== undefined) return leaseLost(operation.type, operation.executionId, row!.agent_id, fence);
  return new ExecutionRehydrationRequiredError(
    `execution ${operation.executionId} moved on: ${operation.type} expected revision ${operation.expectedRevision} and updated no row`,
    { executionId: operation.executionId },
  );
}
