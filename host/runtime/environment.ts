// An environment: one control core, one control loop, one offload and one
// store, created by `Phronomy.open` and passed down — no module-level state,
// so any number of isolated environments can live in one process.
//
// This file only wires: `Environment` is the public facade, and each of its
// methods hands over to the module that holds the logic — definitions
// (`agent-definitions.ts`), recoveries (`agent-recoveries.ts`), ownership
// and leases (`agent-ownership.ts`), the approval inbox and filed starts
// (`inbox-claims.ts`), waits and followers (`followers.ts`), cancels and
// retries by id (`work-by-id.ts`), purge and pruning (`durable-data.ts`),
// the reads (`environment-reads.ts`) and `close()` (`drain.ts`). What
// `Phronomy.open` takes is checked in `open-options.ts`.

import type { PhronomyError } from "../errors.js";
import { ChildExecutions } from "./child-executions.js";
import { executionTreeOf, type ExecutionTree } from "./execution-tree.js";
import type { ControlCore } from "../core/control-core.js";
import type { ExecutionListFilter, ExecutionRow, StoredStep } from "../store/records.js";
import { dueWaitsStoreOf } from "../store/due-waits.js";
import { capabilitiesOf } from "../store/capabilities.js";
import { isVisitorStore } from "../store/sqlite/visitor-mark.js";
import type { ExecutionStore } from "../store/store.js";
import type { ChatChunk, StreamOptions } from "../chat/chat-stream.js";
import { Admin, type PendingApproval } from "./admin.js";
import { Agent } from "./agent.js";
import { AgentDefinitions, type DefinedHandle } from "./agent-definitions.js";
import { EventSignals, type SignalOptions, type SignalResult } from "./event-signals.js";
import { AgentOwnership } from "./agent-ownership.js";
import { AgentRecoveries, recoveryHooksOf } from "./agent-recoveries.js";
import type { ByIdPlacement, ByIdSource } from "./by-id-placement.js";
import type { CancelOptions, CancelResult } from "./cancel-by-id.js";
import type { ControlLoop } from "./control-loop.js";
import { startControl } from "./control-start.js";
import { ConversationQueues } from "./conversation-queue.js";
import { Conversations } from "./conversations.js";
import type { Coordinator } from "./coordinator.js";
import type { DefinedAgent } from "./defined-agent.js";
import { Drain } from "./drain.js";
import { DueSweep } from "./due-sweep.js";
import { fireDueWait } from "./due-fire.js";
import { DurableData } from "./durable-data.js";
import { EnvironmentReads } from "./environment-reads.js";
import { Followers } from "./followers.js";
import { WorkById } from "./work-by-id.js";
import { InboxClaims } from "./inbox-claims.js";
import { leasingStoreOf } from "./leases.js";
import type { OpenOptions } from "./open-options.js";
import type { AgentDefinition, ConversationDefinition, OutputOf } from "./options.js";
import { partitionedStoreOf, partitionTakeovers } from "./partition-takeover.js";
import type { RecoveredExecution } from "./recovery.js";
import type { RemoteResumes } from "./remote-resume.js";
import type { StartPlacement } from "./remote-start.js";
import type { AgentEntry } from "./requests.js";
import type { PruneOptions, PruneReport } from "./retention.js";
import type { RetryOptions } from "./retry.js";
import type { Run, Waiter, Waiting } from "./run.js";
import { storeSignals } from "./store-signals.js";
import { refuseUnwritableStore, refuseVisitor } from "./write-refusals.js";
import { startInboxStoreOf } from "./remote-start.js";
import { Scheduling, type RunScheduleOptions, type Schedule, type ScheduleListFilter } from "./schedules.js";
import type { ScheduleRow } from "../store/schedule-records.js";

