// The simulated store of the whole-host simulation (docs/decisions/0063):
// the durable state that several simulated processes share, and one store
// handle per process incarnation over it.
//
// * Durable rows live in ONE in-memory SQLite database written by the real
//   operation bodies (`commitGroup`, as test/fuzz/simulated-store.ts does),
//   so compare-and-set, the queue's trigger and pruning behave as the real
//   stores'.
// * What PostgreSQL has and SQLite lacks is kept beside it, on the
//   simulated clock (`Date.now`, faked): per-agent leases with an owner, an
//   epoch and an expiry, renewed every third of the lease by each holder's
//   tick; admissions refused past 5/6 of a lease not renewed; and FENCING:
//   a write of an agent carries the epoch this handle holds (or last held)
//   and is refused — nothing written — when the lease row no longer names
//   this handle at that epoch, exactly as `postgres/statements.ts` refuses
//   it (a preparation and an enqueue also need the lease unexpired).
// * Writes are held pending until the world settles them with a fate
//   (committed, failed with nothing written, outcome unknown committed or
//   not); `autoCommit` settles each in a microtask (the conformance suite).
// * A handle is killed (kill -9): every call it has in flight, and every
//   later one, never settles; its lease tick stops; its leases expire.
// * Connection loss: while `disconnectedUntil` lies ahead, reads and lease
//   calls fail with `StoreError` and writes fail with nothing written.
//
// * The approval inbox (docs/decisions/0086) as PostgreSQL keeps it: a
//   decision filed for a conversation held elsewhere is claimed only by the
//   lease's holder, at its epoch (a claim of an older holder is taken
//   again), and settled only under that claim; its holder is told at once
//   (PostgreSQL's notification) and again on each lease tick (its poll).
//   A child's end filed by its terminal commit takes the same way. The
//   due sweep's reads and keyed signals run on the shared database too,
//   the due reads limited to conversations held here (a partition's).
//
// * Schedules (docs/decisions/0097): the SQLite bodies on the shared
//   database, each write with a fate the world draws; a claim due at once
//   is told to every live handle (PostgreSQL's notification). A process
//   fires only the schedules of conversations not held live elsewhere —
//   PostgreSQL would file such a start for the holder — and the holder is
//   told when one is due.
//
// * The start inbox (docs/decisions/0031; cluster-start-inbox.ts), when the
//   cluster is made with `startInbox` (drawn per seed by sim.test.ts): a start
//   at a process not holding its conversation is filed for the holder, who
//   claims it at its live epoch (told at once, and on each lease tick) and
//   settles it under that claim; the filer reads it back. A conversation
//   let go of while a start waits for it keeps its lease, and one whose
//   lease nobody holds live is taken by the next live tick, as PostgreSQL's
//   partitions are always held. Without it, a start at a process not
//   holding its conversation is refused there (`AGENT_BUSY`, lease_not_held).
// * In every world, as PostgreSQL's partitions (decision 0030) and
//   statements: a lease taken again once expired, by its own holder too, is
//   taken at epoch + 1 (the world counts the lapse as that holder's fault),
//   and a write carries the epoch held when it was sent.
// * Homes (`takeIdleHere`, docs/decisions/0101, 0112; cluster-homes.ts), for
//   handles made with the option and the start inbox: `takeConversationHere`
//   is PostgreSQL's `home_conversation`, one statement with a fate the world
//   draws — a conversation held live by another process that has nothing
//   anywhere and no home gets its lease at the next epoch (a conversation's
//   lease is its partition here) and a home row; `home` when it has one;
//   `refused` otherwise. The mover's retake is a move (`movedHere`: the
//   `RecoveryCause.Moved` fact); the former holder's preparation is fenced
//   and refused naming the home (`movedTo`) once, and the core places the
//   start again; a home goes with its conversation's last row at the prune.
//
// Not simulated (PostgreSQL has them; the runtime works without them): the
// partition book (a lease per conversation stands for its partition), a
// move carried by the preparation (decision 0119), balancing beyond the
// start inbox's adoption.

import { ExecutionRehydrationRequiredError, StoreError, type PhronomyError } from "../../host/errors.js";
import { quietSignals, type StoreCapabilities, type StoreSignals } from "../../host/store/capabilities.js";
import { checkId } from "../../host/store/check-id.js";
import { checkOperation } from "../../host/store/check-operation.js";
import type { OffloadOperation } from "../../host/store/offload-operation.js";
import { admitFraction, agentOwnedElsewhere, type LeaseAcquisition, type LeaseGrant } from "../../host/store/postgres/leases.js";
import { checkPruneOperation, type PruneCounts, type PruneExecutionsOperation } from "../../host/store/prune.js";
import type { CancelQueuedOperation, CancelQueuedResult, EnqueueMessageOperation, EnqueueMessageResult } from "../../host/store/queue.js";
import type { AgentRow, ExecutionRow, PurgeAgentResult, StoreOperation, StoreResult } from "../../host/store/records.js";
import type { DecisionFiling, FiledDecision } from "../../host/store/inbox-records.js";
import * as inbox from "../../host/store/sqlite/inbox.js";
import * as due from "../../host/store/sqlite/due-waits.js";
import * as signals from "../../host/store/sqlite/signals.js";
import * as schedules from "../../host/store/sqlite/schedules.js";
import type { NewSchedule, ScheduleClaim, ScheduleRow, ScheduleScope, ScheduleSettlement } from "../../host/store/schedule-records.js";
import { claimBatchMax } from "../../host/store/inbox-records.js";
import { dueWaitsBatchMax, type DueCursor, type DueWait } from "../../host/store/due-waits.js";
import type { ApprovalDecided, ClaimedDecision, DecisionProgress, DecisionSettlement } from "../../host/store/inbox-records.js";
import type { SignalSending, SignalSent } from "../../host/store/signal-records.js";
import type { Json } from "../../host/store/records.js";
import { openSqlite, type SqliteConnection } from "../../host/store/sqlite/driver.js";
import { SqliteReadableStore } from "../../host/store/sqlite/readable-store.js";
import * as reads from "../../host/store/sqlite/reads.js";
import { migrations } from "../../host/store/sqlite/schema.js";
import { commitGroup } from "../../host/store/sqlite/transaction.js";
import type { FiledStartAnswer, StartFiling, StartProgress } from "../../host/store/start-filing.js";
import type { ExecutionStore } from "../../host/store/store.js";
import * as starts from "./cluster-start-inbox.js";
import * as homes from "./cluster-homes.js";

