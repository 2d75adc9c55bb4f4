// A second message to a busy conversation (docs/decisions/0025-busy-conversations.md).
// An agent id is a conversation and admits one execution at a time; the
// core decides that (its admission table refuses a `Start` with
// AgentAlreadyAdmitted). What happens to the refused start is its busy
// policy — the start's `onBusy`, else its agent's, else "reject":
//
// * "reject": AgentBusyError, as always.
// * "enqueue": the message is written to the conversation's durable queue
//   (`host/store/queue.ts`) under the execution id it will run as; the Run's
//   `executionId` resolves once it is written. When the conversation's
//   admission is released (its execution ended), the head is started
//   through the core like any start — the core still decides — and runs
//   under its queued id; its preparation removes it from the queue in the
//   same transaction. A suspended execution keeps the admission, so the
//   queue waits for its decision.
// * "interrupt": as "enqueue", at the head, and the running execution is
//   cancelled: a running session ends `cancelled` once its in-flight work
//   settled (as its signal would); a suspended one is declined and
//   cancelled in the same decision (its timeline says so).
//
// While a conversation has messages queued, every new start goes behind
// them (or is refused, with "reject"): order is the order of `start` calls.
// The durable order is that order too: the SQLite store commits writes in
// the order submitted; on PostgreSQL one conversation's queue writes are
// sent one at a time.

import type { ConversationMessage } from "../agent/messages.js";
import { persistedInput, redactedStartInput, storedStartInput } from "./start-input.js";
import { AdmissionSource, AdmissionVerdict, ConversationPhase, EffectKind, HeadOutcome, MessageKind as M, ResultCode } from "../../assembly/abi.js";
import { AgentBusyError, CancellationError, InvalidInputError, PhronomyError, RuntimeShutdownError } from "../errors.js";
import { QUEUE_LIMIT_DEFAULT, queueStoreOf, type EnqueueMessageResult, type QueueStore, type QueuedMessage } from "../store/queue.js";
import type { Json } from "../store/records.js";
import { configOf, type Coordinator } from "./coordinator.js";
import { settleWaiterWithError } from "./delivery.js";
import type { ExecutionStore } from "../store/store.js";
import type { Agent } from "./agent.js";
import type { ControlLoop } from "./control-loop.js";
import type { Conversations } from "./conversations.js";
import { checkWithGuardrail, type OnBusyPolicy, type StartOptions } from "./options.js";
import type { AgentEntry, StartRequest } from "./requests.js";
import { Waiter, type Run, type Waiting } from "./run.js";
import { asPhronomyError } from "./session.js";
import { admit, isPlacementVerdict } from "./admission.js";
import { errorForCode } from "./error-codes.js";
import { KeyedRetries } from "./keyed-retries.js";
import { heldEpochOf, leasingStoreOf } from "./leases.js";
import { randomUUID } from "node:crypto";

/** The reason given to a suspended execution's approval when a newer
 * message interrupts it (recorded with the decision). */
export const INTERRUPT_REASON = "interrupted by a newer message to this conversation";

/** The reason of a queued message cancelled by its start's signal. */
const ABORTED = "the start's signal was aborted";

interface QueuedItem {
  readonly executionId: string;
  readonly agent: AgentEntry;
  /** Its Run's waiter; this process's own once the Run was handed to the
   * follower of executions run elsewhere (`followElsewhere`). */
  waiter: Waiter;
  readonly input: string;
  readonly inputMessages?: ConversationMessage[];
  readonly options: StartOptions;
  /** "writing": the enqueue is in flight; "queued": durable;
   * "cancelling": its cancel is being written (it keeps its place, and
   * is not started); "cancelled": the store holds the cancel. */
  state: "writing" | "queued" | "cancelling" | "cancelled";
  /** The cancel being written: true once the store holds it. */
  cancel?: Promise<boolean>;
  /** Told whether the enqueue committed, when cancelled while writing. */
  onWritten?: (committed: boolean) => void;
  /** Its cancel's answer when the environment closes before that cancel
   * settled: RUNTIME_SHUTDOWN (the enqueue's answer, or the cancel's
   * write, may then come to a closed loop, or never). */
  onClosed?: (error: Error) => void;
  /** Its starts the store failed (`headFailed`): the wait before the next. */
  failures?: number;
  /** When it was known durable (`ConversationQueues.durableCount`). */
  durableNumber?: number;
  /** Its durable order key (`QueuedMessage.seq`), once known. */
  seq?: number;
  /** Its Run was handed to the follower: it may run at another process,
   * and its own waiter here may then never settle. */
  elsewhere?: boolean;
  /** Queued at the front while an execution ran: that one is cancelled
   * once the message is durable ("interrupt"). */
  interrupt?: boolean;
}

interface Conversation {
  /** In durable order: the head runs next. */
  readonly items: QueuedItem[];
  /** The tail of this conversation's queue writes (they run one at a time). */
  writes: Promise<unknown>;
  /** Lets the conversation's core entry go again: while messages are
   * queued it is kept (docs/decisions/0024), so the head finds it live. */
  readonly release: () => void;
}

/** Errors after which a queued message stays queued for the next process
 * or for recovery to decide (the store's outcome is not known, or the
 * process stops): every other failure of a message taken from the queue
 * writes it terminal with that error. */
const KEPT_QUEUED: ReadonlySet<string> = new Set(["RUNTIME_SHUTDOWN", "STORE", "EXECUTION_REHYDRATION_REQUIRED", "AGENT_BUSY", "CORE_FAILED"]);

/** The first and the longest wait before a queue head the store failed to
 * prepare is started again (`headFailed`): a killed connection is back at
 * once; a database restarting takes seconds. */
const headRetryMsMin = 250;
const headRetryMsMax = 5_000;

/** What the queues ask of their environment (environment.ts implements
 * it). Declared here because the environment makes the queues: this file
 * imports nothing of it. */
