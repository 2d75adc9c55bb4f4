// A poll loop for waits on durable rows another process moves (a watched
// execution, a decision filed in the approval inbox): one poll at a time,
// the interval doubling while nothing changes (a suspension can last days)
// and dropping back to its minimum as soon as something does. The timer
// keeps the process alive while there is work, as any awaited request would.

export class BackoffPoller {
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private intervalMs: number;
  private stopped = false;

  constructor(
    /** One poll: true when something changed. Must not reject. */
    private readonly poll: () => Promise<boolean>,
    /** Whether anything is still waited on. */
    private readonly hasWork: () => boolean,
    /** The shortest interval (asked again at each reset: a waiter may
     * need a shorter one while it cannot be told of changes). */
    private readonly intervalMsMin: number | (() => number),
    private readonly intervalMsMax: number,
  ) {
    // Set by `wake`, which comes before any poll (the function may not be
    // callable yet while its owner is being constructed).
    this.intervalMs = typeof intervalMsMin === "number" ? intervalMsMin : 0;
  }

  /** Something new is waited on: poll at the shortest interval. */
  wake(): void {
    this.intervalMs = this.minimum();
    this.schedule();
  }

  private minimum(): number {
    return typeof this.intervalMsMin === "number" ? this.intervalMsMin : this.intervalMsMin();
  }

  /** No poll after this; resolves once a poll under way has finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.polling;
  }

  private schedule(): void {
    if (this.stopped || this.polling !== undefined || !this.hasWork()) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.polling = this.poll()
        .then((changed) => {
          this.intervalMs = changed ? this.minimum() : Math.min(Math.max(this.intervalMs * 2, this.minimum()), this.intervalMsMax);
        })
        .finally(() => {
          this.polling = undefined;
          this.schedule();
        });
    }, this.intervalMs);
  }
}