/** How a pending write settles. */
export type WriteFate = "commit" | "failed" | "unknown_committed" | "unknown_not_committed";

/** The lease of one agent as the database holds it. */
export interface LeaseRow {
  readonly owner: string;
  readonly epoch: number;
  readonly expiresAt: number;
}

/** A write that landed, for the world's fencing invariant. */
export interface CommittedWrite {
  readonly owner: string;
  readonly type: string;
  readonly agentId: string | undefined;
  readonly executionId: string | undefined;
  /** The lease row when it committed. */
  readonly lease: LeaseRow | undefined;
  /** The epoch this handle held (or last held) the agent at. */
  readonly fenceEpoch: number | undefined;
}

export interface PendingWrite {
  readonly number: number;
  readonly handle: ClusterStore;
  readonly operation: OffloadOperation;
  settle(fate: WriteFate): void;
}

/** PostgreSQL reads an enqueue's outcome back until the database answers
 * (docs/decisions/0058): its caller hears what happened, never "unknown". */
const enqueueFates: Readonly<Record<WriteFate, WriteFate>> = {
  commit: "commit",
  failed: "failed",
  unknown_committed: "commit",
  unknown_not_committed: "failed",
};

/** Writes whose lease must be live (an admission, PostgreSQL's `live`
 * fence); the others need owner and epoch only. */
const liveFenced = new Set(["prepareExecution", "enqueueMessage"]);
/** Writes on an execution's row, fenced by its agent's lease. */
const rowFenced = new Set(["providerBarrier", "toolBarrier", "terminalCommit", "approvalCommit", "reopenExecution"]);
/** The epoch a fence carries for an agent asked for and never held: no
 * lease row has it. */
const neverHeldEpoch = 0;

/** The durable state several processes share: rows and leases. */
export class Cluster {
  readonly connection: SqliteConnection;
  readonly leases = new Map<string, LeaseRow>();
  readonly pending: PendingWrite[] = [];
  readonly committed: CommittedWrite[] = [];
  /** Called when a simulated fault fails a call of `owner` (a lost connection). */
  onFault: ((owner: string) => void) | undefined;
  /** How a schedule write goes (docs/decisions/0097): drawn by the world
   * while faults happen; committed when unset. */
  scheduleFate: (() => WriteFate) | undefined;
  /** Called when a conversation is moved to the process its start landed at (`takeIdleHere`). */
  onMove: ((agentId: string, former: string | undefined, mover: string) => void) | undefined;
  /** Called when a conversation moved here is reported retaken as moved (`RecoveryCause.Moved`). */
  onMovedRetake: ((agentId: string, owner: string) => void) | undefined;
  /** Called when a preparation is refused naming the conversation's home (`movedTo`). */
  onMovedRefusal: ((agentId: string, owner: string) => void) | undefined;
  /** Called when a lease moves from one owner to another (a takeover). */
  onTakeover: ((agentId: string, former: string, taker: string) => void) | undefined;
  /** Called when a holder takes its own lease again once it lapsed: at the
   * next epoch, so its writes still on their way at the old one are fenced. */
  onLapsed: ((agentId: string, owner: string, epoch: number) => void) | undefined;
  /** Queued messages prepared ahead of ones queued before them, for the world to judge. */
  readonly queueOrderViolations: { readonly owner: string; readonly executionId: string; readonly agentId: string; readonly passed: readonly string[] }[] = [];
  private submitted = 0;
  /** Starts made at a process not holding their conversation are filed
   * for its holder (PostgreSQL's start inbox, docs/decisions/0031) rather
   * than refused there: set before the handles are made. */
  startInbox = false;
  /** Writes fenced by the epoch held when they commit, not when they were
   * sent: a store of one's own may check the lease inside the write's
   * transaction (`leases` only says every write is fenced by the epoch).
   * PostgreSQL carries the epoch sent, so the simulation's worlds never set
   * it; a test of the host's order under the looser fence does. */
  fencesAtCommit = false;

  /** `reused`: a database of an earlier cluster, emptied here (a seed of
   * the simulation costs less without its migrations); else a new one. */
  constructor(
    readonly leaseMs: number,
    private readonly autoCommit = false,
    reused?: SqliteConnection,
  ) {
    this.connection = reused ?? openSqlite(":memory:");
    if (reused === undefined) for (const migrate of migrations) migrate(this.connection);
    else emptyDatabase(reused);
    starts.createStartInbox(this.connection);
    homes.createHomes(this.connection);
  }

  /** Every handle made, for the inbox's notifications. */
  private readonly handles: ClusterStore[] = [];

  /** A store handle for one process incarnation named `owner`;
   * `takeIdleHere`: PostgreSQL's option (docs/decisions/0101), with the start inbox. */
  storeFor(owner: string, takeIdleHere = false): ClusterStore {
    const handle = new ClusterStore(this, owner, takeIdleHere && this.startInbox);
    this.handles.push(handle);
    return handle;
  }

  /** PostgreSQL's notification after a claim due at once (a run now asked
   * of the processes that fire schedules): each live handle hears it. */
  announceSchedulesDue(): void {
    for (const handle of this.handles) if (!handle.killed) queueMicrotask(() => handle.tellSchedulesDue());
  }

  /** The holder of a conversation whose schedule is due hears of it (a
   * start filed for it, on PostgreSQL), once per owner and instant. */
  announceSchedulesDueTo(owner: string): void {
    const key = `${owner}@${Date.now()}`;
    if (this.schedulesAnnounced === key) return;
    this.schedulesAnnounced = key;
    const handle = this.handles.find((candidate) => candidate.owner === owner && !candidate.killed);
    if (handle !== undefined) queueMicrotask(() => handle.tellSchedulesDue());
  }

  private schedulesAnnounced = "";

  /** PostgreSQL's notification after a start filed: the holder of the
   * agent's lease hears that starts wait, a moment later. */
  announceStartFiled(agentId: string): void {
    const holder = this.leases.get(agentId)?.owner;
    const handle = this.handles.find((candidate) => candidate.owner === holder && !candidate.killed);
    if (handle !== undefined) queueMicrotask(() => handle.tellStartsFiled());
  }