export interface ConversationQueueHost {
  readonly store: ExecutionStore;
  readonly loop: ControlLoop;
  readonly coordinator: Coordinator;
  readonly conversations: Pick<Conversations, "hold" | "holding">;
  readonly closed: boolean;
  followExecution(agentId: string, executionId: string, waiter: Waiter): void;
  /** The one follower of executions run elsewhere (durable-watch.ts). */
  followElsewhere(agentId: string, executionId: string, waiter: Waiting): void;
  agentHandle(agentId: string): Agent | undefined;
}

export class ConversationQueues {
  private readonly conversations = new Map<string, Conversation>();
  private readonly items = new Map<string, QueuedItem>();
  /** Starts of queue heads in flight to the core (refused busy: back to the head). */
  private readonly pumped = new WeakSet<StartRequest>();
  /** Heads taken from the queue until their Run settles: until their
   * preparation commits, their message is still queued in the store. */
  private readonly starting = new Map<string, QueuedItem>();
  /** Heads `Admit` let start whose `HeadSettled` is still to come: until
   * their preparation settles (installed, refused, or failed for now). */
  private readonly headsStarting = new Map<StartRequest, AgentEntry>();
  private closed = false;
  /** Conversations whose recovery is releasing and installing again what
   * a store fault held here (docs/decisions/0059): their heads wait, the
   * recovery restores the queue when it ends. */
  private readonly recovering = new Map<string, number>();

  constructor(private readonly environment: ConversationQueueHost) {}

  /** Runs a recovery of the conversation with its queue held: the release
   * of an execution held for recovery frees the admission for a moment,
   * and a head started then would take the place of the execution ahead
   * of it (which recovery then finds AGENT_BUSY). */
  async holdWhile<T>(agentId: string, recovery: () => Promise<T>): Promise<T> {
    this.recovering.set(agentId, (this.recovering.get(agentId) ?? 0) + 1);
    try {
      return await recovery();
    } finally {
      const left = (this.recovering.get(agentId) ?? 1) - 1;
      if (left > 0) this.recovering.set(agentId, left);
      else this.heldNoLonger(agentId);
    }
  }

  /** The last recovery of the conversation ended: a head passed over
   * meanwhile is offered again (the core refuses it while the recovered
   * execution runs; it then stays the head). */
  private heldNoLonger(agentId: string): void {
    this.recovering.delete(agentId);
    const head = this.conversations.get(agentId)?.items[0];
    if (head !== undefined) this.environment.loop.post(() => this.startHead(head.agent), { label: `the next queued message of agent "${agentId}"` });
  }

  /** The busy policy of a start. */
  static policyOf(request: StartRequest): OnBusyPolicy {
    return request.options.onBusy ?? request.agent.definition.onBusy ?? "reject";
  }

  /** On the loop: a start made here (or filed for this process) asks the
   * core where it goes (docs/decisions/0062), and goes there. */
  admitStart(request: StartRequest, source: AdmissionSource.Direct | AdmissionSource.Filed, aborted: boolean): void {
    const { coordinator } = this.environment;
    const policy = ConversationQueues.policyOf(request);
    const admission = admit(coordinator, request, source, policy, this.store() !== undefined);
    if (admission === undefined) return;
    const { agent } = request;
    if (isPlacementVerdict(admission.verdict)) return this.startAsBefore(request, admission.handle, aborted);
    if (admission.verdict === AdmissionVerdict.RunHere) {
      coordinator.apply(M.Start, agent.slot, agent.generation, admission.handle, aborted ? 1 : 0);
      return;
    }
    coordinator.requests.take(admission.handle);
    switch (admission.verdict) {
      case AdmissionVerdict.EnqueueBack:
      case AdmissionVerdict.EnqueueFront:
        return this.enqueue(request, admission.verdict === AdmissionVerdict.EnqueueFront, admission.interrupt, true);
      case AdmissionVerdict.RefuseBusy:
        return this.refuseBusy(request);
      case AdmissionVerdict.RefuseHeld:
        return settleWaiterWithError(request.waiter, AgentBusyError.heldForRecovery(agent.id), this.settings);
      case AdmissionVerdict.RefuseNoQueue:
        return settleWaiterWithError(request.waiter, noQueueError(agent.id, policy), this.settings);
      case AdmissionVerdict.RefuseClosed:
        return settleWaiterWithError(request.waiter, this.refusal(request, ResultCode.AgentClosed), this.settings);
      default:
        return settleWaiterWithError(
          request.waiter,
          new PhronomyError("INTERNAL", `phronomy core: Admit answered verdict ${admission.verdict} for a start of agent "${agent.id}"`, { agentId: agent.id }),
          this.settings,
        );
    }
  }

  /** A start `Admit` answered with a placement verdict, carried out as
   * before the core had them (`isPlacementVerdict`): behind the messages
   * queued here, if any (or refused busy), else `Start`, whose busy
   * refusal `startRefusedBusy` takes. */
  private startAsBefore(request: StartRequest, handle: number, aborted: boolean): void {
    const { coordinator } = this.environment;
    const { agent } = request;
    if ((this.conversations.get(agent.id)?.items.length ?? 0) === 0) {
      coordinator.apply(M.Start, agent.slot, agent.generation, handle, aborted ? 1 : 0);
      return;
    }
    coordinator.requests.take(handle);
    const policy = ConversationQueues.policyOf(request);
    if (policy === "reject") return this.refuseBusy(request);
    this.enqueue(request, policy === "interrupt", policy === "interrupt", false);
  }

