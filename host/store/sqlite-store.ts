// The embedded SQLite store (SPEC §4.3): one file in WAL mode, written
// through the offload (a worker connection with group commit, and a
// calling-thread connection for lone operations), read on the calling
// thread. It implements `ExecutionStore`; the runtime should depend on that
// interface only. One process owns a store at a time: `open` takes an
// exclusive lock held until `close()` or the process's death
// (`sqlite/ownership.ts`, docs/decisions/0007), and a second `open` of the
// same file, from this process or another, fails at once with `StoreError`.
// Other processes may open the store as visitors (`openVisitor`,
// `sqlite-visitor.ts`, docs/decisions/0015): they read, and file approval
// decisions into the inbox, which the owner polls (`PRAGMA data_version` on
// its calling-thread connection, every `inboxPollMs`) and applies.
// The store's files are checked after every commit and every
// `fileCheckMs` (`sqlite/file-identity.ts`, docs/decisions/0021): once the
// database or its log is removed or replaced, every write is refused with a
// `StoreError` naming the path (`failure`).
// What opening takes (the ownership lock, the schema, the offload and its
// worker) is in `sqlite/open-owned.ts`, loaded by the first `open`: this
// module is exported by `phronomy`, so what it imports, every application
// loads, a PostgreSQL one included (docs/decisions/0054).
//
//   const store = await SqliteStore.open("./agents.db");
//   await store.ensureAgent("support", Date.now());
//   const prepared = await store.run({ type: "prepareExecution", ... });
//   await store.close();

import { randomUUID } from "node:crypto";
import type { StoreError } from "../errors.js";
import { checkId } from "./check-id.js";
import { checkOperation } from "./check-operation.js";
import type { Offload, OffloadPolicy, OffloadStatistics } from "./offload.js";
import type { OffloadOperation, OffloadResult } from "./offload-operation.js";
import type { AgentRow, PurgeAgentResult, StoreOperation, StoreResult } from "./records.js";
import { checkPruneOperation, type PruneCounts, type PruneExecutionsOperation } from "./prune.js";
import { sqlitePruneBatchExecutions } from "./sqlite/prune.js";
import type { ApprovalDecided, ClaimedDecision, DecisionFiling, DecisionProgress, DecisionSettlement, FiledDecision } from "./inbox-records.js";
import type { SqliteConnection } from "./sqlite/driver.js";
import * as inbox from "./sqlite/inbox.js";
import * as schedules from "./sqlite/schedules.js";
import { type NewSchedule, type ScheduleClaim, type ScheduleRow, type ScheduleScope, type ScheduleSettlement } from "./schedule-records.js";
import * as signals from "./sqlite/signals.js";
import type { SignalSending, SignalSent } from "./signal-records.js";
import type { Json } from "./records.js";
import type { SqliteStoreOptions } from "./sqlite/open-owned.js";
import type { StoreOwner } from "./sqlite/owner-file.js";
import type { StoreOwnership } from "./sqlite/ownership.js";
import type { SynchronousMode } from "./sqlite/schema.js";
import { SqliteReadableStore } from "./sqlite/readable-store.js";
import type { ExecutionStore } from "./store.js";
import type { DueCursor, DueWait } from "./due-waits.js";
import * as due from "./sqlite/due-waits.js";
import { quietSignals, type StoreCapabilities, type StoreSignals } from "./capabilities.js";
import type { CancelQueuedOperation, CancelQueuedResult, EnqueueMessageOperation, EnqueueMessageResult } from "./queue.js";
import type { SqliteVisitorStore } from "./sqlite-visitor.js";

export type { SqliteStoreOptions } from "./sqlite/open-owned.js";

/** How often the owner looks for decisions visitors filed: one
 * `PRAGMA data_version` (a counter read, microseconds), and one indexed
 * query only when another connection committed. 75 ms keeps a visitor's
 * approval prompt without measurable cost; the timer is unref'd. */
export const inboxPollMs = 75;

/** How often the store's files are looked at while nothing commits (every
 * commit looks too): two `stat` calls, so a removed store file refuses the
 * next start even before it tries to write; the timer is unref'd. */
export const fileCheckMs = 100;

/** The embedded store: one SQLite file, owned by one process at a time,
 * its commits run by the offload (docs/decisions/0006, 0007). */
export class SqliteStore extends SqliteReadableStore implements ExecutionStore {
  /** The durability of its commits: `FULL` or `NORMAL`. */
  readonly synchronous: SynchronousMode;
  private readonly offload: Offload;
  private readonly ownership: StoreOwnership;
  private closing: Promise<void> | undefined;
  /** This open's claims in the approval inbox: a claim under another token
   * was left by an owner that closed or died, and is claimed again. */
  private readonly ownerToken = `owner ${process.pid} ${randomUUID()}`;
  private inboxPoll: NodeJS.Timeout | undefined;
  private readonly fileCheck: NodeJS.Timeout;
  private dataVersion = -1;
  private signals: StoreSignals = quietSignals;
  /** One owner per file: no leases, partitions or filed starts. */
  readonly capabilities: StoreCapabilities = {
    leases: false,
    partitions: false,
    approvalInbox: true,
    startInbox: false,
    queue: true,
    queueReads: true,
    pruning: true,
    schedules: true,
    scheduleReads: true,
    pages: true,
    signals: true,
    dueWaits: true,
  };