  /** PostgreSQL's notification after a commit that filed a decision: the
   * holder of the agent's lease hears of it, a moment later. */
  announceFiled(agentId: string): void {
    const holder = this.leases.get(agentId)?.owner;
    const handle = this.handles.find((candidate) => candidate.owner === holder && !candidate.killed);
    if (handle !== undefined) queueMicrotask(() => handle.tellFiled(agentId));
  }

  execution(executionId: string): ExecutionRow | undefined {
    return reads.getExecution(this.connection, executionId);
  }

  unfinished(): ExecutionRow[] {
    return reads.unfinishedExecutions(this.connection);
  }

  /** Holds a write until the world (or the microtask of `autoCommit`) settles it. */
  hold(handle: ClusterStore, operation: OffloadOperation, resolve: (value: unknown) => void, reject: (error: Error) => void): void {
    this.submitted += 1;
    const write: PendingWrite = {
      number: this.submitted,
      handle,
      operation,
      settle: (fate) => {
        const index = this.pending.indexOf(write);
        if (index < 0) throw new Error(`simulated write #${write.number} settled twice`);
        this.pending.splice(index, 1);
        if (handle.killed) return;
        handle.settle(operation, fate, write.number, resolve, reject);
      },
    };
    this.pending.push(write);
    if (this.autoCommit) queueMicrotask(() => write.settle("commit"));
  }

  /** For each queued message, the writes submitted when its enqueue
   * committed: a preparation submitted after that must not pass it. */
  private readonly enqueuedAt = new Map<string, { readonly at: number; readonly front: boolean }>();

  /** A queued message is prepared only as its queue's head: the queue
   * runs in order. A message put at the front by an interrupt after the
   * one prepared was queued may be passed: the runtime may have taken that
   * one off the queue already (the interrupt then cancels it once prepared). */
  checkQueueOrder(operation: OffloadOperation, owner: string, submittedAs: number): void {
    if (operation.type !== "prepareExecution") return;
    const queued = this.connection
      .prepare("SELECT execution_id FROM queued_messages WHERE agent_id = ? ORDER BY seq")
      .all(operation.agentId)
      .map((row) => String(row["execution_id"]));
    const position = queued.indexOf(operation.executionId);
    const own = this.enqueuedAt.get(operation.executionId)?.at ?? 0;
    const passed = queued.slice(0, Math.max(0, position)).filter((executionId) => {
      const ahead = this.enqueuedAt.get(executionId);
      return ahead !== undefined && ahead.at < submittedAs && !(ahead.front && ahead.at > own);
    });
    if (passed.length > 0) this.queueOrderViolations.push({ owner, executionId: operation.executionId, agentId: operation.agentId, passed });
  }

  /** Notes when an enqueue committed (called after it did). */
  noteEnqueued(operation: OffloadOperation): void {
    if (operation.type === "enqueueMessage") this.enqueuedAt.set(operation.executionId, { at: this.submitted, front: operation.front });
  }

  close(): void {
    this.connection.close();
  }
}

/** One process incarnation's store: an `ExecutionStore` with a queue,
 * pruning and leases (`LeasingStore`), over the cluster's shared state. */
export class ClusterStore extends SqliteReadableStore implements ExecutionStore {
  readonly pruneBatchExecutions = 32;
  /** Writes are settled one at a time, in any order the world picks: not in order. */
  readonly queueWritesInOrder = false;
  killed = false;
  /** Connection loss: reads, lease calls and new writes fail until then. */
  disconnectedUntil = 0;
  /** Lease renewals stop until then (a stalled process, a slow network). */
  stalledUntil = 0;
  /** Leases by agent (no partitions), the approval inbox, the queue,
   * pruning, keyed signals and due waits; the start inbox when the
   * cluster has it (`Cluster.startInbox`). */
  readonly capabilities: StoreCapabilities;
  /** Starts are filed for the processes holding their conversations (`Cluster.startInbox`). */
  readonly balancing = true;
  private static readonly baseCapabilities: StoreCapabilities = {
    leases: true,
    partitions: false,
    approvalInbox: true,
    startInbox: false,
    queue: true,
    queueReads: true,
    pruning: true,
    pages: false,
    signals: true,
    dueWaits: true,
    schedules: true,
  };
  /** Where `leaseAcquired` goes (the runtime's, once it listens). */
  private signals: StoreSignals = quietSignals;
  private readonly asked = new Set<string>();
  private readonly grants = new Map<string, { grant: LeaseGrant; admitUntil: number }>();
  private readonly lastEpoch = new Map<string, number>();
  private closed = false;
  private readonly tick: ReturnType<typeof setInterval>;

  constructor(
    readonly cluster: Cluster,
    readonly owner: string,
    private readonly takesIdle = false,
  ) {
    super(cluster.connection.path, cluster.connection);
    this.capabilities = { ...ClusterStore.baseCapabilities, startInbox: cluster.startInbox };
    this.tick = setInterval(() => this.renew(), Math.floor(cluster.leaseMs / 3));
  }

  // -- faults ---------------------------------------------------------------------------------

  /** kill -9: nothing this handle does reaches the world any more. */
  kill(): void {
    this.killed = true;
    clearInterval(this.tick);
  }

  private get disconnected(): boolean {
    return Date.now() < this.disconnectedUntil;
  }

  private never<T>(): Promise<T> {
    return new Promise<T>(() => undefined);
  }

  protected override closedMessage(): string | undefined {
    if (this.closed) return `the simulated store ${this.path} is closed`;
    return this.disconnected ? `simulated: ${this.owner} lost its connection to the store` : undefined;
  }

  protected override read<T>(body: () => T): Promise<T> {
    if (this.killed) return this.never();
    if (this.disconnected) this.cluster.onFault?.(this.owner);
    return super.read(body);
  }

  // -- writes ---------------------------------------------------------------------------------

  run<O extends StoreOperation>(operation: O): Promise<StoreResult<O>> {
    return this.submit(operation) as Promise<StoreResult<O>>;
  }

  ensureAgent(agentId: string, at: number): Promise<AgentRow> {
    return this.submit({ type: "ensureAgent", agentId, at }) as Promise<AgentRow>;
  }

  closeAgent(agentId: string, at: number): Promise<AgentRow> {
    return this.submit({ type: "closeAgent", agentId, at }) as Promise<AgentRow>;
  }

  purgeAgent(agentId: string): Promise<PurgeAgentResult> {
    return this.submit({ type: "purgeAgent", agentId }) as Promise<PurgeAgentResult>;
  }