  /** "reject" while busy: AgentBusyError, saying how many messages wait. */
  private refuseBusy(request: StartRequest): void {
    const queued = this.conversations.get(request.agent.id)?.items.length ?? 0;
    if (queued === 0) return settleWaiterWithError(request.waiter, this.refusal(request, ResultCode.AgentAlreadyAdmitted), this.settings);
    settleWaiterWithError(
      request.waiter,
      new AgentBusyError(
        request.agent.id,
        `agent "${request.agent.id}" is busy: it runs an execution and ${queued} message(s) are queued behind it; start with onBusy "enqueue" to queue this one too, or wait`,
        { queued },
      ),
      this.settings,
    );
  }

  /** The error a `Start` refused with `code` gives its Run. */
  private refusal(request: StartRequest, code: ResultCode): PhronomyError {
    return errorForCode(code, { agentId: request.waiter.agentId, executionId: request.executionId });
  }

  /** The core refused a start because its agent is busy (on the loop).
   * Reached only by a start `Admit` answered with a placement verdict,
   * carried out as before (`isPlacementVerdict`). */
  startRefusedBusy(request: StartRequest): boolean {
    if (this.headRefusedBusy(request)) return true;
    const policy = ConversationQueues.policyOf(request);
    if (policy === "reject") return false;
    this.enqueue(request, policy === "interrupt", policy === "interrupt", false);
    return true;
  }

  /** A queue head the core refused because its conversation is busy —
   * another start admitted first, or the conversation held for recovery
   * (on the loop): it stays the head, and runs once the conversation is
   * free (a recovery restores the queue). Its Run is not told: the
   * message is queued in the store, and runs (docs/decisions/0058). */
  headRefusedBusy(request: StartRequest): boolean {
    if (!this.pumped.has(request)) return false;
    this.pumped.delete(request);
    // Counted by `startHead` once the `Start` returned.
    const item = this.items.get(request.executionId ?? "");
    if (item !== undefined) this.conversationOf(item.agent.id).items.unshift(item);
    return true;
  }

  /** A queue head whose preparation the store failed (`STORE`: a lost
   * connection, the database unreachable) or that was refused for now
   * (`AGENT_BUSY`: its partition's lease not renewed in time, or held for
   * a takeover's recovery), on the loop: its message is still queued in
   * the store — the preparation removes it only when it commits — so it
   * stays the head and is started again (250 ms, doubling to 5 s), and its
   * Run waits — while this process holds the partition, for a refusal. Telling the Run "nothing was written"
   * would be false: the message would run later anyway, after newer ones
   * (docs/decisions/0058). If the preparation did commit after all (its
   * outcome unknown), the recovery that follows finds the execution and
   * `restore` makes the Run follow it. */
  headFailed(request: StartRequest, error: PhronomyError): boolean {
    if (!this.closed && executionExists(error) && this.headTaken(request)) return true;
    if (this.closed || !(error.code === "STORE" || notNow(error))) return this.headLeft(request);
    const item = this.starting.get(request.executionId ?? "");
    if (item === undefined || item.waiter !== request.waiter || item.state !== "queued") return this.headLeft(request);
    // Refused for now while another process may hold its partition: the
    // message is still queued in the store and runs wherever the
    // conversation is held next; its Run follows it there (decision 0058).
    this.starting.delete(item.executionId);
    this.items.set(item.executionId, item);
    this.conversationOf(item.agent.id).items.unshift(item);
    // It keeps its place here (this process may take the conversation back,
    // and then runs it first); it is started again when it does.
    // A store failure too, once the lease is not held here (it moved while
    // the head was being prepared): whoever holds it next runs it.
    const leased = leasingStoreOf(this.environment.store) !== undefined;
    if ((error.code !== "STORE" || leased) && heldEpochOf(this.environment.store, item.agent.id) === undefined) {
      if (!this.settleHead(request, HeadOutcome.Back)) this.counted(item.agent, 1);
      return this.followElsewhere(item);
    }
    // Started again after the core's one backoff (250 ms doubling to 5 s,
    // by the failures since a head last left), or this queue's own for a
    // head `Admit` did not let start (`isPlacementVerdict`).
    const delayMs = this.settleHead(request, HeadOutcome.Failed) ? retryDelayOf(this.environment.coordinator) : this.placedHeadRetryMs(item);
    setTimeout(() => {
      if (this.closed) return;
      this.environment.loop.post(() => this.startHead(item.agent), { label: `queued message ${item.executionId} started again` });
    }, delayMs).unref();
    return true;
  }

  /** A queue head whose preparation the store refused because its
   * execution is there already (on the loop): another process that held
   * the conversation meanwhile took the message from the queue and
   * prepared it (this one's preparation was in flight, or was held back).
   * The message runs as that execution: its Run follows it, nothing is
   * written terminal, and the next head may start. Whoever holds the
   * conversation recovers the execution (here: the takeover's recovery,
   * asked again while this preparation was in flight). */
  private headTaken(request: StartRequest): boolean {
    const item = this.starting.get(request.executionId ?? "");
    if (item === undefined || item.waiter !== request.waiter) return false;
    this.starting.delete(item.executionId);
    this.settleHead(request, HeadOutcome.Left);
    this.environment.followElsewhere(item.agent.id, item.executionId, item.waiter);
    this.admissionFreed(item.agent);
    return true;
  }

  /** The wait before a head started as before (a placement verdict) is
   * started again after its preparation failed: counted here, as before. */
  private placedHeadRetryMs(item: QueuedItem): number {
    this.counted(item.agent, 1);
    item.failures = (item.failures ?? 0) + 1;
    return Math.min(headRetryMsMax, headRetryMsMin * 2 ** (item.failures - 1));
  }

  /** A start ended its preparation or was refused (on the loop): a head
   * `Admit` let start left the queue. False (for `headFailed`). */
  headLeft(request: StartRequest): false {
    this.settleHead(request, HeadOutcome.Left);
    return false;
  }

