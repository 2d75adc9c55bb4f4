// The embedded SQLite store (SPEC §4.3): one file in WAL mode, written
// through the offload (a worker connection with group commit, and a
// calling-thread connection for lone operations), read on the calling
// thread. It implements `ExecutionStore`; the runtime should depend on that
// interface only. One process owns a store at a time: `open` takes an
// exclusive lock held until `close()` or the process's death
// (`sqlite/ownership.ts`, docs/decisions/0007), and a second `open` of the
// same file, from this process or another, fails at once with `StoreError`.
//
//   const store = await SqliteStore.open("./agents.db");
//   await store.ensureAgent("support", Date.now());
//   const prepared = await store.run({ type: "prepareExecution", ... });
//   await store.close();

import { resolve } from "node:path";
import { InvalidInputError, StoreError } from "../errors.js";
import { checkId, checkOperation } from "./check-operation.js";
import { Offload, offloadCapacityDefault, type OffloadPolicy, type OffloadStatistics } from "./offload.js";
import type {
  AgentRow, ExecutionListFilter, ExecutionRow, JournalRecord, OffloadOperation, OffloadResult, PurgeAgentResult,
  StoreOperation, StoreResult, StoredStep,
} from "./records.js";
import type { SqliteConnection } from "./sqlite/driver.js";
import * as reads from "./sqlite/reads.js";
import { takeOwnership, type StoreOwner, type StoreOwnership } from "./sqlite/ownership.js";
import { openStoreConnection, type SynchronousMode } from "./sqlite/schema.js";
import { startStoreWorker } from "./sqlite/start-worker.js";
import { commitGroup, storeErrorOf } from "./sqlite/transaction.js";
import type { ExecutionStore } from "./store.js";

export interface SqliteStoreOptions {
  /** `FULL` (default): a commit survives power loss. `NORMAL`: a commit
   * survives a process crash but the last ones may be lost on power loss;
   * about ten times faster per commit. */
  readonly synchronous?: SynchronousMode;
  /** Operations waiting or in flight before writes are refused with
   * `OffloadFullError` (default `offloadCapacityDefault`). */
  readonly offloadCapacity?: number;
  /** Where commits run (docs/decisions/0006); default `adaptive`. */
  readonly offloadPolicy?: OffloadPolicy;
}

const optionNames: ReadonlySet<string> = new Set(["synchronous", "offloadCapacity", "offloadPolicy"]);
const synchronousModes: ReadonlySet<string> = new Set(["FULL", "NORMAL"]);
const offloadPolicies: ReadonlySet<string> = new Set(["adaptive", "worker", "inline"]);

export class SqliteStore implements ExecutionStore {
  readonly path: string;
  readonly synchronous: SynchronousMode;
  private readonly connection: SqliteConnection;
  private readonly offload: Offload;
  private readonly ownership: StoreOwnership;
  private closing: Promise<void> | undefined;

  private constructor(path: string, synchronous: SynchronousMode, connection: SqliteConnection, offload: Offload, ownership: StoreOwnership) {
    this.path = path;
    this.synchronous = synchronous;
    this.connection = connection;
    this.offload = offload;
    this.ownership = ownership;
  }

  /** Opens the store at `path`, creating or migrating it when needed, and
   * takes ownership of it. Rejects with `StoreError` (naming the path) when
   * another process, or an earlier open in this one, owns the store (the
   * message names the owner's pid, host and start time; details.reason is
   * `store_owned`), and for a file that is not a Phronomy store or was
   * written by a newer version, leaving it untouched. */
  static async open(path: string, options: SqliteStoreOptions = {}): Promise<SqliteStore> {
    checkOptions(options);
    const absolutePath = checkPath(path);
    const synchronous = options.synchronous ?? "FULL";
    const ownership = await takeOwnership(absolutePath);
    let connection: SqliteConnection | undefined;
    try {
      const opened = openStoreConnection(absolutePath, { synchronous });
      connection = opened;
      const offload = await Offload.start({
        policy: options.offloadPolicy ?? "adaptive",
        capacity: options.offloadCapacity ?? offloadCapacityDefault,
        path: absolutePath,
        commitInline: (operations) => commitGroup(opened, operations),
        startWorker: () => startStoreWorker({ path: absolutePath, synchronous }),
      });
      return new SqliteStore(absolutePath, synchronous, opened, offload, ownership);
    } catch (error) {
      connection?.close();
      ownership.release();
      throw error;
    }
  }