/** A running Phronomy on one store: the agents defined on it, their executions, recovery, retention, and `close()`. Made by `Phronomy.open`. */
export class Environment {
  /** @internal Conversations: core entries on first use, let go when idle (`conversations.ts`, docs/decisions/0024). */
  readonly conversations: Conversations;
  /** @internal Messages queued behind busy conversations (docs/decisions/0025). */
  readonly queues: ConversationQueues = new ConversationQueues(this);
  private readonly recoveries: AgentRecoveries;
  private readonly ownership: AgentOwnership;
  private readonly inbox: InboxClaims;
  private readonly followers: Followers;
  private readonly byId: WorkById;
  private readonly reads: EnvironmentReads;
  private readonly definitions: AgentDefinitions;
  private readonly data: DurableData;
  private readonly drain: Drain;
  private readonly children: ChildExecutions;
  private adminSurface: Admin | undefined;
  /** @internal Scheduled starts and their sweep (schedules.ts, docs/decisions/0078). */
  readonly scheduling: Scheduling;
  private readonly signals: EventSignals;
  private dueSweep: DueSweep | undefined;

  private constructor(
    /** The store this environment owns (reads: executions, timelines). */
    readonly store: ExecutionStore,
    /** @internal The control core. */
    readonly core: ControlCore,
    /** @internal The control loop. */
    readonly loop: ControlLoop,
    /** @internal Carries out the core's effects. */
    readonly coordinator: Coordinator,
    private readonly recoverOnDefine: boolean,
  ) {
    const closed = (): boolean => this.closed;
    const { queues, visitor } = this;
    this.conversations = new Conversations({
      store,
      loop,
      coordinator,
      recovers: recoverOnDefine,
      ...recoveryHooksOf(() => this.recoveries),
      executionSuspended: (agentId) => this.followers.suspended(agentId),
      ownAgent: (agentId) => this.ownership.ownAgent(agentId),
    });
    const { conversations } = this;
    const parts = { store, loop, coordinator, conversations, queues, visitor, closed };
    const follow = (agentId: string, executionId: string, waiter: Waiting): void => this.followers.followElsewhere(agentId, executionId, waiter);
    this.recoveries = new AgentRecoveries({ ...parts, recoverOnDefine, follow });
    this.ownership = new AgentOwnership({ ...parts, recoveries: this.recoveries, filesForOwner: () => this.inbox.remoteStarts !== undefined });
    this.inbox = new InboxClaims({
      ...parts,
      agents: this,
      recoveries: this.recoveries,
      cancelHost: () => this.byId.cancelHost(),
      retryHost: () => this.byId.retryHost(),
    });
    this.followers = new Followers({ ...parts, remoteStarts: () => this.inbox.remoteStarts, placeWait: (id) => this.byId.placeWait(id) });
    const asserts = {
      assertOpen: (what: string) => this.assertOpen(what),
      assertOwner: (what: string) => this.assertOwner(what),
      assertStoreWritable: (what: string) => this.assertStoreWritable(what),
    };
    this.byId = new WorkById({ ...parts, ...asserts, inbox: this.inbox });
    this.reads = new EnvironmentReads({ ...parts, wait: (executionId) => this.wait(executionId) });
    this.data = new DurableData({ ...parts, ...asserts });
    this.definitions = new AgentDefinitions({ ...parts, recoveries: this.recoveries, agents: this, retention: () => this.data.retention });
    this.scheduling = new Scheduling({
      store,
      logger: coordinator.settings.logger,
      fires: !visitor && (startInboxStoreOf(store)?.balancing ?? true),
      firedElsewhere: visitor || capabilitiesOf(store).leases,
      isOpen: () => !closed(),
      ...asserts,
      scope: () => this.conversations.definedScope(),
      core,
      defines: (row) => this.scheduledKind(row) !== undefined,
      start: (row, idempotencyKey) => this.scheduledStart(row, idempotencyKey),
      statusOf: async (executionId) => (await this.execution(executionId))?.status,
    });
    this.signals = new EventSignals({
      store,
      logger: coordinator.settings.logger,
      core,
      assertOpen: asserts.assertOpen,
      agentHandle: (agentId) => this.agentHandle(agentId),
      placeById: (source, agentId, here) => this.placeById(source, agentId, here),
    });
    coordinator.onEventWait = (request) => this.signals.suspended(request);
    this.children = new ChildExecutions({ ...parts, core, agents: this, logger: coordinator.settings.logger });
    coordinator.onChildWait = (entry) => this.children.waitingOn(entry);
    // Stopped in this order once drained: the due sweep, the schedules, the followers, the inbox, the pruner.
    const dueSweep = { close: async () => this.dueSweep?.close() };
    this.drain = new Drain({ ...parts, core, services: [dueSweep, this.scheduling, this.followers, this.inbox, this.data] });
  }