  pruneExecutions(operation: PruneExecutionsOperation): Promise<PruneCounts> {
    checkPruneOperation(operation);
    return this.hold(operation) as Promise<PruneCounts>;
  }

  enqueueMessage(operation: Omit<EnqueueMessageOperation, "type">): Promise<EnqueueMessageResult> {
    return this.submit({ type: "enqueueMessage", ...operation }) as Promise<EnqueueMessageResult>;
  }

  cancelQueued(operation: Omit<CancelQueuedOperation, "type">): Promise<CancelQueuedResult> {
    return this.submit({ type: "cancelQueued", ...operation }) as Promise<CancelQueuedResult>;
  }

  private submit(operation: OffloadOperation): Promise<unknown> {
    checkOperation(operation as StoreOperation);
    if (operation.type === "prepareExecution") {
      // Refused before any statement, as PostgreSQL's admission check.
      const refusal = this.admissionRefusal(operation.agentId);
      if (refusal !== undefined && !this.killed && !this.closed) return Promise.resolve({ outcome: "not_established", error: refusal.toRecord() });
    }
    return this.hold(operation);
  }

  /** The fence each write in flight was sent with (unless the cluster
   * `fencesAtCommit`). */
  private readonly sentFences = new WeakMap<OffloadOperation, { epoch: number } | undefined>();

  private hold(operation: OffloadOperation): Promise<unknown> {
    if (this.closed) throw new StoreError(`the simulated store ${this.path} is closed; open it again to write`);
    if (this.killed) return this.never();
    if (this.disconnected) {
      this.cluster.onFault?.(this.owner);
      return Promise.reject(
        new StoreError(`simulated: ${this.owner} could not get a connection for ${operation.type} (nothing was written)`, {
          details: { outcome: "not_committed" },
        }),
      );
    }
    // As PostgreSQL's statement, the write carries the epoch held when it
    // is sent (a lease taken again meanwhile, at a later epoch, fences it).
    const agentId = this.agentOf(operation);
    if (!this.cluster.fencesAtCommit) this.sentFences.set(operation, agentId === undefined ? undefined : this.fenceOf(agentId, operation));
    return new Promise((resolve, reject) => this.cluster.hold(this, operation, resolve, reject));
  }

  /** Carries out a pending write's fate (called by the cluster). */
  settle(operation: OffloadOperation, given: WriteFate, submittedAs: number, resolve: (value: unknown) => void, reject: (error: Error) => void): void {
    const fate = operation.type === "enqueueMessage" ? enqueueFates[given] : given;
    if (fate === "failed") {
      return reject(new StoreError(`simulated: the transaction of ${operation.type} failed (nothing was written)`, { details: { outcome: "not_committed" } }));
    }
    const settlement = fate === "unknown_not_committed" ? undefined : this.commit(operation, submittedAs);
    if (fate === "commit") return settlement!.ok ? resolve(settlement!.value) : reject(settlement!.error);
    reject(
      new StoreError(`simulated: the connection was lost during ${operation.type} and its outcome could not be read back; recovery will read the row`, {
        details: { outcome: "unknown" },
      }),
    );
  }

  /** A write in flight when its process was killed that reached the
   * database: committed (fenced as ever), its answer lost. */
  commitOnCrash(write: PendingWrite): void {
    this.commit(write.operation, write.number);
  }

  /** Runs the write now, fenced: one transaction of the shared database. */
  private commit(operation: OffloadOperation, submittedAs: number): { ok: true; value: unknown } | { ok: false; error: PhronomyError } {
    const agentId = this.agentOf(operation);
    const fence = this.sentFences.has(operation) ? this.sentFences.get(operation) : agentId === undefined ? undefined : this.fenceOf(agentId, operation);
    if (fence !== undefined && !this.fenceHolds(agentId!, fence.epoch, liveFenced.has(operation.type))) {
      const refusal = this.fenceRefusal(operation, agentId!, fence.epoch);
      if (refusal !== undefined) return refusal;
    }
    this.cluster.checkQueueOrder(operation, this.owner, submittedAs);
    const settlement = commitGroup(this.cluster.connection, [operation])[0]!;
    // A home goes with its conversation's last row (docs/decisions/0112), in the prune's transaction.
    if (settlement.ok && operation.type === "pruneExecutions") homes.pruneHomes(this.cluster.connection, operation.finishedBefore);
    if (settlement.ok) {
      this.cluster.noteEnqueued(operation);
      for (const filedFor of (settlement.value as { inboxFiledFor?: readonly string[] } | undefined)?.inboxFiledFor ?? []) this.cluster.announceFiled(filedFor);
      this.cluster.committed.push({
        owner: this.owner,
        type: operation.type,
        agentId,
        executionId: "executionId" in operation ? operation.executionId : undefined,
        lease: agentId === undefined ? undefined : this.cluster.leases.get(agentId),
        fenceEpoch: fence?.epoch,
      });
    }
    return settlement;
  }

  /** The agent a write belongs to (its row's, for a compare-and-set). */
  private agentOf(operation: OffloadOperation): string | undefined {
    if ("agentId" in operation && typeof operation.agentId === "string") return operation.agentId;
    if (!("executionId" in operation)) return undefined;
    const executionId = operation.executionId;
    return (
      reads.getExecution(this.cluster.connection, executionId)?.agentId
      ?? (this.cluster.connection.prepare("SELECT agent_id FROM queued_messages WHERE execution_id = ?").get(executionId)?.["agent_id"] as string | undefined)
    );
  }

  /** The fence a write carries: none for the agent lifecycle and pruning,
   * nor for an agent never asked for; a cancel of a queued message only
   * while held here (PostgreSQL's `cancelQueued`). */
  private fenceOf(agentId: string, operation: OffloadOperation): { epoch: number } | undefined {
    const fenced = liveFenced.has(operation.type) || rowFenced.has(operation.type) || (operation.type === "cancelQueued" && this.grants.has(agentId));
    if (!fenced || (!this.asked.has(agentId) && !this.grants.has(agentId))) return undefined;
    return { epoch: this.grants.get(agentId)?.grant.epoch ?? this.lastEpoch.get(agentId) ?? neverHeldEpoch };
  }