  /** This process, as recorded in `<path>-owner.json` while it owns the store. */
  get owner(): StoreOwner {
    return this.ownership.owner;
  }

  get offloadPolicy(): OffloadPolicy {
    return this.offload.policy;
  }

  get offloadStatistics(): OffloadStatistics {
    return this.offload.statistics;
  }

  // -- writes (through the offload) --------------------------------------------

  run<O extends StoreOperation>(operation: O): Promise<StoreResult<O>> {
    return this.submit(operation) as Promise<StoreResult<O>>;
  }

  ensureAgent(agentId: string, at: number): Promise<AgentRow> {
    return this.submit({ type: "ensureAgent", agentId, at });
  }

  closeAgent(agentId: string, at: number): Promise<AgentRow> {
    return this.submit({ type: "closeAgent", agentId, at });
  }

  purgeAgent(agentId: string): Promise<PurgeAgentResult> {
    return this.submit({ type: "purgeAgent", agentId });
  }

  private submit<O extends OffloadOperation>(operation: O): Promise<OffloadResult<O>> {
    checkOperation(operation);
    return this.offload.submit(operation);
  }

  // -- reads (on the calling thread) ----------------------------------------------

  getAgent(agentId: string): Promise<AgentRow | undefined> {
    return this.read(() => reads.getAgent(this.connection, checkId(agentId, "agentId")));
  }

  getExecution(executionId: string): Promise<ExecutionRow | undefined> {
    return this.read(() => reads.getExecution(this.connection, checkId(executionId, "executionId")));
  }

  listExecutions(filter: ExecutionListFilter = {}): Promise<ExecutionRow[]> {
    return this.read(() => {
      checkLimit(filter.limit, reads.executionListMax, "listExecutions limit");
      if (filter.agentId !== undefined) checkId(filter.agentId, "agentId");
      return reads.listExecutions(this.connection, filter);
    });
  }

  listSteps(executionId: string): Promise<StoredStep[]> {
    return this.read(() => reads.listSteps(this.connection, checkId(executionId, "executionId")));
  }

  readJournal(agentId: string, limit: number): Promise<JournalRecord[]> {
    return this.read(() => {
      checkLimit(limit, reads.journalReadMax, "readJournal limit");
      return reads.readJournal(this.connection, checkId(agentId, "agentId"), limit);
    });
  }

  unfinishedExecutions(): Promise<ExecutionRow[]> {
    return this.read(() => reads.unfinishedExecutions(this.connection));
  }

  private read<T>(body: () => T): Promise<T> {
    try {
      if (this.closing !== undefined) throw new StoreError(`the store at ${this.path} is closed; open it again to read`);
      return Promise.resolve(body());
    } catch (error) {
      return Promise.reject(storeErrorOf(error, this.path));
    }
  }

  // -- lifecycle -------------------------------------------------------------------

  /** Finishes every accepted write, closes both connections, stops the
   * worker and releases ownership (another open may then take the store).
   * A second call returns the same promise. */
  close(): Promise<void> {
    this.closing ??= this.offload.close().finally(() => {
      try {
        this.connection.close();
      } finally {
        this.ownership.release();
      }
    });
    return this.closing;
  }
}

function checkOptions(options: SqliteStoreOptions): void {
  for (const key of Object.keys(options)) {
    if (!optionNames.has(key)) throw new InvalidInputError(`unknown SqliteStore option "${key}"; known options: ${[...optionNames].join(", ")}`);
  }
  if (options.synchronous !== undefined && !synchronousModes.has(options.synchronous)) {
    throw new InvalidInputError(`synchronous must be "FULL" or "NORMAL", got ${JSON.stringify(options.synchronous)}`);
  }
  if (options.offloadPolicy !== undefined && !offloadPolicies.has(options.offloadPolicy)) {
    throw new InvalidInputError(`offloadPolicy must be "adaptive", "worker" or "inline", got ${JSON.stringify(options.offloadPolicy)}`);
  }
}

/** Two connections share the file, so it must be a real file. */
function checkPath(path: string): string {
  if (typeof path !== "string" || path.length === 0 || path === ":memory:" || path.startsWith("file:")) {
    throw new InvalidInputError(`the SQLite store needs a file path, got ${JSON.stringify(path)} (in-memory databases and URIs are not supported: use a file in a temporary directory)`);
  }
  return resolve(path);
}

function checkLimit(limit: number | undefined, maximum: number, what: string): void {
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > maximum)) {
    throw new InvalidInputError(`${what} must be an integer from 1 to ${maximum}, got ${String(limit)}`);
  }
}
