// A simulated ExecutionStore for the host fuzz (host-effects.test.ts): the
// durable state lives in an in-memory SQLite database written by the real
// operation bodies (so compare-and-set, approval binding and recovery reads
// behave as the real store's), but *when* and *how* each operation settles
// is the test's choice: an operation is held pending until the fuzz settles
// it — committed, failed (with or without its transaction having
// committed: `StoreError` means "may or may not have"), or lost to a
// compare-and-set — in an order a seeded generator picks. Submissions may
// also be refused on the spot (`OffloadFullError`, `StoreError`,
// `ExecutionRehydrationRequiredError` thrown synchronously), as the store
// contract allows. Reads and the agent lifecycle answer at once.
//
// Several stores may share one database: the recovery environment opens a
// second store, committing everything at once, on the rows the first left.

import { ExecutionRehydrationRequiredError, StoreError } from "../../host/errors.js";
import type { OffloadOperation } from "../../host/store/offload-operation.js";
import type {
  AgentRow,
  ExecutionListFilter,
  ExecutionRow,
  JournalRecord,
  PurgeAgentResult,
  StoreOperation,
  StoreResult,
  StoredStep,
} from "../../host/store/records.js";
import { openSqlite, type SqliteConnection } from "../../host/store/sqlite/driver.js";
import * as reads from "../../host/store/sqlite/reads.js";
import { migrations } from "../../host/store/sqlite/schema.js";
import { commitGroup } from "../../host/store/sqlite/transaction.js";
import type { ExecutionStore } from "../../host/store/store.js";

/** How a pending operation settles. */
export type OperationFate = "commit" | "store_failed" | "committed_then_failed" | "lost_race";

export interface PendingOperation {
  readonly number: number;
  readonly operation: StoreOperation;
  settle(fate: OperationFate): void;
}

/** The durable state: one in-memory SQLite database. */
export class SimulatedDatabase {
  readonly connection: SqliteConnection = openSqlite(":memory:");
  /** Executions some operation of which committed and then reported a
   * failure: their waiters may have been told less than what is durable. */
  readonly ambiguous = new Set<string>();

  constructor() {
    for (const migrate of migrations) migrate(this.connection);
  }

  /** Runs one operation as one transaction, now. */
  commit(operation: OffloadOperation): { ok: true; value: unknown } | { ok: false; error: Error } {
    return commitGroup(this.connection, [operation])[0]!;
  }

  execution(executionId: string): ExecutionRow | undefined {
    return reads.getExecution(this.connection, executionId);
  }

  unfinished(): ExecutionRow[] {
    return reads.unfinishedExecutions(this.connection);
  }

  all(): ExecutionRow[] {
    return reads.listExecutions(this.connection, { limit: reads.executionListMax });
  }

  close(): void {
    this.connection.close();
  }
}

export interface SimulatedStoreOptions {
  /** Called for each submission: an error to throw at once (nothing
   * submitted), or undefined to accept it. */
  readonly refuse?: (operation: StoreOperation) => Error | undefined;
  /** Commit every accepted operation in a microtask instead of holding it. */
  readonly autoCommit?: boolean;
}

export class SimulatedStore implements ExecutionStore {
  readonly path = "simulated-store";
  readonly pending: PendingOperation[] = [];
  private submitted = 0;
  private closed = false;
  private closeWaiters: (() => void)[] = [];

  constructor(
    readonly database: SimulatedDatabase,
    private readonly options: SimulatedStoreOptions = {},
  ) {}

  run<O extends StoreOperation>(operation: O): Promise<StoreResult<O>> {
    if (this.closed) throw new StoreError("the simulated store is closed");
    const refusal = this.options.refuse?.(operation);
    if (refusal) throw refusal;
    this.submitted += 1;
    return new Promise<StoreResult<O>>((resolve, reject) => {
      const entry: PendingOperation = {
        number: this.submitted,
        operation,
        settle: (fate) => {
          const index = this.pending.indexOf(entry);
          if (index < 0) throw new Error(`operation #${entry.number} settled twice`);
          this.pending.splice(index, 1);
          this.settle(operation, fate, resolve as (value: unknown) => void, reject);
          if (this.pending.length === 0) for (const done of this.closeWaiters.splice(0)) done();
        },
      };
      this.pending.push(entry);
      if (this.options.autoCommit) queueMicrotask(() => entry.settle("commit"));
    });
  }

  private settle(operation: StoreOperation, fate: OperationFate, resolve: (value: unknown) => void, reject: (error: Error) => void): void {
    const executionId = operation.executionId;
    switch (fate) {
      case "commit": {
        const settlement = this.database.commit(operation);
        return settlement.ok ? resolve(settlement.value) : reject(settlement.error);
      }
      case "committed_then_failed": {
        const settlement = this.database.commit(operation);
        if (!settlement.ok) return reject(settlement.error);
        this.database.ambiguous.add(executionId);
        return reject(new StoreError(`simulated: ${operation.type} of execution ${executionId} committed, then the store reported a failure`));
      }
      case "store_failed":
        return reject(new StoreError(`simulated: the transaction of ${operation.type} of execution ${executionId} failed`));
      case "lost_race":
        return reject(
          new ExecutionRehydrationRequiredError(`simulated: ${operation.type} of execution ${executionId} lost its compare-and-set`, { executionId }),
        );
    }
  }

  private lifecycle<T>(operation: OffloadOperation): Promise<T> {
    if (this.closed) return Promise.reject(new StoreError("the simulated store is closed"));
    const settlement = this.database.commit(operation);
    return settlement.ok ? Promise.resolve(settlement.value as T) : Promise.reject(settlement.error);
  }

  ensureAgent(agentId: string, at: number): Promise<AgentRow> {
    return this.lifecycle({ type: "ensureAgent", agentId, at });
  }

  closeAgent(agentId: string, at: number): Promise<AgentRow> {
    return this.lifecycle({ type: "closeAgent", agentId, at });
  }

  purgeAgent(agentId: string): Promise<PurgeAgentResult> {
    return this.lifecycle({ type: "purgeAgent", agentId });
  }

  private read<T>(body: () => T): Promise<T> {
    if (this.closed) return Promise.reject(new StoreError("the simulated store is closed"));
    return Promise.resolve(body());
  }

  getAgent(agentId: string): Promise<AgentRow | undefined> {
    return this.read(() => reads.getAgent(this.database.connection, agentId));
  }

  getExecution(executionId: string): Promise<ExecutionRow | undefined> {
    return this.read(() => this.database.execution(executionId));
  }

  listExecutions(filter: ExecutionListFilter = {}): Promise<ExecutionRow[]> {
    return this.read(() => reads.listExecutions(this.database.connection, filter));
  }

  listSteps(executionId: string): Promise<StoredStep[]> {
    return this.read(() => reads.listSteps(this.database.connection, executionId));
  }

  readJournal(agentId: string, limit: number): Promise<JournalRecord[]> {
    return this.read(() => reads.readJournal(this.database.connection, agentId, limit));
  }

  unfinishedExecutions(): Promise<ExecutionRow[]> {
    return this.read(() => this.database.unfinished());
  }

  /** Accepted operations still settle (the fuzz settles them); resolves
   * once none is pending. */
  close(): Promise<void> {
    this.closed = true;
    if (this.pending.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.closeWaiters.push(resolve));
  }

  get isClosed(): boolean {
    return this.closed;
  }
}