  private fenceHolds(agentId: string, epoch: number, live: boolean): boolean {
    const row = this.cluster.leases.get(agentId);
    return row !== undefined && row.owner === this.owner && row.epoch === epoch && (!live || row.expiresAt > Date.now());
  }

  /** What a write refused by the fence answers; undefined when its
   * compare-and-set is refused anyway (the row moved on: that refusal,
   * SQLite's, says so first, as PostgreSQL's explanation does). */
  private fenceRefusal(
    operation: OffloadOperation,
    agentId: string,
    epoch: number,
  ): { ok: true; value: unknown } | { ok: false; error: PhronomyError } | undefined {
    const lost = new ExecutionRehydrationRequiredError(
      `${operation.type} of execution ${"executionId" in operation ? operation.executionId : "?"} was refused by the fencing check: this process (${this.owner}) no longer holds agent "${agentId}" at lease epoch ${epoch}; another process took it over`,
      { executionId: "executionId" in operation ? operation.executionId : undefined, agentId, details: { reason: "lease_lost", owner: this.owner, epoch } },
    );
    if (operation.type === "prepareExecution") {
      this.noteLost(agentId, epoch);
      const refusal = (this.admissionRefusal(agentId) ?? lost).toRecord();
      // Moved by another process, and not known here yet (PostgreSQL's
      // `prepareRefused`, docs/decisions/0112): the refusal names where it
      // lives now, and the core places the start again.
      const home = homes.homeOf(this.cluster.connection, agentId);
      if (home !== undefined && home.movedBy !== this.owner && !this.homesKnown.has(agentId)) {
        this.homesKnown.add(agentId);
        this.cluster.onMovedRefusal?.(agentId, this.owner);
        return {
          ok: true,
          value: {
            outcome: "not_established",
            error: { ...refusal, details: { ...(refusal.details as Record<string, Json> | undefined), movedTo: home.epoch } },
          },
        };
      }
      return { ok: true, value: { outcome: "not_established", error: refusal } };
    }
    if (rowFenced.has(operation.type)) {
      const row = reads.getExecution(this.cluster.connection, (operation as { executionId: string }).executionId);
      if (row === undefined || row.revision !== (operation as { expectedRevision?: number }).expectedRevision) return undefined;
    }
    return { ok: false, error: lost };
  }

  private noteLost(agentId: string, epoch: number): void {
    if (this.grants.get(agentId)?.grant.epoch === epoch) this.lose(agentId);
  }

  // -- homes (`takeIdleHere`, docs/decisions/0101; cluster-homes.ts) --------------------------------

  /** Conversations whose home this handle learnt (a refusal named it, or it moved them). */
  private readonly homesKnown = new Set<string>();
  /** Conversations moved here, at the epoch of the move. */
  private readonly moved = new Map<string, number>();

  /** Opened with `takeIdleHere` (and the start inbox), and open. */
  takesIdleHere(): boolean {
    return this.takesIdle && !this.closed;
  }

  /** PostgreSQL's `home_conversation`, one statement with a fate the world
   * draws: a conversation held live by another process that has nothing
   * anywhere and no home is moved here — its lease taken at the next
   * epoch, its home written; `home` when it has one (this handle notes
   * it); `refused` otherwise (rows, not held elsewhere, or this handle
   * not renewing in time). */
  takeConversationHere(agentId: string): Promise<{ readonly outcome: "moved" | "home" | "refused"; readonly partition: number }> {
    const id = checkId(agentId, "agentId");
    return this.scheduleWrite("home_conversation", () => {
      const connection = this.cluster.connection;
      const now = Date.now();
      const home = homes.homeOf(connection, id);
      if (home !== undefined) {
        this.homesKnown.add(id);
        return { outcome: "home" as const, partition: home.epoch };
      }
      const row = this.cluster.leases.get(id);
      const renewing = now >= this.stalledUntil;
      if (row === undefined || row.owner === this.owner || row.expiresAt <= now || !renewing || homes.conversationHasRows(connection, id)) {
        return { outcome: "refused" as const, partition: row?.epoch ?? neverHeldEpoch };
      }
      const grant = { owner: this.owner, epoch: row.epoch + 1, expiresAt: now + this.cluster.leaseMs };
      this.cluster.leases.set(id, grant);
      homes.insertHome(connection, id, this.owner, grant.epoch, now);
      this.cluster.onMove?.(id, row.owner, this.owner);
      this.asked.add(id);
      this.grants.set(id, { grant, admitUntil: now + Math.floor(this.cluster.leaseMs * admitFraction) });
      this.lastEpoch.set(id, grant.epoch);
      this.homesKnown.add(id);
      this.moved.set(id, grant.epoch);
      return { outcome: "moved" as const, partition: grant.epoch };
    });
  }

  /** Moved here, and still held at the move's epoch: its retake is reported
   * as a move (`RecoveryCause.Moved`). */
  movedHere(agentId: string): boolean {
    const epoch = this.moved.get(agentId);
    if (epoch === undefined) return false;
    if (this.grants.get(agentId)?.grant.epoch === epoch) {
      this.cluster.onMovedRetake?.(agentId, this.owner);
      return true;
    }
    this.moved.delete(agentId);
    return false;
  }

  // -- the approval inbox (PostgreSQL's rules over the SQLite table) -------------------------------

  /** Files a decision in the approval inbox table (the SQLite body); the
   * holder of its conversation hears of it. */
  fileDecision(filing: Omit<DecisionFiling, "filedBy">): Promise<FiledDecision> {
    return this.read(() => {
      const filed = inbox.fileDecision(this.cluster.connection, { ...filing, filedBy: this.owner });
      this.cluster.announceFiled(filing.agentId);
      return filed;
    });
  }

  /** Claims the agent's filed decisions (and those a former holder claimed)
   * while this handle holds its lease live: the claim carries the epoch
   * (`claimed_by` names owner and epoch, so a later epoch claims again). */
  claimDecisions(agentId: string, retriesOnly = false): Promise<ClaimedDecision[]> {
    return this.read(() => {
      const epoch = this.grants.get(agentId)?.grant.epoch;
      if (epoch === undefined || !this.fenceHolds(agentId, epoch, true)) return [];
      const decisions = inbox
        .claimDecisions(this.cluster.connection, checkId(agentId, "agentId"), claimToken(this.owner, epoch), retriesOnly)
        .map((claim) => ({ ...claim, claimedEpoch: epoch }));
      // PostgreSQL claims the agent's filed starts with its decisions.
      return [...decisions, ...starts.claimStarts(this.cluster.connection, agentId, this.owner, epoch)];
    });
  }