  /** Tells the core how a head `Admit` let start settled, once: true when
   * it was one (`HeadSettled` applied). */
  private settleHead(request: StartRequest, outcome: HeadOutcome): boolean {
    const agent = this.headsStarting.get(request);
    if (agent === undefined) return false;
    this.headsStarting.delete(request);
    this.environment.coordinator.apply(M.HeadSettled, agent.slot, agent.generation, outcome);
    return true;
  }

  /** The store says another process holds the conversation now (on the
   * loop): its messages queued here run there, and their Runs follow them. */
  followQueuedElsewhere(agentId: string): void {
    for (const item of this.conversations.get(agentId)?.items ?? []) if (item.state === "queued") this.followElsewhere(item);
  }

  /** The message may run at another process: its Run follows it wherever
   * it runs, and the message keeps its place here under a waiter of this
   * process's own (as a queue restored from the store has). True. */
  private followElsewhere(item: QueuedItem): true {
    const followed = item.waiter;
    item.elsewhere = true;
    item.waiter = new Waiter(item.agent.id, undefined);
    item.waiter.knowExecutionId(item.executionId);
    this.cancelDurablyOnFailure(item);
    this.environment.followElsewhere(item.agent.id, item.executionId, followed);
    return true;
  }

  /** The agent's admission was released (on the loop, inside an apply):
   * its queue's head is started next. */
  admissionFreed(agent: AgentEntry): void {
    const conversation = this.conversations.get(agent.id);
    if (conversation === undefined || conversation.items.length === 0) return;
    this.environment.loop.post(() => this.startHead(agent), { label: `the next queued message of agent "${agent.id}"` });
  }

  /** Cancels a queued message by its execution id: true when it was
   * queued (it is written terminal, failed with CANCELLED, and its Run is
   * rejected with CancellationError); false when there is no such queued
   * message (it runs already, ended, or is unknown). For `env.cancel`. */
  async cancelQueued(executionId: string, reason?: string): Promise<boolean> {
    const store = this.store();
    if (store === undefined) return false;
    const item = this.items.get(executionId);
    if (item === undefined) return this.cancelStarting(store, executionId, reason);
    item.cancel ??= this.cancelItem(store, item, cancellation(executionId, item.agent.id, reason));
    return item.cancel;
  }

  /** Writes the cancel of a message this process queued; its Run is told
   * CANCELLED only once the store holds it (docs/decisions/0057), as
   * `env.cancel` answers. One still being written is cancelled once its
   * enqueue committed (one that failed was never queued). Meanwhile it
   * keeps its place and is not started. A cancel that fails leaves it
   * queued, and rejects with the store's error. */
  private cancelItem(store: QueueStore, item: QueuedItem, error: CancellationError): Promise<boolean> {
    const writing = item.state === "writing";
    item.state = "cancelling";
    const enqueued = writing
      ? new Promise<boolean>((resolve) => {
          item.onWritten = resolve;
        })
      : Promise.resolve(true);
    const record = { executionId: item.executionId, error: error.toRecord() };
    const written = enqueued
      .then((committed) => (committed ? store.cancelQueued({ ...record, at: this.settings.now() }) : undefined))
      .then(
        () => {
          this.post(() => this.cancelCommitted(item, error));
          return true;
        },
        (failure: unknown) => {
          this.post(() => this.cancelFailed(item));
          throw failure;
        },
      );
    // Closed first: told RUNTIME_SHUTDOWN (`close`), whichever answer is
    // still to come (the race handles the later one's rejection).
    const closed = new Promise<never>((_resolve, reject) => {
      item.onClosed = reject;
    });
    return Promise.race([written, closed]);
  }

  /** The store holds the cancel (on the loop): the Run is told, and the
   * message behind it may start. */
  private cancelCommitted(item: QueuedItem, error: CancellationError): void {
    item.state = "cancelled";
    this.forget(item);
    settleWaiterWithError(item.waiter, error, this.settings);
    this.startHead(item.agent);
  }

  /** The cancel was not written (on the loop): still queued. One whose
   * signal was aborted is not started: its cancel is written again. */
  private cancelFailed(item: QueuedItem): void {
    item.state = "queued";
    item.cancel = undefined;
    this.startHead(item.agent);
  }

  /** A head whose start's signal was aborted and whose cancel was not
   * written: written again (250 ms, doubling to 5 s) — it is told only
   * once the store holds it, and never started (docs/decisions/0057). */
  private cancelAborted(item: QueuedItem): void {
    this.abortedCancels.schedule(item.executionId, async () => {
      if (this.closed || this.items.get(item.executionId) !== item) return true;
      await this.cancelQueued(item.executionId, ABORTED);
      return true;
    });
  }

  /** The cancels of aborted heads written again (`cancelAborted`). */
  private readonly abortedCancels = new KeyedRetries(250, 5_000);

  /** A message taken from the queue whose preparation may not have
   * committed yet (or one queued by another process): cancelled in the
   * store if it is still queued there — its preparation then finds the id
   * taken and writes nothing, and its Run is told CANCELLED first. */
  private async cancelStarting(store: QueueStore, executionId: string, reason: string | undefined): Promise<boolean> {
    if (this.environment.coordinator.entryById(executionId) !== undefined) return false;
    const starting = this.starting.get(executionId);
    const error = cancellation(executionId, starting?.agent.id, reason);
    const { cancelled } = await store.cancelQueued({ executionId, error: error.toRecord(), at: this.settings.now() });
    if (cancelled && starting !== undefined) {
      starting.state = "cancelled";
      settleWaiterWithError(starting.waiter, error, this.settings);
      // Its preparation failed meanwhile and put it back at the head
      // (`headFailed`): it leaves the queue, and the next message starts.
      this.post(() => {
        if (this.items.get(executionId) !== starting) return;
        this.forget(starting);
        this.startHead(starting.agent);
      });
    }
    return cancelled;
  }

