// An environment: one control core, one control loop, one offload and one
// store, created by `Phronomy.open` and passed down — no module-level state,
// so any number of isolated environments can live in one process.
//
// `close()` drains: new starts are refused with RuntimeShutdownError, work in
// flight runs to its terminal outcome, executions suspended for approval
// stay durable (their local waiters are told the environment closed), then
// the store closes. A second `close()` returns the same promise.
//
// What `Phronomy.open` takes is checked in `open-options.ts`; the recoveries
// of the agents (the one scan, `env.recover()`, takeovers) run in
// `agent-recoveries.ts`.

import { transferError } from "../store/error-transfer.js";
import { Admin, type PendingApproval } from "./admin.js";
import { MessageKind as M } from "../../assembly/abi.js";
import { ControlCore } from "../core/control-core.js";
import { resolveTools } from "../agent/tools.js";
import { CancellationError, ExecutionRehydrationRequiredError, InvalidInputError, PhronomyError, RuntimeShutdownError, StoreError } from "../errors.js";
import { agentHasUnfinishedExecutions } from "../store/purge-refusal.js";
import type { ExecutionStore } from "../store/store.js";
import { isVisitorStore } from "../store/sqlite/visitor-mark.js";
import { checkListFilter, executionStatusNames } from "../store/check-operation.js";
import type { ExecutionListFilter, ExecutionRow, StoredStep } from "../store/records.js";
import { Agent } from "./agent.js";
import { Conversations } from "./conversations.js";
import { DefinedAgent } from "./defined-agent.js";
import { ControlLoop } from "./control-loop.js";
import { Coordinator } from "./coordinator.js";
import {
  MEMORY_WINDOW_DEFAULT,
  validateAgentDefinition,
  validateAgentId,
  type AgentDefinition,
  type AgentSettings,
  type ConversationDefinition,
} from "./options.js";
import { Tracer } from "./tracing.js";
import { Waiter, type Run, type Waiting } from "./run.js";
import { asPhronomyError } from "./session.js";
import { settleFromRow } from "./durable-outcome.js";
import { emitToWaiter, outcomeEventOf, rejectSuspendedObserver, resolveWaiter, settleWaiterWithError } from "./delivery.js";
import type { RecoveredExecution } from "./recovery.js";
import { leasingStoreOf, type LeasingStore } from "./leases.js";
import { AgentRecoveries } from "./agent-recoveries.js";
import { checkOpenOptions, openStoreAt, type OpenOptions } from "./open-options.js";
import { partitionedStoreOf, partitionTakeovers } from "./partition-takeover.js";
import { storeSignals } from "./store-signals.js";
import { checkCapabilities } from "../store/capabilities.js";
import { InboxApplier, inboxStoreOf, type ClaimedDecision } from "./approval-inbox.js";
import { RemoteResumes } from "./remote-resume.js";
import { RemoteStarts, startInboxStoreOf } from "./remote-start.js";
import { startTiming } from "../store/start-timing.js";
import type { AgentInput } from "./agent.js";
import type { StartOptions } from "./options.js";
import { DurableWatches } from "./durable-watch.js";
import { followLostConversations } from "./lost-leases.js";
import type { ApprovalRequest } from "./events.js";
import { checkPruneOptions, Retention, type PruneOptions, type PruneReport, type RetentionOptions } from "./retention.js";
import { pruningStoreOf } from "../store/prune.js";
import { ConversationQueues } from "./conversation-queue.js";
import { executionOrQueued, listWithQueued } from "./queued-rows.js";
import { applyFiledRetry, checkRetryOptions, retryById, withAttempts, type RetryHost, type RetryOptions } from "./retry.js";
import { ChatStreams, type ChatChunk, type StreamOptions } from "../chat/chat-stream.js";
import { applyFiledCancel, cancelById, checkCancel, type CancelHost, type CancelOptions, type CancelResult } from "./cancel-by-id.js";
import { checkSupportedRuntime } from "./supported-runtime.js";

/** A running Phronomy on one store: the agents defined on it, their
 * executions, recovery, retention, and `close()`. Made by `Phronomy.open`. */
export class Environment {
  /** @internal Conversations: core entries on first use, let go when idle
   * (`conversations.ts`, docs/decisions/0024). */
  readonly conversations: Conversations;
  private closing: Promise<void> | undefined;
  private drainWaiters: (() => void)[] = [];