  // -- the start inbox (cluster-start-inbox.ts: PostgreSQL's rules) ---------------------------------

  fileStart(filing: Omit<StartFiling, "filedBy">): Promise<FiledStartAnswer> {
    return this.read(() => {
      const answer = starts.fileStart(this.cluster.connection, { ...filing, filedBy: this.owner });
      if (answer.filedNow) this.cluster.announceStartFiled(filing.agentId);
      return answer;
    });
  }

  /** The filed starts of every agent held live here, claimed at its epoch. */
  claimFiledStarts(): Promise<ClaimedDecision[]> {
    return this.read(() => {
      const claimed: ClaimedDecision[] = [];
      for (const agentId of [...this.grants.keys()].sort()) {
        const epoch = this.grants.get(agentId)!.grant.epoch;
        if (claimed.length >= claimBatchMax || !this.fenceHolds(agentId, epoch, true)) continue;
        claimed.push(...starts.claimStarts(this.cluster.connection, agentId, this.owner, epoch, claimBatchMax - claimed.length));
      }
      return claimed;
    });
  }

  readStarts(follows: readonly { readonly executionId: string; readonly afterSeq: number }[]): Promise<StartProgress[]> {
    return this.read(() => starts.readStarts(this.cluster.connection, follows));
  }

  cancelFiledStart(executionId: string, error: string, at: number): Promise<ReturnType<typeof starts.cancelFiledStart>> {
    return this.read(() => starts.cancelFiledStart(this.cluster.connection, checkId(executionId, "executionId"), error, at));
  }

  /** Tells the runtime starts may wait for agents held here. */
  tellStartsFiled(): void {
    if (!this.killed && !this.closed) this.signals.startsFiled();
  }

  /** Settles a claim made here at that epoch, while the lease still is. */
  settleDecision(claim: ClaimedDecision, settlement: DecisionSettlement): Promise<boolean> {
    return this.read(() => {
      if (!this.fenceHolds(claim.agentId, claim.claimedEpoch, true)) return false;
      if (claim.kind === "start") return starts.settleStart(this.cluster.connection, claim, this.owner, settlement, Date.now());
      return inbox.settleDecision(this.cluster.connection, claim, claimToken(this.owner, claim.claimedEpoch), settlement, Date.now());
    });
  }

  readDecisions(decisionIds: readonly string[]): Promise<DecisionProgress[]> {
    return this.read(() => inbox.readDecisions(this.cluster.connection, decisionIds));
  }

  approvalDecided(executionId: string, approvalId: string): Promise<ApprovalDecided | undefined> {
    return this.read(() => inbox.approvalDecided(this.cluster.connection, checkId(executionId, "executionId"), approvalId));
  }

  // -- schedules (docs/decisions/0078, 0097): the SQLite bodies on the shared database, each
  // write with a fate the world draws (a failure writes nothing; an unknown outcome may have) --

  createSchedule(schedule: NewSchedule, perConversationMax: number): Promise<ScheduleRow | "full"> {
    return this.scheduleWrite("createSchedule", () => schedules.createSchedule(this.cluster.connection, schedule, perConversationMax));
  }

  cancelSchedule(scheduleId: string, at: number): Promise<ScheduleRow | undefined> {
    return this.scheduleWrite("cancelSchedule", () => schedules.cancelSchedule(this.cluster.connection, checkId(scheduleId, "scheduleId"), at));
  }

  // A schedule of a conversation held live by another process is that
  // process's to fire: PostgreSQL files such a start for its holder (the
  // start inbox, not simulated), so a process that fires here never wins a
  // race it cannot start; its holder is told when one is due. The nearest
  // due time of such a row, here, is when its lease may lapse: a sweep
  // never arms its timer at a row its due read then skips.

  nextScheduleDue(scope: ScheduleScope): Promise<number | undefined> {
    // A row held elsewhere is this process's to look at once that lease may have lapsed.
    return this.read(() => {
      const now = Date.now();
      const times = schedules.dueSchedules(this.cluster.connection, scope, Number.MAX_SAFE_INTEGER, 1_000).map((row) => {
        const holder = this.holderElsewhere(row.agentId);
        if (holder === undefined) return row.dueAt as number;
        if ((row.dueAt as number) <= now) this.cluster.announceSchedulesDueTo(holder);
        return Math.max(row.dueAt as number, (this.cluster.leases.get(row.agentId) as LeaseRow).expiresAt);
      });
      return times.length === 0 ? undefined : Math.min(...times);
    });
  }

  dueSchedules(scope: ScheduleScope, now: number, limit: number): Promise<ScheduleRow[]> {
    return this.read(() => this.schedulesToFire(scope, now).slice(0, limit));
  }

  private schedulesToFire(scope: ScheduleScope, through: number): ScheduleRow[] {
    // The simulation's few schedules fit one read.
    const rows = schedules.dueSchedules(this.cluster.connection, scope, through, 1_000);
    const now = Date.now();
    for (const row of rows) {
      // Due and held elsewhere: its holder hears of it now, as PostgreSQL tells the holder of a filed start.
      const holder = this.holderElsewhere(row.agentId);
      if (holder !== undefined && (row.dueAt as number) <= now) this.cluster.announceSchedulesDueTo(holder);
    }
    return rows.filter((row) => this.holderElsewhere(row.agentId) === undefined);
  }

  /** The other process holding the agent's lease live, if one does. */
  private holderElsewhere(agentId: string): string | undefined {
    const lease = this.cluster.leases.get(agentId);
    return lease !== undefined && lease.owner !== this.owner && lease.expiresAt > Date.now() ? lease.owner : undefined;
  }

  claimSchedules(claims: readonly ScheduleClaim[]): Promise<ScheduleRow[]> {
    return this.scheduleWrite("claimSchedules", () => {
      const at = Date.now();
      const claimed = schedules.claimSchedules(this.cluster.connection, claims, at);
      if (claimed.some((row) => row.dueAt !== undefined && row.dueAt <= at)) this.cluster.announceSchedulesDue();
      return claimed;
    });
  }

  settleScheduleFiring(settlement: ScheduleSettlement): Promise<boolean> {
    return this.scheduleWrite("settleScheduleFiring", () => schedules.settleScheduleFiring(this.cluster.connection, settlement));
  }

