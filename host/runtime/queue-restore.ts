// Reading a conversation's queue back from the store (conversation-queue.ts):
// after its executions were recovered, again later while a head is refused
// for now, and when the store knows of messages ahead of a new one; while
// a recovery of the conversation runs, its head waits (`holdWhile`). A
// message taken from the queue that fails before it ran is written
// terminal here (`cancelDurablyOnFailure`), or its queue read again.

import type { QueuedMessage } from "../store/queue.js";
import { heldEpochOf, leasingStoreOf } from "./leases.js";
import type { AgentEntry } from "./requests.js";
import { Waiter } from "./run.js";
import { asPhronomyError } from "./session.js";
import { storedStartInput } from "./start-input.js";
import { heldElsewhere, startHead, tellIfHeldElsewhere } from "./queue-head.js";
import { placeBySeq } from "./queue-order.js";
import { KEPT_QUEUED, type QueuedItem, type QueueState } from "./queue-state.js";
import { optionsOf } from "./queue-words.js";

/** Runs a recovery of the conversation with its queue held: the release
 * of an execution held for recovery frees the admission for a moment,
 * and a head started then would take the place of the execution ahead
 * of it (which recovery then finds AGENT_BUSY). */
export async function holdWhile<T>(queues: QueueState, agentId: string, recovery: () => Promise<T>): Promise<T> {
  queues.recovering.set(agentId, (queues.recovering.get(agentId) ?? 0) + 1);
  try {
    return await recovery();
  } finally {
    const left = (queues.recovering.get(agentId) ?? 1) - 1;
    if (left > 0) queues.recovering.set(agentId, left);
    else heldNoLonger(queues, agentId);
  }
}

/** The last recovery of the conversation ended: a head passed over
 * meanwhile is offered again (the core refuses it while the recovered
 * execution runs; it then stays the head). */
function heldNoLonger(queues: QueueState, agentId: string): void {
  queues.recovering.delete(agentId);
  const head = queues.conversations.get(agentId)?.items[0];
  if (head !== undefined) queues.environment.loop.post(() => startHead(queues, head.agent), { label: `the next queued message of agent "${agentId}"` });
}

/** After the agent's executions were recovered: its durable queue is
 * read and its head started once the conversation is idle. */
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
        for (const message of messages) {
          // Known here: queued, or taken and being started (its preparation
          // removes it from the store's queue when it commits).
          if (queues.items.has(message.executionId) || queues.starting.has(message.executionId)) continue;
          const item = restoredItem(queues, agent, message);
          conversation.items.push(item);
          placeBySeq(conversation.items, item);
          queues.counted(agent, 1);
        }
        // Read while another process (or nobody) holds the conversation — a
        // recovery here after the lease moved away: told to the core, whose
        // `FollowQueued` makes the messages' waiters here follow them from
        // the store (a start that follows one here — `observe`, the same
        // idempotency key — then follows it there).
        tellIfHeldElsewhere(queues, agent);
        startHead(queues, agent);
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

/** `restore` for the conversation if it is live here (nothing when it
 * is not: its next use reads its queue). */
export async function restoreLive(queues: QueueState, agentId: string): Promise<void> {
  await queues.environment.conversations.holding(agentId, (entry) => restore(queues, entry));
}

/** A head taken from the queue was refused for a while — its partition's
 * lease not renewed in time here (docs/decisions/0055) — and stays
 * queued in the store: while this
 * process holds the partition nobody else starts it, so the queue is
 * read and started again here (250 ms, doubling to 5 s, while held). */
export function restoreLater(queues: QueueState, agentId: string): void {
  const holds = (): boolean => heldEpochOf(queues.environment.store, agentId) !== undefined;
  if (queues.closed || leasingStoreOf(queues.environment.store) === undefined || !holds()) return;
  queues.restores.schedule(agentId, async () => {
    if (!queues.closed && holds()) await restoreLive(queues, agentId);
    return true;
  });
}

/** The conversation's queue read and merged in durable order, its head
 * held meanwhile. */
export function restoreAhead(queues: QueueState, agent: AgentEntry): void {
  holdWhile(queues, agent.id, () => restore(queues, agent)).catch(() => restoreLater(queues, agent.id));
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

/** A message taken from the queue that fails before it ran (refused,
 * not established) is written terminal with its error, unless the store
 * cannot say or the process stops (it then stays queued). Once it ran,
 * its execution row exists and this writes nothing. */
export function cancelDurablyOnFailure(queues: QueueState, item: QueuedItem): void {
  const waiter = item.waiter;
  waiter.result.catch((error: unknown) => {
    const failure = asPhronomyError(error, "INTERNAL");
    // A Run handed to the follower settles with the execution's end
    // elsewhere: the message is this process's own waiter's to write.
    if (waiter !== item.waiter) return;
    if (item.state === "cancelled" || queues.items.has(item.executionId)) return;
    if (failure.code === "AGENT_BUSY") restoreLater(queues, item.agent.id);
    if (KEPT_QUEUED.has(failure.code)) return;
    void queues
      .store()
      ?.cancelQueued({ executionId: item.executionId, error: failure.toRecord(), at: queues.settings.now() })
      .catch((cause: unknown) => queues.warn(item, cause));
  });
}