  private constructor(path: string, synchronous: SynchronousMode, connection: SqliteConnection, offload: Offload, ownership: StoreOwnership) {
    super(path, connection);
    this.synchronous = synchronous;
    this.offload = offload;
    this.ownership = ownership;
    this.fileCheck = setInterval(() => offload.verifyFiles(), fileCheckMs);
    this.fileCheck.unref();
  }

  /** Opens the store at `path`, creating or migrating it when needed, and
   * takes ownership of it. Rejects with `StoreError` (naming the path) when
   * another process, or an earlier open in this one, owns the store (the
   * message names the owner's pid, host and start time; details.reason is
   * `store_owned`), and for a file that is not a Phronomy store or was
   * written by a newer version, leaving it untouched. */
  static async open(path: string, options: SqliteStoreOptions = {}): Promise<SqliteStore> {
    // The modules that open a store and run its writes, loaded by the
    // first open: importing `phronomy` does not load them (decision 0054).
    const { openOwned } = await import("./sqlite/open-owned.js");
    const owned = await openOwned(path, options);
    return new SqliteStore(owned.path, owned.synchronous, owned.connection, owned.offload, owned.ownership);
  }

  /** Opens the store at `path` as a visitor (sqlite-visitor.ts): no
   * ownership, reads and approval decisions only, beside a live owner. */
  static async openVisitor(path: string): Promise<SqliteVisitorStore> {
    const { SqliteVisitorStore } = await import("./sqlite-visitor.js");
    return SqliteVisitorStore.open(path);
  }

  /** This process, as recorded in `<path>-owner.json` while it owns the store. */
  get owner(): StoreOwner {
    return this.ownership.owner;
  }

  /** Where its commits run: `adaptive`, `worker` or `inline`. */
  get offloadPolicy(): OffloadPolicy {
    return this.offload.policy;
  }

  /** Counters of the offload: operations, groups, where they ran. */
  get offloadStatistics(): OffloadStatistics {
    return this.offload.statistics;
  }

  /** Why every write is refused, once the store cannot write any more (its
   * file removed or replaced, its worker lost for good); undefined while it
   * works. */
  get failure(): StoreError | undefined {
    return this.offload.failure;
  }

  // -- writes (through the offload) --------------------------------------------

