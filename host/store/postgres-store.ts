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
// * Group commit (docs/decisions/0012): the hot operations (prepare,
//   barriers, terminal commit, and the approval commit, 0048) are one
//   statement each (`postgres/statements.ts`, `postgres/approval-commit.ts`)
//   and concurrent ones travel as one query, one transaction
//   (`postgres/group-commit.ts`); the rarer ones (a retry's reopen, the
//   queue, the agent lifecycle) run as transactions of their own
//   (`postgres/operations.ts`).
// * The row a barrier replaces is remembered from this process's own last
//   write of it (`knownRows`, an approval's included), so a barrier needs
//   no read first; a row not remembered (after a recovery, a restart) is
//   read once. An approval is computed from the suspended row
//   `getExecution` returned just before (`suspendedRows`), or reads it.
// * `close()` waits for every accepted operation, then ends the pool.

import type { PostgresStoreOptions } from "./postgres/options.js";
import * as queue from "./postgres/queue.js";
import * as schedules from "./postgres/schedules.js";
import {
  scheduleListMax,
  type NewSchedule,
  type ScheduleClaim,
  type ScheduleListFilter,
  type ScheduleRow,
  type ScheduleScope,
  type ScheduleSettlement,
} from "./schedule-records.js";
import type { CancelQueuedOperation, CancelQueuedResult, EnqueueMessageOperation, EnqueueMessageResult, QueuedMessage } from "./queue.js";
import { randomUUID } from "node:crypto";
import type pg from "pg";
import { AgentBusyError, InvalidInputError, PhronomyError, StoreError } from "../errors.js";
import type { DueCursor, DueWait } from "./due-waits.js";
import * as due from "./postgres/due-waits.js";
import { quietSignals, type StoreCapabilities, type StoreSignals } from "./capabilities.js";
import { checkId } from "./check-id.js";
import { checkListFilter, checkOperation } from "./check-operation.js";
import { createPool, parseLocation, poolSizeDefault, poolSizeMax } from "./postgres/connection.js";
import { ConnectionLost, GroupCommit, groupsInFlightDefault, NotConnected } from "./postgres/group-commit.js";
import { JournalTails } from "./postgres/journal-tails.js";
import { JournalReads } from "./postgres/journal-reads.js";
import { ReadBatches } from "./postgres/read-batches.js";
import { InstanceLock, checkInstanceId } from "./postgres/instance-lock.js";
import { PartitionBook } from "./postgres/partition-book.js";
import * as partitions from "./postgres/partitions.js";
import type { Fence } from "./postgres/leases.js";
import { applyOperation } from "./postgres/operations.js";
import {
  compareAndSetStatement,
  explainCompareAndSetRefusal,
  explainPrepareRefusal,
  isGrouped,
  prepareStatement,
  movingPrepareStatement,
  movedAnswerOf,
  readKnownRow,
  type GroupedOperation,
  type KnownRow,
  type Statement,
} from "./postgres/statements.js";
import { approvalStatement, explainApprovalRefusal, readSuspendedRow, type SuspendedRow } from "./postgres/approval-commit.js";
import * as leases from "./postgres/leases.js";
import * as inbox from "./postgres/inbox.js";
import * as signals from "./postgres/signals.js";
import type { SignalSending, SignalSent } from "./signal-records.js";
import { InboxListener } from "./postgres/inbox-listener.js";
import { InboxProbes } from "./postgres/inbox-probes.js";
import { StatementBatch } from "./postgres/statement-batch.js";
import { startTiming } from "./start-timing.js";
import type { FiledStartAnswer, StartFiling } from "./start-filing.js";
import { isConnectionLoss, resolveOutcome, type Resolution } from "./postgres/outcome.js";
import * as reads from "./postgres/reads.js";
import { homesOfPartitions, readHomes, type HomeOutcome, type MoveAsked } from "./postgres/homes.js";
import { flagPartitionsMovedOut } from "./postgres/moved-out.js";
import * as pages from "./postgres/pages.js";
import { checkCountsFilter, checkPageQuery, cursorsOf, type ExecutionCounts, type ExecutionPage, type ExecutionPageQuery } from "./execution-pages.js";
import { migrate, schemaVersion } from "./postgres/schema.js";
import { preparedFirst } from "./postgres/functions.js";
import { setNewest } from "./newest.js";
import { checkPruneOperation, type PruneCounts, type PruneExecutionsOperation } from "./prune.js";
import { postgresPruneBatchExecutions } from "./postgres/prune.js";
import type { OffloadOperation, OffloadResult } from "./offload-operation.js";
import type {
  AgentRow,
  ExecutionListFilter,
  ExecutionRow,
  JournalRecord,
  Json,
  PurgeAgentResult,
  PrepareExecutionOperation,
  PrepareExecutionResult,
  StoreOperation,
  StoreResult,
  StoredStep,
} from "./records.js";
import { executionListMax, journalReadMax } from "./sqlite/reads.js";
import type { ExecutionStore } from "./store.js";

export type { PostgresStoreOptions } from "./postgres/options.js";

const optionNames: ReadonlySet<string> = new Set(["schema", "poolSize", "leaseMs", "instanceId", "partitions", "balance", "takeIdleHere"]);

/** The first and the longest wait before an enqueue whose connection was
 * lost reads back its outcome again (the database not answering). */
const enqueueReadBackMsMin = 250;
const enqueueReadBackMsMax = 2_000;

/** Connections opened ahead when a restart reclaimed partitions: its
 * recovery's scan, reads and first group commits at once. */
const reclaimWarmConnections = 4;

/** Rows remembered at most (one per active execution this process writes):
 * beyond it a barrier reads its row first, as after a restart. */
const knownRowsMax = 100_000;
/** A grouped write that could get no connection is tried again this many
 * times, after 100, 200, 400 and 800 ms. */
const notConnectedRetriesMax = 4;
const notConnectedRetryMs = 100;
/** Filed starts claimed here whose writes are told to their filer: the
 * starts a few seconds of filing at thousands per second bring; ≈150 bytes
 * each. An execution forgotten (the oldest first) is followed by its
 * filer's slower poll. */
const filerChannelsMax = 10_000;

/** Suspended rows remembered at most from `getExecution` (the runtime reads
 * the row just before it commits an approval, which is then computed from
 * it, docs/decisions/0048); the oldest is forgotten first, and an approval
 * of a row not remembered reads it. */
const suspendedRowsMax = 10_000;

/** Agents announced and not claimed yet, remembered at most: beyond it the
 * set is forgotten (those agents' next claims ask first, which is only one
 * more read). */
const announcedAgentsMax = 10_000;

/** Opens an operation's transaction (one round trip). A transaction left
 * idle this long — its process stopped (SIGSTOP) between two statements —
 * is ended by the server, so the partition fence locks it holds do not
 * keep a takeover waiting for ever (docs/decisions/0042). */
const idleTransactionMaxMs = 10_000;
const beginTransaction = `BEGIN; SET LOCAL idle_in_transaction_session_timeout = ${idleTransactionMaxMs}`;