  /** What `Phronomy.open` does: checks the options, opens (creating and
   * migrating) the store, starts the core and the control loop. */
  static async open(options: OpenOptions): Promise<Environment> {
    const { logger, retention, core, store, loop, coordinator, onCoreFailed } = await startControl(options);
    const environment = new Environment(store, core, loop, coordinator, options.recover !== false && !isVisitorStore(store));
    const { recoveries, drain } = environment;
    coordinator.onIdle = () => drain.checkDrained();
    coordinator.busyHooks = environment.queues;
    onCoreFailed((error) => {
      logger.warn(`[phronomy] ${error.message}`);
      coordinator.failEverything(error);
      drain.checkDrained();
    });
    const leasing = leasingStoreOf(store);
    if (leasing) {
      coordinator.onExecutionRecoveryRequired = (agentId, error) => recoveries.executionHeld(agentId, error);
      coordinator.onAgentRecoveryRequired = (agentId) => recoveries.healLater(agentId);
    }
    const partitioned = partitionedStoreOf(store);
    environment.inbox.open(leasing);
    store.listen?.(
      storeSignals({
        logger,
        storePath: store.path,
        takeOver: (agentId, epoch) => recoveries.takeOver(agentId, epoch),
        partitionsTaken:
          partitioned
          && partitionTakeovers(partitioned, {
            logger,
            recovers: () => environment.recoverOnDefine && !environment.closed,
            adopt: (agentId, name) => environment.conversations.adopt(agentId, name),
          }),
        leasesLost: (agentIds) => environment.followers.leasesLost(agentIds),
        inboxApplier: () => environment.inbox.applier,
        remoteStarts: () => environment.inbox.remoteStarts,
        schedulesDue: () => environment.scheduling.start(),
        runningAgents: () => coordinator.runningAgentIds(),
      }),
    );
    environment.data.startRetention(retention);
    environment.startDueSweep();
    // The one scan of unfinished executions: each definition recovers its
    // own from it (docs/decisions/0024).
    if (environment.recoverOnDefine) recoveries.unfinishedByAgent().catch(() => undefined);
    return environment;
  }

  /** Defines an agent. With `id`: one conversation, that agent id, as
   * before. With `name`: a definition whose conversations are
   * `conversation(id)` (docs/decisions/0024-conversations.md). Nothing is
   * written or read per definition: unfinished executions found by the
   * environment's one scan are recovered for the definition they belong
   * to. Defining the same id, or name, twice is refused. */
  agent<OUTPUT = unknown>(definition: AgentDefinition<OUTPUT>): Agent<OutputOf<OUTPUT>>;
  /** Defines a named agent with many conversations: `conversation(id)`. */
  agent<OUTPUT = unknown>(definition: ConversationDefinition<OUTPUT>): DefinedAgent<OutputOf<OUTPUT>>;
  agent(given: AgentDefinition | ConversationDefinition): Agent<unknown> | DefinedAgent<unknown> {
    this.assertOpen("env.agent()");
    const defined = this.definitions.define(given);
    this.scheduling.start();
    return defined;
  }

  /** Scheduled starts in the store, newest first (docs/decisions/0078):
   * by `agentId`, `definition`, `state` (`active`, `cancelled`, `done`), at most `limit` (1,000). */
  schedules(filter?: ScheduleListFilter): Promise<Schedule[]> {
    return this.scheduling.list(filter);
  }

