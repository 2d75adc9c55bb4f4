// Reads of one kind asked for in one event-loop turn, sent as one
// statement (docs/decisions/0049): a restarted process recovering 100
// conversations read each execution's steps and each conversation's queue
// with a round trip of its own — 200 round trips through a 10-connection
// pool before the first run could move. The same pattern as the journal
// reads (`turn-batch.ts`), for any read keyed by an id.
//
// Rules kept here:
// * A batch leaves on the next event-loop round after its first read
//   arrived, at most `readBatchKeysMax` keys per statement; a read alone
//   is the single-key statement (`one`).
// * A failed statement fails every read of its batch (whoever asked
//   retries, as before); so does a key the statement found nothing for.

import { TurnBatch } from "./turn-batch.js";

/** Keys read by one statement at most. */
export const readBatchKeysMax = 200;

export class ReadBatches<V> {
  private readonly batch: TurnBatch<string, V>;

  constructor(
    /** The read of one key. */
    one: (key: string) => Promise<V>,
    /** The read of several keys: every key asked for gets its value (an
     * empty one when nothing was found). */
    many: (keys: readonly string[]) => Promise<Map<string, V>>,
  ) {
    this.batch = new TurnBatch<string, V>(readBatchKeysMax, async (keys): Promise<V[]> => {
      if (keys.length === 1) return [await one(keys[0]!)];
      const found = await many([...new Set(keys)]);
      return keys.map((key) => {
        const value = found.get(key);
        if (value === undefined) throw new Error(`the batched read returned nothing for ${key}`);
        return value;
      });
    });
  }

  read(key: string): Promise<V> {
    return this.batch.ask(key);
  }
}
