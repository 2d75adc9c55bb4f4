// One statement for many concurrent requests of the same kind (the inbox
// settlements of an owner, docs/decisions/0047): the requests that arrive
// while a batch is on its way leave together as the next one, so a burst of
// N costs about two round trips and two commits instead of N.
//
// Rules kept here:
// * One batch on its way at a time; it leaves on the next event-loop round
//   after its first request (never a microtask), at most `itemsMax` items.
// * The batch's statement answers each item in order; a failure of the
//   statement rejects every item of that batch (the caller's retry applies).

export class StatementBatch<Item, Answer> {
  private readonly waiting: { readonly item: Item; readonly resolve: (answer: Answer) => void; readonly reject: (error: unknown) => void }[] = [];
  private busy = false;

  constructor(
    /** Sends one batch: one answer per item, in order. */
    private readonly send: (items: readonly Item[]) => Promise<readonly Answer[]>,
    private readonly itemsMax: number,
  ) {}

  submit(item: Item): Promise<Answer> {
    return new Promise<Answer>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.busy || this.waiting.length === 0) return;
    this.busy = true;
    setImmediate(() => void this.flush());
  }

  private async flush(): Promise<void> {
    const batch = this.waiting.splice(0, this.itemsMax);
    try {
      const answers = await this.send(batch.map((entry) => entry.item));
      batch.forEach((entry, index) => entry.resolve(answers[index]!));
    } catch (error) {
      for (const entry of batch) entry.reject(error);
    } finally {
      this.busy = false;
      this.schedule();
    }
  }
}