  /** One schedule, or undefined. */
  schedule(scheduleId: string): Promise<Schedule | undefined> {
    return this.scheduling.get(scheduleId);
  }

  /** Cancels a schedule: it fires no more (a firing under way still starts once). */
  cancelSchedule(scheduleId: string): Promise<Schedule> {
    return this.scheduling.cancel(scheduleId);
  }

  /** Fires a schedule now, keeping its next slot (or firing that slot, if
   * it is due); settles with the schedule once the start was made
   * (`lastFiring`) or refused. Each slot fires once: a second run now in
   * the same millisecond is `INVALID_INPUT`, `details.reason:
   * "fired_this_instant"` (docs/decisions/0098). */
  runSchedule(scheduleId: string, options?: RunScheduleOptions): Promise<Schedule> {
    return this.scheduling.runNow(scheduleId, options);
  }

  /** A firing's start: an ordinary start of the conversation, keyed by its
   * slot; undefined when its definition is not defined here. */
  /** The definition a schedule's conversation has here, if it has one. */
  private scheduledKind(row: ScheduleRow): ReturnType<Conversations["kindOf"]> {
    const kind = this.conversations.kindOf(row.agentId, row.definition);
    if (kind === undefined || (row.definition === undefined) !== (kind.name === undefined)) return undefined;
    return kind;
  }

  private scheduledStart(row: ScheduleRow, idempotencyKey: string): Run | undefined {
    const kind = this.scheduledKind(row);
    if (kind === undefined) return undefined;
    const agent = new Agent({ environment: this, kind, ready: Promise.resolve() }, row.agentId);
    return agent.start(row.input as never, { ...row.options, idempotencyKey });
  }

  /** Deletes an agent's durable data. Refused with AgentBusyError while the
   * agent has an execution running or suspended — in the store (whether or
   * not the agent is defined here) or admitted in this process. */
  purgeAgent(agentId: string): Promise<void> {
    return this.data.purgeAgent(agentId);
  }

  /** Deletes finished executions now (`runtime/retention.ts`): those that
   * finished more than `olderThanMs` ago, or else past their agent's
   * retention; of `agentId` only, or of every agent. Returns what was
   * removed. Unfinished and suspended executions are never touched. */
  prune(options?: PruneOptions): Promise<PruneReport> {
    return this.data.prune(options);
  }

  /** Waits for an execution's outcome: another observer of a live
   * execution (all are settled together), or the durable outcome of one
   * that already ended. An execution suspended for approval (now or
   * later) rejects it with ApprovalRequiredError (docs/decisions/0018). */
  wait(executionId: string): Run {
    return this.followers.wait(executionId);
  }

  /** Recovers the unfinished executions of every defined agent (SPEC §6.2)
   * and reports each one; executions of agents not defined here are
   * reported as waiting for their agent. */
  async recover(): Promise<RecoveredExecution[]> {
    this.assertOpen("env.recover()");
    this.assertOwner("env.recover()");
    this.assertStoreWritable("env.recover()");
    return this.recoveries.recover();
  }

  /** @internal What a store fault held for the agent, recovered from its rows read now (docs/decisions/0057). */
  readonly recoverHeld = (agentId: string): Promise<void> => this.recoveries.recoverHeld(agentId);

  /** @internal A start refused busy: whether that id is admitted or prepared here, or in the store (docs/decisions/0057). */
  admittedAs(executionId: string): Promise<boolean> {
    return this.coordinator.admittedAs(executionId, () => this.execution(executionId).then((row) => row !== undefined));
  }

  /** @internal Before a start's `Admit`: this process's own lease settling is a recovery the core knows (agent-recoveries.ts). */
  readonly settleLease = (entry: AgentEntry): void => this.recoveries.settleLease(entry);

  /** @internal The store's facts on where a start the core placed elsewhere goes (docs/decisions/0031, 0062). */
  readonly placementOf = (agentId: string): StartPlacement => this.inbox.placementOf(agentId);

