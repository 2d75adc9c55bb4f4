// Tries per key, again and again with a doubling wait, until an attempt
// says it is done: at most one attempt scheduled per key at a time. For
// what a PostgreSQL owner repairs by itself once the database or its
// partition lets it (docs/decisions/0055): a conversation a store fault
// held, a queue whose head was refused. The timers never keep the process
// alive.

export class KeyedRetries {
  private readonly scheduled = new Set<string>();

  constructor(private readonly delayMsMin: number, private readonly delayMsMax: number) {}

  /** Runs `attempt` after the wait unless one is scheduled for `key`
   * already; it resolves true when done, false (or rejects) to be tried
   * again after twice the wait, up to the longest. */
  schedule(key: string, attempt: () => Promise<boolean>, delayMs = this.delayMsMin): void {
    if (this.scheduled.has(key)) return;
    this.scheduled.add(key);
    const again = (): void => this.schedule(key, attempt, Math.min(this.delayMsMax, 2 * delayMs));
    setTimeout(() => {
      this.scheduled.delete(key);
      attempt().then((done) => { if (!done) again(); }, again);
    }, delayMs).unref();
  }
}