  /** The recoveries of its agents: at definition, `env.recover()`, after a
   * takeover (`agent-recoveries.ts`). */
  private readonly recoveries: AgentRecoveries;
  /** With an approval inbox (PostgreSQL, docs/decisions/0011-approval-inbox.md):
   * applies decisions filed elsewhere for the agents held here, and files
   * decisions on agents held elsewhere. */
  private inboxApplier: InboxApplier | undefined;
  private remoteResumes: RemoteResumes | undefined;
  /** Starts filed for the processes holding their partitions (docs/decisions/0031). */
  private remoteStarts: RemoteStarts | undefined;
  /** `env.wait` on executions other processes run (docs/decisions/0018). */
  private durableWatches: DurableWatches | undefined;
  /** Prunes finished executions (undefined: a visitor, or a store that cannot). */
  private retention: Retention | undefined;
  /** Chat streams served here (docs/decisions/0036). */
  private chatStreams: ChatStreams | undefined;
  /** @internal Messages queued behind busy conversations (docs/decisions/0025). */
  readonly queues: ConversationQueues = new ConversationQueues(this);

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
    this.conversations = new Conversations({
      store,
      loop,
      coordinator,
      recovers: recoverOnDefine,
      unfinishedByAgent: () => this.recoveries.unfinishedByAgent(),
      unfinishedReadAt: () => this.recoveries.unfinishedReadAt,
      queuedAtOpen: () => this.recoveries.queuedAtOpen,
      recoverEntry: (entry, rows, readAt) => this.recoveries.recoverAgentEntry(entry, undefined, rows, readAt),
      conversationFreed: (agentId) => this.recoveries.conversationFreed(agentId),
      ownAgent: (agentId) => this.ownAgent(agentId),
      inboxListening: (agentId) => this.inboxApplier?.agentListening(agentId),
      inboxSuspended: (agentId) => {
        this.inboxApplier?.agentSuspended(agentId);
        // Suspended after its lease was lost here (the suspension landed
        // before anyone took the lease): whoever takes it decides it, and
        // its callers here follow it (docs/decisions/0063).
        const leasing = leasingStoreOf(store);
        if (leasing !== undefined && leasing.heldEpochOf(agentId) === undefined) this.leasesLost([agentId]);
      },
      inboxReady: (agentId, ready) => (ready ? this.inboxApplier?.agentReady(agentId) : this.inboxApplier?.agentNotReady(agentId)),
      reportRecovery: (agentId, report) => {
        report.catch(() => undefined);
        this.recoveries.report(agentId, report);
      },
    });
    this.recoveries = new AgentRecoveries({
      store,
      loop,
      coordinator,
      conversations: this.conversations,
      queues: this.queues,
      recoverOnDefine,
      closed: () => this.closed,
      inboxApplier: () => this.inboxApplier,
      follow: (agentId, executionId, waiter) => this.followElsewhere(agentId, executionId, waiter),
    });
  }

  /** What `Phronomy.open` does: checks the options, opens (creating and
   * migrating) the store, starts the core and the control loop. */
  static async open(options: OpenOptions): Promise<Environment> {
    checkSupportedRuntime();
    const { logger, retention } = checkOpenOptions(options);
    const core = await ControlCore.create(options.limits ?? {});
    const store = typeof options.store === "string" ? await openStoreAt(options.store, options, logger) : options.store;
    if (typeof options.store !== "string") checkCapabilities(store);
    let coreFailed: (error: PhronomyError) => void = () => undefined;
    const loop = new ControlLoop(
      (error) => logger.warn(`[phronomy] a control message failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`),
      (error) => coreFailed(error),
    );
    const coordinator = new Coordinator({
      core,
      loop,
      store,
      logger,
      callbackErrorPolicy: options.callbackErrorPolicy ?? "report",
      tracer: new Tracer(),
      now: () => Date.now(),
    });
    const environment = new Environment(store, core, loop, coordinator, options.recover !== false && !isVisitorStore(store));
    coordinator.onIdle = () => environment.checkDrained();
    coordinator.busyHooks = environment.queues;
    coreFailed = (error) => {
      logger.warn(`[phronomy] ${error.message}`);
      coordinator.failEverything(error);
      environment.checkDrained();
    };
    const leasing = leasingStoreOf(store);
    if (leasing) {
      coordinator.onExecutionRecoveryRequired = (agentId, error) => environment.recoveries.executionHeld(agentId, error);
      coordinator.onAgentRecoveryRequired = (agentId) => environment.recoveries.healLater(agentId);
    }
    const partitioned = partitionedStoreOf(store);
    environment.openApprovalInbox(leasing);
    store.listen?.(
      storeSignals({
        logger,
        storePath: store.path,
        takeOver: (agentId, epoch) => environment.recoveries.takeOver(agentId, epoch),
        partitionsTaken:
          partitioned
          && partitionTakeovers(partitioned, {
            logger,
            recovers: () => environment.recoverOnDefine && !environment.closing,
            adopt: (agentId, name) => environment.conversations.adopt(agentId, name),
          }),
        leasesLost: (agentIds) => environment.leasesLost(agentIds),
        inboxApplier: () => environment.inboxApplier,
        remoteStarts: () => environment.remoteStarts,
        runningAgents: () => coordinator.runningAgentIds(),
      }),
    );
    environment.startRetention(retention);
    // The one scan of unfinished executions: each definition recovers its
    // own from it (docs/decisions/0024).
    if (environment.recoverOnDefine) environment.recoveries.unfinishedByAgent().catch(() => undefined);
    return environment;
  }

  /** Defines an agent. With `id`: one conversation, that agent id, as
   * before. With `name`: a definition whose conversations are
   * `conversation(id)` (docs/decisions/0024-conversations.md). Nothing is
   * written or read per definition: unfinished executions found by the
   * environment's one scan are recovered for the definition they belong
   * to. Defining the same id, or name, twice is refused. */
  agent(definition: AgentDefinition): Agent;
  /** Defines a named agent with many conversations: `conversation(id)`. */
  agent(definition: ConversationDefinition): DefinedAgent;
  agent(given: AgentDefinition | ConversationDefinition): Agent | DefinedAgent {
    this.assertOpen("env.agent()");
    const definition = given as Partial<AgentDefinition & ConversationDefinition> & AgentSettings;
    validateAgentDefinition(definition);
    const name = definition.name;
    if (name === undefined ? this.conversations.isDefinedId(definition.id as string) : this.conversations.isDefinedName(name)) {
      const which = name === undefined ? `agent "${definition.id}"` : `the definition named "${name}"`;
      throw new InvalidInputError(`${which} is already defined in this environment; reuse the ${name === undefined ? "Agent" : "DefinedAgent"} it returned`);
    }
    // Retention is the definition's: an agent defined by id may keep its
    // finished executions for a time of its own; a named definition's
    // conversations use the environment's (decision 0024, "Retention").
    if (name === undefined) this.retention?.defineAgent(definition.id as string, definition.retention, definition.memoryWindow ?? MEMORY_WINDOW_DEFAULT);
    else this.retention?.defineConversations(name, definition.retention, definition.memoryWindow ?? MEMORY_WINDOW_DEFAULT);
    const kind = { definition, name, id: name === undefined ? definition.id : undefined, tools: this.resolvedTools(definition.tools) };
    const recovered = this.conversations.define(kind);
    recovered.catch(() => undefined);
    const ready = recovered.then(
      () => undefined,
      () => undefined,
    );
    if (name !== undefined) return new DefinedAgent(this, kind, recovered, ready);
    const agentId = definition.id as string;
    this.recoveries.report(agentId, recovered);
    return new Agent({ environment: this, kind, ready }, agentId);
  }

  /** Tool sets shared by many agents are resolved (checked, their JSON
   * Schemas derived) once. */
  private readonly toolResolutions = new WeakMap<object, ReturnType<typeof resolveTools>>();

  private resolvedTools(tools: AgentSettings["tools"]): ReturnType<typeof resolveTools> {
    if (tools === undefined || typeof tools !== "object" || tools === null) return resolveTools(tools);
    let resolved = this.toolResolutions.get(tools);
    if (!resolved) {
      resolved = resolveTools(tools);
      this.toolResolutions.set(tools, resolved);
    }
    return resolved;
  }

  /** Deletes an agent's durable data. Refused with AgentBusyError while the
   * agent has an execution running or suspended — in the store (whether or
   * not the agent is defined here) or admitted in this process. */
  async purgeAgent(agentId: string): Promise<void> {
    validateAgentId(agentId);
    this.assertOwner(`the purge of agent "${agentId}"`);
    if (this.conversations.liveEntry(agentId) !== undefined) {
      // The durable state decides first, as the store would for an agent
      // not live here: the core's entry is let go only once it can go.
      const unfinished = (await this.store.unfinishedExecutions()).filter((row) => row.agentId === agentId);
      if (unfinished.length > 0)
        throw agentHasUnfinishedExecutions(
          agentId,
          unfinished.map((row) => row.executionId),
        );
      await this.conversations.release(agentId);
    }
    await this.store.purgeAgent(agentId);
  }

  /** Deletes finished executions now (`runtime/retention.ts`): those that
   * finished more than `olderThanMs` ago, or else past their agent's
   * retention; of `agentId` only, or of every agent. Returns what was
   * removed. Unfinished and suspended executions are never touched. */
  async prune(options?: PruneOptions): Promise<PruneReport> {
    this.assertOpen("env.prune()");
    const checked = checkPruneOptions(options);
    this.assertOwner("env.prune()");
    if (this.retention === undefined)
      throw new InvalidInputError(
        `env.prune() was refused: the store at ${this.store.path} cannot prune (a store the application implemented without pruneExecutions)`,
      );
    return this.retention.prune(checked);
  }

  private startRetention(options: RetentionOptions): void {
    const store = pruningStoreOf(this.store);
    if (this.visitor || store === undefined) return;
    const { logger } = this.coordinator.settings;
    this.retention = new Retention({ store, options, logger, now: () => Date.now() });
    this.retention.start();
  }

  /** Waits for an execution's outcome: another observer of a live
   * execution (all are settled together), or the durable outcome of one
   * that already ended. An execution suspended for approval (now or
   * later) rejects it with ApprovalRequiredError (docs/decisions/0018). */
  wait(executionId: string): Run {
    const waiter = new Waiter("", undefined, true);
    const settings = this.coordinator.settings;
    this.loop.post(
      () => {
        const entry = this.coordinator.entryById(executionId);
        if (entry?.recoveryRequired) {
          // Held after a store failure: it moves again only through env.recover(), which the caller must know.
          settleWaiterWithError(
            waiter,
            new ExecutionRehydrationRequiredError(
              `execution ${executionId} is held for recovery after a store failure; call env.recover() (it recovers the execution from its stored row), then wait again`,
              { executionId, agentId: entry.agent.id },
            ),
            settings,
          );
          return;
        }
        if (entry?.suspended) {
          // Told here, not attached through the core: the core counts
          // attached observers until the execution ends (WaitersMax), and a
          // handler polling a suspended execution must not use them up.
          rejectSuspendedObserver(waiter, { executionId, agentId: entry.agent.id }, entry.approvalRequest, settings);
          return;
        }
        if (this.queues.observe(executionId, waiter)) return;
        if (entry) {
          const handle = this.coordinator.requests.add({ type: "attach", waiter });
          this.coordinator.apply(M.AttachWaiter, entry.slot, entry.generation, handle);
          return;
        }
        this.store.getExecution(executionId).then(
          (row) => {
            // A start filed for (or a message queued in) another process: waited for (docs/decisions/0031).
            if (row === undefined && this.remoteStarts !== undefined && !this.closing) return this.remoteStarts.observe(executionId, waiter);
            const running = row !== undefined && row.status !== "terminal" && row.status !== "suspended";
            if (running && this.runsElsewhere(row.agentId)) {
              if (this.closing)
                return settleWaiterWithError(
                  waiter,
                  new RuntimeShutdownError(`a wait for execution ${executionId}`, { executionId, agentId: row.agentId }),
                  settings,
                );
              this.follower().watch(executionId, row.agentId, waiter);
              return;
            }
            settleFromRow(waiter, executionId, row, settings);
          },
          (error: unknown) => settleWaiterWithError(waiter, asPhronomyError(error, "STORE"), settings),
        );
      },
      {
        completion: { fail: (error) => settleWaiterWithError(waiter, asPhronomyError(error, "INTERNAL"), settings) },
        label: `a wait for execution ${executionId}`,
      },
    );
    return waiter;
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

  /** @internal What a store fault held for the agent, recovered from its
   * rows read now (a decision sent again after a commit whose outcome was
   * not known: docs/decisions/0057). */
  recoverHeld(agentId: string): Promise<void> {
    return this.recoveries.recoverHeld(agentId);
  }

  /** @internal A start of `executionId` refused busy: whether it meets
   * one of that id admitted or being prepared here, else its row in the
   * store (docs/decisions/0057). */
  admittedAs(executionId: string): Promise<boolean> {
    return this.coordinator.admittedAs(executionId, () => this.execution(executionId).then((row) => row !== undefined));
  }

  /** With a leasing store: takes the agent's lease and says when (the
   * rows recovery reads must be read after it), or false when another live
   * process owns it — its starts are refused here, and the store keeps
   * trying; `takeOver` recovers it once taken. Without one: undefined. */
  private async ownAgent(agentId: string): Promise<number | false | undefined> {
    const leasing: LeasingStore | undefined = leasingStoreOf(this.store);
    if (!leasing) return undefined;
    const acquisition = await leasing.acquireLease(agentId);
    if (acquisition.acquired) {
      // Taken back on demand: the store reports no takeover for the agent
      // whose start took it, so what a fencing refusal left held here while
      // it was lost is recovered now.
      void this.conversations.liveEntry(agentId)?.then(
        (entry) => {
          if (this.coordinator.recoveryRequiredEntriesOf(entry).length > 0) this.recoveries.recoverAfterRetake(agentId, acquisition.epoch);
        },
        () => undefined,
      );
      return performance.now();
    }
    const { logger } = this.coordinator.settings;
    // Filed for that process (docs/decisions/0031): nothing to warn about.
    if (this.remoteStarts !== undefined)
      logger.debug?.(
        `[phronomy] agent "${agentId}" is owned by ${acquisition.owner} until ${new Date(acquisition.expiresAt).toISOString()}: its starts are filed for that process`,
      );
    else
      logger.warn(
        `[phronomy] agent "${agentId}" is owned by ${acquisition.owner} until ${new Date(acquisition.expiresAt).toISOString()}: its starts are refused here (AGENT_BUSY); this process takes it over, and recovers it, if that lease expires`,
      );
    return false;
  }

  /** @internal What a start of the agent waits for before it is posted:
   * its lease settling here, then the recovery of a takeover in progress,
   * if any. */
  admissionGate(agentId: string): Promise<unknown> | undefined {
    // First this process's own lease tick, when it is renewing or taking
    // back the agent's partition (a start is not refused for a race this
    // process resolves itself, docs/decisions/0055); then the recovery of
    // a takeover that tick may have started.
    const settling = partitionedStoreOf(this.store)?.partitionSettling(agentId);
    if (settling === undefined) return this.recoveries.admissionGate(agentId);
    return settling.then(() => this.recoveries.admissionGate(agentId));
  }

  /** The approval inbox of a store that has one (PostgreSQL, SQLite):
   * decisions filed elsewhere for agents held here are applied through the
   * local resume path; `remoteResumesFor` files the others. A SQLite
   * owner holds every agent; a SQLite visitor only files. */
  private openApprovalInbox(leasing: LeasingStore | undefined): void {
    const inbox = inboxStoreOf(this.store);
    if (!inbox) return;
    const { settings } = this.coordinator;
    this.remoteResumes = new RemoteResumes(inbox, settings);
    if (this.visitor) return;
    const starts = startInboxStoreOf(this.store);
    // A process that takes no share (`balance: false`, the CLI's commands)
    // runs its own starts or refuses them, as before.
    if (starts !== undefined && leasing !== undefined && starts.balancing) {
      this.remoteStarts = new RemoteStarts(starts, settings);
    }
    const holds = leasing ? (agentId: string, epoch: number) => leasing.leaseOf(agentId)?.epoch === epoch : () => true;
    const partitioned = partitionedStoreOf(this.store);
    const partitionHeld = partitioned && ((agentId: string, epoch: number) => partitioned.partitionHeldAt(agentId, epoch));
    const mayHold = partitionHeld ?? holds;
    // Conversations not live here: a SQLite owner claims their retries, a
    // PostgreSQL owner their filed starts (a start makes them live).
    this.inboxApplier = new InboxApplier(
      inbox,
      (claim) => this.applyClaim(claim),
      holds,
      settings.logger,
      leasing === undefined || this.remoteStarts !== undefined,
      mayHold,
    );
  }

  private applyClaim(claim: ClaimedDecision): Promise<PhronomyError | undefined> {
    if (claim.kind === "start") return this.applyFiledStart(claim);
    if (claim.kind === "cancel") return applyFiledCancel(this.cancelHost, claim.executionId, claim.reason ?? undefined);
    if (claim.kind === "retry") return applyFiledRetry(this.retryHost, claim.executionId, claim.executionRevision);
    const agent = this.conversations.handleOf(this, claim.agentId);
    if (!agent)
      return Promise.resolve(
        new InvalidInputError(
          `agent "${claim.agentId}" is no longer defined in the process that owns it; decision ${claim.decisionId} on execution ${claim.executionId} was not applied`,
          { agentId: claim.agentId, executionId: claim.executionId },
        ),
      );
    return agent.applyFiledDecision(claim.executionId, {
      approvalId: claim.approvalId,
      approved: claim.approved,
      ...(claim.reason !== null ? { reason: claim.reason } : {}),
    });
  }

  /** The owner's side of a start filed by another process
   * (docs/decisions/0031): started here through `agent.start`'s own path
   * (the takeover's admission gate, the busy policy, the fenced
   * preparation) under the execution id it was filed with. Undefined once
   * admitted or queued — or when that id is in the store already (a former
   * owner admitted it; its recovery finishes it) — else the refusal. */
  private applyFiledStart(claim: ClaimedDecision): Promise<PhronomyError | undefined> {
    const context = { agentId: claim.agentId, executionId: claim.executionId };
    const start = claim.start;
    if (start === undefined) return Promise.resolve(new InvalidInputError(`the start filed as execution ${claim.executionId} carries no input`, context));
    const kind = this.conversations.liveKind(claim.agentId) ?? this.conversations.kindOf(claim.agentId, start.definition);
    if (kind === undefined) {
      const define = start.definition !== undefined ? `the definition named "${start.definition}" is` : `agent "${claim.agentId}" is`;
      return Promise.resolve(
        new InvalidInputError(
          `${define} not defined in the process that holds the conversation's partition (${this.store.path}); the start filed as execution ${claim.executionId} was not run — define it in every process that may own it`,
          { ...context, details: { reason: "agent_not_defined" } },
        ),
      );
    }
    const agent = new Agent({ environment: this, kind, ready: Promise.resolve() }, claim.agentId);
    const run = agent.startFiled(start.input as unknown as AgentInput, start.options as StartOptions, claim.executionId);
    if (startTiming.enabled) void run.result.finally(() => startTiming.mark(claim.executionId, "ended")).catch(() => undefined);
    return run.executionId.then(
      () => undefined,
      async (error: unknown) => {
        const refusal = asPhronomyError(error, "INTERNAL");
        if (refusal.code === "INVALID_INPUT" && refusal.details?.["reason"] === "execution_exists") return undefined;
        // Busy with this very id (its key started here meanwhile, maybe
        // still being prepared): it runs (docs/decisions/0057).
        if (refusal.code !== "AGENT_BUSY") return refusal;
        return (await this.admittedAs(claim.executionId).catch(() => false)) ? undefined : refusal;
      },
    );
  }

  /** @internal Where `agent.start` sends a start this process may not run:
   * the inbox, when the store files starts and another process holds the
   * conversation's partition (docs/decisions/0031); undefined otherwise. */
  remoteStartsFor(agentId: string): RemoteStarts | undefined {
    if (this.remoteStarts === undefined || this.closing) return undefined;
    const leasing = leasingStoreOf(this.store);
    if (leasing === undefined || leasing.leaseOf(agentId) !== undefined) return undefined;
    // Held here but not renewed in time: refused here (lease_not_held) until
    // the next renewal, as before — never filed for itself. Nor when its
    // lease lapsed here (the database away longer than the lease) and
    // nobody took it since: this process takes it back at its next tick,
    // and a start filed meanwhile went to itself (docs/decisions/0058).
    const partitioned = partitionedStoreOf(this.store);
    if (partitioned !== undefined && (partitioned.partitionHeld(agentId) || partitioned.partitionLapsedHere(agentId))) return undefined;
    return this.remoteStarts;
  }

  /** @internal A keyed start whose execution is in the store already:
   * `waiter` follows it (from the store on PostgreSQL; as `env.wait`
   * otherwise). */
  followExecution(agentId: string, executionId: string, waiter: Waiter): void {
    if (this.remoteStarts !== undefined) return this.remoteStarts.follow(agentId, executionId, waiter);
    const settings = this.coordinator.settings;
    const observed = this.wait(executionId);
    observed.executionId.then(
      (id) => waiter.knowExecutionId(id),
      () => undefined,
    );
    observed.result.then(
      (result) => {
        if (result.outcome === "completed") emitToWaiter(waiter, { type: "done", executionId, output: result.output, usage: result.usage }, settings);
        else if (result.handoff) emitToWaiter(waiter, { type: "handoff", executionId, handoff: result.handoff }, settings);
        // Under the callback-error policy, as a live Run (decision 0056).
        resolveWaiter(waiter, result, outcomeEventOf(result), settings);
      },
      (error: unknown) => settleWaiterWithError(waiter, asPhronomyError(error, "INTERNAL"), settings),
    );
  }

  /** @internal A caller waiting here on an execution (or a message queued
   * under its id) that another process runs now: followed until it ends. */
  followElsewhere(agentId: string, executionId: string, waiter: Waiting): void {
    this.follower().follow(executionId, agentId, waiter);
  }

  /** The one follower of executions run elsewhere (durable-watch.ts). */
  private follower(): DurableWatches {
    this.durableWatches ??= new DurableWatches(this.store, this.coordinator.settings);
    return this.durableWatches;
  }

  /** The store says this process lost the conversations' leases: every
   * caller waiting here on one of their executions follows it to wherever
   * it runs next (lost-leases.ts). */
  private leasesLost(agentIds: readonly string[]): void {
    if (this.closing) return;
    this.loop.post(
      () =>
        followLostConversations(
          {
            entriesOfAgent: (agentId) => this.coordinator.entriesOfAgentId(agentId),
            followQueuedElsewhere: (agentId) => this.queues.followQueuedElsewhere(agentId),
            follow: (executionId, agentId, waiter) => this.followElsewhere(agentId, executionId, waiter),
          },
          agentIds,
        ),
      { label: `the callers of conversations whose lease moved away (${agentIds.join(", ")})` },
    );
  }

  /** @internal Where `agent.resume` sends a decision on an execution not
   * live here: the approval inbox when another process holds the agent's
   * lease (or nobody does); undefined when the decision is this process's
   * to apply. */
  remoteResumesFor(agentId: string): RemoteResumes | undefined {
    if (this.visitor) return this.remoteResumes;
    const leasing = leasingStoreOf(this.store);
    return leasing && leasing.leaseOf(agentId) === undefined ? this.remoteResumes : undefined;
  }

  /** An execution of this agent is run by another process: this is a
   * visitor, or the agent's lease (PostgreSQL) is not held here. */
  private runsElsewhere(agentId: string): boolean {
    if (this.visitor) return true;
    const leasing = leasingStoreOf(this.store);
    return leasing !== undefined && leasing.leaseOf(agentId) === undefined;
  }

  private async closeApprovalInbox(): Promise<void> {
    await this.durableWatches?.close();
    await this.remoteStarts?.close();
    await this.remoteResumes?.close();
    await this.inboxApplier?.close();
  }

  /** The recovery report of an agent defined in this environment. */
  recovery(agentId: string): Promise<RecoveredExecution[]> {
    return this.recoveries.recovery(agentId);
  }

  /** Approvals waiting for a decision, oldest first. */
  async pendingApprovals(): Promise<PendingApproval[]> {
    const rows = await this.store.unfinishedExecutions();
    return rows
      .filter((row) => row.status === "suspended" && row.approvalRequest !== null)
      .map((row) => {
        const request = row.approvalRequest as unknown as ApprovalRequest;
        return { executionId: row.executionId, agentId: row.agentId, request, since: request.requestedAt };
      })
      .sort((a, b) => a.since - b.since);
  }

  /** Cancels an execution by id (docs/decisions/0026): live here, as its
   * start's AbortSignal would (a suspended one ends at once); run by
   * another process, through the approval inbox. Settles with how it
   * ended (`cancelled`, or the outcome it reached first); an unknown id is
   * ExecutionNotFoundError, an ended one ExecutionEndedError. */
  async cancel(executionId: string, options: CancelOptions = {}): Promise<CancelResult> {
    checkCancel(executionId, options);
    this.assertOpen(`the cancel of execution ${executionId}`);
    return cancelById(this.cancelHost, executionId, options.reason);
  }

  /** The store keeps filed starts and this process may write to it. */
  private filesStarts(): boolean {
    return !this.visitor && startInboxStoreOf(this.store) !== undefined;
  }

  private get cancelHost(): CancelHost {
    return {
      coordinator: this.coordinator,
      loop: this.loop,
      store: this.store,
      remoteFor: (agentId) => this.remoteResumesFor(agentId),
      recoveredHere: (row) => this.conversations.liveEntry(row.agentId) !== undefined || this.conversations.kindOfRow(row) !== undefined,
      cancelQueued: (executionId, reason) => this.queues.cancelQueued(executionId, reason),
      readRow: (executionId) => executionOrQueued(this.store, executionId),
      // Any process that may write may cancel a filed start, one that takes
      // no share (the CLI's) included; a Run here following it settles now.
      ...(this.filesStarts()
        ? {
            cancelFiledStart: async (executionId: string, reason: string | undefined) => {
              const error = JSON.stringify(transferError(new CancellationError({ executionId }, reason)));
              const found = await startInboxStoreOf(this.store)!.cancelFiledStart(executionId, error, Date.now());
              // Committed: a Run here following the start settles now (docs/decisions/0047).
              if (found?.state === "cancelled")
                this.remoteStarts?.cancelledHere({
                  executionId,
                  execution: undefined,
                  queued: false,
                  decisionState: "refused",
                  decisionError: error,
                  steps: [],
                });
              return found;
            },
            cancelledQueued: (row: ExecutionRow) =>
              this.remoteStarts?.cancelledHere({
                executionId: row.executionId,
                execution: row,
                queued: false,
                decisionState: undefined,
                decisionError: null,
                steps: [],
              }),
          }
        : {}),
    };
  }

  /** Executions in the store, newest first, filtered by durable `status`
   * (preparing, active, suspended, terminal), `outcome` (completed, failed,
   * suspended, handed_off, coordination_wait) and `agentId`; an unknown key
   * or value is refused with InvalidInputError naming the allowed ones.
   * With `status: "recovery_required"`: the executions this environment
   * left for recovery (their durable rows are untouched, still unfinished). */
  async executions(filter: ExecutionListFilter | (Omit<ExecutionListFilter, "status"> & { status: "recovery_required" }) = {}): Promise<ExecutionRow[]> {
    checkListFilter(filter, "env.executions()", [...executionStatusNames, "queued", "recovery_required"]);
    if (filter.status !== "recovery_required") return listWithQueued(this.store, filter as ExecutionListFilter);
    const ids = new Set(this.coordinator.recoveryRequiredIds());
    const rows = await this.store.unfinishedExecutions();
    return rows.filter(
      (row) =>
        ids.has(row.executionId)
        && (filter.agentId === undefined || row.agentId === filter.agentId)
        && (filter.outcome === undefined || row.outcome === filter.outcome),
    );
  }

  /** One execution's row; a message still queued reads as status `queued`. */
  execution(executionId: string): Promise<ExecutionRow | undefined> {
    return executionOrQueued(this.store, executionId);
  }

  /** @internal A handle on a conversation live here (or defined by its id). */
  agentHandle(agentId: string): Agent | undefined {
    return this.conversations.handleOf(this, agentId);
  }

  /** The execution's durable timeline: input, barriers, results, terminal;
   * each step with the attempt it belongs to (`env.retry`). */
  async timeline(executionId: string): Promise<(StoredStep & { readonly attempt: number })[]> {
    return withAttempts(await this.store.listSteps(executionId));
  }

  /** A Run, or an execution by id, as the AI SDK's UI message stream a chat
   * UI (`useChat`) reads; each chunk carries a `position`, and `resumeAt`
   * continues after one — here, in another process on the store, or after
   * a restart (docs/decisions/0036, `host/chat/chat-stream.ts`). A Run's
   * stream reads its `run.events`: do not iterate them as well. */
  async stream(target: Run | string, options: StreamOptions = {}): Promise<ReadableStream<ChatChunk>> {
    this.assertOpen("env.stream()");
    this.chatStreams ??= new ChatStreams({
      execution: (executionId) => this.execution(executionId),
      timeline: (executionId) => this.store.listSteps(executionId),
      wait: (executionId) => this.wait(executionId),
      closed: () => this.closed,
      storePath: this.store.path,
      logger: this.coordinator.settings.logger,
    });
    return this.chatStreams.stream(target, options);
  }

  /** Continues a failed, timed-out or cancelled execution from its last
   * durable point as a new attempt (docs/decisions/0026): same id, same
   * step keys (tools keep their idempotency keys; recorded results are
   * reused). The Run settles with the new attempt's outcome. Refused with
   * RetryRefusedError for one that completed or has not ended, AGENT_BUSY
   * while its conversation is busy, and in a process that does not own it. */
  retry(executionId: string, options: RetryOptions = {}): Run {
    try {
      checkRetryOptions(executionId, options);
      this.assertOpen(`the retry of execution ${executionId}`);
      this.assertStoreWritable(`the retry of execution ${executionId}`);
    } catch (error) {
      const waiter = new Waiter("", typeof options?.onEvent === "function" ? options.onEvent : undefined);
      settleWaiterWithError(waiter, asPhronomyError(error, "INTERNAL"), this.coordinator.settings);
      return waiter;
    }
    return retryById(this.retryHost, executionId, options);
  }

  private get retryHost(): RetryHost {
    const leasing = leasingStoreOf(this.store);
    return {
      coordinator: this.coordinator,
      loop: this.loop,
      store: this.store,
      useConversation: (row) => {
        const kind = this.conversations.liveKind(row.agentId) ?? this.conversations.kindOfRow(row);
        return kind === undefined ? undefined : this.conversations.use(row.agentId, kind);
      },
      // Filed when another process runs the conversation: always from a
      // visitor; on PostgreSQL while another process holds the agent.
      elsewhere: async (agentId) => {
        if (this.visitor) return this.remoteResumes !== undefined ? { filed: this.remoteResumes } : undefined;
        if (!leasing || leasing.leaseOf(agentId) !== undefined) return undefined;
        const holder = await this.leaseHolder(agentId);
        if (holder !== undefined && this.remoteResumes !== undefined) return { filed: this.remoteResumes };
        return {
          refused:
            holder === undefined
              ? `no process here holds agent "${agentId}"'s lease`
              : `agent "${agentId}" is owned by ${holder.owner} (its lease runs until ${new Date(holder.expiresAt).toISOString()})`,
        };
      },
    };
  }

  private leaseHolder(agentId: string): Promise<{ readonly owner: string; readonly expiresAt: number } | undefined> {
    return leasingStoreOf(this.store)?.leaseHolder(agentId) ?? Promise.resolve(undefined);
  }

  /** Whether `close()` was called. */
  get closed(): boolean {
    return this.closing !== undefined;
  }

  /** Drains and closes: refuses new starts, lets in-flight model calls and
   * tools settle and their commits land, fails the waits on suspended
   * executions with `RuntimeShutdownError` (the executions stay in the
   * store, for the next environment), then closes the store. The same
   * promise for every call. */
  close(): Promise<void> {
    this.closing ??= this.drainAndClose();
    return this.closing;
  }

  private async drainAndClose(): Promise<void> {
    this.loop.beginDraining();
    this.loop.post(() => this.core.apply(M.SetDraining, 1));
    await new Promise<void>((resolve) => {
      this.drainWaiters.push(resolve);
      // Refused only after the core failed: nothing live is left to drain.
      if (!this.loop.post(() => this.checkDrained())) resolve();
    });
    this.coordinator.releaseSuspendedWaiters();
    this.queues.close();
    await this.closeApprovalInbox();
    await this.retention?.close();
    this.loop.close();
    await this.store.close();
  }

  private checkDrained(): void {
    if (this.drainWaiters.length === 0 || !this.coordinator.drained) return;
    for (const resolve of this.drainWaiters.splice(0)) resolve();
  }

  /** @internal */
  assertOpen(what: string): void {
    if (this.closing) throw new RuntimeShutdownError(what);
  }

  /** @internal Refuses new work once the store can no longer write (its
   * file removed or replaced, its worker lost for good: `store.failure`,
   * docs/decisions/0021) with that error, rather than admitting work that
   * could only half happen. */
  assertStoreWritable(what: string): void {
    const failure = this.store.failure;
    if (failure === undefined) return;
    throw new StoreError(`${what} was refused: ${failure.message}`, { cause: failure, details: failure.details });
  }

  /** The administrative surface the CLI and the dashboard use
   * (`host/runtime/admin.ts`, docs/decisions/0038). */
  get admin(): Admin {
    this.adminSurface ??= new Admin(this);
    return this.adminSurface;
  }

  private adminSurface: Admin | undefined;

  /** Opened as a visitor of a SQLite store (docs/decisions/0015). */
  get visitor(): boolean {
    return isVisitorStore(this.store);
  }

  /** @internal Refuses what only the store's owner may do. */
  assertOwner(what: string): void {
    if (!this.visitor) return;
    throw new InvalidInputError(
      `${what} was refused: this environment visits the store at ${this.store.path}, and a visitor never writes executions — start, recover and purge in the process that owns the store; a visitor reads and decides approvals (agent.resume)`,
      { details: { reason: "visitor" } },
    );
  }
}
