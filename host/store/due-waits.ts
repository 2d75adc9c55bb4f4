// Waits with a due time (docs/decisions/0076): a timer's, or a typed
// wait's or approval's timeout. The due time lives in the wait record
// itself (`approval_request.dueAt` on the suspended row); each store
// indexes suspended rows by it (a partial expression index: no column to
// keep in step, nothing written beyond the suspension's own commit), and
// answers two bounded reads the due sweep (`runtime/due-sweep.ts`) needs:
// the waits due by now, a batch at a time in (due time, execution id)
// order, and the next due time after now.

import { InvalidInputError } from "../errors.js";
import { capabilitiesOf } from "./capabilities.js";
import type { ExecutionStore } from "./store.js";

/** A suspended execution whose wait is due (or will be). */
export interface DueWait {
  readonly executionId: string;
  readonly agentId: string;
  /** The pending wait's id (`approvalRequest.approvalId`). */
  readonly waitId: string;
  /** When it is due (ms since the epoch). */
  readonly dueAt: number;
}

/** Where a batch read resumes: after this wait in (dueAt, executionId) order. */
export interface DueCursor {
  readonly dueAt: number;
  readonly executionId: string;
}

/** Rows one due read returns at most. A batch is fired before the next is
 * read, so this bounds the memory a sweep holds (≈100 bytes a wait) and the
 * resumes it starts at once; 256 fire in a few tens of milliseconds on
 * SQLite, and a million due at once are swept in ≈4,000 reads. */
export const dueWaitsBatchMax = 256;

/** What a store with due waits answers (`capabilities.dueWaits`). */
export interface DueWaitsStore {
  /** Waits due at or before `through`, after `after` in (dueAt,
   * executionId) order, at most `limit` (≤ dueWaitsBatchMax). PostgreSQL:
   * of the partitions held here only — their holder fires them. */
  dueWaits(through: number, limit: number, after?: DueCursor): Promise<DueWait[]>;
  /** The earliest due time after `after` of any pending wait (PostgreSQL:
   * of the partitions held here), if any. */
  nextDueAt(after: number): Promise<number | undefined>;
}

/** The store's due reads, when it declares them. */
export function dueWaitsStoreOf(store: ExecutionStore): DueWaitsStore | undefined {
  return capabilitiesOf(store).dueWaits ? (store as unknown as DueWaitsStore) : undefined;
}

/** Checks a due read's arguments (a programmer's error otherwise). */
export function checkDueRead(through: number, limit: number): void {
  if (!Number.isFinite(through)) throw new InvalidInputError(`dueWaits: "through" must be a time in ms, got ${String(through)}`);
  if (!Number.isInteger(limit) || limit < 1 || limit > dueWaitsBatchMax) {
    throw new InvalidInputError(`dueWaits: "limit" must be an integer from 1 to ${dueWaitsBatchMax}, got ${String(limit)}`);
  }
}

/** A row of a due read, checked. */
export function dueWaitOf(row: Record<string, unknown>): DueWait {
  const dueAt = Number(row["due_at"]);
  const executionId = String(row["execution_id"]);
  if (!Number.isFinite(dueAt)) throw new InvalidInputError(`execution ${executionId}: its wait's dueAt is not a time (${String(row["due_at"])})`);
  return { executionId, agentId: String(row["agent_id"]), waitId: String(row["wait_id"]), dueAt };
}
