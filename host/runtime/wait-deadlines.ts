// A wait's due time and what happens at it (docs/decisions/0076): the
// kind and `dueAt` a suspension records for a `timer()` call (when its
// `until` says) or a `humanInput()` call given `timeoutMs`, and the answer
// the clock gives once it is due — `{ firedAt }` for a timer, `{ timedOut:
// true }` for a typed wait. Whether the clock may answer is the core's
// call (`ResumeFact.ClockAnswers`); this file only words the facts.

import { waitMsMax, type AnyFunctionTool } from "../agent/tools.js";
import { PhronomyError } from "../errors.js";
import type { Json } from "../store/records.js";
import type { ApprovalRequest } from "./events.js";

/** Whether a call of this tool waits (a typed wait or a timer) rather than runs. */
export function callWaits(definition: AnyFunctionTool | undefined): boolean {
  return definition?.waitsFor !== undefined || definition?.sleepsUntil !== undefined;
}

/** The kind and due time a waiting call's suspension records. */
export function waitShapeOf(
  definition: AnyFunctionTool,
  call: { readonly callId: string; readonly toolName: string; readonly input: Json },
  now: number,
): { readonly kind: "input" | "timer"; readonly dueAt?: number } {
  if (definition.sleepsUntil !== undefined) return { kind: "timer", dueAt: timerDueAt(definition.sleepsUntil, call, now) };
  if (definition.waitTimeoutMs !== undefined) return { kind: "input", dueAt: now + definition.waitTimeoutMs };
  return { kind: "input" };
}

function timerDueAt(
  until: (input: never) => Date | number,
  call: { readonly callId: string; readonly toolName: string; readonly input: Json },
  now: number,
): number {
  let given: unknown;
  try {
    given = until(call.input as never);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new PhronomyError("TOOL_FAILED", `the timer "${call.toolName}" (call ${call.callId}): its until() threw: ${message}`, {
      cause: error,
      details: { toolName: call.toolName, callId: call.callId },
    });
  }
  const dueAt = given instanceof Date ? given.getTime() : typeof given === "number" ? now + given : Number.NaN;
  if (!Number.isFinite(dueAt) || dueAt - now > waitMsMax || (typeof given === "number" && given < 0)) {
    throw new PhronomyError(
      "TOOL_FAILED",
      `the timer "${call.toolName}" (call ${call.callId}): until() must give a Date or milliseconds from now (0 to ${waitMsMax}), got ${given instanceof Date ? "an invalid or far Date" : (JSON.stringify(given) ?? String(given))}`,
      { details: { toolName: call.toolName, callId: call.callId } },
    );
  }
  // Whole milliseconds: the stores index it as an integer.
  return Math.ceil(dueAt);
}

/** Whether the pending wait is a timer (only the clock answers it). */
export function waitsForClock(request: ApprovalRequest | undefined): boolean {
  return request?.kind === "timer";
}

/** Whether the clock may answer the pending wait: it has a due time. */
export function hasDeadline(request: ApprovalRequest | undefined): boolean {
  return request?.dueAt !== undefined;
}

/** The call's result when the clock answers: a timer fired, an event
 * wait timed out (its key and how long it waited, docs/decisions/0077), or
 * a typed wait (or approval) timed out. */
export function clockAnswerOf(request: ApprovalRequest, firedAt: number): Json {
  if (request.kind === "timer") return { firedAt };
  if (request.kind === "event") return { timedOut: true, key: request.key ?? null, waitedMs: Math.max(0, firedAt - request.requestedAt) };
  return { timedOut: true };
}