  private scheduleWrite<T>(what: string, body: () => T): Promise<T> {
    return this.read(() => {
      const fate = this.cluster.scheduleFate?.() ?? "commit";
      if (fate === "commit") return body();
      if (fate === "unknown_committed") body();
      this.cluster.onFault?.(this.owner);
      throw new StoreError(`simulated: ${what} of ${this.owner} ${fate === "failed" ? "failed, nothing written" : "lost its connection: outcome unknown"}`);
    });
  }

  /** Tells the runtime a firing may be due now (PostgreSQL's notification). */
  tellSchedulesDue(): void {
    if (!this.killed && !this.closed) this.signals.schedulesDue();
  }

  /** Tells the runtime a decision waits for an agent held here. */
  tellFiled(agentId: string): void {
    if (!this.killed && !this.closed && this.grants.has(agentId)) this.signals.approvalFiled(agentId);
  }

  /** The lease tick's poll (PostgreSQL's, for notifications lost). */
  private pollInbox(): void {
    for (const agentId of [...this.grants.keys()].sort()) {
      const token = claimToken(this.owner, this.grants.get(agentId)!.grant.epoch);
      const found = this.cluster.connection
        .prepare("SELECT 1 FROM approval_inbox WHERE agent_id = ? AND (state = 'filed' OR (state = 'claimed' AND claimed_by <> ?)) LIMIT 1")
        .get(agentId, token);
      if (found !== undefined) this.signals.approvalFiled(agentId);
    }
    const epochs = [...this.grants].map(([agentId, held]) => [agentId, held.grant.epoch] as const);
    if (epochs.some(([agentId, epoch]) => starts.startWaiting(this.cluster.connection, agentId, epoch))) this.signals.startsFiled();
  }

  // -- due waits and keyed signals ----------------------------------------------------------------

  /** Waits due by `through` of conversations held here (the holder fires). */
  dueWaits(through: number, limit: number, after?: DueCursor): Promise<DueWait[]> {
    // The simulation's few waits fit one batch of the most a read gives.
    return this.read(() =>
      due
        .dueWaits(this.cluster.connection, through, dueWaitsBatchMax, after)
        .filter((wait) => this.holdsLive(wait.agentId))
        .slice(0, limit),
    );
  }

  nextDueAt(after: number): Promise<number | undefined> {
    return this.read(() => {
      const times = this.cluster.connection
        .prepare(
          "SELECT agent_id, json_extract(approval_request, '$.dueAt') AS due_at FROM executions WHERE status = 'suspended' AND json_extract(approval_request, '$.dueAt') > ? ORDER BY 2",
        )
        .all(after)
        .filter((row) => this.holdsLive(String(row["agent_id"])));
      return times.length === 0 ? undefined : Number(times[0]!["due_at"]);
    });
  }

  private holdsLive(agentId: string): boolean {
    const epoch = this.grants.get(agentId)?.grant.epoch;
    return epoch !== undefined && this.fenceHolds(agentId, epoch, false);
  }

  sendSignal(sending: SignalSending): Promise<SignalSent> {
    return this.read(() => signals.sendSignal(this.cluster.connection, sending));
  }

  takeStoredSignal(key: string, approvalId: string, at: number): Promise<Json | undefined> {
    return this.read(() => signals.takeStoredSignal(this.cluster.connection, key, approvalId, at));
  }

  dropSignal(key: string, approvalId: string): Promise<void> {
    return this.read(() => signals.dropSignal(this.cluster.connection, key, approvalId));
  }

  // -- leases (LeasingStore) ---------------------------------------------------------------------

  acquireLease(agentId: string): Promise<LeaseAcquisition> {
    checkId(agentId, "agentId");
    if (this.closed) return Promise.reject(new StoreError(`the simulated store ${this.path} is closed; open it again to acquire a lease`));
    if (this.killed) return this.never();
    if (this.disconnected) this.cluster.onFault?.(this.owner);
    if (this.disconnected) return Promise.reject(new StoreError(`simulated: ${this.owner} lost its connection while acquiring the lease of "${agentId}"`));
    this.asked.add(agentId);
    const created = !this.cluster.leases.has(agentId);
    const grant = this.take(agentId);
    if (grant !== undefined) return Promise.resolve({ acquired: true, ...grant, ...(created ? { created } : {}) });
    const row = this.cluster.leases.get(agentId)!;
    return Promise.resolve({ acquired: false, ...row, message: `agent "${agentId}" is leased by ${row.owner} until ${row.expiresAt}` });
  }

  /** Takes or renews the agent's lease in the shared table: free, expired,
   * or this handle's own (epoch + 1 on a takeover). */
  private take(agentId: string): LeaseGrant | undefined {
    const now = Date.now();
    const row = this.cluster.leases.get(agentId);
    if (row !== undefined && row.owner !== this.owner && row.expiresAt > now) return undefined;
    // As PostgreSQL's partitions (0030): one taken again once expired, by
    // its own holder too, is taken at epoch + 1 — a start claimed at the
    // lapsed epoch is claimed again at the new one.
    const renewed = row !== undefined && row.owner === this.owner && this.grants.get(agentId)?.grant.epoch === row.epoch;
    const epoch = row === undefined ? 1 : renewed && row.expiresAt > now ? row.epoch : row.epoch + 1;
    const grant = { owner: this.owner, epoch, expiresAt: now + this.cluster.leaseMs };
    if (row !== undefined && row.owner !== this.owner) this.cluster.onTakeover?.(agentId, row.owner, this.owner);
    else if (row !== undefined && epoch !== row.epoch) this.cluster.onLapsed?.(agentId, this.owner, epoch);
    this.cluster.leases.set(agentId, grant);
    this.grants.set(agentId, { grant, admitUntil: now + Math.floor(this.cluster.leaseMs * admitFraction) });
    this.lastEpoch.set(agentId, epoch);
    return grant;
  }

  /** The lease tick: renews what is still held here, forgets what was
   * lost, and takes over agents asked for whose lease expired. */
  private renew(): void {
    if (this.killed || this.closed || this.disconnected || Date.now() < this.stalledUntil) return;
    for (const agentId of [...this.asked].sort()) {
      const held = this.grants.get(agentId);
      const row = this.cluster.leases.get(agentId);
      if (held !== undefined && !(row?.owner === this.owner && row.epoch === held.grant.epoch)) this.lose(agentId);
      const taken = this.take(agentId);
      if (taken !== undefined && held?.grant.epoch !== taken.epoch) this.signals.leaseAcquired(agentId, taken);
    }
    this.adoptFiledStarts();
    this.pollInbox();
  }

