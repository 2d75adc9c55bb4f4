// The PostgreSQL store (SPEC §4.3, issue 7): the same `ExecutionStore` as
// the embedded SQLite store, for several coordinator processes sharing one
// database. Every operation of `records.ts` runs as one transaction on a
// pooled connection, with the SQLite store's semantics and errors
// (`postgres/operations.ts`); reads are single statements on any pooled
// connection.
//
//   const store = await PostgresStore.open("postgres://postgres@127.0.0.1:5432/test?schema=phronomy");
//   await store.ensureAgent("support", Date.now());
//   await store.close();
//
// Rules kept here:
// * `run` and the lifecycle methods check the operation synchronously (an
//   `InvalidInputError` is thrown, nothing submitted) exactly like
//   `SqliteStore`; every later failure settles the promise.
// * A lost connection never turns into a guess: `postgres/outcome.ts`
//   reads back whether the write committed.
// * No group commit of our own (docs/decisions/0009): each operation is one
//   transaction on one of `poolSize` connections, and PostgreSQL merges the
//   WAL flushes of transactions that commit together.
// * `close()` waits for every accepted operation, then ends the pool.

import { randomUUID } from "node:crypto";
import type pg from "pg";
import { InvalidInputError, PhronomyError, StoreError } from "../errors.js";
import { checkId, checkOperation } from "./check-operation.js";
import { createPool, parseLocation, poolSizeDefault, poolSizeMax } from "./postgres/connection.js";
import { applyOperation, type Fence } from "./postgres/operations.js";
import { isConnectionLoss, resolveOutcome } from "./postgres/outcome.js";
import * as reads from "./postgres/reads.js";
import { migrate } from "./postgres/schema.js";
import type {
  AgentRow, ExecutionListFilter, ExecutionRow, JournalRecord, OffloadOperation, OffloadResult, PurgeAgentResult,
  StoreOperation, StoreResult, StoredStep,
} from "./records.js";
import { executionListMax, journalReadMax } from "./sqlite/reads.js";
import type { ExecutionStore } from "./store.js";

export interface PostgresStoreOptions {
  /** The PostgreSQL schema of the store's tables (default `phronomy`, or
   * `?schema=` in the URL). */
  readonly schema?: string;
  /** Connections at most (default `poolSizeDefault`, at most `poolSizeMax`). */
  readonly poolSize?: number;
}

const optionNames: ReadonlySet<string> = new Set(["schema", "poolSize"]);

export class PostgresStore implements ExecutionStore {
  /** The URL without its password, with the schema. */
  readonly path: string;
  readonly schema: string;
  /** @internal The pool; tests and the lease manager use it. */
  readonly pool: pg.Pool;
  private readonly inFlight = new Set<Promise<unknown>>();
  private closing: Promise<void> | undefined;
  /** The lease this process holds per agent, when leases are on. */
  fenceOf: (agentId: string) => Fence | undefined = () => undefined;

  private constructor(path: string, schema: string, pool: pg.Pool) {
    this.path = path;
    this.schema = schema;
    this.pool = pool;
  }