  /** `env.wait` on a queued message: settled with its outcome. */
  observe(executionId: string, observer: Waiter): boolean {
    const item = this.items.get(executionId);
    if (item === undefined) return false;
    if (item.elsewhere === true) {
      this.environment.followElsewhere(item.agent.id, executionId, observer);
      return true;
    }
    observer.knowExecutionId(executionId);
    item.waiter.result.then(
      (result) => observer.resolve(result),
      (error: Error) => observer.reject(error),
    );
    return true;
  }

  /** After the agent's executions were recovered: its durable queue is
   * read and its head started once the conversation is idle. */
  async restore(agent: AgentEntry): Promise<void> {
    const store = this.store();
    if (store === undefined || this.closed) return;
    const durableBefore = this.durableCount;
    const messages = await store.queuedMessages(agent.id);
    if (messages.length === 0 && !this.conversations.has(agent.id)) return;
    await new Promise<void>((resolve, reject) => {
      this.environment.loop.post(
        () => {
          this.followPrepared(agent.id, messages, durableBefore);
          if (messages.length === 0) return resolve();
          const conversation = this.conversationOf(agent.id);
          for (const message of messages) {
            // Known here: queued, or taken and being started (its preparation
            // removes it from the store's queue when it commits).
            if (this.items.has(message.executionId) || this.starting.has(message.executionId)) continue;
            const item = this.restoredItem(agent, message);
            conversation.items.push(item);
            placeBySeq(conversation.items, item);
            this.counted(agent, 1);
          }
          this.startHead(agent);
          resolve();
        },
        { completion: { fail: reject }, label: `the queue of agent "${agent.id}"` },
      );
    });
  }

  /** Messages waiting here that were durable before the store's queue
   * was read and are not in it any more: a preparation whose outcome was
   * unknown did commit (the recovery found it), or another process
   * cancelled it. Their Runs follow the execution under their id. */
  private followPrepared(agentId: string, messages: readonly QueuedMessage[], durableBefore: number): void {
    const conversation = this.conversations.get(agentId);
    if (conversation === undefined) return;
    const queued = new Set(messages.map((message) => message.executionId));
    const wasDurable = (item: QueuedItem): boolean => item.state === "queued" && (item.durableNumber ?? 0) <= durableBefore;
    const gone = conversation.items.filter((item) => wasDurable(item) && !queued.has(item.executionId));
    for (const item of gone) {
      this.forget(item);
      this.environment.followExecution(agentId, item.executionId, item.waiter);
    }
  }

  /** Messages known durable so far (`QueuedItem.durableNumber`). */
  private durableCount = 0;

  /** `restore` for the conversation if it is live here (nothing when it
   * is not: its next use reads its queue). */
  async restoreLive(agentId: string): Promise<void> {
    await this.environment.conversations.holding(agentId, (entry) => this.restore(entry));
  }

  /** A head taken from the queue was refused for a while — its partition's
   * lease not renewed in time here, or held during a takeover's recovery
   * (docs/decisions/0055) — and stays queued in the store: while this
   * process holds the partition nobody else starts it, so the queue is
   * read and started again here (250 ms, doubling to 5 s, while held). */
  private restoreLater(agentId: string): void {
    const holds = (): boolean => heldEpochOf(this.environment.store, agentId) !== undefined;
    if (this.closed || leasingStoreOf(this.environment.store) === undefined || !holds()) return;
    this.restores.schedule(agentId, async () => {
      if (!this.closed && holds()) await this.restoreLive(agentId);
      return true;
    });
  }

  /** The restores scheduled (`restoreLater`): 250 ms, doubling to 5 s. */
  private readonly restores = new KeyedRetries(250, 5_000);

  /** The environment closes: queued messages stay durable (the next
   * process runs them); their Runs here are told. */
  close(): void {
    this.closed = true;
    for (const item of this.items.values()) {
      const details = { executionId: item.executionId, agentId: item.agent.id };
      // A cancel not settled yet — waiting on its enqueue's answer (posted
      // to a closed loop, never applied) or on its own write: told now;
      // whether it was cancelled is the next process's to read.
      item.onClosed?.(new RuntimeShutdownError(`the cancel of queued message ${item.executionId}`, details));
      settleWaiterWithError(item.waiter, new RuntimeShutdownError(`the wait for queued message ${item.executionId}`, details), this.settings);
    }
    this.items.clear();
    this.conversations.clear();
  }

  // -- inside ------------------------------------------------------------------------

  private get settings(): Coordinator["settings"] {
    return this.environment.coordinator.settings;
  }

  private store(): QueueStore | undefined {
    return queueStoreOf(this.environment.store);
  }

  private conversationOf(agentId: string): Conversation {
    let conversation = this.conversations.get(agentId);
    if (conversation === undefined) {
      conversation = { items: [], writes: Promise.resolve(), release: this.environment.conversations.hold(agentId) };
      this.conversations.set(agentId, conversation);
    }
    return conversation;
  }

  /** A head taken from the queue is its head again. */
  private putBack(item: QueuedItem): void {
    this.conversationOf(item.agent.id).items.unshift(item);
    this.counted(item.agent, 1);
  }

  /** Tells the core a change of the conversation's queue (on the loop), so
   * the messages it counts queued are the host's (docs/decisions/0062):
   * a conversation is let go only once its count is zero. */
  private counted(agent: AgentEntry, change: 1 | -1): void {
    const { coordinator } = this.environment;
    if (change > 0) coordinator.apply(M.MessageQueued, agent.slot, agent.generation, change);
    else coordinator.apply(M.MessageLeft, agent.slot, agent.generation);
  }

