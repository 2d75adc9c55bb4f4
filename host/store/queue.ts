// The durable message queue of a busy conversation (docs/decisions/0025-busy-conversations.md):
// a message started with `onBusy: "enqueue"` (or `"interrupt"`) while its
// agent runs another execution waits here, in order, until the runtime
// admits it. Both stores keep it in a table of its own, `queued_messages`,
// keyed by the execution id the message will run as, with an order key per
// agent:
//
// * An enqueue is one transaction: the bound is checked (a full queue
//   refuses with QueueFullError and writes nothing), the message is
//   inserted with the next order key (an interrupt takes the one before the
//   head), and its timeline's first step, `queued`, is written at seq 0.
// * Preparing the execution (the ordinary `prepareExecution` with the
//   queued id) removes the message in the same transaction: a trigger on
//   `executions` deletes the queued row of every execution id inserted. So
//   a message is either queued or an execution, never both and never lost,
//   whatever instant a process dies at.
// * Cancelling a queued message writes its execution terminal `failed`
//   with the cancellation (the same trigger removes the message); a message
//   already prepared is not cancelled here (`cancelled: false`).
// * Queued messages are never read by recovery (`unfinishedExecutions`
//   reads `executions` only): the runtime reads them with `queuedMessages`
//   and admits the head once the conversation is idle.

import { capabilitiesOf } from "./capabilities.js";
import type { ExecutionStore } from "./store.js";
import type { ExecutionRow, Json, StoredError } from "./records.js";

export interface EnqueueMessageOperation {
  readonly type: "enqueueMessage";
  readonly executionId: string;
  readonly agentId: string;
  /** The input as it will be sent (after an input guardrail's redaction). */
  readonly input: Json;
  /** The start's JSON settings (budget, turns, timeout, approval policy,
   * metadata), applied when it runs. */
  readonly config: { readonly [key: string]: Json };
  /** An interrupt: ahead of every queued message. */
  readonly front: boolean;
  /** The agent's `queueLimit`: a queue holding that many refuses. */
  readonly limit: number;
  readonly at: number;
}

export interface EnqueueMessageResult {
  /** The message's order key among its agent's queued messages. */
  readonly seq: number;
  /** 1 for the head. */
  readonly position: number;
}

export interface CancelQueuedOperation {
  readonly type: "cancelQueued";
  readonly executionId: string;
  /** The error the execution is written terminal with. */
  readonly error: StoredError;
  readonly at: number;
}

export interface CancelQueuedResult {
  /** False when no such message is queued (prepared, cancelled, unknown). */
  readonly cancelled: boolean;
}

export type QueueOperation = EnqueueMessageOperation | CancelQueuedOperation;

/** One queued message as stored. */
export interface QueuedMessage {
  readonly executionId: string;
  readonly agentId: string;
  readonly seq: number;
  readonly input: Json;
  readonly config: { readonly [key: string]: Json };
  readonly createdAt: number;
}

/** A store that keeps conversation queues (both built-in stores). */
export interface QueueStore {
  /** True when writes commit in the order they were submitted (the SQLite
   * store's one offload queue): a conversation's enqueues may then be sent
   * together and group-commit. Otherwise the runtime sends them one at a
   * time, so the durable order is the order of the starts. */
  readonly queueWritesInOrder?: boolean;
  enqueueMessage(operation: Omit<EnqueueMessageOperation, "type">): Promise<EnqueueMessageResult>;
  cancelQueued(operation: Omit<CancelQueuedOperation, "type">): Promise<CancelQueuedResult>;
  /** One agent's queued messages, in order (at most its queue limit). */
  queuedMessages(agentId: string): Promise<QueuedMessage[]>;
  /** The head of every agent's queue (one message per agent with any):
   * read once when the environment opens, beside its scan of unfinished
   * executions, so a conversation whose running execution ended before
   * its queue's head was prepared is found without a read per
   * conversation (docs/decisions/0024). */
  queueHeads?(): Promise<QueuedMessage[]>;
}

/** The reads of queued messages a listing needs (owners and SQLite visitors). */
export interface QueueReader {
  /** One queued message, or undefined (prepared, cancelled, unknown). */
  queuedMessage(executionId: string): Promise<QueuedMessage | undefined>;
  /** Newest first, at most `limit`. */
  listQueuedMessages(filter: { readonly agentId?: string; readonly limit: number }): Promise<QueuedMessage[]>;
}

/** The store's reads of queued messages, when it declares them. */
export function queueReaderOf(store: ExecutionStore): QueueReader | undefined {
  return capabilitiesOf(store).queueReads ? (store as unknown as QueueReader) : undefined;
}

/** The store's conversation queues, when it declares them. */
export function queueStoreOf(store: ExecutionStore): QueueStore | undefined {
  return capabilitiesOf(store).queue ? (store as unknown as QueueStore) : undefined;
}

/** A queued message as an execution row: status and phase `queued`,
 * revision 0 (nothing of the execution is written yet). */
export function rowOfQueued(message: QueuedMessage): ExecutionRow {
  return {
    executionId: message.executionId,
    agentId: message.agentId,
    revision: 0,
    status: "queued",
    phase: "queued",
    mode: "invoke",
    input: message.input,
    metadata: { config: message.config },
    outcome: null,
    output: null,
    error: null,
    usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
    approvalRequest: null,
    createdAt: message.createdAt,
    updatedAt: message.createdAt,
  };
}

/** The most messages one agent's queue may be configured to hold: a
 * conversation's whole queue is read back, and held in memory, when its
 * agent is recovered, so it must stay small next to the process; 10,000
 * messages of a chat is already far more than anyone reads. */
export const QUEUE_LIMIT_MAX = 10_000;
/** The default bound: enough for a user typing ahead of a slow agent, small
 * enough that a runaway client hits QUEUE_FULL long before it hurts. */
export const QUEUE_LIMIT_DEFAULT = 100;
