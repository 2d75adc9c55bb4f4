// Conversion between SQLite rows and the records of `records.ts`. JSON
// columns hold `JSON.stringify` text; every row read back is checked
// (known status, integer revision, parseable JSON), because a row that fails
// these checks means the file was changed behind the store's back, and that
// must surface as a `StoreError` naming the file, not as a strange value
// deep in the runtime.

import { StoreError } from "../../errors.js";
import type {
  AgentRow,
  ExecutionMetadata,
  ExecutionRow,
  ExecutionStatusName,
  Json,
  JournalRecord,
  OutcomeName,
  PhaseName,
  StoredError,
  StoredStep,
  StepKind,
  UsageTotals,
} from "../records.js";
import type { SqliteRow, SqliteValue } from "./driver.js";

export const zeroUsage: UsageTotals = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };

/** A column's JSON text, written already (a step's payload the calling
 * thread encoded, `step-payloads.ts`): `jsonText` binds it as it is. */
export class ColumnText {
  constructor(readonly text: string) {}
}

/** JSON text for a column; `undefined` is stored as JSON null. */
export function jsonText(value: unknown): string {
  if (value instanceof ColumnText) return value.text;
  return JSON.stringify(value ?? null);
}

const statuses: readonly ExecutionStatusName[] = ["preparing", "active", "suspended", "terminal"];

function text(row: SqliteRow, column: string, path: string): string {
  const value = row[column];
  if (typeof value !== "string") throw malformed(path, column, value);
  return value;
}

function integer(row: SqliteRow, column: string, path: string): number {
  const value = typeof row[column] === "bigint" ? Number(row[column]) : row[column];
  if (typeof value !== "number" || !Number.isFinite(value)) throw malformed(path, column, value);
  return value;
}

function json<T>(row: SqliteRow, column: string, path: string): T {
  const source = text(row, column, path);
  try {
    return JSON.parse(source) as T;
  } catch {
    throw malformed(path, column, source);
  }
}

function malformed(path: string, column: string, value: SqliteValue | undefined): StoreError {
  const shown = typeof value === "string" ? JSON.stringify(value.slice(0, 80)) : String(value);
  return new StoreError(`store ${path} holds a malformed value in column ${column} (${shown}); the file was changed outside Phronomy`);
}

export function agentFromRow(row: SqliteRow, path: string): AgentRow {
  const lifecycle = text(row, "lifecycle", path);
  if (lifecycle !== "open" && lifecycle !== "closed") throw malformed(path, "lifecycle", lifecycle);
  return {
    agentId: text(row, "agent_id", path),
    lifecycle,
    revision: integer(row, "revision", path),
    createdAt: integer(row, "created_at", path),
    updatedAt: integer(row, "updated_at", path),
  };
}

export function executionFromRow(row: SqliteRow, path: string): ExecutionRow {
  const status = text(row, "status", path) as ExecutionStatusName;
  if (!statuses.includes(status)) throw malformed(path, "status", status);
  const outcome = row["outcome"] ?? null;
  if (outcome !== null && typeof outcome !== "string") throw malformed(path, "outcome", outcome);
  return {
    executionId: text(row, "execution_id", path),
    agentId: text(row, "agent_id", path),
    revision: integer(row, "revision", path),
    status,
    phase: text(row, "phase", path) as PhaseName,
    mode: text(row, "mode", path),
    input: json<Json>(row, "input", path),
    metadata: json<ExecutionMetadata>(row, "metadata", path),
    outcome: outcome as OutcomeName | null,
    output: json<Json>(row, "output", path),
    error: json<StoredError | null>(row, "error", path),
    usage: json<UsageTotals>(row, "usage", path),
    approvalRequest: json<Json>(row, "approval_request", path),
    createdAt: integer(row, "created_at", path),
    updatedAt: integer(row, "updated_at", path),
  };
}

export function stepFromRow(row: SqliteRow, path: string): StoredStep {
  return {
    seq: integer(row, "seq", path),
    kind: text(row, "kind", path) as StepKind,
    at: integer(row, "at", path),
    payload: json<Json>(row, "payload", path),
  };
}

export function journalFromRow(row: SqliteRow, path: string): JournalRecord {
  const role = text(row, "role", path);
  if (role !== "user" && role !== "assistant" && role !== "tool") throw malformed(path, "role", role);
  return {
    executionId: text(row, "execution_id", path),
    role,
    content: json<Json>(row, "content", path),
    at: integer(row, "at", path),
  };
}
