// Tries per key, again and again with a doubling wait, until an attempt
// says it is done: at most one attempt scheduled per key at a time. For a
// store write whose decision is made already and only has to land: the
// cancel of an aborted queued message (queue-cancel.ts). It decides
// nothing — not whether the message runs (its caller aborted it: it never
// runs, and while its cancel is written it is not durable as queued, so
// the head offered by the core's `StartHead` is not started), nor whether
// the conversation is held (a conversation a store fault held is
// retried after the core's `RetryAfter`: recovery-pipeline.ts) — so it is
// I/O retry, not a control decision (docs/decisions/0062, "The cancel of an
// aborted message is I/O retry"). Its waits are the core's one backoff
// (`Limit.RetryMsFirst` doubling to `Limit.RetryMsMax`), not numbers of
// its own. The timers never keep the process alive. The wait is kept per
// key until an attempt is done, so a key scheduled again from outside
// after a failed attempt (a cancel that failed re-asks for itself) still
// waits the doubled time.

import { Limit } from "../../assembly/abi.js";

export class KeyedRetries {
  private readonly scheduled = new Set<string>();
  /** The next wait of each key whose last attempt was not done. */
  private readonly waits = new Map<string, number>();

  constructor(
    private readonly delayMsMin: number = Limit.RetryMsFirst,
    private readonly delayMsMax: number = Limit.RetryMsMax,
  ) {}

  /** Runs `attempt` after the key's wait unless one is scheduled for
   * `key` already; it resolves true when done, false (or rejects) to be
   * tried again after twice the wait, up to the longest. */
  schedule(key: string, attempt: () => Promise<boolean>): void {
    if (this.scheduled.has(key)) return;
    this.scheduled.add(key);
    const delayMs = this.waits.get(key) ?? this.delayMsMin;
    this.waits.set(key, Math.min(this.delayMsMax, 2 * delayMs));
    const again = (): void => this.schedule(key, attempt);
    setTimeout(() => {
      this.scheduled.delete(key);
      attempt().then((done) => {
        if (done) this.waits.delete(key);
        else again();
      }, again);
    }, delayMs).unref();
  }
}