  /** Where the core's count of queued messages differs from this queue's
   * (for tests: the simulation checks it after every step). Empty while
   * they agree, and once closed (the core is not told of a close). */
  countDrift(): string[] {
    if (this.closed) return [];
    const drift: string[] = [];
    const { coordinator } = this.environment;
    for (const entry of coordinator.agentEntries()) {
      const items = this.conversations.get(entry.id)?.items.filter((item) => item.agent === entry) ?? [];
      const counted = coordinator.settings.core.conversation(entry.slot).queued;
      if (counted !== items.length) drift.push(`conversation "${entry.id}": ${items.length} message(s) queued here, ${counted} counted by the core`);
    }
    return drift;
  }

  private forget(item: QueuedItem): void {
    this.items.delete(item.executionId);
    const conversation = this.conversations.get(item.agent.id);
    if (conversation === undefined) return;
    const index = conversation.items.indexOf(item);
    if (index >= 0) {
      conversation.items.splice(index, 1);
      this.counted(item.agent, -1);
    }
    if (conversation.items.length === 0) this.drop(conversation, item.agent.id);
  }

  /** The conversation's queue is empty: forgotten, its entry let go (an
   * admitted head's execution keeps it until it ends). */
  private drop(conversation: Conversation, agentId: string): void {
    if (this.conversations.get(agentId) !== conversation) return;
    this.conversations.delete(agentId);
    conversation.release();
  }

  /** Writes the message to the conversation's queue (on the loop), at the
   * front or the back as `Admit` answered; `counted`: `Admit` counted it
   * queued already. */
  private enqueue(request: StartRequest, front: boolean, interrupt: boolean, counted: boolean): void {
    const store = this.store();
    const agent = request.agent;
    if (store === undefined) {
      if (counted) this.counted(agent, -1);
      settleWaiterWithError(request.waiter, noQueueError(agent.id, ConversationQueues.policyOf(request)), this.settings);
      return;
    }
    // A start under an id queued (or being queued) here already — a second
    // start with one idempotency key while the first waits in the queue —
    // follows that message: written again, its refusal would be taken for
    // the first's and cancel it (docs/decisions/0063).
    if (request.executionId !== undefined && this.items.has(request.executionId)) {
      if (counted) this.counted(agent, -1);
      this.environment.followExecution(agent.id, request.executionId, request.waiter);
      return;
    }
    // One taken from the queue and being started: followed once that start
    // settles (a second item of its id would take its place in the queue's
    // maps when the start fails for now and goes back to the head).
    const starting = request.executionId !== undefined ? this.starting.get(request.executionId) : undefined;
    if (starting !== undefined) {
      if (counted) this.counted(agent, -1);
      const follow = (): void => this.environment.followExecution(agent.id, starting.executionId, request.waiter);
      starting.waiter.result.then(follow, follow);
      return;
    }
    // The input guardrail's redaction applies before the input is stored;
    // a block (or a guardrail that fails: docs/decisions/0056) is decided
    // when the message is started, which writes it terminal INPUT_BLOCKED.
    const verdict = checkWithGuardrail(request.options.inputGuardrail ?? agent.definition.inputGuardrail, request.input);
    const input = persistedInput(verdict.action === "redact" ? redactedStartInput(request, verdict.text) : request);
    // A start that names its id (an idempotency key, a start filed by
    // another process, docs/decisions/0031) is queued under it.
    const executionId = request.executionId ?? randomUUID();
    const item: QueuedItem = {
      executionId,
      agent,
      waiter: request.waiter,
      input: request.input,
      inputMessages: request.inputMessages,
      options: request.options,
      state: "writing",
      ...(interrupt ? { interrupt } : {}),
    };
    const conversation = this.conversationOf(agent.id);
    if (front) conversation.items.unshift(item);
    else conversation.items.push(item);
    if (!counted) this.counted(agent, 1);
    this.items.set(executionId, item);
    this.cancelDurablyOnFailure(item);
    const signal = request.options.signal;
    if (signal?.aborted) {
      item.state = "cancelled";
      this.forget(item);
      settleWaiterWithError(item.waiter, cancellation(executionId, agent.id, ABORTED), this.settings);
      return;
    }
    signal?.addEventListener("abort", () => void this.cancelQueued(executionId, ABORTED).catch(() => undefined), { once: true });
    const limit = agent.definition.queueLimit ?? QUEUE_LIMIT_DEFAULT;
    const write = (): Promise<void> =>
      store
        .enqueueMessage({
          executionId,
          agentId: agent.id,
          input,
          config: configOf(request),
          front,
          limit,
          at: this.settings.now(),
        })
        .then(
          (result) => this.post(() => this.written(item, result)),
          (error: unknown) =>
            this.post(() => {
              if (item.state === "cancelling") return item.onWritten?.(false);
              this.forget(item);
              settleWaiterWithError(item.waiter, asPhronomyError(error, "STORE"), this.settings);
              // It may have been the head (an interrupt): the next one starts.
              this.startHead(agent);
            }),
        );
    // One at a time unless the store commits writes in submission order.
    if (store.queueWritesInOrder === true) void write();
    else conversation.writes = conversation.writes.then(write, write);
  }

  private post(body: () => void): void {
    this.environment.loop.post(body, { label: "a queue write" });
  }

  /** The enqueue committed (on the loop). */
  private written(item: QueuedItem, result: EnqueueMessageResult | undefined): void {
    item.waiter.knowExecutionId(item.executionId);
    item.seq = result?.seq;
    placeBySeq(this.conversations.get(item.agent.id)?.items ?? [], item);
    if (item.state === "cancelling") return item.onWritten?.(true);
    item.state = "queued";
    item.durableNumber = ++this.durableCount;
    if (item.interrupt === true) this.interruptRunning(item.agent);
    // Messages ahead of it in the store that this process does not know
    // (queued by the process that held the conversation before): read
    // first, so that it does not pass them (docs/decisions/0063).
    if (result !== undefined && this.unknownAhead(item, result.position)) return this.restoreAhead(item.agent);
    this.startHead(item.agent);
  }