  /** A filed start's conversation whose lease nobody holds live is taken
   * here (PostgreSQL's partitions are always held: balancing takes every
   * one, and their filed starts with them), asked for from now on. */
  private adoptFiledStarts(): void {
    if (!this.cluster.startInbox) return;
    for (const agentId of starts.agentsWithStartsWaiting(this.cluster.connection)) {
      if (this.asked.has(agentId) || this.holderElsewhere(agentId) !== undefined) continue;
      this.asked.add(agentId);
      const taken = this.take(agentId);
      if (taken !== undefined) this.signals.leaseAcquired(agentId, taken);
    }
  }

  leaseOf(agentId: string): LeaseGrant | undefined {
    const held = this.grants.get(agentId);
    return held !== undefined && Date.now() < held.admitUntil ? held.grant : undefined;
  }

  /** The epoch the agent's lease is held at here, renewed in time or not. */
  heldEpochOf(agentId: string): number | undefined {
    return this.grants.get(agentId)?.grant.epoch;
  }

  /** Who holds the agent's lease in the shared table, while it runs. */
  leaseHolder(agentId: string): Promise<{ readonly owner: string; readonly expiresAt: number } | undefined> {
    if (this.killed) return this.never();
    const row = this.cluster.leases.get(agentId);
    return Promise.resolve(row !== undefined && row.expiresAt > Date.now() ? { owner: row.owner, expiresAt: row.expiresAt } : undefined);
  }

  /** The runtime listens (`leaseAcquired` on a takeover by the tick). */
  listen(signals: StoreSignals): void {
    this.signals = signals;
  }

  /** A partition move (balancing): this handle gives the agent's lease up
   * — expired now, not released to the runtime, still asked for — and
   * whoever asks next takes it. Undefined when it holds none to give. */
  giveUpLease(): string | undefined {
    const agentId = [...this.grants.keys()].sort()[0];
    if (agentId === undefined) return undefined;
    const row = this.cluster.leases.get(agentId);
    this.lose(agentId);
    if (row?.owner === this.owner) this.cluster.leases.set(agentId, { ...row, expiresAt: Date.now() });
    return agentId;
  }

  /** The lease is not held here any more: the runtime is told, as the
   * partition book tells it of a partition taken or given up. */
  private lose(agentId: string): void {
    this.grants.delete(agentId);
    this.signals.leasesLost([agentId]);
  }

  releaseLease(agentId: string): Promise<void> {
    if (this.killed) return this.never();
    const held = this.grants.get(agentId);
    if (held !== undefined && starts.startWaiting(this.cluster.connection, agentId, held.grant.epoch + 1)) {
      // A start waits for it: kept, as PostgreSQL keeps the partition a
      // conversation let go of lives in; its claim is told.
      queueMicrotask(() => this.tellStartsFiled());
      return Promise.resolve();
    }
    this.asked.delete(agentId);
    this.grants.delete(agentId);
    const row = this.cluster.leases.get(agentId);
    if (held !== undefined && row?.owner === this.owner && row.epoch === held.grant.epoch) this.cluster.leases.set(agentId, { ...row, expiresAt: Date.now() });
    return Promise.resolve();
  }

  unfinishedExecutionsOf(agentId: string): Promise<ExecutionRow[]> {
    return this.read(() => reads.unfinishedExecutions(this.cluster.connection).filter((row) => row.agentId === checkId(agentId, "agentId")));
  }

  /** PostgreSQL's admission refusal: not renewed in time, or
   * owned elsewhere; undefined for an agent never asked for. */
  admissionRefusal(agentId: string): PhronomyError | undefined {
    const held = this.grants.get(agentId);
    if (!this.asked.has(agentId) && held === undefined) return undefined;
    if (held !== undefined && Date.now() < held.admitUntil) return undefined;
    const row = this.cluster.leases.get(agentId);
    const why = held !== undefined ? "its lease could not be renewed in time" : `it is leased by ${row?.owner ?? "nobody"}`;
    return agentOwnedElsewhere(agentId, why, { thisProcess: this.owner });
  }

  // -- lifecycle ----------------------------------------------------------------------------------

  /** Accepted writes still settle (the world settles them); then closed. */
  async close(): Promise<void> {
    clearInterval(this.tick);
    if (this.closed) return;
    this.closed = true;
    if (this.killed) return this.never();
    while (this.cluster.pending.some((write) => write.handle === this)) await new Promise<void>((resolve) => setImmediate(resolve));
    for (const agentId of this.grants.keys()) {
      const row = this.cluster.leases.get(agentId);
      if (row?.owner === this.owner) this.cluster.leases.set(agentId, { ...row, expiresAt: Date.now() });
    }
    this.grants.clear();
  }

  get isClosed(): boolean {
    return this.closed;
  }
}

/** Who claimed an inbox row: the owner at the epoch it held. */
function claimToken(owner: string, epoch: number): string {
  return `${owner}@${epoch}`;
}

/** Deletes every row of every table (and the rowid sequences): the
 * database as its migrations left it. A full-text index (an FTS5 virtual
 * table, decision 0082) is emptied by its own command, its shadow tables
 * with it (they refuse a DELETE of their own). */
function emptyDatabase(connection: SqliteConnection): void {
  const rows = connection
    .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
    .all()
    .map((row) => ({ name: String(row["name"]), virtual: String(row["sql"] ?? "").startsWith("CREATE VIRTUAL TABLE") }));
  const virtual = rows.filter((row) => row.virtual).map((row) => row.name);
  const tables = rows.filter((row) => !row.virtual && !virtual.some((name) => row.name.startsWith(`${name}_`))).map((row) => row.name);
  const sequences = connection.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'sqlite_sequence'").get()?.["n"] === 1;
  connection.exec(
    [
      "BEGIN",
      ...tables.map((name) => `DELETE FROM "${name}"`),
      ...virtual.map((name) => `INSERT INTO "${name}"("${name}") VALUES ('delete-all')`),
      ...(sequences ? ["DELETE FROM sqlite_sequence"] : []),
      "COMMIT",
    ].join(";\n"),
  );
}
