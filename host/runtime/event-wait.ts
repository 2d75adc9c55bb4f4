// What a `waitForEvent()` call's wait records (docs/decisions/0077): its
// kind `event`, its key (the tool's `key` of the call's input) and, when
// the tool has a `timeoutMs`, the due time it gives. A key function that
// throws or returns no usable key fails the execution: the wait could
// never be signalled.

import type { EventWaitOptions } from "../agent/tools.js";
import { PhronomyError } from "../errors.js";

/** The longest key a wait or a signal may have (it is indexed). */
export const eventKeyLengthMax = 256;

/** The event fields of a wait, or why the call cannot wait. */
export interface EventWaitFields {
  readonly wait?: { readonly kind: "event"; readonly key: string; readonly timeoutMs?: number; readonly dueAt?: number };
  readonly error?: PhronomyError;
}

export function eventWaitOf(options: EventWaitOptions | undefined, toolName: string, input: unknown, now: number, executionId: string): EventWaitFields {
  if (options === undefined) return {};
  let key: unknown;
  try {
    key = options.key(input);
  } catch (error) {
    return { error: keyError(toolName, executionId, `threw: ${error instanceof Error ? error.message : String(error)}`) };
  }
  const problem = keyProblem(key);
  if (problem !== undefined) return { error: keyError(toolName, executionId, problem) };
  const timeoutMs = options.timeoutMs;
  return { wait: { kind: "event", key: key as string, ...(timeoutMs !== undefined ? { timeoutMs, dueAt: now + timeoutMs } : {}) } };
}

/** Why a value is no event key, or undefined when it is one. */
export function keyProblem(key: unknown): string | undefined {
  if (typeof key !== "string" || key.length === 0) return `gave ${typeof key === "string" ? "an empty string" : typeof key}, not a non-empty string`;
  if (key.length > eventKeyLengthMax) return `gave a key of ${key.length} characters, over ${eventKeyLengthMax}`;
  return undefined;
}

function keyError(toolName: string, executionId: string, problem: string): PhronomyError {
  return new PhronomyError("TOOL_FAILED", `execution ${executionId}: the key function of waitForEvent() tool "${toolName}" ${problem}; the call cannot wait`, {
    executionId,
    details: { toolName },
  });
}
