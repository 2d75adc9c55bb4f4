// Whether agents have decisions to claim, asked in batches (docs/decisions/0048).
// The runtime claims an agent's filed decisions when the agent becomes
// ready for decisions filed elsewhere without being told of one (decision
// 0011): a recovered conversation with a suspended execution, or one whose
// execution suspended before it was listening (a live conversation's
// suspension claims nothing, decision 0052). Each was a claim — an
// `UPDATE … RETURNING` on a pooled connection — almost always claiming
// nothing. The store first asks whether there is anything to claim, and
// the questions asked in one event-loop turn leave as one read
// (`turn-batch.ts`); only an agent with something waiting is claimed.
//
// Rules kept here:
// * The probe's condition is the claim's (`inbox.ts`, `claimDecisions`):
//   filed, or claimed at an older epoch than the one held, and only starts
//   when only starts are asked for. A decision filed after the probe read
//   is announced by its notification (or the lease tick's poll), which
//   wakes the agent again: the same as a decision filed after a claim.
// * At most `inboxProbeAgentsMax` agents per statement; a failed statement
//   fails every question of its batch (the caller's drain reports it and
//   the next wake asks again, as for a failed claim).

import type pg from "pg";
import { TurnBatch } from "./turn-batch.js";

/** Agents asked about by one statement at most. */
export const inboxProbeAgentsMax = 200;

interface Asked {
  readonly agentId: string;
  readonly epoch: number;
  readonly startsOnly: boolean;
}

export class InboxProbes {
  private readonly batch: TurnBatch<Asked, boolean>;

  constructor(pool: Pick<pg.Pool, "query">) {
    this.batch = new TurnBatch(inboxProbeAgentsMax, async (batch) => {
      const { rows } = await pool.query<{ ordinal: string }>(
        `
        SELECT asked.ordinal FROM unnest($1::text[], $2::bigint[], $3::boolean[]) WITH ORDINALITY AS asked(agent_id, epoch, starts_only, ordinal)
        WHERE EXISTS (
          SELECT 1 FROM approval_inbox AS inbox
          WHERE inbox.agent_id = asked.agent_id AND inbox.state IN ('filed', 'claimed')
            AND (inbox.state = 'filed' OR inbox.claimed_epoch < asked.epoch)
            AND (NOT asked.starts_only OR inbox.kind = 'start'))
      `,
        [batch.map((asked) => asked.agentId), batch.map((asked) => asked.epoch), batch.map((asked) => asked.startsOnly)],
      );
      const found = new Set(rows.map((row) => Number(row.ordinal) - 1));
      return batch.map((_asked, index) => found.has(index));
    });
  }

  /** Figures for benchmarks: statements sent and questions in them. */
  get figures(): { readonly statements: number; readonly questions: number } {
    return this.batch.figures;
  }

  /** Whether `agentId` has a decision this process, holding it at `epoch`,
   * would claim now. */
  waitingFor(agentId: string, epoch: number, startsOnly: boolean): Promise<boolean> {
    return this.batch.ask({ agentId, epoch, startsOnly });
  }
}