  /** Fewer messages known ahead of the item here than the store's
   * `position` says are ahead of it. */
  private unknownAhead(item: QueuedItem, position: number): boolean {
    const items = this.conversations.get(item.agent.id)?.items ?? [];
    const ahead = items.slice(0, Math.max(0, items.indexOf(item))).filter((other) => other.state !== "writing").length;
    const starting = [...this.starting.values()].filter((other) => other.agent === item.agent).length;
    return ahead + starting < position - 1;
  }

  /** The conversation's queue read and merged in durable order, its head
   * held meanwhile. */
  private restoreAhead(agent: AgentEntry): void {
    this.holdWhile(agent.id, () => this.restore(agent)).catch(() => this.restoreLater(agent.id));
  }

  /** Starts the conversation's head as the core's `Admit` answers (on the
   * loop): it runs, stays the head (the conversation is busy), or is
   * refused (closed). */
  private startHead(agent: AgentEntry): void {
    if (this.closed || this.environment.closed || this.recovering.has(agent.id)) return;
    const conversation = this.conversations.get(agent.id);
    const head = conversation?.items[0];
    if (conversation === undefined || head === undefined || head.state !== "queued") return;
    if (head.options.signal?.aborted) return this.cancelAborted(head);
    const request = this.headRequest(agent, head);
    const { coordinator } = this.environment;
    const admission = admit(coordinator, request, AdmissionSource.QueueHead, ConversationQueues.policyOf(request), true);
    // Refused (a stale handle): its Run was told, as a refused Start's.
    if (admission === undefined) return this.headGone(conversation, head);
    if (admission.verdict === AdmissionVerdict.RunHere) return this.runHead(conversation, head, request, admission.handle, true);
    if (this.headPlacedElsewhere(agent, admission.verdict)) return this.runHead(conversation, head, request, admission.handle, false);
    coordinator.requests.take(admission.handle);
    if (admission.verdict !== AdmissionVerdict.RefuseClosed) return; // StayQueued: busy; started once the admission is released
    conversation.items.shift();
    this.counted(agent, -1);
    settleWaiterWithError(head.waiter, this.refusal(request, ResultCode.AgentClosed), this.settings);
    this.headGone(conversation, head);
  }

  /** The head's `Start`, with its budget starting now, when it leaves the queue. */
  private headRequest(agent: AgentEntry, head: QueuedItem): StartRequest {
    const timeoutMs = head.options.timeoutMs ?? agent.definition.timeoutMs;
    return {
      type: "start",
      agent,
      waiter: head.waiter,
      input: head.input,
      inputMessages: head.inputMessages,
      options: head.options,
      deadline: timeoutMs !== undefined ? this.settings.now() + timeoutMs : undefined,
      executionId: head.executionId,
    };
  }

  /** A head `Admit` did not let start for where the conversation lives
   * (owned elsewhere, or not ready, by the core's record; see
   * `isPlacementVerdict`): started as before, the store's lease decides. */
  private headPlacedElsewhere(agent: AgentEntry, verdict: AdmissionVerdict): boolean {
    if (isPlacementVerdict(verdict)) return true;
    return verdict === AdmissionVerdict.StayQueued && this.environment.coordinator.settings.core.conversation(agent.slot).phase !== ConversationPhase.Ready;
  }

  /** Applies the head's `Start`. `admitted`: `Admit` let it start (the core
   * counted it out of the queue and waits for `HeadSettled`). */
  private runHead(conversation: Conversation, head: QueuedItem, request: StartRequest, handle: number, admitted: boolean): void {
    const { agent } = request;
    conversation.items.shift();
    if (!admitted) this.counted(agent, -1);
    this.pumped.add(request);
    if (admitted) this.headsStarting.set(request, agent);
    const { coordinator } = this.environment;
    // Not cancelled (0): an aborted head never gets here — its cancel is
    // written by the host as a queue cancel (`cancelAborted`, decision 0057).
    coordinator.apply(M.Start, agent.slot, agent.generation, handle, 0);
    // Refused busy: `headRefusedBusy` took it out of `pumped` and put it back at the head.
    const back = !this.pumped.delete(request);
    if (back && !this.settleHead(request, HeadOutcome.Back)) this.counted(agent, 1);
    if (back) return;
    this.headGone(conversation, head);
  }

  /** The head left the queue: admitted (an execution once prepared), or
   * refused (its Run failed). */
  private headGone(conversation: Conversation, head: QueuedItem): void {
    const { agent } = head;
    if (conversation.items[0] === head) conversation.items.shift();
    this.items.delete(head.executionId);
    if (!head.waiter.settled) {
      this.starting.set(head.executionId, head);
      const waiter = head.waiter;
      // Not once its Run was handed to the follower: it may be started again.
      const done = (): void => {
        if (this.starting.get(head.executionId) === head && head.waiter === waiter) this.starting.delete(head.executionId);
      };
      waiter.result.then(done, done);
    }
    if (conversation.items.length === 0) this.drop(conversation, agent.id);
    if (head.waiter.settled && conversation.items.length > 0) this.startHead(agent);
  }

  /** A message taken from the queue that fails before it ran (refused,
   * not established) is written terminal with its error, unless the store
   * cannot say or the process stops (it then stays queued). Once it ran,
   * its execution row exists and this writes nothing. */
  private cancelDurablyOnFailure(item: QueuedItem): void {
    const waiter = item.waiter;
    waiter.result.catch((error: unknown) => {
      const failure = asPhronomyError(error, "INTERNAL");
      // A Run handed to the follower settles with the execution's end
      // elsewhere: the message is this process's own waiter's to write.
      if (waiter !== item.waiter) return;
      if (item.state === "cancelled" || this.items.has(item.executionId)) return;
      if (failure.code === "AGENT_BUSY") this.restoreLater(item.agent.id);
      if (KEPT_QUEUED.has(failure.code)) return;
      void this.store()
        ?.cancelQueued({ executionId: item.executionId, error: failure.toRecord(), at: this.settings.now() })
        .catch((cause: unknown) => this.warn(item, cause));
    });
  }

