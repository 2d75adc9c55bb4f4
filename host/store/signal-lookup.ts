// The wait a signal is for, as both stores read it back: the suspended
// execution whose pending request is an event wait with the key
// (docs/decisions/0077). A key names one wait at a time; should two
// suspended executions carry it, the one waiting longest is given the
// signal.

import { SignalRefusedError } from "../errors.js";
import type { Json } from "./records.js";

/** A suspended event wait, as found by its key. */
export interface ApprovalRequestRow {
  readonly executionId: string;
  readonly agentId: string;
  readonly approvalId: string;
  /** The pending request whole (its calls, its payload schema). */
  readonly request: Json;
}

/** The row's wait if it is an event wait with `key`, else undefined. */
export function eventWaitOf(row: { executionId: string; agentId: string; approvalRequest: string }, key: string): ApprovalRequestRow | undefined {
  const request = JSON.parse(row.approvalRequest) as { kind?: unknown; key?: unknown; approvalId?: unknown; decision?: unknown } | null;
  if (request?.kind !== "event" || request.key !== key || typeof request.approvalId !== "string") return undefined;
  return { executionId: row.executionId, agentId: row.agentId, approvalId: request.approvalId, request: request as Json };
}

export function alreadyStored(key: string, sentAt: number): SignalRefusedError {
  return new SignalRefusedError(
    `a signal for key "${key}" (sent at ${new Date(sentAt).toISOString()}) is already kept for the next wait with that key; nothing was stored — a key carries one signal at a time`,
    { reason: "already_stored", key },
  );
}

export function notWaiting(key: string): SignalRefusedError {
  return new SignalRefusedError(`no wait has key "${key}" (ifWaiting: true); nothing was stored — send without ifWaiting to keep it for the next wait`, {
    reason: "not_waiting",
    key,
  });
}
