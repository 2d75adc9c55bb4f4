// Whether agents have decisions to claim, asked in batches (docs/decisions/0048).
// The runtime claims an agent's filed decisions whenever one of its
// executions suspends (the agent becomes ready for decisions filed
// elsewhere, decision 0011): with a conversation per run, one claim — an
// `UPDATE … RETURNING` on a pooled connection — per suspend, almost always
// claiming nothing. The store now first asks whether there is anything to
// claim, and the questions asked in one event-loop turn leave as one read;
// only an agent with something waiting is claimed.
//
// Rules kept here:
// * The probe's condition is the claim's (`inbox.ts`, `claimDecisions`):
//   filed, or claimed at an older epoch than the one held, and only starts
//   when only starts are asked for. A decision filed after the probe read
//   is announced by its notification (or the lease tick's poll), which
//   wakes the agent again: the same as a decision filed after a claim.
// * A batch leaves on the next event-loop round after its first question
//   arrived, at most `inboxProbeAgentsMax` agents per statement.
// * A failed statement fails every question of its batch (the caller's
//   drain reports it and the next wake asks again, as for a failed claim).

import type pg from "pg";

/** Agents asked about by one statement at most. */
export const inboxProbeAgentsMax = 200;

interface Asked {
  readonly agentId: string;
  readonly epoch: number;
  readonly startsOnly: boolean;
  readonly resolve: (waiting: boolean) => void;
  readonly reject: (error: unknown) => void;
}

export class InboxProbes {
  private waiting: Asked[] = [];
  private scheduled = false;
  /** Figures for benchmarks: statements sent and questions in them. */
  readonly figures = { statements: 0, probes: 0 };

  constructor(private readonly pool: Pick<pg.Pool, "query">) {}

  /** Whether `agentId` has a decision this process, holding it at `epoch`,
   * would claim now. */
  waitingFor(agentId: string, epoch: number, startsOnly: boolean): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ agentId, epoch, startsOnly, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        const batch = this.waiting;
        this.waiting = [];
        for (let from = 0; from < batch.length; from += inboxProbeAgentsMax) void this.send(batch.slice(from, from + inboxProbeAgentsMax));
      });
    });
  }

  private async send(batch: readonly Asked[]): Promise<void> {
    this.figures.statements += 1;
    this.figures.probes += batch.length;
    try {
      const { rows } = await this.pool.query<{ ordinal: string }>(`
        SELECT asked.ordinal FROM unnest($1::text[], $2::bigint[], $3::boolean[]) WITH ORDINALITY AS asked(agent_id, epoch, starts_only, ordinal)
        WHERE EXISTS (
          SELECT 1 FROM approval_inbox AS inbox
          WHERE inbox.agent_id = asked.agent_id AND inbox.state IN ('filed', 'claimed')
            AND (inbox.state = 'filed' OR inbox.claimed_epoch < asked.epoch)
            AND (NOT asked.starts_only OR inbox.kind = 'start'))
      `, [batch.map((asked) => asked.agentId), batch.map((asked) => asked.epoch), batch.map((asked) => asked.startsOnly)]);
      const found = new Set(rows.map((row) => Number(row.ordinal) - 1));
      batch.forEach((asked, index) => asked.resolve(found.has(index)));
    } catch (error) {
      for (const asked of batch) asked.reject(error);
    }
  }
}
