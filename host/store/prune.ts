// Pruning finished executions (issue 12 item 4, docs/decisions/0027): the
// store operation both backends run, its limits and its check. The policy
// (which executions are old enough, when to run) is the runtime's
// (`runtime/retention.ts`); a store only deletes what one bounded request
// names, in one transaction.
//
// Rules kept here, on both stores:
// * Only `terminal` executions whose finish (`updated_at` of the terminal
//   row) is before `finishedBefore` are deleted, and the statement that
//   deletes one requires it as read (terminal, same revision and finish): a row reopened meanwhile (a retry makes a
//   terminal execution active again) is not terminal any more, or has a
//   newer `updated_at`, and is left alone. Preparing, active and suspended
//   rows are never candidates.
// * Everything that names a deleted execution goes in the same transaction:
//   its steps (the timeline, with the tool calls' idempotency keys) and its
//   approval inbox rows. Leases and agent roots are the agent's and stay.
// * The journal is the conversation's memory, not the execution's: per
//   agent touched, the newest `journalRecordsKept` records always stay (by
//   default the largest memory window a definition may ask for); an older
//   record goes once its execution is gone (now, or in an earlier prune).
// * Bounded: at most `executionsMax` executions per request (at most
//   `pruneBatchExecutionsMax`; the runtime asks for the store's own
//   `pruneBatchExecutions` first, more while batches come back full); the
//   caller repeats, yielding in between.

import { InvalidInputError } from "../errors.js";
import { checkId } from "./check-id.js";
import { capabilitiesOf } from "./capabilities.js";

/** Most executions one prune transaction deletes, on any store. A pass
 * starts at the store's own batch (`PruningStore.pruneBatchExecutions`)
 * and doubles it after each full one while a backlog lasts
 * (`runtime/retention.ts`, docs/decisions/0059), up to this. An execution
 * of the bench's shape (model → tool → model → tool → model) has 12
 * steps, so 256 is ≈3,300 rows and their index entries: on SQLite ≈40 ms
 * of the one writer on a quiet machine (≈65 ms loaded), paid only while
 * more than 32 + 64 + 128 finished executions wait; a store that falls
 * behind grows without bound instead. */
export const pruneBatchExecutionsMax = 256;

/** Journal records kept per agent unless a request says fewer: the largest
 * `memoryWindow` a definition may set (`MEMORY_WINDOW_MAX`, checked by a
 * test). The store cannot know which definition (in which process, before
 * or after an upgrade) will start the conversation next, so by default it
 * keeps enough for any; an application whose windows are smaller says so
 * (`retention.journalRecordsKept`). */
export const journalRecordsKept = 1_000;

/** Agents one request may exclude (`exceptAgentIds`): the agents with a
 * retention of their own, pruned by requests of their own. */
export const pruneExceptionsMax = 10_000;

export interface PruneExecutionsOperation {
  readonly type: "pruneExecutions";
  /** Delete terminal executions that finished before this (ms since epoch). */
  readonly finishedBefore: number;
  /** Only this agent's executions. */
  readonly agentId?: string;
  /** Not these agents' executions (ignored with `agentId`). */
  readonly exceptAgentIds?: readonly string[];
  /** At most this many executions (1 to `pruneBatchExecutionsMax`). */
  readonly executionsMax: number;
  /** Journal records kept per agent touched (1 to `journalRecordsKept`, its default). */
  readonly journalRecordsKept?: number;
}

/** What one prune (or a sum of them) removed, by kind of row. */
export interface PruneCounts {
  /** Executions deleted. */
  readonly executions: number;
  /** Their timeline steps. */
  readonly steps: number;
  /** Journal records past the kept window. */
  readonly journal: number;
  /** Approval inbox rows. */
  readonly approvals: number;
}

export const noPruneCounts: PruneCounts = { executions: 0, steps: 0, journal: 0, approvals: 0 };

export function addPruneCounts(a: PruneCounts, b: PruneCounts): PruneCounts {
  return { executions: a.executions + b.executions, steps: a.steps + b.steps, journal: a.journal + b.journal, approvals: a.approvals + b.approvals };
}

/** A store that can prune (both of this package's owners do; a visitor and
 * a store of the application's own may not). */
export interface PruningStore {
  /** The batch this store prunes in (at most `pruneBatchExecutionsMax`). */
  readonly pruneBatchExecutions: number;
  pruneExecutions(operation: PruneExecutionsOperation): Promise<PruneCounts>;
}

/** The store as a pruning store, when it declares pruning and names a
 * batch in range. */
export function pruningStoreOf(store: object): PruningStore | undefined {
  if (!capabilitiesOf(store).pruning) return undefined;
  const given = store as Partial<PruningStore>;
  const batch = given.pruneBatchExecutions;
  const valid = typeof given.pruneExecutions === "function" && Number.isInteger(batch) && batch! >= 1 && batch! <= pruneBatchExecutionsMax;
  return valid ? (store as PruningStore) : undefined;
}

export function checkPruneOperation(operation: PruneExecutionsOperation): void {
  if (!Number.isSafeInteger(operation.finishedBefore)) {
    throw new InvalidInputError(`pruneExecutions.finishedBefore must be an integer (milliseconds since the epoch), got ${String(operation.finishedBefore)}`);
  }
  if (!Number.isInteger(operation.executionsMax) || operation.executionsMax < 1 || operation.executionsMax > pruneBatchExecutionsMax) {
    throw new InvalidInputError(
      `pruneExecutions.executionsMax must be an integer from 1 to ${pruneBatchExecutionsMax}, got ${String(operation.executionsMax)}`,
    );
  }
  if (operation.agentId !== undefined) checkId(operation.agentId, "pruneExecutions.agentId");
  const kept = operation.journalRecordsKept;
  if (kept !== undefined && (!Number.isInteger(kept) || kept < 1 || kept > journalRecordsKept)) {
    throw new InvalidInputError(`pruneExecutions.journalRecordsKept must be an integer from 1 to ${journalRecordsKept}, got ${String(kept)}`);
  }
  const except = operation.exceptAgentIds;
  if (except === undefined) return;
  if (!Array.isArray(except) || except.length > pruneExceptionsMax) {
    throw new InvalidInputError(`pruneExecutions.exceptAgentIds must be an array of at most ${pruneExceptionsMax} agent ids`);
  }
  except.forEach((agentId, index) => checkId(agentId, `pruneExecutions.exceptAgentIds[${index}]`));
}
