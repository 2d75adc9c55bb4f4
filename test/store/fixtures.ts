// Shared fixtures of the store tests: a fresh temporary directory per test
// (real SQLite files, no mocks), builders for each store operation with
// plausible contents (a suspension for approval and its decision included),
// and a raw look at a store file through the driver (pragmas, row counts)
// that bypasses the store's own reads.

import { readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { ControlCore } from "../../host/core/control-core.js";
import { coreWasmUrl } from "../../host/core/load-core.js";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type {
  ApprovalCommitOperation,
  JournalRecord,
  PrepareExecutionOperation,
  ProviderBarrierOperation,
  TerminalCommitOperation,
  ToolBarrierOperation,
  ToolCallRecord,
  UsageTotals,
} from "../../host/store/records.js";
import { openBetterSqlite3, type SqliteValue } from "../../host/store/sqlite/driver.js";
import { SqliteStore, type SqliteStoreOptions } from "../../host/store/sqlite-store.js";
import { cleanUpAfterEachTest } from "../support/cleanups.js";

const directories: string[] = [];
const stores: SqliteStore[] = [];

cleanUpAfterEachTest(async () => {
  await Promise.all(stores.splice(0).map((store) => store.close()));
  await Promise.all(directories.splice(0).map((directory) => rm(directory, { recursive: true, force: true })));
});

export async function temporaryDirectory(): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), "phronomy-store-"));
  directories.push(directory);
  return directory;
}

/** A store in a new temporary directory, closed after the test. */
export async function openTemporaryStore(options: SqliteStoreOptions = {}, name = "agents.db"): Promise<SqliteStore> {
  const path = join(await temporaryDirectory(), name);
  return track(await SqliteStore.open(path, options));
}

/** Closes `store` after the test (close is idempotent). */
export function track(store: SqliteStore): SqliteStore {
  stores.push(store);
  return store;
}

export const noUsage: UsageTotals = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };

export function journalEntry(executionId: string, role: JournalRecord["role"], content: string, at = 1): JournalRecord {
  return { executionId, role, content, at };
}

export function prepare(executionId: string, agentId = "support", extra: Partial<PrepareExecutionOperation> = {}): PrepareExecutionOperation {
  return {
    type: "prepareExecution",
    executionId,
    agentId,
    mode: "run",
    input: "Where is order 42?",
    config: { replayable: true },
    journal: [journalEntry(executionId, "user", "Where is order 42?")],
    at: 10,
    // A replacing preparation carries the core's verdicts, as the runtime's does (docs/decisions/0087).
    ...(extra.replaceFrom !== undefined ? { replaceVerdicts: coreReplaceVerdicts() } : {}),
    ...extra,
  };
}

let replaceVerdicts: number[] | undefined;

/** The debug core's `replaceVerdict` table, compiled once, synchronously. */
export function coreReplaceVerdicts(): number[] {
  if (replaceVerdicts === undefined) {
    const module = new WebAssembly.Module(readFileSync(coreWasmUrl("debug")));
    replaceVerdicts = new ControlCore(module, { agentsMax: 1, executionsMax: 1 }).replaceVerdicts();
  }
  return replaceVerdicts;
}

export function providerBarrier(executionId: string, expectedRevision: number, extra: Partial<ProviderBarrierOperation> = {}): ProviderBarrierOperation {
  return {
    type: "providerBarrier",
    executionId,
    expectedRevision,
    callId: `model-${expectedRevision}`,
    steps: [],
    usage: noUsage,
    turns: expectedRevision,
    at: 20 + expectedRevision,
    ...extra,
  };
}

export function toolBarrier(executionId: string, expectedRevision: number, extra: Partial<ToolBarrierOperation> = {}): ToolBarrierOperation {
  return {
    type: "toolBarrier",
    executionId,
    expectedRevision,
    toolBatch: [{ callId: "tool-1", toolName: "lookupOrder", input: { orderId: 42 }, idempotencyKey: `${executionId}:tool-1` }],
    steps: [{ kind: "model_response", at: 30, payload: { toolCalls: ["tool-1"] } }],
    usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 },
    turns: 1,
    at: 30 + expectedRevision,
    ...extra,
  };
}

