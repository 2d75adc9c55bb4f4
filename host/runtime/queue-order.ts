// The durable order of a conversation's queue (docs/decisions/0063): the
// store gives each message an order key (`seq`) and a position when it is
// written; the queue here keeps its messages in that order, and reads the
// store's queue first when the store knows of messages ahead that it does not.

import type { QueuedItem, QueueState } from "./queue-state.js";

/** Moves the item, if in `items`, to its durable place among the items
 * whose order key is known (docs/decisions/0063): after every one with a
 * lower `seq`, before every one with a higher. */
export function placeBySeq(items: QueuedItem[], item: QueuedItem): void {
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

/** Fewer messages known ahead of the item here than the store's
 * `position` says are ahead of it. */
export function unknownAhead(queues: QueueState, item: QueuedItem, position: number): boolean {
  const items = queues.conversations.get(item.agent.id)?.items ?? [];
  const ahead = items.slice(0, Math.max(0, items.indexOf(item))).filter((other) => other.state !== "writing").length;
  const starting = [...queues.starting.values()].filter((other) => other.agent === item.agent).length;
  return ahead + starting < position - 1;
}