  /** "interrupt": cancels the conversation's running execution — one still
   * being prepared as soon as its session is made. */
  private interruptRunning(agent: AgentEntry): void {
    for (const start of this.environment.coordinator.requests.preparingStartsOf(agent)) start.cancelById ??= INTERRUPT_REASON;
    for (const entry of this.environment.coordinator.liveEntriesOf(agent)) {
      if (entry.recoveryRequired) continue;
      if (entry.session !== undefined && !entry.session.finished) {
        entry.session.cancel();
        continue;
      }
      if (entry.session === undefined && !entry.suspended) {
        // Not running yet (its preparation, a recovery or a resume being
        // committed): its session is cancelled as soon as it is made.
        entry.cancelById ??= INTERRUPT_REASON;
        continue;
      }
      const pending = entry.approvalRequest;
      if (entry.suspended && pending !== undefined) {
        // Declined and cancelled in one decision: the resumed run sees its
        // signal aborted and ends `cancelled` before calling anything.
        const run: Run | undefined = this.environment.agentHandle(agent.id)?.resume(entry.executionId, {
          approvalId: pending.approvalId,
          approved: false,
          reason: INTERRUPT_REASON,
          signal: AbortSignal.abort(),
        });
        run?.result.catch(() => undefined);
      }
    }
  }

  private restoredItem(agent: AgentEntry, message: QueuedMessage): QueuedItem {
    const waiter = new Waiter(agent.id, undefined);
    waiter.knowExecutionId(message.executionId);
    const item: QueuedItem = {
      executionId: message.executionId,
      agent,
      waiter,
      ...storedStartInput(message.input),
      options: optionsOf(message.config),
      state: "queued",
      durableNumber: ++this.durableCount,
      seq: message.seq,
    };
    this.items.set(item.executionId, item);
    this.cancelDurablyOnFailure(item);
    return item;
  }

  private warn(item: QueuedItem, error: unknown): void {
    this.settings.logger.warn(
      `[phronomy] queued message ${item.executionId} of agent "${item.agent.id}" could not be written terminal: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/** Moves the item, if in `items`, to its durable place among the items
 * whose order key is known (docs/decisions/0063): after every one with a
 * lower `seq`, before every one with a higher. */
function placeBySeq(items: QueuedItem[], item: QueuedItem): void {
  const index = items.indexOf(item);
  const seq = item.seq;
  if (index < 0 || seq === undefined) return;
  let lastLower = -1;
  let firstHigher = items.length;
  items.forEach((other, at) => {
    if (other === item || other.seq === undefined) return;
    if (other.seq < seq) lastLower = at;
    else if (other.seq > seq && at < firstHigher) firstHigher = at;
  });
  if (index > lastLower && index < firstHigher) return;
  items.splice(index, 1);
  // Removed from before the last lower one, or after the first higher one.
  items.splice(index <= lastLower ? lastLower : firstHigher, 0, item);
}

/** The wait `HeadSettled(failed)` answered (its `RetryAfter`). */
function retryDelayOf(coordinator: Coordinator): number {
  const { core } = coordinator.settings;
  for (let index = 0; index < core.effectCount; index += 1) if (core.effectWord(index, 0) === EffectKind.RetryAfter) return core.effectWord(index, 3);
  throw new Error("phronomy core: HeadSettled(failed) emitted no RetryAfter");
}

/** "enqueue" or "interrupt" of a busy conversation on a store with no queue. */
function noQueueError(agentId: string, policy: OnBusyPolicy): InvalidInputError {
  return new InvalidInputError(
    `agent "${agentId}" is busy and this store keeps no message queue (onBusy "${policy}" needs the SQLite or PostgreSQL store); start with onBusy "reject"`,
    { agentId },
  );
}

/** The store refused a preparation: its execution id is there already. */
function executionExists(error: PhronomyError): boolean {
  return error.code === "INVALID_INPUT" && error.details?.["reason"] === "execution_exists";
}

/** A refusal that says "not here, not now" (the partition's lease not
 * renewed in time, lost, or held for a takeover's recovery), not that the
 * start is wrong: the message stays queued for whoever holds it. */
function notNow(error: PhronomyError): boolean {
  const reason = error.details?.["reason"];
  return error.code === "AGENT_BUSY" && (reason === "lease_not_held" || reason === "recovering");
}

function cancellation(executionId: string, agentId: string | undefined, reason: string | undefined): CancellationError {
  return new CancellationError({
    executionId,
    ...(agentId !== undefined ? { agentId } : {}),
    details: { whileQueued: true, ...(reason !== undefined ? { reason } : {}) },
  });
}

/** The start options a queued message keeps (its JSON settings). */
function optionsOf(config: { readonly [key: string]: Json }): StartOptions {
  return {
    ...(typeof config["tokenBudget"] === "number" ? { tokenBudget: config["tokenBudget"] } : {}),
    ...(typeof config["maxTurns"] === "number" ? { maxTurns: config["maxTurns"] } : {}),
    ...(typeof config["timeoutMs"] === "number" ? { timeoutMs: config["timeoutMs"] } : {}),
    ...(config["approvalPolicy"] === "always" || config["approvalPolicy"] === "never" || config["approvalPolicy"] === "tools"
      ? { approvalPolicy: config["approvalPolicy"] }
      : {}),
    ...(config["metadata"] !== undefined && typeof config["metadata"] === "object" && config["metadata"] !== null && !Array.isArray(config["metadata"])
      ? { metadata: config["metadata"] as { [key: string]: Json } }
      : {}),
    ...(config["stream"] === true ? { stream: true } : {}),
  };
}
