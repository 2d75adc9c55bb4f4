// A failed execution's error as the store keeps it (`StoredError`: code,
// message, details) and back: `recordOf` makes the record of any thrown
// value, `errorFromRecord` rebuilds the typed error its code names, so a
// Run's rejection is the same class whether the execution failed here, in
// another process or before a restart. Internal: the public classes are
// errors.ts's.

import {
  AgentClosedError,
  CancellationError,
  ExecutionFailedError,
  ModelRetriesExhaustedError,
  PhronomyError,
  TimeoutError,
  type ErrorContext,
  type FailedAttempt,
  type PhronomyErrorCode,
} from "./errors.js";
import type { StoredError } from "./words.js";

/** Rebuilds a typed error from its stored record. */
export function errorFromRecord(record: StoredError, context: ErrorContext = {}): PhronomyError {
  const code = record.code as PhronomyErrorCode;
  const details = (record.details ?? undefined) as Record<string, unknown> | undefined;
  const rebuilt = new ExecutionFailedError(code, record.message, { ...context, details });
  switch (code) {
    case "CANCELLED":
      return Object.assign(new CancellationError(context), { message: record.message });
    // A conversation closed in the store refuses its start in the preparation (docs/decisions/0024).
    case "AGENT_CLOSED":
      return new AgentClosedError(context.agentId ?? String(details?.["agentId"] ?? ""));
    case "TIMEOUT":
      return Object.assign(new TimeoutError(Number(details?.timeoutMs ?? 0), context), { message: record.message });
    case "MODEL_FAILED":
      return Array.isArray(details?.["attempts"])
        ? new ModelRetriesExhaustedError(record.message, details["attempts"] as FailedAttempt[], { ...context, details })
        : rebuilt;
    default:
      return rebuilt;
  }
}

/** A record for any thrown value (a tool's or model's own error). */
export function recordOf(error: unknown, fallbackCode: PhronomyErrorCode = "INTERNAL"): StoredError {
  if (error instanceof PhronomyError) return error.toRecord();
  const message = error instanceof Error ? error.message : String(error);
  return { code: fallbackCode, message };
}
