// Every error code of the runtime, with the reasons that change how a
// refusal is read, for the tests that walk a translation of refusals into
// the core's classes (`startAnswerOf`, `claimAnswerOf`) and every verdict
// over them against the rules the host kept before (docs/decisions/0096,
// 0102).

import { PhronomyError, type PhronomyErrorCode } from "../../host/errors.js";

/** Every error code (a record, so a new code fails to compile here). */
export const EVERY_CODE = Object.keys({
  AGENT_CLOSED: true,
  AGENT_BUSY: true,
  RUNTIME_SHUTDOWN: true,
  OFFLOAD_FULL: true,
  EXECUTION_REHYDRATION_REQUIRED: true,
  STALE_RESULT: true,
  CANCELLED: true,
  TIMEOUT: true,
  APPROVAL_MISMATCH: true,
  STREAM_CALLBACK: true,
  STORE: true,
  INVALID_INPUT: true,
  INPUT_BLOCKED: true,
  OUTPUT_BLOCKED: true,
  BUDGET_EXCEEDED: true,
  MAX_TURNS_EXCEEDED: true,
  TOOL_FAILED: true,
  MODEL_FAILED: true,
  CAPACITY: true,
  CORE_FAILED: true,
  INTERNAL: true,
  APPROVAL_REQUIRED: true,
  QUEUE_FULL: true,
  EXECUTION_NOT_FOUND: true,
  EXECUTION_ENDED: true,
  RETRY_REFUSED: true,
  UNSUPPORTED_RUNTIME: true,
  SIGNAL_REFUSED: true,
} satisfies Record<PhronomyErrorCode, true>) as PhronomyErrorCode[];

/** The reasons that change a code's reading (none, a lease held
 * elsewhere, held for recovery, an id taken). */
export const REASONS = [undefined, "lease_not_held", "recovery_required", "execution_exists"] as const;

export function errorOf(code: PhronomyErrorCode, reason: string | undefined): PhronomyError {
  return new PhronomyError(code, `${code} ${reason ?? ""}`, reason === undefined ? {} : { details: { reason } });
}