  /** @internal On the loop: a conversation the core recorded owned elsewhere that the store says this process holds: a retake (retakes.ts). */
  readonly takenBack = (agent: AgentEntry): void => this.recoveries.takenBack(agent);

  /** @internal A read of the store failed: the conversation is held in the core and recovered after its backoff (agent-recoveries.ts). */
  readonly healLater = (agentId: string): void => this.recoveries.healLater(agentId);

  /** @internal A keyed start whose execution is in the store already: `waiter` follows it. */
  readonly followExecution = (agentId: string, executionId: string, waiter: Waiter, refusal?: PhronomyError): void =>
    this.followers.followExecution(agentId, executionId, waiter, refusal);

  /** @internal A caller waiting here on an execution another process runs now: followed until it ends. */
  readonly followElsewhere = (agentId: string, executionId: string, waiter: Waiting): void => this.followers.followElsewhere(agentId, executionId, waiter);

  /** @internal Where a decision on a conversation here (`agent.resume`) this process may not apply is filed, as the core decides (inbox-claims.ts). */
  readonly remoteResumesFor = (agent: AgentEntry): RemoteResumes | undefined => this.inbox.resumePlacementOf(agent);
  /** @internal `agent.messages()`: the history, read here. */
  readonly history = (agentId: string, limit: number): ReturnType<EnvironmentReads["history"]> => this.reads.history(agentId, limit);

  /** @internal Where an operation by id goes with no conversation here to ask: the core's verdict (by-id-placement.ts). */
  readonly placeById = (source: ByIdSource, agentId: string, here: boolean): Promise<ByIdPlacement> => this.byId.place(source, agentId, here);

  /** The recovery report of an agent defined in this environment. */
  recovery(agentId: string): Promise<RecoveredExecution[]> {
    return this.recoveries.recovery(agentId);
  }

  /** Sends the event a `waitForEvent()` wait with this key waits for
   * (docs/decisions/0077): resumes that wait exactly once with `payload`
   * (checked against its `payloadSchema`: `INVALID_INPUT`, the wait stays
   * pending), here or through the process that runs it. With no wait for
   * the key yet, the signal is kept (a day, `keepForMs`) for the next wait
   * with it, or refused with `ifWaiting: true` (`SIGNAL_REFUSED`). */
  signal(key: string, payload: unknown, options?: SignalOptions): Promise<SignalResult> {
    return this.signals.signal(key, payload, options);
  }

  /** Approvals waiting for a decision, oldest first. */
  pendingApprovals(): Promise<PendingApproval[]> {
    return this.reads.pendingApprovals();
  }

  /** Cancels an execution by id (docs/decisions/0026): live here, as its
   * start's AbortSignal would (a suspended one ends at once); run by
   * another process, through the approval inbox. Settles with how it
   * ended (`cancelled`, or the outcome it reached first); an unknown id is
   * ExecutionNotFoundError, an ended one ExecutionEndedError. */
  async cancel(executionId: string, options: CancelOptions = {}): Promise<CancelResult> {
    return this.byId.cancel(executionId, options);
  }

  /** Executions in the store, newest first, filtered by durable `status`
   * (preparing, active, suspended, terminal), `outcome` (completed, failed,
   * suspended, handed_off, coordination_wait) and `agentId`; an unknown key
   * or value is refused with InvalidInputError naming the allowed ones.
   * With `status: "recovery_required"`: the executions this environment
   * left for recovery (their durable rows are untouched, still unfinished). */
  executions(filter: ExecutionListFilter | (Omit<ExecutionListFilter, "status"> & { status: "recovery_required" }) = {}): Promise<ExecutionRow[]> {
    return this.reads.executions(filter);
  }

  /** One execution's row; a message still queued reads as status `queued`. */
  execution(executionId: string): Promise<ExecutionRow | undefined> {
    return this.reads.execution(executionId);
  }

  /** @internal The definitions made here, by name or id (`env.admin.start`). */
  definedHandles(): ReadonlyMap<string, DefinedHandle> {
    return this.definitions.handles;
  }