export function terminalCommit(executionId: string, expectedRevision: number, extra: Partial<TerminalCommitOperation> = {}): TerminalCommitOperation {
  return {
    type: "terminalCommit",
    executionId,
    expectedRevision,
    outcome: "completed",
    output: "Order 42 ships today.",
    error: null,
    usage: { inputTokens: 20, outputTokens: 9, totalTokens: 29 },
    approvalRequest: null,
    handoff: null,
    steps: [{ kind: "model_response", at: 40, payload: { text: "Order 42 ships today." } }],
    journal: [journalEntry(executionId, "assistant", "Order 42 ships today.", 40)],
    at: 40 + expectedRevision,
    ...extra,
  };
}

export function refundCall(executionId: string, callId = "tool-9"): ToolCallRecord {
  return { callId, toolName: "refund", input: { orderId: 42, amount: 19.5 }, idempotencyKey: `${executionId}:${callId}` };
}

/** A terminal commit suspending for approval of `refundCall`, the batch
 * carried as the tool batch, the model response that asked for it riding
 * on the commit. */
export function suspendForApproval(
  executionId: string,
  expectedRevision: number,
  approvalId = "approval-1",
  argumentsHash = "hash-1",
  extra: Partial<TerminalCommitOperation> = {},
): TerminalCommitOperation {
  const call = refundCall(executionId);
  return terminalCommit(executionId, expectedRevision, {
    outcome: "suspended",
    output: null,
    journal: [],
    approvalRequest: {
      approvalId,
      argumentsHash,
      executionId,
      agentId: "support",
      requestedAt: 50,
      toolCalls: [{ callId: call.callId, toolName: call.toolName, input: call.input }],
    },
    steps: [{ kind: "model_response", at: 50, payload: { toolCalls: [{ callId: call.callId, toolName: call.toolName, input: call.input }] } }],
    toolBatch: [call],
    at: 50,
    ...extra,
  });
}

export function approvalCommit(executionId: string, expectedRevision: number, extra: Partial<ApprovalCommitOperation> = {}): ApprovalCommitOperation {
  return {
    type: "approvalCommit",
    executionId,
    expectedRevision,
    approvalId: "approval-1",
    approved: true,
    reason: "refund is within policy",
    argumentsHash: "hash-1",
    at: 60,
    ...extra,
  };
}

/** Version 14's changes taken back to version 13's (docs/decisions/0094),
 * for tests that make an older file from a current one: steps keyed by the
 * execution's id, a queued message's step in the timeline at seq 0, the
 * admission trigger that only removes the queued row; the definition index
 * on the metadata's expression, no definition column. */
export const beforeVersion14 = `
  CREATE TABLE steps_by_id (
    execution_id TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    kind         TEXT NOT NULL,
    at           INTEGER NOT NULL,
    payload      TEXT NOT NULL,
    PRIMARY KEY (execution_id, seq)
  );
  INSERT INTO steps_by_id SELECT executions.execution_id, steps.seq, steps.kind, steps.at, steps.payload
    FROM steps JOIN executions ON executions.rowid = steps.execution_rowid;
  INSERT INTO steps_by_id SELECT execution_id, 0, 'queued', created_at, queued_step FROM queued_messages;
  DROP TRIGGER steps_of_deleted_execution;
  DROP TRIGGER queued_message_admitted;
  DROP TABLE steps;
  ALTER TABLE steps_by_id RENAME TO steps;
  ALTER TABLE queued_messages DROP COLUMN queued_step;
  CREATE TRIGGER queued_message_admitted AFTER INSERT ON executions
  BEGIN
    DELETE FROM queued_messages WHERE execution_id = NEW.execution_id;
  END;
  DROP INDEX executions_by_definition;
  ALTER TABLE executions DROP COLUMN definition;
  CREATE INDEX executions_by_definition ON executions (json_extract(metadata, '$.config.definition'), created_at, execution_id)
    WHERE json_extract(metadata, '$.config.definition') IS NOT NULL;
`;

/** Reads one value straight from the file with a connection of its own. */
export function rawValue(path: string, sql: string, ...parameters: SqliteValue[]): SqliteValue | undefined {
  const connection = openBetterSqlite3(path, { mustExist: true });
  try {
    const row = connection.prepare(sql).get(...parameters);
    return row === undefined ? undefined : Object.values(row)[0];
  } finally {
    connection.close();
  }
}

/** Runs a script straight on the file (to build foreign or tampered files). */
export function rawExec(path: string, sql: string): void {
  const connection = openBetterSqlite3(path);
  try {
    connection.exec(sql);
  } finally {
    connection.close();
  }
}

export function fileBytes(path: string): Promise<Buffer> {
  return readFile(path);
}
