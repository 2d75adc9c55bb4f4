// Reading a conversation's queue back from the store (conversation-queue.ts):
// after its executions were recovered, and when the store knows of messages
// ahead of a new one. What is read is counted for the core, which offers
// the head (`StartHead`) when it is due: while a recovery of the
// conversation runs, it is not (docs/decisions/0062, "The head is offered
// by the core only"). A message taken from the queue that fails before it
// ran is written terminal here (`cancelDurablyOnFailure`) when the core
// says so (`queuedRunVerdict`).

import { QueuedRunVerdict } from "../../assembly/abi.js";
import type { QueuedMessage } from "../store/queue.js";
import type { AgentEntry } from "./requests.js";
import { Waiter } from "./run.js";
import { asPhronomyError } from "./session.js";
import { storedStartInput } from "./start-input.js";
import { heldElsewhere, messageWritten, tellIfHeldElsewhere } from "./queue-head.js";
import { placeBySeq } from "./queue-order.js";
import type { QueuedItem, QueueState } from "./queue-state.js";
import { optionsOf } from "./queue-words.js";
import { startAnswerOf } from "./start-answer.js";

/** After the agent's executions were recovered (and when the store knows
 * of messages ahead of a new one): its durable queue is read and merged,
 * and the messages new here are counted for the core at once — whose
 * `StartHead` then offers the head when it is due (while the recovery
 * still runs, when it ends: `RecoveryFinished`). */
export async function restore(queues: QueueState, agent: AgentEntry): Promise<void> {
  const store = queues.store();
  if (store === undefined || queues.closed) return;
  const durableBefore = queues.durableCount;
  const messages = await store.queuedMessages(agent.id);
  if (messages.length === 0 && !queues.conversations.has(agent.id)) return reportHeldElsewhere(queues, agent);
  await new Promise<void>((resolve, reject) => {
    queues.environment.loop.post(
      () => {
        followPrepared(queues, agent.id, messages, durableBefore);
        if (messages.length === 0) return resolve();
        const conversation = queues.conversationOf(agent.id);
        let merged = 0;
        for (const message of messages) {
          // Known here: queued, or taken and being started (its preparation
          // removes it from the store's queue when it commits).
          if (queues.items.has(message.executionId) || queues.starting.has(message.executionId)) continue;
          const item = restoredItem(queues, agent, message);
          conversation.items.push(item);
          placeBySeq(conversation.items, item);
          merged += 1;
        }
        // One `MessageQueued` for all of them: one `StartHead` when due.
        if (merged > 0) queues.counted(agent, merged);
        else if (conversation.items.length === 0) queues.drop(conversation, agent.id);
        // Read while another process (or nobody) holds the conversation — a
        // recovery here after the lease moved away: told to the core, whose
        // `FollowQueued` makes the messages' waiters here follow them from
        // the store (a start that follows one here — `observe`, the same
        // idempotency key — then follows it there).
        tellIfHeldElsewhere(queues, agent);
        resolve();
      },
      { completion: { fail: reject }, label: `the queue of agent "${agent.id}"` },
    );
  });
}

/** A queue read back with nothing to merge, while the store says another
 * process (or nobody) holds the conversation — a recovery here of what a
 * fault left held, after the lease moved away: told to the core (on the
 * loop, before the recovery's finish), which records it owned elsewhere
 * again. Nothing to post otherwise. */
function reportHeldElsewhere(queues: QueueState, agent: AgentEntry): void {
  if (!heldElsewhere(queues, agent.id)) return;
  queues.environment.loop.post(() => void tellIfHeldElsewhere(queues, agent), { label: `the owner of conversation "${agent.id}"` });
}

/** Messages waiting here that were durable before the store's queue
 * was read and are not in it any more: a preparation whose outcome was
 * unknown did commit (the recovery found it), or another process
 * cancelled it. Their Runs follow the execution under their id. */
function followPrepared(queues: QueueState, agentId: string, messages: readonly QueuedMessage[], durableBefore: number): void {
  const conversation = queues.conversations.get(agentId);
  if (conversation === undefined) return;
  const queued = new Set(messages.map((message) => message.executionId));
  const wasDurable = (item: QueuedItem): boolean => item.state === "queued" && (item.durableNumber ?? 0) <= durableBefore;
  const gone = conversation.items.filter((item) => wasDurable(item) && !queued.has(item.executionId));
  for (const item of gone) {
    queues.forget(item);
    queues.environment.followExecution(agentId, item.executionId, item.waiter);
  }
}

/** A message durable at a position the store says has messages ahead of
 * it that this process does not know (queued by the process that held the
 * conversation before): they are read and merged first (docs/decisions/0063),
 * and the message is not started meanwhile (`placing`). Then the core is
 * told it can be (`MessageWritten`). A read that fails is a store fault:
 * the conversation is held, and its recovery, after the core's backoff,
 * reads the queue again (on PostgreSQL; SQLite has no other writer). */
export function restoreAhead(queues: QueueState, item: QueuedItem): void {
  item.placing = true;
  const placed = (failed: boolean): void =>
    queues.post(() => {
      item.placing = false;
      if (failed) queues.environment.healLater(item.agent.id);
      // Still queued here and counted: cancelled or taken meanwhile, its
      // own path tells the core.
      if (item.state === "queued" && queues.items.get(item.executionId) === item) messageWritten(queues, item.agent);
    });
  restore(queues, item.agent).then(
    () => placed(false),
    () => placed(true),
  );
}

function restoredItem(queues: QueueState, agent: AgentEntry, message: QueuedMessage): QueuedItem {
  const waiter = new Waiter(agent.id, undefined);
  waiter.knowExecutionId(message.executionId);
  const item: QueuedItem = {
    executionId: message.executionId,
    agent,
    waiter,
    ...storedStartInput(message.input),
    options: optionsOf(message.config),
    state: "queued",
    durableNumber: ++queues.durableCount,
    seq: message.seq,
  };
  queues.items.set(item.executionId, item);
  cancelDurablyOnFailure(queues, item);
  return item;
}

/** A message taken from the queue that fails before it ran is written
 * terminal with its error when the core's verdict on the start's answer
 * says so (`queuedRunVerdict`: refused for good); else it stays queued in
 * the store. Once it ran, its execution row exists and this writes
 * nothing. */
export function cancelDurablyOnFailure(queues: QueueState, item: QueuedItem): void {
  const waiter = item.waiter;
  waiter.result.catch((error: unknown) => {
    const failure = asPhronomyError(error, "INTERNAL");
    // A Run handed to the follower settles with the execution's end
    // elsewhere: the message is this process's own waiter's to write.
    if (waiter !== item.waiter) return;
    if (item.state === "cancelled" || queues.items.has(item.executionId)) return;
    const verdict = queues.settings.core.queuedRunVerdict(startAnswerOf(failure)) as QueuedRunVerdict;
    if (verdict !== QueuedRunVerdict.WriteTerminal) return;
    void queues
      .store()
      ?.cancelQueued({ executionId: item.executionId, error: failure.toRecord(), at: queues.settings.now() })
      .catch((cause: unknown) => queues.warn(item, cause));
  });
}
