// Reads of one kind asked for in one event-loop turn, sent as one
// statement (docs/decisions/0049): a restarted process recovering 100
// conversations read each execution's steps and each conversation's queue
// with a round trip of its own — 200 round trips through a 10-connection
// pool before the first run could move. The same pattern as the journal
// reads (`journal-reads.ts`), for any read keyed by an id.
//
// Rules kept here:
// * A batch leaves on the next event-loop round after its first read
//   arrived, at most `readBatchKeysMax` keys per statement; a read alone
//   is the single-key statement (`one`).
// * A failed statement fails every read of its batch (whoever asked
//   retries, as before).

/** Keys read by one statement at most. */
export const readBatchKeysMax = 200;

interface Asked<V> {
  readonly key: string;
  readonly resolve: (value: V) => void;
  readonly reject: (error: unknown) => void;
}

export class ReadBatches<V> {
  private waiting: Asked<V>[] = [];
  private scheduled = false;

  constructor(
    /** The read of one key. */
    private readonly one: (key: string) => Promise<V>,
    /** The read of several keys: every key asked for gets its value (an
     * empty one when nothing was found). */
    private readonly many: (keys: readonly string[]) => Promise<Map<string, V>>,
  ) {}

  read(key: string): Promise<V> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ key, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        const batch = this.waiting;
        this.waiting = [];
        for (let from = 0; from < batch.length; from += readBatchKeysMax) void this.send(batch.slice(from, from + readBatchKeysMax));
      });
    });
  }

  private async send(batch: readonly Asked<V>[]): Promise<void> {
    try {
      if (batch.length === 1) {
        const only = batch[0]!;
        only.resolve(await this.one(only.key));
        return;
      }
      const found = await this.many([...new Set(batch.map((asked) => asked.key))]);
      for (const asked of batch) {
        const value = found.get(asked.key);
        if (value === undefined) asked.reject(new Error(`the batched read returned nothing for ${asked.key}`));
        else asked.resolve(value);
      }
    } catch (error) {
      for (const asked of batch) asked.reject(error);
    }
  }
}
