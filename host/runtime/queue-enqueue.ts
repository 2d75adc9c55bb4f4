// Writing a message to its conversation's durable queue (conversation-queue.ts):
// a start the core answered "enqueue" goes in at the back or the front,
// under the execution id it will run as; conversations' writes go one at
// a time unless the store commits them in submission order. Once written
// it takes its durable place, interrupts the running execution if asked,
// and the core is told it can be started (`MessageWritten`).

import { randomUUID } from "node:crypto";
import { QUEUE_LIMIT_DEFAULT, type EnqueueMessageResult } from "../store/queue.js";
import { configOf } from "./coordinator.js";
import { settleWaiterWithError } from "./delivery.js";
import type { AgentEntry, ExecutionEntry, StartRequest } from "./requests.js";
import type { Run } from "./run.js";
import { asPhronomyError } from "./session.js";
import { inputVerdictOf, persistedInput, redactedStartInput } from "./start-input.js";
import { cancelQueued } from "./queue-cancel.js";
import { messageWritten, tellIfHeldElsewhere } from "./queue-head.js";
import { placeBySeq, unknownAhead } from "./queue-order.js";
import { cancelDurablyOnFailure, restore, restoreAhead } from "./queue-restore.js";
import { ABORTED, INTERRUPT_REASON, type QueuedItem, type QueueState } from "./queue-state.js";
import { busyPolicyOf, cancellation, noQueueError } from "./queue-words.js";
import { carryOutEnqueueRefusal } from "./enqueue-refusal.js";
import { whenRead } from "./rehydration.js";

/** Writes the message to the conversation's queue (on the loop), at the
 * front or the back as `Admit` answered, which counted it queued already
 * (a message not written is counted out again). */
export function enqueue(queues: QueueState, request: StartRequest, front: boolean, interrupt: boolean): void {
  const store = queues.store();
  const agent = request.agent;
  if (store === undefined) {
    queues.counted(agent, -1);
    settleWaiterWithError(request.waiter, noQueueError(agent.id, busyPolicyOf(request)), queues.settings);
    return;
  }
  // A start under an id queued (or being queued) here already — a second
  // start with one idempotency key while the first waits in the queue —
  // follows that message: written again, its refusal would be taken for
  // the first's and cancel it (docs/decisions/0063).
  if (request.executionId !== undefined && queues.items.has(request.executionId)) {
    queues.counted(agent, -1);
    queues.environment.followExecution(agent.id, request.executionId, request.waiter);
    return;
  }
  // One taken from the queue and being started: followed once that start
  // settles (a second item of its id would take its place in the queue's
  // maps when the start fails for now and goes back to the head).
  const starting = request.executionId !== undefined ? queues.starting.get(request.executionId) : undefined;
  if (starting !== undefined) {
    queues.counted(agent, -1);
    const follow = (): void => queues.environment.followExecution(agent.id, starting.executionId, request.waiter);
    starting.waiter.result.then(follow, follow);
    return;
  }
  // The input guardrail's redaction applies before the input is stored;
  // a block (or a guardrail that fails: docs/decisions/0056) is decided
  // when the message is started, which writes it terminal INPUT_BLOCKED.
  // Kept with the item too, whose start reads it (docs/decisions/0116).
  const verdict = inputVerdictOf(request, agent);
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
    inputVerdict: verdict,
    state: "writing",
    ...(interrupt ? { interrupt } : {}),
  };
  const conversation = queues.conversationOf(agent.id);
  if (front) conversation.items.unshift(item);
  else conversation.items.push(item);
  queues.items.set(executionId, item);
  cancelDurablyOnFailure(queues, item);
  const signal = request.options.signal;
  if (signal?.aborted) {
    item.state = "cancelled";
    queues.forget(item);
    settleWaiterWithError(item.waiter, cancellation(executionId, agent.id, ABORTED), queues.settings);
    return;
  }
  signal?.addEventListener("abort", () => void cancelQueued(queues, executionId, ABORTED).catch(() => undefined), { once: true });
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
        at: queues.settings.now(),
      })
      .then(
        (result) => queues.post(() => written(queues, item, result)),
        (error: unknown) =>
          queues.post(() => {
            const refusal = asPhronomyError(error, "STORE");
            // The core decides (`enqueueRefusalVerdict`, decision 0110).
            // Cancelled while written: a message is queued under its id
            // after all when the store refused it as existing (another
            // process queued the same key's message): the cancel by id
            // is written for that one (seed 1270683270, decision 0063).
            // Else forgotten — it may have been the head (an interrupt):
            // counted out, the core answers `StartHead` when the next one
            // may start — and, its id in the store already (perhaps a
            // message another process queued before the conversation moved
            // here, which this one does not know), read and merged so that
            // it runs here (the keyed start follows it: 0063, found 21).
            carryOutEnqueueRefusal(queues.settings.core, refusal, item.state === "cancelling", {
              tellCancel: (queued) => item.onWritten?.(queued),
              forget: () => queues.forget(item),
              merge: () => mergeStored(queues, item.agent),
              refuse: () => settleWaiterWithError(item.waiter, refusal, queues.settings),
            });
          }),
      );
  // One at a time unless the store commits writes in submission order.
  if (store.queueWritesInOrder === true) void write();
  else conversation.writes = conversation.writes.then(write, write);
}

