// The journal reads of the PostgreSQL store in batches (docs/decisions/0042):
// a start on a conversation whose journal tail is not kept here
// (`journal-tails.ts`) — every new conversation — reads its memory. With a
// conversation per run that was one round trip per run, outside the group
// commit, two thirds of the round trips with 100 runs in flight. The reads
// asked for in one event-loop turn now leave as one statement.
//
// Rules kept here:
// * A batch leaves on the next event-loop round after its first read
//   arrived (as a group commit does, `turn-batch.ts`), at most
//   `journalReadAgentsMax` agents per statement; a read alone is the
//   single-agent statement it always was.
// * Each agent gets the last `limit` records it asked for: the statement
//   asks for the largest limit of its batch and each answer keeps its own.
// * A failed statement fails every read of its batch (a read is retried by
//   whoever asked, as before).

import type pg from "pg";
import type { JournalRecord } from "../records.js";
import * as reads from "./reads.js";
import { TurnBatch } from "./turn-batch.js";

/** Agents read by one statement at most. */
export const journalReadAgentsMax = 200;

interface Asked {
  readonly agentId: string;
  readonly limit: number;
}

export class JournalReads {
  private readonly batch: TurnBatch<Asked, JournalRecord[]>;

  constructor(pool: Pick<pg.Pool, "query">, where: string) {
    this.batch = new TurnBatch(journalReadAgentsMax, async (batch) => {
      if (batch.length === 1) return [await reads.readJournal(pool, where, batch[0]!.agentId, batch[0]!.limit)];
      const limit = Math.max(...batch.map((asked) => asked.limit));
      const found = await reads.readJournals(pool, where, [...new Set(batch.map((asked) => asked.agentId))], limit);
      return batch.map((asked) => (found.get(asked.agentId) ?? []).slice(-asked.limit));
    });
  }

  /** Figures for benchmarks: statements sent and reads in them. */
  get figures(): { readonly statements: number; readonly questions: number } {
    return this.batch.figures;
  }

  read(agentId: string, limit: number): Promise<JournalRecord[]> {
    return this.batch.ask({ agentId, limit });
  }
}
