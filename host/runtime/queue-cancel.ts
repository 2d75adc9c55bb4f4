// Cancelling a queued message (conversation-queue.ts; docs/decisions/0057):
// its Run is told CANCELLED only once the store holds the cancel; one
// still being written is cancelled once its enqueue committed; one taken
// from the queue is cancelled in the store if still queued there; an
// aborted head's cancel is written again until the store holds it.

import type { CancellationError } from "../errors.js";
import type { QueueStore } from "../store/queue.js";
import { settleWaiterWithError } from "./delivery.js";
import { messageWritten, tellIfHeldElsewhere } from "./queue-head.js";
import { ABORTED, type QueuedItem, type QueueState } from "./queue-state.js";
import { cancellation } from "./queue-words.js";

/** Cancels a queued message by its execution id: true when it was
 * queued (it is written terminal, failed with CANCELLED, and its Run is
 * rejected with CancellationError); false when there is no such queued
 * message (it runs already, ended, or is unknown). For `env.cancel`. */
export async function cancelQueued(queues: QueueState, executionId: string, reason?: string): Promise<boolean> {
  const store = queues.store();
  if (store === undefined) return false;
  const item = queues.items.get(executionId);
  if (item === undefined) return cancelStarting(queues, store, executionId, reason);
  item.cancel ??= cancelItem(queues, store, item, cancellation(executionId, item.agent.id, reason));
  return item.cancel;
}

/** Writes the cancel of a message this process queued; its Run is told
 * CANCELLED only once the store holds it (docs/decisions/0057), as
 * `env.cancel` answers. One still being written is cancelled once its
 * enqueue committed (one that failed was never queued). Meanwhile it
 * keeps its place and is not started. A cancel that fails leaves it
 * queued, and rejects with the store's error. */
function cancelItem(queues: QueueState, store: QueueStore, item: QueuedItem, error: CancellationError): Promise<boolean> {
  const writing = item.state === "writing";
  item.state = "cancelling";
  const enqueued = writing
    ? new Promise<boolean>((resolve) => {
        item.onWritten = resolve;
      })
    : Promise.resolve(true);
  const record = { executionId: item.executionId, error: error.toRecord() };
  const written = enqueued
    .then((committed) => (committed ? store.cancelQueued({ ...record, at: queues.settings.now() }) : undefined))
    .then(
      () => {
        queues.post(() => cancelCommitted(queues, item, error));
        return true;
      },
      (failure: unknown) => {
        queues.post(() => cancelFailed(queues, item));
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
 * message behind it may start (counted out, the core answers `StartHead`). */
function cancelCommitted(queues: QueueState, item: QueuedItem, error: CancellationError): void {
  item.state = "cancelled";
  queues.forget(item);
  settleWaiterWithError(item.waiter, error, queues.settings);
}

/** The cancel was not written (on the loop): still queued. One whose
 * signal was aborted is never started: its cancel is written again after
 * the backoff, wherever it waits in the queue. Any other can be started
 * again: the core is told (`MessageWritten`), and offers the head if one
 * is due. If the store says another process holds the conversation now
 * (the lease moved while it was being cancelled, and the core's
 * `FollowQueued` passed it over), the core is told again: its Run follows
 * it too. */
function cancelFailed(queues: QueueState, item: QueuedItem): void {
  item.state = "queued";
  item.cancel = undefined;
  tellIfHeldElsewhere(queues, item.agent);
  if (item.options.signal?.aborted === true) return cancelAborted(queues, item);
  messageWritten(queues, item.agent);
}

/** A head whose start's signal was aborted and whose cancel was not
 * written: written again (250 ms, doubling to 5 s) — it is told only
 * once the store holds it, and never started (docs/decisions/0057). */
export function cancelAborted(queues: QueueState, item: QueuedItem): void {
  queues.abortedCancels.schedule(item.executionId, async () => {
    if (queues.closed || queues.items.get(item.executionId) !== item) return true;
    await cancelQueued(queues, item.executionId, ABORTED);
    return true;
  });
}

/** A message taken from the queue whose preparation may not have
 * committed yet (or one queued by another process): cancelled in the
 * store if it is still queued there — its preparation then finds the id
 * taken and writes nothing, and its Run is told CANCELLED first. */
async function cancelStarting(queues: QueueState, store: QueueStore, executionId: string, reason: string | undefined): Promise<boolean> {
  if (queues.environment.coordinator.hasExecution(executionId)) return false;
  const starting = queues.starting.get(executionId);
  const error = cancellation(executionId, starting?.agent.id, reason);
  const { cancelled } = await store.cancelQueued({ executionId, error: error.toRecord(), at: queues.settings.now() });
  if (cancelled && starting !== undefined) {
    starting.state = "cancelled";
    settleWaiterWithError(starting.waiter, error, queues.settings);
    // Its preparation failed meanwhile and the core kept it at the head
    // (`HeadKept`): it leaves the queue, and the next message starts
    // (counted out, the core answers `StartHead`).
    queues.post(() => {
      if (queues.items.get(executionId) === starting) queues.forget(starting);
    });
  }
  return cancelled;
}