/** The conversation's queue read back and merged; a read that fails is a
 * store fault, healed by the conversation's recovery (as `restoreAhead`). */
function mergeStored(queues: QueueState, agent: AgentEntry): void {
  restore(queues, agent).catch(() => queues.post(() => queues.environment.healLater(agent.id)));
}

/** The enqueue committed (on the loop). */
function written(queues: QueueState, item: QueuedItem, result: EnqueueMessageResult | undefined): void {
  item.waiter.knowExecutionId(item.executionId);
  item.seq = result?.seq;
  placeBySeq(queues.conversations.get(item.agent.id)?.items ?? [], item);
  if (item.state === "cancelling") return item.onWritten?.(true);
  item.state = "queued";
  item.durableNumber = ++queues.durableCount;
  if (item.interrupt === true) interruptRunning(queues, item.agent);
  // Messages ahead of it in the store that this process does not know
  // (queued by the process that held the conversation before): read
  // first, so that it does not pass them (docs/decisions/0063).
  if (result !== undefined && unknownAhead(queues, item, result.position)) return restoreAhead(queues, item);
  // Written after the store said another process holds the conversation
  // (the core's `FollowQueued` passed it over while it was being written):
  // told again, its Run follows it too.
  tellIfHeldElsewhere(queues, item.agent);
  // It can be started now: the core offers the head if one is due.
  messageWritten(queues, item.agent);
}

/** "interrupt": cancels the conversation's running execution — one still
 * being prepared as soon as its session is made. */
function interruptRunning(queues: QueueState, agent: AgentEntry): void {
  const { coordinator } = queues.environment;
  for (const start of coordinator.requests.preparingStartsOf(agent)) start.cancelById ??= INTERRUPT_REASON;
  for (const entry of coordinator.liveEntriesOf(agent)) {
    if (coordinator.heldForRecovery(entry)) continue;
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
    if (entry.suspended) declineSuspended(queues, agent, entry);
  }
}

/** Declined and cancelled in one decision: the resumed run sees its
 * signal aborted and ends `cancelled` before calling anything. One let go
 * of while suspended has its pending approval read back first. */
function declineSuspended(queues: QueueState, agent: AgentEntry, entry: ExecutionEntry): void {
  const { coordinator } = queues.environment;
  if (
    whenRead(
      coordinator,
      entry,
      () => declineSuspended(queues, agent, entry),
      () => undefined,
    )
  )
    return;
  const pending = entry.approvalRequest;
  if (pending === undefined) return;
  const run: Run | undefined = queues.environment.agentHandle(agent.id)?.resume(entry.executionId, {
    approvalId: pending.approvalId,
    approved: false,
    reason: INTERRUPT_REASON,
    signal: AbortSignal.abort(),
  });
  run?.result.catch(() => undefined);
}