  /** @internal A handle on a conversation live here (or defined by its id). */
  agentHandle(agentId: string): Agent | undefined {
    return this.conversations.handleOf(this, agentId);
  }

  /** The execution's durable timeline: input, barriers, results, terminal;
   * each step with the attempt it belongs to (`env.retry`). */
  timeline(executionId: string): Promise<(StoredStep & { readonly attempt: number })[]> {
    return this.reads.timeline(executionId);
  }

  /** The execution with its parent and its children (agents used as tools,
   * docs/decisions/0079), read from the store; undefined for an unknown id. */
  executionTree(executionId: string): Promise<ExecutionTree | undefined> {
    return executionTreeOf({ execution: (id) => this.reads.execution(id), timeline: (id) => this.reads.timeline(id) }, executionId);
  }

  /** A Run, or an execution by id, as the AI SDK's UI message stream a chat
   * UI (`useChat`) reads; each chunk carries a `position`, and `resumeAt`
   * continues after one — here, in another process on the store, or after
   * a restart (docs/decisions/0036, `host/chat/chat-stream.ts`). A Run's
   * stream reads its `run.events`: do not iterate them as well. */
  async stream(target: Run | string, options: StreamOptions = {}): Promise<ReadableStream<ChatChunk>> {
    this.assertOpen("env.stream()");
    return this.reads.stream(target, options);
  }

  /** Continues a failed, timed-out or cancelled execution from its last
   * durable point as a new attempt (docs/decisions/0026): same id, same
   * step keys (tools keep their idempotency keys; recorded results are
   * reused). The Run settles with the new attempt's outcome. Refused with
   * RetryRefusedError for one that completed or has not ended, AGENT_BUSY
   * while its conversation is busy, and in a process that does not own it. */
  retry(executionId: string, options: RetryOptions = {}): Run {
    return this.byId.retry(executionId, options);
  }

  /** Whether `close()` was called. */
  get closed(): boolean {
    return this.drain.closed;
  }

  /** Drains and closes: refuses new starts, lets in-flight model calls and
   * tools settle and their commits land, fails the waits on suspended
   * executions with `RuntimeShutdownError` (the executions stay in the
   * store, for the next environment), then closes the store. The same
   * promise for every call. */
  close(): Promise<void> {
    this.scheduling.halt();
    return this.drain.close();
  }

  /** @internal */
  assertOpen(what: string): void {
    this.drain.assertOpen(what);
  }

  /** @internal Refuses new work once the store can no longer write (docs/decisions/0021). */
  assertStoreWritable(what: string): void {
    refuseUnwritableStore(this.store, what);
  }

  /** The administrative surface the CLI and the dashboard use
   * (`host/runtime/admin.ts`, docs/decisions/0038). */
  get admin(): Admin {
    this.adminSurface ??= new Admin(this);
    return this.adminSurface;
  }

  /** Opened as a visitor of a SQLite store (docs/decisions/0015). */
  get visitor(): boolean {
    return isVisitorStore(this.store);
  }

  /** The due sweep (docs/decisions/0076): an owner's, on a store that
   * indexes due waits; armed by every wait with a due time suspended here. */
  private startDueSweep(): void {
    const store = dueWaitsStoreOf(this.store);
    if (store === undefined || this.visitor) return;
    const { logger } = this.coordinator.settings;
    const host = { logger, core: this.coordinator.settings.core, closed: () => this.closed, agentHandle: (agentId: string) => this.agentHandle(agentId) };
    const sweep = new DueSweep({ store, logger, now: () => this.coordinator.now(), fire: (wait) => fireDueWait(host, wait) });
    this.coordinator.onWaitDue = (dueAt) => sweep.waitCommitted(dueAt);
    this.dueSweep = sweep;
    sweep.start();
  }

  /** @internal Refuses what only the store's owner may do. */
  assertOwner(what: string): void {
    if (this.visitor) refuseVisitor(this.store, what);
  }
}
