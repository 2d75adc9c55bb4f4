// What the conversation queues hold (conversation-queue.ts): the messages
// queued here, by conversation and by execution id, the heads being
// started, and the few steps every
// path of the queue takes (counting a change for the core, forgetting a
// message, letting a conversation go). The paths themselves — enqueue,
// head, cancel, restore — live in queue-*.ts and take this state as their
// first argument; two steps the head path needs from files above it come
// in as `QueueSteps`, so that no file of the queue imports round a circle.

import type { ConversationMessage } from "../agent/messages.js";
import { MessageKind as M } from "../../assembly/abi.js";
import { queueStoreOf, type QueueStore } from "../store/queue.js";
import type { ExecutionStore } from "../store/store.js";
import type { Agent } from "./agent.js";
import type { ControlLoop } from "./control-loop.js";
import type { Conversations } from "./conversations.js";
import type { Coordinator } from "./coordinator.js";
import { KeyedRetries } from "./keyed-retries.js";
import type { CheckedVerdict, StartOptions } from "./options.js";
import type { AgentEntry, StartRequest } from "./requests.js";
import type { StartPlacement } from "./remote-start.js";
import type { Waiter, Waiting } from "./run.js";

/** The reason given to a suspended execution's approval when a newer
 * message interrupts it (recorded with the decision). */
export const INTERRUPT_REASON = "interrupted by a newer message to this conversation";

/** The reason of a queued message cancelled by its start's signal. */
export const ABORTED = "the start's signal was aborted";

export interface QueuedItem {
  readonly executionId: string;
  readonly agent: AgentEntry;
  /** Its Run's waiter; this process's own once the Run was handed to the
   * follower of executions run elsewhere (`followElsewhere`). */
  waiter: Waiter;
  readonly input: string;
  readonly inputMessages?: ConversationMessage[];
  readonly options: StartOptions;
  /** Its input guardrail's verdict, asked when it was queued here (its
   * redaction is what the store holds); its start reads it instead of
   * asking again (docs/decisions/0116). Undefined when restored from the
   * store: its start checks the stored input. */
  readonly inputVerdict?: CheckedVerdict;
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
  /** When it was known durable (`QueueState.durableCount`). */
  durableNumber?: number;
  /** Its durable order key (`QueuedMessage.seq`), once known. */
  seq?: number;
  /** Its Run was handed to the follower (the core's `FollowQueued`: the
   * conversation is owned elsewhere): it may run at another process, and
   * its own waiter here may then never settle. */
  elsewhere?: boolean;
  /** Queued at the front while an execution ran: that one is cancelled
   * once the message is durable ("interrupt"). */
  interrupt?: boolean;
  /** Durable, but the store knows of messages ahead of it that this
   * process does not: they are read first (`restoreAhead`), and it is not
   * started until they are merged (its place is not known yet). */
  placing?: boolean;
}

export interface Conversation {
  /** In durable order: the head runs next. */
  readonly items: QueuedItem[];
  /** The tail of this conversation's queue writes (they run one at a time). */
  writes: Promise<unknown>;
  /** Lets the conversation's core entry go again: while messages are
   * queued it is kept (docs/decisions/0024), so the head finds it live. */
  readonly release: () => void;
}

/** What the queues ask of their environment (environment.ts implements
 * it). Declared here because the environment makes the queues: the
 * queue's files import nothing of it. */
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
  /** The store's facts on where a start the core answered with a
   * placement verdict goes (inbox-claims.ts). */
  placementOf(agentId: string): StartPlacement;
  /** On the loop: the store says this process holds the conversation the
   * core recorded owned elsewhere — a retake, whose recovery the core
   * decides (retakes.ts). */
  takenBack(agent: AgentEntry): void;
  /** A read of the store failed: the conversation is held in the core and
   * recovered after its one backoff (agent-recoveries.ts, `healLater`). */
  healLater(agentId: string): void;
}

/** The steps of the cancel and restore paths the head path takes
 * (queue-head.ts sits below them); `ConversationQueues` passes them in. */
export interface QueueSteps {
  /** A head whose start's signal was aborted: its cancel written (queue-cancel.ts). */
  cancelAborted(item: QueuedItem): void;
  /** Writes the message terminal if it fails once taken (queue-restore.ts). */
  cancelDurablyOnFailure(item: QueuedItem): void;
}

export class QueueState {
  readonly conversations = new Map<string, Conversation>();
  readonly items = new Map<string, QueuedItem>();
  /** Heads taken from the queue until their Run settles: until their
   * preparation commits, their message is still queued in the store. */
  readonly starting = new Map<string, QueuedItem>();
  /** Heads `Admit` let start whose `HeadSettled` is still to come: until
   * their preparation settles (installed, refused, or failed for now). */
  readonly headsStarting = new Map<StartRequest, AgentEntry>();
  /** The head whose failed start `headFailed` is telling the core, for the
   * core's answer in the same apply (`HeadKept`, `HeadTaken`): `answered`
   * once one was carried out on it. */
  settling: { readonly request: StartRequest; readonly agent: AgentEntry; answered: boolean } | undefined;
  closed = false;
  /** Messages known durable so far (`QueuedItem.durableNumber`). */
  durableCount = 0;
  /** The cancels of aborted heads written again (`cancelAborted`), by the
   * core's backoff. */
  readonly abortedCancels = new KeyedRetries();

  constructor(
    readonly environment: ConversationQueueHost,
    readonly steps: QueueSteps,
  ) {}

  get settings(): Coordinator["settings"] {
    return this.environment.coordinator.settings;
  }

  store(): QueueStore | undefined {
    return queueStoreOf(this.environment.store);
  }

  post(body: () => void): void {
    this.environment.loop.post(body, { label: "a queue write" });
  }

  conversationOf(agentId: string): Conversation {
    let conversation = this.conversations.get(agentId);
    if (conversation === undefined) {
      conversation = { items: [], writes: Promise.resolve(), release: this.environment.conversations.hold(agentId) };
      this.conversations.set(agentId, conversation);
    }
    return conversation;
  }

  /** Tells the core a change of the conversation's queue (on the loop), so
   * the messages it counts queued are the host's (docs/decisions/0062):
   * a conversation is let go only once its count is zero. `change`: the
   * messages read back (> 0, told at once), or -1 (one left). */
  counted(agent: AgentEntry, change: number): void {
    const { coordinator } = this.environment;
    if (change > 0) coordinator.apply(M.MessageQueued, agent.slot, agent.generation, change);
    else coordinator.apply(M.MessageLeft, agent.slot, agent.generation);
  }

  forget(item: QueuedItem): void {
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
  drop(conversation: Conversation, agentId: string): void {
    if (this.conversations.get(agentId) !== conversation) return;
    this.conversations.delete(agentId);
    conversation.release();
  }

  warn(item: QueuedItem, error: unknown): void {
    this.settings.logger.warn(
      `[phronomy] queued message ${item.executionId} of agent "${item.agent.id}" could not be written terminal: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}
