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
    private readonly intervalMsMin: number,
    private readonly intervalMsMax: number,
  ) {
    this.intervalMs = intervalMsMin;
  }

  /** Something new is waited on: poll at the shortest interval. */
  wake(): void {
    this.intervalMs = this.intervalMsMin;
    this.schedule();
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
      this.polling = this.poll().then((changed) => {
        this.intervalMs = changed ? this.intervalMsMin : Math.min(this.intervalMs * 2, this.intervalMsMax);
      }).finally(() => {
        this.polling = undefined;
        this.schedule();
      });
    }, this.intervalMs);
  }
}
