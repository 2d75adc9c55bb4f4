// Starts filed in the approval inbox (issue 13 step 3, docs/decisions/0031):
// a PostgreSQL process asked to start a conversation whose partition another
// live process holds files the start as a decision of kind `start`; the
// partition's owner claims it and starts it through its own `agent.start`.
// The records here are shared by the store's SQL and the runtime.
//
// Rules kept here:
// * A filed start names its execution id when it is filed: the filer's Run
//   knows it at once, and the id is the start's identity everywhere after —
//   the owner starts under it, so the execution row's primary key admits it
//   at most once whoever claims it, however often.
// * With an idempotency key the id is derived from (agent id, key)
//   (`startExecutionIdOf`): filing the key again, or starting it locally,
//   names the same execution, which the store admits once.
// * Only what can be stored travels: the input and the JSON options. A
//   start whose options hold functions or a signal (they cannot reach
//   another process) is refused before anything is filed.

import { createHash } from "node:crypto";
import type { ExecutionRow, Json, StoredStep } from "./records.js";

/** Longest idempotency key a start takes. */
export const IDEMPOTENCY_KEY_LENGTH_MAX = 256;

/** The options a filed start carries to its owner (the JSON ones). */
export interface FiledStartOptions {
  readonly timeoutMs?: number;
  readonly approvalPolicy?: "tools" | "always" | "never";
  readonly tokenBudget?: number;
  readonly maxTurns?: number;
  readonly metadata?: { readonly [key: string]: Json };
  readonly stream?: boolean;
  readonly onBusy?: "reject" | "enqueue" | "interrupt";
  readonly idempotencyKey?: string;
  readonly replaceFrom?: string;
  readonly messageId?: string;
}

/** What the inbox row's `start` column holds. */
export interface FiledStart {
  /** The start's input as given to `agent.start` (string, model messages or parts). */
  readonly input: Json;
  readonly options: FiledStartOptions;
  /** The definition the conversation belongs to (a named definition), or
   * undefined for an agent defined by its id. */
  readonly definition?: string;
}

export interface StartFiling {
  readonly decisionId: string;
  readonly executionId: string;
  readonly agentId: string;
  readonly start: FiledStart;
  readonly filedBy: string;
  readonly filedAt: number;
}

/** The inbox's answer to a filing: the decision the filer waits on (an
 * earlier one when the execution id was filed already), or none when the
 * execution is in the store already (started before: follow it). */
export interface FiledStartAnswer {
  readonly decisionId: string | undefined;
  /** false: this filing found the start filed or run already. */
  readonly filedNow: boolean;
}

/** The approval id a start is filed under (the inbox's column is required). */
export function startApprovalId(decisionId: string): string {
  return `start:${decisionId}`;
}

/** The execution id of a start with an idempotency key: a UUID-shaped
 * digest of (agent id, key), the same in every process. */
export function startExecutionIdOf(agentId: string, idempotencyKey: string): string {
  const hex = createHash("sha256").update(`phronomy-start\u0000${agentId}\u0000${idempotencyKey}`, "utf8").digest("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${((parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** How a filed (or followed) start is doing, for its filer: the execution
 * row when it is in the store, whether it waits in its conversation's
 * queue, the decision's state and refusal (JSON of a transferred error),
 * and the timeline's steps after the seq the filer has seen. */
export interface StartProgress {
  readonly executionId: string;
  readonly execution: ExecutionRow | undefined;
  readonly queued: boolean;
  readonly decisionState: string | undefined;
  readonly decisionError: string | null;
  readonly steps: readonly StoredStep[];
}