export class PostgresStore implements ExecutionStore {
  /** The URL without its password, with the schema. */
  readonly path: string;
  readonly schema: string;
  /** @internal The pool; tests and the lease manager use it. */
  readonly pool: pg.Pool;
  private readonly inFlight = new Set<Promise<unknown>>();
  private closing: Promise<void> | undefined;
  /** @internal The group commit of the hot operations (figures for benchmarks). */
  readonly groups: GroupCommit;
  /** Each active execution's row as this process last wrote it. */
  private readonly knownRows = new Map<string, KnownRow>();
  /** Suspended rows as `getExecution` last read them, for the approval
   * commit that follows (`postgres/approval-commit.ts`). */
  private readonly suspendedRows = new Map<string, SuspendedRow>();
  /** The journal tails of the agents held here. */
  private readonly journalTails = new JournalTails();
  /** The journal reads of conversations not kept in `journalTails`, in batches. */
  private readonly journalReads: JournalReads;
  /** Steps and queued messages read in batches: a restart recovers many
   * conversations at once (docs/decisions/0049). */
  private readonly stepReads: ReadBatches<StoredStep[]>;
  private readonly queueReads: ReadBatches<QueuedMessage[]>;
  /** This process's name in the partition leases: its instance id. */
  readonly leaseOwner: string;
  readonly leaseMs: number;
  /** The partitions held, renewed and balanced in the background
   * (`postgres/partition-book.ts`). */
  private readonly leaseBook: PartitionBook;
  /** Partitions reclaimed at open from a dead process of this instance id. */
  reclaimedPartitions: readonly partitions.PartitionGrant[] = [];
  /** `takeIdleHere` (docs/decisions/0101): a start of a conversation held
   * elsewhere with nothing anywhere moves it here. */
  private takesIdle = false;
  /** Everything the runtime uses: leases by partition, both inboxes, the
   * queue, pruning. */
  readonly capabilities: StoreCapabilities = {
    leases: true,
    partitions: true,
    approvalInbox: true,
    startInbox: true,
    queue: true,
    queueReads: true,
    pruning: true,
    schedules: true,
    scheduleReads: true,
    pages: true,
    signals: true,
    dueWaits: true,
  };
  /** Where the store's signals go (`listen`): partitions taken in the
   * background (after `leaseAcquired` for the agents asked for in them: their
   * other unfinished executions are recovered, `markPartitionsScanned`
   * then), a lease asked for and taken over later, a connection lost (for
   * the log: the operation using it fails with `StoreError` or reads back
   * its outcome, and the pool opens a new connection for the next one),
   * decisions and starts filed. It also answers which conversations run
   * here: their partitions are given up last when balancing. */
  private signals: StoreSignals = quietSignals;
  /** Preparations in flight, by partition: busy before the runtime knows
   * (between a preparation's answer and its execution's install on the
   * loop neither counts it: a balance tick landing there fences it as
   * before). */
  private readonly preparing = new Map<number, number>();

  private donePreparing(partition: number): void {
    const count = (this.preparing.get(partition) ?? 1) - 1;
    if (count > 0) this.preparing.set(partition, count);
    else this.preparing.delete(partition);
  }

  private busyPartitions(): Set<number> {
    const busy = new Set(this.preparing.keys());
    for (const agentId of this.signals.runningAgents()) busy.add(this.leaseBook.partitionOf(agentId));
    return busy;
  }

  /** The fence every write of an agent carries. Without leases (no
   * `acquireLease` for the agent) none; with one, the lease held, or the
   * last one held, or one no row matches — never unfenced. */
  fenceOf: (agentId: string) => Fence | undefined = (agentId) => this.leaseBook.fenceOf(agentId);

  private constructor(
    path: string,
    schema: string,
    pool: pg.Pool,
    poolSize: number,
    leaseMs: number,
    private readonly instance: InstanceLock,
    partitionCount: number,
    readonly balancing: boolean,
  ) {
    this.path = path;
    this.schema = schema;
    this.pool = pool;
    this.journalReads = new JournalReads(pool, path);
    this.inboxProbes = new InboxProbes(pool);
    this.stepReads = new ReadBatches(
      (executionId) => reads.listSteps(pool, path, executionId),
      (executionIds) => reads.listStepsOf(pool, path, executionIds),
    );
    this.queueReads = new ReadBatches(
      (agentId) => queue.queuedMessages(pool, agentId),
      (agentIds) => queue.queuedMessagesOf(pool, agentIds),
    );
    this.leaseMs = leaseMs;
    this.leaseOwner = instance.instanceId;
    this.leaseBook = new PartitionBook(
      pool,
      () => instance.session,
      this.leaseOwner,
      leaseMs,
      partitionCount,
      {
        acquired: (agentId, grant) => this.signals.leaseAcquired(agentId, grant),
        partitionsAcquired: (grants) => this.signals.partitionsAcquired(grants),
        lost: (agentIds) => this.signals.leasesLost(agentIds),
        afterPass: () => this.pollInbox(),
        closing: () => this.closing !== undefined,
        busy: () => this.busyPartitions(),
      },
      balancing,
      inbox.releasedChannelOf(schema),
    );
    // One connection stays free of groups for reads, leases and the rarer writes.
    this.groups = new GroupCommit(pool, Math.max(1, Math.min(groupsInFlightDefault, poolSize - 1)));
  }

