// Leases given up when a conversation is let go (docs/decisions/0024),
// expired in batches: every release asked for in one turn of the event loop
// goes in one statement, so a conversation per run does not pay a round
// trip of its own to let its lease go.
//
// Rules kept here:
// * A release not sent yet is cancelled when the agent's lease is asked for
//   again; one being sent is waited for first, so a lease taken again is
//   never expired by a release sent before it.
// * `close` sends what is pending and waits for it.

import type pg from "pg";
import * as leases from "./leases.js";

export class LeaseReleases {
  private pending = new Set<string>();
  private sending: { readonly agentIds: ReadonlySet<string>; readonly done: Promise<void> } | undefined;
  private scheduled = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly owner: string,
    private readonly failed: (error: unknown) => void,
  ) {}

  release(agentId: string): void {
    this.pending.add(agentId);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.send();
    });
  }

  /** Before the agent's lease is asked for again. */
  async settle(agentId: string): Promise<void> {
    if (this.pending.delete(agentId)) return;
    if (this.sending?.agentIds.has(agentId)) await this.sending.done;
  }

  async close(): Promise<void> {
    await this.send();
  }

  private async send(): Promise<void> {
    while (this.sending !== undefined) await this.sending.done;
    if (this.pending.size === 0) return;
    const agentIds = this.pending;
    this.pending = new Set();
    const done = leases.release(this.pool, this.owner, [...agentIds]).catch(this.failed).finally(() => {
      if (this.sending?.done === done) this.sending = undefined;
    });
    this.sending = { agentIds, done };
    await done;
  }
}
