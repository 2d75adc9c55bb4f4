// The journal reads of the PostgreSQL store in batches (docs/decisions/0042):
// a start on a conversation whose journal tail is not kept here
// (`journal-tails.ts`) — every new conversation — reads its memory. With a
// conversation per run that was one round trip per run, outside the group
// commit, two thirds of the round trips with 100 runs in flight. The reads
// asked for in one event-loop turn now leave as one statement.
//
// Rules kept here:
// * A batch leaves on the next event-loop round after its first read
//   arrived (as a group commit does), at most `agentsMax` agents per
//   statement; a read alone is the single-agent statement it always was.
// * Each agent gets the last `limit` records it asked for: the statement
//   asks for the largest limit of its batch and each answer keeps its own.
// * A failed statement fails every read of its batch (a read is retried by
//   whoever asked, as before).

import type pg from "pg";
import type { JournalRecord } from "../records.js";
import * as reads from "./reads.js";

/** Agents read by one statement at most. */
export const journalReadAgentsMax = 200;

interface Asked {
  readonly agentId: string;
  readonly limit: number;
  readonly resolve: (records: JournalRecord[]) => void;
  readonly reject: (error: unknown) => void;
}

export class JournalReads {
  private waiting: Asked[] = [];
  private scheduled = false;
  /** Figures for benchmarks: statements sent and reads in them. */
  readonly figures = { statements: 0, reads: 0 };

  constructor(private readonly pool: Pick<pg.Pool, "query">, private readonly where: string) {}

  read(agentId: string, limit: number): Promise<JournalRecord[]> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ agentId, limit, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        const batch = this.waiting;
        this.waiting = [];
        for (let from = 0; from < batch.length; from += journalReadAgentsMax) void this.send(batch.slice(from, from + journalReadAgentsMax));
      });
    });
  }

  private async send(batch: readonly Asked[]): Promise<void> {
    this.figures.statements += 1;
    this.figures.reads += batch.length;
    try {
      if (batch.length === 1) {
        const only = batch[0]!;
        only.resolve(await reads.readJournal(this.pool, this.where, only.agentId, only.limit));
        return;
      }
      const limit = Math.max(...batch.map((asked) => asked.limit));
      const found = await reads.readJournals(this.pool, this.where, [...new Set(batch.map((asked) => asked.agentId))], limit);
      for (const asked of batch) asked.resolve((found.get(asked.agentId) ?? []).slice(-asked.limit));
    } catch (error) {
      for (const asked of batch) asked.reject(error);
    }
  }
}