  /** Connects, creates or migrates the schema, and returns the store.
   * Rejects with `StoreError` when the database cannot be reached, or the
   * schema is another application's or was written by a newer Phronomy. */
  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    checkOptions(options);
    const fromUrl = typeof url === "string" ? leases.leaseMsOfUrl(url) : { url, leaseMs: undefined };
    if (options.leaseMs !== undefined && fromUrl.leaseMs !== undefined && options.leaseMs !== fromUrl.leaseMs) {
      throw new InvalidInputError(`the PostgreSQL URL names lease_ms=${fromUrl.leaseMs} but the options name leaseMs ${options.leaseMs}; name it once`);
    }
    const leaseMs = options.leaseMs ?? fromUrl.leaseMs ?? leases.leaseMsDefault;
    const location = parseLocation(fromUrl.url, options.schema);
    const poolSize = options.poolSize ?? poolSizeDefault;
    // A connection that dies (server restart, pg_terminate_backend) must
    // not crash the process; the operation using it reports the failure.
    let opened: PostgresStore | undefined;
    const pool = createPool(location, poolSize, (error) => opened?.signals.connectionLost(error));
    // The instance's session lock is taken on a connection of its own, in
    // parallel with the schema check (docs/decisions/0049).
    const { connectionString, options: sessionOptions, types, application_name, connectionTimeoutMillis } = pool.options;
    const locking = InstanceLock.take(
      { connectionString, options: sessionOptions, types, application_name, connectionTimeoutMillis },
      location.schema,
      options.instanceId,
      location.redactedUrl,
    );
    locking.catch(() => undefined);
    try {
      const partitionCount = await openSchema(pool, location.schema, location.redactedUrl, options.partitions ?? partitions.partitionCountDefault);
      const instance = await locking;
      opened = new PostgresStore(location.redactedUrl, location.schema, pool, poolSize, leaseMs, instance, partitionCount, options.balance !== false);
      const store = opened;
      opened.reclaimedPartitions = await opened.leaseBook.start((reclaimed) => {
        // A restart: its recovery reads and writes at once on several
        // connections; they are opened now, while the tick runs.
        if (reclaimed.length > 0) store.warmPool(Math.min(reclaimWarmConnections, poolSize - 1));
      });
      await opened.learnHomes(opened.heldPartitionNumbers());
      opened.takesIdle = options.takeIdleHere === true && options.balance !== false;
      // Its moves then seldom wait for a partition's writes (docs/decisions/0107).
      if (opened.takesIdle) await flagPartitionsMovedOut(pool);
    } catch (error) {
      await opened?.leaseBook.stop().catch(() => undefined);
      await locking.then(
        (instance) => instance.release(),
        () => undefined,
      );
      await pool.end().catch(() => undefined);
      if (error instanceof PhronomyError) throw error;
      throw new StoreError(`cannot open the PostgreSQL store at ${location.redactedUrl}: ${messageOf(error)}`, { cause: error });
    }
    return opened;
  }

  /** Opens `count` more connections in the background (a failure is the
   * next operation's to report). */
  private warmPool(count: number): void {
    for (let index = 0; index < count; index += 1) {
      this.pool.connect().then(
        (client) => client.release(),
        () => undefined,
      );
    }
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
    const purged = this.submit({ type: "purgeAgent", agentId });
    this.journalTails.drop(agentId);
    void purged.finally(() => this.journalTails.drop(agentId)).catch(() => undefined);
    return purged;
  }

  readonly pruneBatchExecutions = postgresPruneBatchExecutions;

  /** Deletes a bounded batch of finished executions (`prune.ts`) in a
   * transaction of its own. */
  pruneExecutions(operation: PruneExecutionsOperation): Promise<PruneCounts> {
    checkPruneOperation(operation);
    this.assertOpen("write");
    const pending = this.execute(operation) as Promise<PruneCounts>;
    this.inFlight.add(pending);
    void pending.then(
      () => this.inFlight.delete(pending),
      () => this.inFlight.delete(pending),
    );
    return pending;
  }

  private submit<O extends OffloadOperation>(operation: O): Promise<OffloadResult<O>> {
    checkOperation(operation);
    this.assertOpen("write");
    const pending = this.execute(operation);
    this.inFlight.add(pending);
    void pending.then(
      () => this.inFlight.delete(pending),
      () => this.inFlight.delete(pending),
    );
    return pending as Promise<OffloadResult<O>>;
  }

  /** `rerunsLeft`: how many times an idempotent lifecycle operation whose
   * connection was lost is run again (once: a second loss is reported). */
  private async execute(operation: OffloadOperation, rerunsLeft = 1): Promise<unknown> {
    if (isGrouped(operation)) return this.executeGrouped(operation);
    const writeId = randomUUID();
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw new StoreError(`the PostgreSQL store at ${this.path} could not get a connection for ${operation.type} (nothing was written): ${messageOf(error)}`, {
        cause: error,
        details: { outcome: "not_committed" },
      });
    }
    const backendPid = (client as unknown as { processID?: number }).processID;
    try {
      await client.query(beginTransaction);
      const value = await applyOperation(
        {
          client,
          where: this.path,
          writeId,
          fenceOf: (agentId) => this.fenceOf(agentId),
          holdsPartitionOf: (agentId) => this.partitionHeld(agentId),
          schema: this.schema,
          instanceId: this.leaseOwner,
        },
        operation,
      );
      await client.query("COMMIT");
      client.release();
      return value;
    } catch (error) {
      if (!(error instanceof PhronomyError) && isConnectionLoss(error)) {
        client.release(error instanceof Error ? error : new Error(String(error)));
        return this.resolveLost(operation, writeId, backendPid, error, rerunsLeft);
      }
      await client.query("ROLLBACK").then(
        () => client.release(),
        (rollbackError: unknown) => client.release(rollbackError as Error),
      );
      throw this.storeErrorOf(error);
    }
  }

  /** A hot operation as one statement of a group (docs/decisions/0012). */
  private async executeGrouped(operation: GroupedOperation): Promise<unknown> {
    const writeId = randomUUID();
    const executionId = operation.executionId;
    let statement: Statement;
    let fence: Fence | undefined;
    /** The journal records the write appends, for `journalTails`. */
    let journal: { readonly agentId: string; readonly records: readonly JournalRecord[] } | undefined;
    let agentId: string;
    /** Why the statement wrote nothing, read after a refusal. A fencing
     * refusal names the fence the statement carried (`used`), not the one
     * held when it is explained: the partition may have been taken back
     * at a later epoch meanwhile, and the recovery of the fenced execution
     * compares the epoch refused with the one held. */
    let explain: () => Promise<unknown>;
    /** The conversation's move this preparation carries (docs/decisions/0119). */
    let move: MoveAsked | undefined;
    try {
      if (operation.type === "prepareExecution") {
        agentId = operation.agentId;
        // A definite refusal (nothing written): the start fails and the
        // agent's admission is released, unlike a store failure.
        const refusal = this.leaseBook.admissionRefusal(operation.agentId);
        if (refusal !== undefined) return { outcome: "not_established", error: refusal.toRecord() };
        const used = (fence = this.fenceOf(operation.agentId));
        journal = operation.blockedBy === undefined ? { agentId: operation.agentId, records: operation.journal } : undefined;
        // Its conversation's move, carried by this preparation (0119); a
        // replacing one has rows by definition: the move is dropped.
        move = this.leaseBook.pendingMoveOf(operation.agentId);
        if (move !== undefined && operation.replaceFrom !== undefined && operation.blockedBy === undefined) {
          this.leaseBook.cancelMove(operation.agentId);
          move = undefined;
        }
        statement =
          move === undefined
            ? prepareStatement(operation, fence, writeId)
            : movingPrepareStatement(operation, fence, writeId, move, this.leaseOwner, Math.floor(this.leaseMs / 6));
        explain = () => this.prepareRefused(operation, used);
      } else if (operation.type === "approvalCommit") {
        const remembered = this.suspendedRows.get(executionId);
        this.suspendedRows.delete(executionId);
        const known = remembered?.revision === operation.expectedRevision ? remembered : await readSuspendedRow(this.pool, operation);
        agentId = known.agentId;
        const used = (fence = this.fenceOf(agentId));
        statement = approvalStatement(operation, known, fence, writeId);
        explain = async () => {
          throw await explainApprovalRefusal(this.pool, operation, used);
        };
      } else {
        let known = this.knownRows.get(executionId);
        if (known === undefined || known.revision !== operation.expectedRevision) known = await readKnownRow(this.pool, operation);
        const row = known;
        agentId = known.agentId;
        const used = (fence = this.fenceOf(known.agentId));
        journal = operation.type === "terminalCommit" ? { agentId: known.agentId, records: operation.journal } : undefined;
        statement = compareAndSetStatement(operation, known, fence, writeId);
        explain = async () => {
          throw await explainCompareAndSetRefusal(this.pool, operation, row, used);
        };
      }
    } catch (error) {
      throw this.storeErrorOf(error);
    }
    this.knownRows.delete(executionId);
    // A filed start claimed here: its filer hears each write once it
    // applied (`tellFiler`: after the commit, not in it) and reads the
    // timeline then.
    const filer = this.filerChannels.get(executionId);
    const sql = statement.sql;
    let applied: boolean;
    /** The preparation was the agent's first (migration 28, decision 0118). */
    let firstOfAgent = false;
    const partition = this.leaseBook.partitionOf(agentId);
    const preparing = operation.type === "prepareExecution";
    if (preparing) this.preparing.set(partition, (this.preparing.get(partition) ?? 0) + 1);
    const terminal = operation.type === "terminalCommit";
    if (preparing || terminal) startTiming.phase(agentId, preparing ? "preparing" : "terminating");
    try {
      const answer = await this.submitConnected(sql, partition, statement.call);
      if (move !== undefined) {
        const livesIn = movedAnswerOf(answer);
        this.leaseBook.moveAnswered(agentId, livesIn);
        if (livesIn !== undefined) return this.moveRefused(agentId);
      }
      applied = answer >= 1;
      firstOfAgent = preparing && answer === preparedFirst;
      if (applied && (preparing || terminal)) startTiming.phase(agentId, preparing ? "prepared" : "terminated");
    } catch (error) {
      // Its records may have been written (read back, or not known): the
      // tail kept in memory is read again (docs/decisions/0058).
      if (journal !== undefined) this.journalTails.drop(journal.agentId);
      if (error instanceof ConnectionLost && move !== undefined) return this.movingPreparationLost(operation, agentId, writeId, error);
      if (move !== undefined) this.leaseBook.cancelMove(agentId);
      if (error instanceof ConnectionLost) return this.resolveLost(operation, writeId, error.backendPid, error.cause, 0);
      if (error instanceof NotConnected || (!(error instanceof PhronomyError) && isConnectionLoss(error))) {
        const cause = error instanceof NotConnected ? error.cause : error;
        throw new StoreError(
          `the PostgreSQL store at ${this.path} could not get a connection for ${operation.type} (nothing was written): ${messageOf(cause)}`,
          { cause, details: { outcome: "not_committed" } },
        );
      }
      throw this.storeErrorOf(error);
    } finally {
      if (preparing) this.donePreparing(partition);
    }
    if (applied) {
      if (filer !== undefined) this.tellFiler(filer, executionId);
      if (filer !== undefined && operation.type === "terminalCommit" && operation.outcome !== "suspended") this.filerChannels.delete(executionId);
      if (statement.after !== undefined && this.knownRows.size < knownRowsMax) this.knownRows.set(executionId, statement.after);
      // Rows the terminal commit filed for a parent or a child (decision 0079): their owners are told.
      for (const told of (statement.value as { inboxFiledFor?: readonly string[] } | undefined)?.inboxFiledFor ?? []) {
        void this.filerNotifications.submit({ channel: this.inboxChannel(), payload: told }).catch(() => undefined);
      }
      // A preparation that cut the journal (`replaceFrom`) leaves a tail
      // that no append describes: it is read again (docs/decisions/0070).
      if (journal !== undefined && operation.type === "prepareExecution" && operation.replaceFrom !== undefined) this.journalTails.drop(journal.agentId);
      else if (journal !== undefined && fence !== undefined) this.journalTails.append(journal.agentId, fence.epoch, journal.records);
      // Said of an active execution only, as the SQLite store does (a
      // blocked input, stored terminal, is never run).
      const prepared = statement.value as PrepareExecutionResult;
      return firstOfAgent && prepared.outcome === "active" ? { ...prepared, firstOfAgent: true } : statement.value;
    }
    try {
      return await explain();
    } catch (error) {
      throw this.storeErrorOf(error);
    }
  }

  /** Submits a grouped statement, trying again while no connection can be
   * had (nothing was sent: the server's connection limit, a restart, the
   * pool's wait), `notConnectedRetriesMax` times over ≈ 1.5 s, so a
   * moment's overload does not fail a run (docs/decisions/0055). */
  private async submitConnected(sql: string, partition: number, call: string | undefined): Promise<number> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await this.groups.submit(sql, partition, call);
      } catch (error) {
        if (!(error instanceof NotConnected) || attempt >= notConnectedRetriesMax || this.closing !== undefined) throw error;
        await new Promise((resolve) => setTimeout(resolve, notConnectedRetryMs * 2 ** attempt));
      }
    }
  }

  /** The move a preparation carried was refused (docs/decisions/0119):
   * nothing was written, and the book noted where the conversation lives.
   * The start is refused naming it (`movedTo`) as the move's refusal
   * (`moveRefused`): the core places it again (`refusedStartVerdict`),
   * filed for the home's holder, or run here if this process holds it. */
  private moveRefused(agentId: string): unknown {
    const refusal = (this.leaseBook.admissionRefusal(agentId) ?? AgentBusyError.notOwnedHere(agentId)).toRecord();
    const details = { ...(refusal.details as Record<string, Json> | undefined), movedTo: this.leaseBook.partitionOf(agentId), moveRefused: true };
    return { outcome: "not_established", error: { ...refusal, details } };
  }

  /** A preparation carrying its conversation's move lost its connection:
   * read back, committed (the move with it: one transaction) keeps the
   * home noted; not committed, or not known, drops it. */
  private async movingPreparationLost(operation: OffloadOperation, agentId: string, writeId: string, error: ConnectionLost): Promise<unknown> {
    try {
      const value = await this.resolveLost(operation, writeId, error.backendPid, error.cause, 0);
      this.leaseBook.moveAnswered(agentId, undefined);
      return value;
    } catch (lost) {
      this.leaseBook.cancelMove(agentId);
      throw lost;
    }
  }

  /** A prepare that wrote nothing: its refusal, or the fencing error (the
   * lease was lost: admissions stop until it is held again). */
  private async prepareRefused(operation: PrepareExecutionOperation, fence: Fence | undefined): Promise<unknown> {
    const explained = await explainPrepareRefusal(this.pool, operation, fence);
    if (!(explained instanceof PhronomyError)) return explained;
    // Moved out of the partition this process placed it in (by another
    // process, docs/decisions/0101): the partition is not lost; the
    // conversation's home is noted and the start refused as owned there,
    // the refusal saying where it lives now (`movedTo`): the core places
    // the start again (`refusedStartVerdict`, docs/decisions/0112).
    // Its home noted here and pruned since (0112: the conversation had
    // nothing left anywhere): it lives in its natural partition again.
    const home = (await readHomes(this.pool, [operation.agentId])).get(operation.agentId);
    const noted = this.leaseBook.homeOf(operation.agentId);
    if (home !== noted) {
      if (home === undefined) this.leaseBook.forgetHome(operation.agentId);
      else this.leaseBook.noteHome(operation.agentId, home);
      const refusal = (this.leaseBook.admissionRefusal(operation.agentId) ?? explained).toRecord();
      return {
        outcome: "not_established",
        error: { ...refusal, details: { ...(refusal.details as Record<string, Json> | undefined), movedTo: this.leaseBook.partitionOf(operation.agentId) } },
      };
    }
    // Refused at the epoch it carried: nothing was written, whether that
    // epoch is lost now or the partition was taken back at a later one.
    this.leaseBook.noteLost(operation.agentId, explained.details?.["epoch"]);
    return { outcome: "not_established", error: this.leaseBook.admissionRefusal(operation.agentId)?.toRecord() ?? explained.toRecord() };
  }

  /** The connection was lost mid-operation: read back what happened. */
  private async resolveLost(
    operation: OffloadOperation,
    writeId: string,
    backendPid: number | undefined,
    cause: unknown,
    rerunsLeft: number,
  ): Promise<unknown> {
    const resolution = await this.readBackOutcome(operation, writeId, backendPid, cause);
    if (resolution.committed === true) return resolution.value;
    if (resolution.committed === "rerun" && rerunsLeft > 0) return this.execute(operation, rerunsLeft - 1);
    if (resolution.committed === "rerun") {
      throw new StoreError(
        `the PostgreSQL store at ${this.path} lost its connection twice during ${operation.type}; it is idempotent, call it again: ${messageOf(cause)}`,
        { cause, details: { outcome: "unknown" } },
      );
    }
    throw new StoreError(
      `the PostgreSQL store at ${this.path} lost its connection during ${operation.type}; reading back showed it did not commit (nothing was written; retrying is safe): ${messageOf(cause)}`,
      { cause, details: { outcome: "not_committed", writeId } },
    );
  }

  /** Reads back whether a write whose connection was lost committed. The
   * database not answering: unknown — except for an enqueue, read again
   * (250 ms doubling to 2 s) until it answers or the store closes: the
   * conversation's later queue writes wait behind it, so a message that
   * did commit keeps its place in the queue, and its caller is told the
   * truth, not a guess (docs/decisions/0058). */
  private async readBackOutcome(operation: OffloadOperation, writeId: string, backendPid: number | undefined, cause: unknown): Promise<Resolution> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        const client = await this.pool.connect();
        try {
          return await resolveOutcome(client, operation, writeId, backendPid);
        } finally {
          client.release();
        }
      } catch (error) {
        if (operation.type !== "enqueueMessage" || this.closing !== undefined) throw this.outcomeUnknown(operation, writeId, error, cause);
        const delayMs = Math.min(enqueueReadBackMsMax, enqueueReadBackMsMin * 2 ** attempt);
        await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
    }
  }

  private outcomeUnknown(operation: OffloadOperation, writeId: string, error: unknown, cause: unknown): StoreError {
    const details = { outcome: "unknown", writeId };
    if (operation.type === "enqueueMessage") {
      const message =
        `the PostgreSQL store at ${this.path} lost its connection while queuing message ${operation.executionId} of agent "${operation.agentId}" `
        + `and the store closed before it could read back whether the message was queued (${messageOf(error)}): if it was, it runs in its turn under `
        + `that execution id — env.execution("${operation.executionId}") tells; do not send it again: ${messageOf(cause)}`;
      return new StoreError(message, { cause, executionId: operation.executionId, agentId: operation.agentId, details });
    }
    const message =
      `the PostgreSQL store at ${this.path} lost its connection during ${operation.type} and could not read back whether it committed `
      + `(${messageOf(error)}); recovery will read the row: ${messageOf(cause)}`;
    return new StoreError(message, { cause, details });
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
    return this.read(async () => {
      const row = await reads.getExecution(this.pool, this.path, checkId(executionId, "executionId"));
      if (row?.status === "suspended") this.rememberSuspended(row);
      return row;
    });
  }

  /** A suspended row read, kept for the approval commit that follows. */
  private rememberSuspended(row: ExecutionRow): void {
    // Copies: the caller may change the row it was given.
    setNewest(
      this.suspendedRows,
      row.executionId,
      { agentId: row.agentId, revision: row.revision, metadata: structuredClone(row.metadata), approvalRequest: structuredClone(row.approvalRequest) },
      suspendedRowsMax,
    );
  }

  listExecutions(filter: ExecutionListFilter = {}): Promise<ExecutionRow[]> {
    return this.read(() => {
      checkListFilter(filter, "listExecutions");
      checkLimit(filter.limit, executionListMax, "listExecutions limit");
      return reads.listExecutions(this.pool, this.path, filter);
    });
  }

  /** One page of executions, newest first, by cursor, filtered and
   * searched (docs/decisions/0082). */
  pageExecutions(query: ExecutionPageQuery): Promise<ExecutionPage> {
    return this.read(async () => {
      const checked = checkPageQuery(query, "pageExecutions");
      const { rows, more } = await pages.pageExecutions(this.pool, this.path, checked);
      return { rows, ...cursorsOf(checked, rows, more) };
    });
  }

  /** Executions per status and outcome over the whole store (or one agent's). */
  countExecutions(filter: { readonly agentId?: string } = {}): Promise<ExecutionCounts> {
    return this.read(() => pages.countExecutions(this.pool, checkCountsFilter(filter, "countExecutions")));
  }

  listSteps(executionId: string): Promise<StoredStep[]> {
    return this.read(() => this.stepReads.read(checkId(executionId, "executionId")));
  }

  readJournal(agentId: string, limit: number): Promise<JournalRecord[]> {
    return this.read(async () => {
      checkLimit(limit, journalReadMax, "readJournal limit");
      checkId(agentId, "agentId");
      // Served from memory only for an agent held under a lease now
      // (`postgres/journal-tails.ts`).
      const epoch = this.leaseOf(agentId)?.epoch;
      if (epoch === undefined) return reads.readJournal(this.pool, this.path, agentId, limit);
      const kept = this.journalTails.read(agentId, epoch, limit);
      if (kept !== undefined) return kept;
      const version = this.journalTails.version(agentId);
      const records = await this.journalReads.read(agentId, limit);
      if (this.leaseOf(agentId)?.epoch === epoch) this.journalTails.remember(agentId, epoch, limit, records, version);
      return records;
    });
  }

  unfinishedExecutions(): Promise<ExecutionRow[]> {
    return this.read(async () => this.rememberRows(await reads.unfinishedExecutions(this.pool, this.path)));
  }

  /** Unfinished rows just read are those recovery resumes: the first
   * barrier of each active one in a partition held here needs no read of
   * its row first (the statement checks the revision: a row that moved on
   * since is refused and read then, as after any stale knowledge). Rows of
   * other processes' partitions (the open scan reads every one) are not
   * kept: this process never writes them. */
  private rememberRows(rows: ExecutionRow[]): ExecutionRow[] {
    for (const row of rows) {
      if (
        row.status !== "active"
        || !this.leaseBook.holdsPartitionOf(row.agentId)
        || this.knownRows.has(row.executionId)
        || this.knownRows.size >= knownRowsMax
      )
        continue;
      this.knownRows.set(row.executionId, { agentId: row.agentId, revision: row.revision, status: row.status, metadata: row.metadata });
    }
    return rows;
  }

  /** One agent's messages waiting behind its busy conversation, in order (`queue.ts`). */
  queuedMessages(agentId: string): Promise<QueuedMessage[]> {
    return this.read(() => this.queueReads.read(checkId(agentId, "agentId")));
  }

  /** The head of every agent's queue (`queue.ts`). */
  queueHeads(): Promise<QueuedMessage[]> {
    return this.read(() => queue.queueHeads(this.pool));
  }

  queuedMessage(executionId: string): Promise<QueuedMessage | undefined> {
    return this.read(() => queue.queuedMessage(this.pool, checkId(executionId, "executionId")));
  }

  listQueuedMessages(filter: { readonly agentId?: string; readonly limit: number }): Promise<QueuedMessage[]> {
    return this.read(async () => {
      checkLimit(filter.limit, executionListMax, "listQueuedMessages limit");
      return queue.listQueuedMessages(this.pool, {
        limit: filter.limit,
        ...(filter.agentId === undefined ? {} : { agentId: checkId(filter.agentId, "agentId") }),
      });
    });
  }

  /** Queues a message behind its busy conversation (`queue.ts`). */
  enqueueMessage(operation: Omit<EnqueueMessageOperation, "type">): Promise<EnqueueMessageResult> {
    return this.submit({ type: "enqueueMessage", ...operation });
  }

  /** Cancels a queued message: its execution is written terminal. */
  cancelQueued(operation: Omit<CancelQueuedOperation, "type">): Promise<CancelQueuedResult> {
    return this.submit({ type: "cancelQueued", ...operation });
  }

  // -- keyed signals (docs/decisions/0077) ----------------------------------------

  /** @internal Finds the wait with the signal's key, or stores the signal. */
  sendSignal(sending: SignalSending): Promise<SignalSent> {
    return this.read(() => signals.sendSignal(this.pool, sending));
  }

  /** @internal The signal kept for this wait's key, now offered to it. */
  takeStoredSignal(key: string, approvalId: string, at: number): Promise<Json | undefined> {
    return this.read(() => signals.takeStoredSignal(this.pool, key, approvalId, at));
  }

  /** @internal Deletes the signal offered to the wait. */
  dropSignal(key: string, approvalId: string): Promise<void> {
    return this.read(() => signals.dropSignal(this.pool, key, approvalId));
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

  // -- leases (docs/decisions/0010) -------------------------------------------------------

  /** Takes the agent's lease if it is free, expired, or already this
   * process's (one statement; epoch + 1 on a takeover). From now on every
   * write of the agent is fenced, the lease is renewed every third of
   * `leaseMs`, and while it is not held this process keeps trying to take
   * it (then signals `leaseAcquired`). Resolves with the grant, or with the
   * live owner that refused it. `fromView` (the runtime's first use in a
   * process that files starts for their owner): while releases are heard,
   * a partition the last tick saw held by another live process, its lease
   * well ahead, is answered from that view with no statement
   * (docs/decisions/0068). */
  async acquireLease(agentId: string, options: { readonly fromView?: boolean } = {}): Promise<leases.LeaseAcquisition> {
    checkId(agentId, "agentId");
    this.assertOpen("acquire a lease");
    this.listenToInbox();
    try {
      // The view is taken at its word only while releases are heard (the
      // listener up): a partition given up is then known at once.
      return await this.leaseBook.acquire(agentId, options.fromView === true && this.inboxListener?.listening === true);
    } catch (error) {
      throw this.storeErrorOf(error);
    }
  }

  /** Gives up the agent's lease (a conversation let go while idle,
   * docs/decisions/0024-conversations.md): it is no longer renewed nor
   * retried, and its row expires now so another process may take it. */
  async releaseLease(agentId: string): Promise<void> {
    if (!this.leaseBook.forget(checkId(agentId, "agentId"))) return;
    this.journalTails.drop(agentId);
  }

  /** @internal Whether `acquireLease(agentId, { fromView: true })` would
   * answer from the tick's view now (tests wait for it). */
  answersFromView(agentId: string): boolean {
    return this.inboxListener?.listening === true && this.leaseBook.holderInView(agentId) !== undefined;
  }

  /** The agent's partition lapsed under this process's own lease and is
   * held by nobody: a start is not filed for it — this process would file
   * it to itself (docs/decisions/0058). */
  partitionLapsedHere(agentId: string): boolean {
    return this.leaseBook.lapsedHere(agentId);
  }

  /** The refusal the lease check gives a start of the agent now (not
   * renewed in time, lapsed here, or held elsewhere: the owner named);
   * undefined while it admits (`LeasingStore.admissionRefusal`). */
  admissionRefusal(agentId: string): PhronomyError | undefined {
    return this.leaseBook.admissionRefusal(agentId);
  }

  /** What a start of the agent waits for, bounded, before it is judged: a
   * lease race this process resolves itself — its renewal of the agent's
   * partition late, the partition lapsed here, or an on-demand take of it
   * in flight (docs/decisions/0055). Undefined when there is none. */
  partitionSettling(agentId: string): Promise<void> | undefined {
    return this.leaseBook.settling(agentId);
  }

  /** Whether the agent's partition is held here, renewed in time or not:
   * a start is filed for another process only when it is not
   * (docs/decisions/0031). */
  partitionHeld(agentId: string): boolean {
    return this.leaseBook.holdsPartitionOf(agentId);
  }

  /** Whether the agent's partition is still held here at this epoch (its
   * admission window may have lapsed until the next renewal): a claim of
   * that epoch is still this process's to finish (docs/decisions/0031). */
  partitionHeldAt(agentId: string, epoch: number): boolean {
    return this.leaseBook.heldAt(agentId, epoch);
  }

  /** The epoch the agent's partition is held at here (its admission
   * window may have lapsed until the next renewal), if it is held. */
  heldEpochOf(agentId: string): number | undefined {
    return this.leaseBook.heldEpoch(agentId);
  }

  /** The partition of an agent id (docs/decisions/0030). `balancing`
   * (false: `balance: false`) also says whether starts are filed for other
   * processes (docs/decisions/0031). */
  partitionOf(agentId: string): number {
    return this.leaseBook.partitionOf(agentId);
  }

  /** The partitions held now. */
  heldPartitions(): partitions.PartitionGrant[] {
    return this.leaseBook.heldPartitions();
  }

  /** The agent's partition is held here and its unfinished executions were
   * already read (at open, or by a takeover's recovery): a conversation
   * first used here needs no read of its own. */
  partitionScanned(agentId: string): boolean {
    // A conversation moved here: the move found nothing of it anywhere (decision 0101).
    return this.leaseBook.scanned(agentId) || this.leaseBook.movedHere(agentId);
  }

  /** Moved here by this process (`takeConversationHere`), its home held
   * since at the move's epoch (docs/decisions/0101). */
  movedHere(agentId: string): boolean {
    return this.leaseBook.movedHere(agentId);
  }

  /** When the agent's partition was taken at the epoch held now
   * (`performance.now()` once the take was answered: committed), held
   * ever since; undefined when not held. Rows read after that moment are
   * current: no other process can have written them since. */
  partitionHeldSince(agentId: string): number | undefined {
    return this.leaseBook.heldSince(agentId);
  }

  /** After the recovery of partitions taken in the background. */
  markPartitionsScanned(grants: readonly partitions.PartitionGrant[]): void {
    this.leaseBook.markScanned(grants);
  }

  /** The unfinished executions of the agents in these partitions. */
  /** @internal Waits due by `through`, a bounded batch, of the partitions held here (`postgres/due-waits.ts`, docs/decisions/0076). */
  dueWaits(through: number, limit: number, after?: DueCursor): Promise<DueWait[]> {
    return this.read(() => due.dueWaits(this.pool, through, limit, after, this.heldPartitionNumbers()));
  }

  /** @internal The next due time after `after`, of the partitions held here. */
  nextDueAt(after: number): Promise<number | undefined> {
    return this.read(() => due.nextDueAt(this.pool, after, this.heldPartitionNumbers()));
  }

  private heldPartitionNumbers(): number[] {
    return this.heldPartitions().map((grant) => grant.partition);
  }

  unfinishedExecutionsInPartitions(held: readonly number[]): Promise<ExecutionRow[]> {
    return this.read(async () => {
      // The homes first: a conversation homed in (or out of) these
      // partitions is then placed by its home (docs/decisions/0101).
      await this.learnHomes(held);
      return this.rememberRows(await reads.unfinishedExecutionsInPartitions(this.pool, this.path, held));
    });
  }

  /** Notes the homes that concern these partitions (moved into them, or
   * out of them). */
  private async learnHomes(held: readonly number[]): Promise<void> {
    if (held.length === 0) return;
    for (const [agentId, partition] of await homesOfPartitions(this.pool, held)) this.leaseBook.noteHome(agentId, partition);
  }

  /** Opened with `takeIdleHere` (a balancing process), and open. */
  takesIdleHere(): boolean {
    return this.takesIdle && this.closing === undefined;
  }

  /** Moves a conversation that has nothing anywhere (no row of any kind)
   * from its partition, held by another process, to a partition held
   * here, in one statement; then it belongs to that partition (its fence,
   * its recovery by whoever takes that partition over). `moved`: done;
   * `home`: it was moved before (to `partition`, noted here); `refused`:
   * it has rows, or nothing is held here live, or its partition's fence
   * stayed locked past `waitMs` (docs/decisions/0101). Undefined: nothing
   * is held here in its admission window. */
  takeConversationHere(agentId: string, waitMs = Math.floor(this.leaseMs / 6)): Promise<HomeOutcome | undefined> {
    const id = checkId(agentId, "agentId");
    return this.read(() => this.leaseBook.homeHere(id, waitMs));
  }

  /** The core's `TakeHere` carried out by the conversation's next
   * preparation (docs/decisions/0119): no statement now; the partition
   * it goes to is noted as its home, and the preparation moves it in its
   * own transaction or is refused as the move's refusal (`movedTo`,
   * `moveRefused`). False when a home is known already or nothing is held
   * here live (the start is then placed as it lives). */
  moveWithPreparation(agentId: string): boolean {
    return this.leaseBook.moveWithPreparation(checkId(agentId, "agentId"));
  }

  /** The partition the conversation belongs to as this process knows it
   * (its home when one is known, else `partition_of`). */
  conversationPartition(agentId: string): number {
    return this.leaseBook.partitionOf(agentId);
  }

  /** The agent's executions not terminal, read now (under its lease). */
  unfinishedExecutionsOf(agentId: string): Promise<ExecutionRow[]> {
    return this.read(async () => this.rememberRows(await reads.unfinishedExecutions(this.pool, this.path, [checkId(agentId, "agentId")])));
  }

  /** The lease this process holds on an agent now, if any. */
  leaseOf(agentId: string): leases.LeaseGrant | undefined {
    return this.leaseBook.leaseOf(agentId);
  }

  /** Who holds the agent's lease as the database says now (owner and
   * expiry), whether or not it is this process: for messages that name the
   * owner (`env.retry` refused elsewhere, docs/decisions/0026). */
  leaseHolder(agentId: string): Promise<{ readonly owner: string; readonly expiresAt: number } | undefined> {
    return this.read(async () => {
      const holder = await partitions.holderOf(this.pool, checkId(agentId, "agentId"));
      return holder === undefined ? undefined : { owner: holder.owner, expiresAt: holder.expiresAt };
    });
  }

  // -- approval inbox (docs/decisions/0011-approval-inbox.md) ------------------------------

  private inboxListener: InboxListener | undefined;
  /** Agents announced by a notification or the poll, not claimed since. */
  private readonly announcedAgents = new Set<string>();
  /** Whether agents have decisions to claim, asked in batches. */
  private readonly inboxProbes: InboxProbes;
  private readonly inboxChannel = (): string => inbox.inboxChannelOf(this.schema);

  /** Files a decision for the agent's owner to apply (this process does
   * not hold the agent); refused at once, nothing written, when the
   * execution is not suspended on that approval (`ApprovalMismatchError`)
   * or not in the store (`InvalidInputError`). */
  fileDecision(filing: Omit<inbox.DecisionFiling, "filedBy">): Promise<inbox.FiledDecision> {
    return this.read(() => inbox.fileDecision(this.pool, this.path, this.inboxChannel(), { ...filing, filedBy: this.leaseOwner }));
  }

  /** Claims the decisions waiting for an agent this process holds; none
   * when it does not hold the agent's lease. `startsOnly`: only filed
   * starts (a conversation not live here, docs/decisions/0031). */
  claimDecisions(agentId: string, startsOnly = false): Promise<inbox.ClaimedDecision[]> {
    const grant = this.leaseOf(checkId(agentId, "agentId"));
    if (grant === undefined) return Promise.resolve([]);
    // Announced (a notification, the poll): claim at once. Otherwise — an
    // execution suspended, the agent recovered — ask first, in a batch
    // (`postgres/inbox-probes.ts`): almost always nothing waits.
    const announced = this.announcedAgents.delete(agentId);
    return this.read(async () => {
      if (!announced && !(await this.inboxProbes.waitingFor(agentId, grant.epoch, startsOnly))) return [];
      return inbox.claimDecisions(this.pool, agentId, grant, startsOnly);
    });
  }

  /** Tells the runtime a decision may wait for `agentId`; its next claim
   * goes straight to the inbox. */
  private announceDecision(agentId: string): void {
    if (this.announcedAgents.size >= announcedAgentsMax) this.announcedAgents.clear();
    this.announcedAgents.add(agentId);
    this.signals.approvalFiled(agentId);
  }

  // -- schedules (docs/decisions/0078): one statement each, `postgres/schedules.ts` -------

  /** @internal */
  createSchedule(schedule: NewSchedule, perConversationMax: number): Promise<ScheduleRow | "full"> {
    return this.read(() => schedules.createSchedule(this.pool, schedule, perConversationMax));
  }
  /** @internal */
  getSchedule(scheduleId: string): Promise<ScheduleRow | undefined> {
    return this.read(() => schedules.getSchedule(this.pool, checkId(scheduleId, "scheduleId")));
  }
  /** @internal */
  listSchedules(filter: ScheduleListFilter): Promise<ScheduleRow[]> {
    return this.read(() => schedules.listSchedules(this.pool, filter, filter.limit ?? scheduleListMax));
  }
  /** @internal */
  cancelSchedule(scheduleId: string, at: number): Promise<ScheduleRow | undefined> {
    return this.read(() => schedules.cancelSchedule(this.pool, checkId(scheduleId, "scheduleId"), at));
  }
  /** @internal */
  nextScheduleDue(scope: ScheduleScope): Promise<number | undefined> {
    return this.read(() => schedules.nextScheduleDue(this.pool, scope));
  }
  /** @internal */
  dueSchedules(scope: ScheduleScope, now: number, limit: number): Promise<ScheduleRow[]> {
    return this.read(() => schedules.dueSchedules(this.pool, scope, now, limit));
  }
  /** @internal */
  claimSchedules(claims: readonly ScheduleClaim[]): Promise<ScheduleRow[]> {
    return this.read(async () => {
      const at = Date.now();
      const claimed = await schedules.claimSchedules(this.pool, claims, at);
      // A run now claimed for another process is due at once: tell the processes that fire (docs/decisions/0097).
      const dueNow = claimed.find((row) => row.dueAt !== undefined && row.dueAt <= at);
      if (dueNow !== undefined) {
        // The payload names one schedule (for the log; a notification with none is not delivered).
        await this.pool.query("SELECT pg_notify($1, $2)", [inbox.schedulesChannelOf(this.schema), dueNow.scheduleId]).catch(() => undefined);
      }
      return claimed;
    });
  }
  /** @internal */
  settleScheduleFiring(settlement: ScheduleSettlement): Promise<boolean> {
    return this.read(() => schedules.settleScheduleFiring(this.pool, settlement));
  }

  /** Files a start for the process holding its conversation's partition
   * (docs/decisions/0031); an execution id filed or run already is
   * answered with what is there, nothing written. Announced on the start
   * channel (docs/decisions/0047). */
  fileStart(filing: Omit<StartFiling, "filedBy">): Promise<FiledStartAnswer> {
    return this.read(() => inbox.fileStart(this.pool, inbox.startChannelOf(this.schema), { ...filing, filedBy: this.leaseOwner }));
  }

  /** Cancels a start still filed, before any owner claimed it (`env.cancel`). */
  cancelFiledStart(executionId: string, error: string, at: number): ReturnType<typeof inbox.cancelFiledStart> {
    return this.read(() => inbox.cancelFiledStart(this.pool, this.schema, this.leaseOwner, checkId(executionId, "executionId"), error, at));
  }

  /** How filed (or followed) starts are doing, with their new steps. */
  readStarts(follows: readonly { readonly executionId: string; readonly afterSeq: number }[]): Promise<inbox.StartProgress[]> {
    return this.read(() => inbox.readStarts(this.pool, this.path, follows));
  }

  /** Marks a claimed decision applied or refused; false when the claim is
   * no longer this process's (its lease was lost or taken over). The
   * settlements asked for together go as one statement (docs/decisions/0047). */
  settleDecision(claim: inbox.ClaimedDecision, settlement: inbox.DecisionSettlement): Promise<boolean> {
    return this.read(() => this.settlements.submit({ claim, settlement }));
  }

  private readonly settlements = new StatementBatch<{ readonly claim: inbox.ClaimedDecision; readonly settlement: inbox.DecisionSettlement }, boolean>(
    async (items) => {
      const settled = await inbox.settleDecisions(this.pool, this.schema, this.leaseOwner, items, Date.now());
      return items.map(({ claim }) => settled.has(claim.decisionId));
    },
    inbox.settleBatchMax,
  );

  /** Claims, in one statement, the filed starts of every partition held
   * here (docs/decisions/0047); each write of their executions is then
   * told to their filer. */
  claimFiledStarts(): Promise<inbox.ClaimedDecision[]> {
    return this.read(async () => {
      const claims = await inbox.claimFiledStarts(this.pool, this.leaseOwner, this.leaseBook.heldPartitions());
      for (const claim of claims) this.rememberFiler(claim.executionId, inbox.filerChannelOf(this.schema, claim.filedBy));
      return claims;
    });
  }

  /** Tells a filer its start's execution moved: the notifications of
   * writes committed meanwhile leave together, in one transaction that
   * does not wait for its WAL flush (`inbox.notifyUnflushed`,
   * docs/decisions/0068). Not sent: the filer's poll finds it. */
  private tellFiler(channel: string, executionId: string): void {
    void this.filerNotifications.submit({ channel, payload: executionId }).catch(() => undefined);
  }

  private readonly filerNotifications = new StatementBatch<{ readonly channel: string; readonly payload: string }, void>(async (items) => {
    await inbox.notifyUnflushed(this.pool, items);
    return items.map(() => undefined);
  }, inbox.notifyBatchMax);

  /** Filed starts claimed here → their filer's channel, oldest first; the
   * oldest is forgotten past `filerChannelsMax` (its filer then follows it
   * by its slower poll). */
  private readonly filerChannels = new Map<string, string>();

  private rememberFiler(executionId: string, channel: string): void {
    setNewest(this.filerChannels, executionId, channel, filerChannelsMax);
  }

  /** Whether this store's filer hears its starts move (its listener is up):
   * when not, the filer polls. */
  get hearsFiledStarts(): boolean {
    return this.inboxListener?.listening === true;
  }

  /** Where each decision is, with its execution row as it is now. */
  readDecisions(decisionIds: readonly string[]): Promise<inbox.DecisionProgress[]> {
    return this.read(() => inbox.readDecisions(this.pool, this.path, decisionIds));
  }

  /** The decision recorded for an approval (its `approval_decided` step). */
  approvalDecided(executionId: string, approvalId: string): Promise<inbox.ApprovalDecided | undefined> {
    return this.read(() => inbox.approvalDecided(this.pool, checkId(executionId, "executionId"), approvalId));
  }

  /** The runtime listens. A balancing owner LISTENs on the inbox channel
   * now: starts are filed for it before it uses any conversation
   * (docs/decisions/0031); one that takes no share (`balance: false`)
   * from its first lease on. The signals: `startsFiled` when a start filed
   * for a partition held here may wait (a notification, the lease tick, a
   * reconnection: claim them all, `claimFiledStarts`); `filedStartMoved`
   * when a start filed here moved (undefined after the listener
   * reconnected: anything may have moved); `approvalFiled` for a held
   * agent a decision may wait for (a notification, the tick's poll). */
  listen(signals: StoreSignals): void {
    this.signals = signals;
    if (this.balancing) this.listenToInbox();
  }

  /** @internal The signals the store sends now (`listen`'s): a test
   * wraps one by listening again with the others kept. */
  get listening(): StoreSignals {
    return this.signals;
  }

  /** LISTENs on the inbox channel without a runtime (tests of the store). */
  listenForDecisions(): void {
    this.listenToInbox();
  }

  /** LISTENs on the inbox channel from the first lease asked for on. */
  private listenToInbox(): void {
    if (this.closing !== undefined) return;
    const { connectionString, options, types, application_name, connectionTimeoutMillis } = this.pool.options;
    const startChannel = inbox.startChannelOf(this.schema);
    const filerChannel = inbox.filerChannelOf(this.schema, this.leaseOwner);
    const releasedChannel = inbox.releasedChannelOf(this.schema);
    const schedulesChannel = inbox.schedulesChannelOf(this.schema);
    // The inbox channel last: its LISTEN is the connection's last query.
    this.inboxListener ??= new InboxListener(
      { connectionString, options, types, application_name, connectionTimeoutMillis },
      [releasedChannel, filerChannel, startChannel, schedulesChannel, this.inboxChannel()],
      (channel, payload) => {
        if (channel === releasedChannel) return this.leaseBook.heardReleased(payload.split(",").map(Number));
        if (channel === schedulesChannel) return this.signals.schedulesDue();
        if (channel === filerChannel) return this.signals.filedStartMoved(payload);
        startTiming.agentNotified(payload);
        if (this.leaseOf(payload) === undefined) return;
        if (channel === startChannel) this.signals.startsFiled();
        else this.announceDecision(payload);
      },
      () => {
        // Releases told while it was down went unheard.
        this.leaseBook.deafUntilNow();
        this.signals.filedStartMoved(undefined);
        void this.pollInbox();
      },
    );
    this.inboxListener.start();
  }

  /** Tells the owner about every held agent with a decision to claim
   * (notifications can be lost while the listener reconnects). */
  private async pollInbox(): Promise<void> {
    if (this.closing !== undefined) return;
    this.signals.startsFiled();
    if (this.signals === quietSignals) return;
    const held = this.leaseBook.heldPartitions();
    try {
      const began = startTiming.now();
      const agents = await inbox.agentsWithDecisions(this.pool, held);
      startTiming.sample("owner tick poll ms", startTiming.now() - began);
      for (const agentId of agents) this.announceDecision(agentId);
    } catch {
      // The database is unreachable: the next tick polls again.
    }
  }

  // -- lifecycle --------------------------------------------------------------------------

  /** Waits for every accepted operation, then ends the pool. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
      const held = await this.leaseBook.stop();
      await this.inboxListener?.close();
      await partitions.release(this.pool, this.leaseOwner, held, inbox.releasedChannelOf(this.schema)).catch(() => undefined);
      await partitions.leave(this.pool, this.leaseOwner).catch(() => undefined);
      await this.instance.release();
      await this.pool.end();
    })();
    return this.closing;
  }
}

function checkOptions(options: PostgresStoreOptions): void {
  for (const key of Object.keys(options)) {
    if (!optionNames.has(key)) throw new InvalidInputError(`unknown PostgresStore option "${key}"; known options: ${[...optionNames].join(", ")}`);
  }
  if (options.leaseMs !== undefined) leases.checkLeaseMs(options.leaseMs, "leaseMs");
  if (options.instanceId !== undefined) checkInstanceId(options.instanceId, "instanceId");
  if (options.partitions !== undefined) partitions.checkPartitionCount(options.partitions, "partitions");
  if (options.balance !== undefined && typeof options.balance !== "boolean")
    throw new InvalidInputError(`balance must be true or false, got ${JSON.stringify(options.balance)}`);
  if (options.takeIdleHere !== undefined && typeof options.takeIdleHere !== "boolean")
    throw new InvalidInputError(`takeIdleHere must be true or false, got ${JSON.stringify(options.takeIdleHere)}`);
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

/** The schema's partition count, the schema created or migrated first
 * when it is not at this version. A schema already current — every open
 * but the first of a deployment — costs one read, without the migration
 * lock or a transaction (docs/decisions/0049); a migration committing
 * meanwhile is not seen by it, so the migration path runs and waits. */
async function openSchema(pool: pg.Pool, schema: string, where: string, partitionCount: number): Promise<number> {
  const current = await pool
    .query<{ application: string; version: number; partition_count: number }>(
      "SELECT application, version, (SELECT partition_count FROM partition_settings) AS partition_count FROM store_version",
    )
    .then(
      ({ rows }) =>
        rows.length === 1 && rows[0]!.application === "phronomy" && Number(rows[0]!.version) === schemaVersion ? Number(rows[0]!.partition_count) : undefined,
      (error: unknown) => {
        // The server's answer (no such table, no such schema): not current.
        // Anything else (the database unreachable) is the open's failure.
        if (/^[0-9A-Z]{5}$/.test(String((error as { code?: unknown } | null)?.code))) return undefined;
        throw error;
      },
    );
  if (current !== undefined) return current;
  const client = await pool.connect();
  try {
    await migrate(client, schema, where, { partitionCount });
    return await partitions.readPartitionCount(client);
  } finally {
    client.release();
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
