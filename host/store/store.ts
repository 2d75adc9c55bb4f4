// The interface the runtime depends on: a durable execution store. The
// embedded SQLite store implements it (`sqlite-store.ts`); a PostgreSQL
// store will implement the same, which is why every read returns a promise
// even though SQLite answers them synchronously.
//
// Contract for writes (`run` and the agent lifecycle): the call either
// throws at once — `OffloadFullError` (queue full), `StoreError` (store
// closed or broken), `InvalidInputError` (malformed operation) — and then
// nothing was submitted; or it returns a promise that settles with the
// operation's own result or error: `ExecutionRehydrationRequiredError` when
// a compare-and-set lost (nothing written), `ApprovalMismatchError` when an
// approval commit names another request or other arguments (nothing
// written), `InvalidInputError` for a refused purge, `StoreError` when the database failed (then the operation
// may or may not have committed; `details.outcome: "unknown"` says it was
// in flight when the SQLite store's worker died, docs/decisions/0021).

import { StoreError } from "../errors.js";
import type { StoreCapabilities, StoreSignals } from "./capabilities.js";
import type { AgentRow, ExecutionListFilter, ExecutionRow, JournalRecord, PurgeAgentResult, StoreOperation, StoreResult, StoredStep } from "./records.js";

/** A durable execution store: what the runtime reads and writes, whatever
 * the database (the SQLite store, the PostgreSQL store, a wrapper of either
 * given to `Phronomy.open({ store })`). Each write is one transaction and a
 * compare-and-set on the execution's revision. */
export interface ExecutionStore {
  /** Where the store lives (a file path, a database URL), for messages. */
  readonly path: string;

  /** Set once the store can no longer write at all (the SQLite store's
   * file removed or replaced, its worker lost for good): every write is
   * refused with it, and the environment refuses starts with it. */
  readonly failure?: StoreError | undefined;

  /** What the store can do beyond reads and writes (leases, partitions,
   * the inboxes, the queue, pruning), declared once; absent: nothing
   * (`capabilities.ts`). `Phronomy.open` checks it against the methods. */
  readonly capabilities?: StoreCapabilities;

  /** Tells the store where to send its signals (a lease taken over, a
   * decision filed, a connection lost); the runtime calls it once, at
   * open. A store with no signals need not implement it. */
  listen?(signals: StoreSignals): void;

  /** Runs one store operation (SPEC §4.1) as one transaction. */
  run<O extends StoreOperation>(operation: O): Promise<StoreResult<O>>;

  /** Creates the agent's root (open) unless it exists; returns it as stored. */
  ensureAgent(agentId: string, at: number): Promise<AgentRow>;
  /** Marks the agent's root closed (idempotent). */
  closeAgent(agentId: string, at: number): Promise<AgentRow>;
  /** Deletes the agent's root, journal, executions and steps; refused with
   * `InvalidInputError` while any of its executions is not terminal. */
  purgeAgent(agentId: string): Promise<PurgeAgentResult>;

  /** The agent's root, if it has one. */
  getAgent(agentId: string): Promise<AgentRow | undefined>;
  /** The execution's row, if the store has it. */
  getExecution(executionId: string): Promise<ExecutionRow | undefined>;
  /** Newest first; `limit` defaults to 100 and is at most 1,000. */
  listExecutions(filter?: ExecutionListFilter): Promise<ExecutionRow[]>;
  /** The execution's timeline, in order. */
  listSteps(executionId: string): Promise<StoredStep[]>;
  /** The agent's last `limit` journal records, oldest first. */
  readJournal(agentId: string, limit: number): Promise<JournalRecord[]>;
  /** Every execution not terminal (suspended included), oldest first. */
  unfinishedExecutions(): Promise<ExecutionRow[]>;

  // Pruning finished executions is a capability of its own (`PruningStore`
  // in prune.ts: both owners have it, a visitor does not); the environment
  // prunes only through a store that has it.

  /** Finishes every accepted write, then releases the store. Idempotent;
   * any call after it fails with `StoreError`. */
  close(): Promise<void>;
}

/** A write whose outcome is unknown: it was in flight when the store's
 * worker died, so it committed whole or not at all, and only its durable
 * row can tell. The runtime holds its execution for recovery rather than
 * failing it (docs/decisions/0021). */
export function isOutcomeUnknown(error: unknown): boolean {
  return error instanceof StoreError && error.details?.["outcome"] === "unknown";
}