  run<O extends StoreOperation>(operation: O): Promise<StoreResult<O>> {
    const result = this.submit(operation) as Promise<StoreResult<O>>;
    if (operation.type !== "terminalCommit") return result;
    // Rows filed by this process's own commit: no other connection's data
    // version tells the poll, so the owner is told here (decision 0079).
    return result.then((committed) => {
      for (const agentId of (committed as { inboxFiledFor?: readonly string[] }).inboxFiledFor ?? []) this.signals.approvalFiled(agentId);
      return committed;
    });
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

  /** @internal Executions one prune batch deletes at most. */
  readonly pruneBatchExecutions = sqlitePruneBatchExecutions;

  /** @internal Deletes a bounded batch of finished executions (`prune.ts`). */
  pruneExecutions(operation: PruneExecutionsOperation): Promise<PruneCounts> {
    checkPruneOperation(operation);
    return this.offload.submit(operation);
  }

  /** @internal Waits due by `through`, a bounded batch (`sqlite/due-waits.ts`, docs/decisions/0076). */
  dueWaits(through: number, limit: number, after?: DueCursor): Promise<DueWait[]> {
    return this.read(() => due.dueWaits(this.connection, through, limit, after));
  }

  /** @internal The next due time after `after` (`sqlite/due-waits.ts`). */
  nextDueAt(after: number): Promise<number | undefined> {
    return this.read(() => due.nextDueAt(this.connection, after));
  }

  /** @internal Writes commit in submission order (one offload queue, one writer). */
  readonly queueWritesInOrder = true;

  /** @internal Queues a message behind its busy conversation (`queue.ts`). */
  enqueueMessage(operation: Omit<EnqueueMessageOperation, "type">): Promise<EnqueueMessageResult> {
    return this.submit({ type: "enqueueMessage", ...operation });
  }

  /** @internal Cancels a queued message: its execution is written terminal. */
  cancelQueued(operation: Omit<CancelQueuedOperation, "type">): Promise<CancelQueuedResult> {
    return this.submit({ type: "cancelQueued", ...operation });
  }

  protected closedMessage(): string | undefined {
    return this.closing === undefined ? undefined : `the store at ${this.path} is closed; open it again to read`;
  }

  protected override storeFailure(): StoreError | undefined {
    return this.failure;
  }

  private submit<O extends OffloadOperation>(operation: O): Promise<OffloadResult<O>> {
    checkOperation(operation);
    return this.offload.submit(operation);
  }

  // -- the approval inbox, owner's side (docs/decisions/0015) ----------------------

  /** The runtime listens: each agent with a decision to claim is told
   * (`approvalFiled`), from a poll that starts now and looks once at once
   * (decisions filed while no one owned the store). */
  listen(signals: StoreSignals): void {
    this.signals = signals;
    if (this.inboxPoll !== undefined || this.closing !== undefined) return;
    this.inboxPoll = setInterval(() => this.pollInbox(), inboxPollMs);
    this.inboxPoll.unref();
    this.pollInbox();
  }

  /** @internal Files a decision in the approval inbox (docs/decisions/0015). */
  fileDecision(filing: Omit<DecisionFiling, "filedBy">): Promise<FiledDecision> {
    return this.read(() => inbox.fileDecision(this.connection, { ...filing, filedBy: this.ownerToken }));
  }

  /** @internal Claims the agent's filed decisions, to apply them here. */
  claimDecisions(agentId: string, retriesOnly = false): Promise<ClaimedDecision[]> {
    return this.read(() => inbox.claimDecisions(this.connection, checkId(agentId, "agentId"), this.ownerToken, retriesOnly));
  }

  /** @internal Records how a claimed decision was applied (or refused). */
  settleDecision(claim: ClaimedDecision, settlement: DecisionSettlement): Promise<boolean> {
    return this.read(() => inbox.settleDecision(this.connection, claim, this.ownerToken, settlement, Date.now()));
  }

  /** @internal Where filed decisions are: waiting, claimed, applied or refused. */
  readDecisions(decisionIds: readonly string[]): Promise<DecisionProgress[]> {
    return this.read(() => inbox.readDecisions(this.connection, decisionIds));
  }

  /** @internal The decision on an approval, once one was applied. */
  approvalDecided(executionId: string, approvalId: string): Promise<ApprovalDecided | undefined> {
    return this.read(() => inbox.approvalDecided(this.connection, checkId(executionId, "executionId"), approvalId));
  }

  // -- schedules (docs/decisions/0078): on this connection, like the inbox ----------------

  /** @internal */
  createSchedule(schedule: NewSchedule, perConversationMax: number): Promise<ScheduleRow | "full"> {
    return this.read(() => schedules.createSchedule(this.connection, schedule, perConversationMax));
  }

  /** @internal */
  cancelSchedule(scheduleId: string, at: number): Promise<ScheduleRow | undefined> {
    return this.read(() => schedules.cancelSchedule(this.connection, checkId(scheduleId, "scheduleId"), at));
  }

  /** @internal */
  nextScheduleDue(scope: ScheduleScope): Promise<number | undefined> {
    return this.read(() => schedules.nextScheduleDue(this.connection, scope));
  }

  /** @internal */
  dueSchedules(scope: ScheduleScope, now: number, limit: number): Promise<ScheduleRow[]> {
    return this.read(() => schedules.dueSchedules(this.connection, scope, now, limit));
  }

  /** @internal */
  claimSchedules(claims: readonly ScheduleClaim[]): Promise<ScheduleRow[]> {
    return this.read(() => schedules.claimSchedules(this.connection, claims, Date.now()));
  }

  /** @internal */
  settleScheduleFiring(settlement: ScheduleSettlement): Promise<boolean> {
    return this.read(() => schedules.settleScheduleFiring(this.connection, settlement));
  }

  // -- keyed signals (docs/decisions/0077) ----------------------------------------

  /** @internal Finds the wait with the signal's key, or stores the signal. */
  sendSignal(sending: SignalSending): Promise<SignalSent> {
    return this.read(() => signals.sendSignal(this.connection, sending));
  }

  /** @internal The signal kept for this wait's key, now offered to it. */
  takeStoredSignal(key: string, approvalId: string, at: number): Promise<Json | undefined> {
    return this.read(() => signals.takeStoredSignal(this.connection, key, approvalId, at));
  }

  /** @internal Deletes the signal offered to the wait. */
  dropSignal(key: string, approvalId: string): Promise<void> {
    return this.read(() => signals.dropSignal(this.connection, key, approvalId));
  }

  /** Wakes the listener for every agent with a decision to claim, when a
   * connection other than this one committed since the last look. A
   * failure is left to the next tick. */
  private pollInbox(): void {
    if (this.signals === quietSignals || this.closing !== undefined) return;
    try {
      const version = Number(this.connection.prepare("PRAGMA data_version").get()?.["data_version"]);
      if (version === this.dataVersion) return;
      this.dataVersion = version;
      for (const agentId of inbox.agentsWithDecisions(this.connection, this.ownerToken)) this.signals.approvalFiled(agentId);
      // A visitor may have claimed a run now for this owner (docs/decisions/0097).
      this.signals.schedulesDue();
    } catch {
      this.dataVersion = -1; // look again next tick
    }
  }

  // -- lifecycle -------------------------------------------------------------------

  /** Finishes every accepted write, closes both connections, stops the
   * worker and releases ownership (another open may then take the store).
   * A second call returns the same promise. */
  close(): Promise<void> {
    if (this.inboxPoll !== undefined) clearInterval(this.inboxPoll);
    clearInterval(this.fileCheck);
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