  /** Connects, creates or migrates the schema, and returns the store.
   * Rejects with `StoreError` when the database cannot be reached, or the
   * schema is another application's or was written by a newer Phronomy. */
  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    checkOptions(options);
    const location = parseLocation(url, options.schema);
    const pool = createPool(location, options.poolSize ?? poolSizeDefault);
    // An idle connection that dies (server restart) must not crash the
    // process; the next operation on it reports the failure.
    pool.on("error", () => undefined);
    try {
      const client = await pool.connect();
      try {
        await migrate(client, location.schema, location.redactedUrl);
      } finally {
        client.release();
      }
    } catch (error) {
      await pool.end().catch(() => undefined);
      if (error instanceof PhronomyError) throw error;
      throw new StoreError(`cannot open the PostgreSQL store at ${location.redactedUrl}: ${messageOf(error)}`, { cause: error });
    }
    return new PostgresStore(location.redactedUrl, location.schema, pool);
  }

  // -- writes ------------------------------------------------------------------------

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
    this.assertOpen("write");
    const pending = this.execute(operation);
    this.inFlight.add(pending);
    void pending.then(() => this.inFlight.delete(pending), () => this.inFlight.delete(pending));
    return pending as Promise<OffloadResult<O>>;
  }

  /** `rerunsLeft`: how many times an idempotent lifecycle operation whose
   * connection was lost is run again (once: a second loss is reported). */
  private async execute(operation: OffloadOperation, rerunsLeft = 1): Promise<unknown> {
    const writeId = randomUUID();
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw new StoreError(`the PostgreSQL store at ${this.path} could not get a connection for ${operation.type} (nothing was written): ${messageOf(error)}`, { cause: error, details: { outcome: "not_committed" } });
    }
    const backendPid = (client as unknown as { processID?: number }).processID;
    try {
      await client.query("BEGIN");
      const value = await applyOperation({ client, where: this.path, writeId, fenceOf: (agentId) => this.fenceOf(agentId) }, operation);
      await client.query("COMMIT");
      client.release();
      return value;
    } catch (error) {
      if (!(error instanceof PhronomyError) && isConnectionLoss(error)) {
        client.release(error instanceof Error ? error : new Error(String(error)));
        return this.resolveLost(operation, writeId, backendPid, error, rerunsLeft);
      }
      await client.query("ROLLBACK").then(() => client.release(), (rollbackError: unknown) => client.release(rollbackError as Error));
      throw this.storeErrorOf(error);
    }
  }

  /** The connection was lost mid-operation: read back what happened. */
  private async resolveLost(operation: OffloadOperation, writeId: string, backendPid: number | undefined, cause: unknown, rerunsLeft: number): Promise<unknown> {
    let resolution: Awaited<ReturnType<typeof resolveOutcome>>;
    try {
      const client = await this.pool.connect();
      try {
        resolution = await resolveOutcome(client, operation, writeId, backendPid);
      } finally {
        client.release();
      }
    } catch (error) {
      throw new StoreError(`the PostgreSQL store at ${this.path} lost its connection during ${operation.type} and could not read back whether it committed (${messageOf(error)}); recovery will read the row: ${messageOf(cause)}`, { cause, details: { outcome: "unknown", writeId } });
    }
    if (resolution.committed === true) return resolution.value;
    if (resolution.committed === "rerun" && rerunsLeft > 0) return this.execute(operation, rerunsLeft - 1);
    if (resolution.committed === "rerun") {
      throw new StoreError(`the PostgreSQL store at ${this.path} lost its connection twice during ${operation.type}; it is idempotent, call it again: ${messageOf(cause)}`, { cause, details: { outcome: "unknown" } });
    }
    throw new StoreError(`the PostgreSQL store at ${this.path} lost its connection during ${operation.type}; reading back showed it did not commit (nothing was written; retrying is safe): ${messageOf(cause)}`, { cause, details: { outcome: "not_committed", writeId } });
  }

  private storeErrorOf(error: unknown): PhronomyError {
    if (error instanceof PhronomyError) return error;
    const sqlState = (error as { code?: unknown } | null)?.code;
    return new StoreError(`the PostgreSQL store at ${this.path} failed: ${messageOf(error)}`, {
      cause: error,
      details: typeof sqlState === "string" ? { sqlState } : undefined,
    });
  }

  // -- reads ---------------------------------------------------------------------------

  getAgent(agentId: string): Promise<AgentRow | undefined> {
    return this.read(() => reads.getAgent(this.pool, this.path, checkId(agentId, "agentId")));
  }

  getExecution(executionId: string): Promise<ExecutionRow | undefined> {
    return this.read(() => reads.getExecution(this.pool, this.path, checkId(executionId, "executionId")));
  }

  listExecutions(filter: ExecutionListFilter = {}): Promise<ExecutionRow[]> {
    return this.read(() => {
      checkLimit(filter.limit, executionListMax, "listExecutions limit");
      if (filter.agentId !== undefined) checkId(filter.agentId, "agentId");
      return reads.listExecutions(this.pool, this.path, filter);
    });
  }

  listSteps(executionId: string): Promise<StoredStep[]> {
    return this.read(() => reads.listSteps(this.pool, this.path, checkId(executionId, "executionId")));
  }

  readJournal(agentId: string, limit: number): Promise<JournalRecord[]> {
    return this.read(() => {
      checkLimit(limit, journalReadMax, "readJournal limit");
      return reads.readJournal(this.pool, this.path, checkId(agentId, "agentId"), limit);
    });
  }

  unfinishedExecutions(): Promise<ExecutionRow[]> {
    return this.read(() => reads.unfinishedExecutions(this.pool, this.path));
  }

  private async read<T>(body: () => Promise<T>): Promise<T> {
    try {
      this.assertOpen("read");
      return await body();
    } catch (error) {
      throw this.storeErrorOf(error);
    }
  }

  private assertOpen(what: string): void {
    if (this.closing !== undefined) throw new StoreError(`the PostgreSQL store at ${this.path} is closed; open it again to ${what}`);
  }

  // -- lifecycle --------------------------------------------------------------------------

  /** Waits for every accepted operation, then ends the pool. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
      await this.pool.end();
    })();
    return this.closing;
  }
}

function checkOptions(options: PostgresStoreOptions): void {
  for (const key of Object.keys(options)) {
    if (!optionNames.has(key)) throw new InvalidInputError(`unknown PostgresStore option "${key}"; known options: ${[...optionNames].join(", ")}`);
  }
  const size = options.poolSize;
  if (size !== undefined && (!Number.isInteger(size) || size < 1 || size > poolSizeMax)) {
    throw new InvalidInputError(`poolSize must be an integer from 1 to ${poolSizeMax}, got ${String(size)}`);
  }
}

function checkLimit(limit: number | undefined, maximum: number, what: string): void {
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > maximum)) {
    throw new InvalidInputError(`${what} must be an integer from 1 to ${maximum}, got ${String(limit)}`);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
