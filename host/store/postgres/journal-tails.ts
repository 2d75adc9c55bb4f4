// The last journal records of the agents this process holds, kept in memory
// so the read before every start (the conversation memory) needs no round
// trip (docs/decisions/0012). On this machine a query's round trip costs
// ≈150 µs of CPU just to wake the server's backend; the journal read was one
// query per run.
//
// Rules kept here:
// * Only for an agent under a lease, and tagged with the lease epoch it was
//   read or written under. Every other writer of the agent's journal held a
//   different epoch (epochs grow on every takeover, ours included), so a tail
//   whose epoch is not the lease held now is dropped, never served.
// * Appends come from this process's own committed writes (preparation,
//   terminal commit), in commit order: an agent runs one execution at a time.
// * A read that raced an append is not kept (the append's version moved on).
// * Bounded: `agentsMax` agents (least recently used dropped), each at most
//   the largest window asked for.

import type { JournalRecord } from "../records.js";
import { jsonOf } from "../sqlite/compare-and-set.js";

/** Agents whose tails are kept at most. */
export const journalTailAgentsMax = 1_000;

interface Tail {
  readonly epoch: number;
  records: JournalRecord[];
  /** The tail holds the agent's whole journal (a read found fewer than it asked for). */
  complete: boolean;
  /** Records kept at most: the largest window asked for. */
  keep: number;
}

export class JournalTails {
  private readonly tails = new Map<string, Tail>();
  /** Bumped by every append and drop: a read started before must not be kept. */
  private readonly versions = new Map<string, number>();

  constructor(private readonly agentsMax = journalTailAgentsMax) {}

  /** The last `limit` records, when the tail kept under `epoch` has them. */
  read(agentId: string, epoch: number, limit: number): JournalRecord[] | undefined {
    const tail = this.tails.get(agentId);
    if (tail === undefined) return undefined;
    if (tail.epoch !== epoch) {
      this.drop(agentId);
      return undefined;
    }
    if (tail.records.length < limit && !tail.complete) return undefined;
    this.tails.delete(agentId);
    this.tails.set(agentId, tail);
    return tail.records.slice(-limit);
  }

  /** A token to hand back to `remember` with what a read found. */
  version(agentId: string): number {
    return this.versions.get(agentId) ?? 0;
  }

  /** Keeps what a read of the last `limit` records found, unless an append
   * or a drop happened since `version`. */
  remember(agentId: string, epoch: number, limit: number, records: readonly JournalRecord[], version: number): void {
    if (this.version(agentId) !== version) return;
    this.tails.delete(agentId);
    this.tails.set(agentId, { epoch, records: [...records], complete: records.length < limit, keep: limit });
    if (this.tails.size > this.agentsMax) this.drop(this.tails.keys().next().value as string);
  }

  /** Records a committed write appended under `epoch`. */
  append(agentId: string, epoch: number, records: readonly JournalRecord[]): void {
    if (records.length === 0) return;
    this.versions.set(agentId, this.version(agentId) + 1);
    const tail = this.tails.get(agentId);
    if (tail === undefined) return;
    if (tail.epoch !== epoch) {
      this.drop(agentId);
      return;
    }
    // As a read would return them: the stored JSON, not the caller's objects.
    tail.records.push(...records.map((record) => ({ executionId: record.executionId, role: record.role, content: jsonOf(record.content), at: record.at })));
    if (tail.records.length > tail.keep) {
      tail.records.splice(0, tail.records.length - tail.keep);
      tail.complete = false;
    }
  }

  /** Forgets the agent's tail (purged, or its lease changed hands). */
  drop(agentId: string): void {
    this.versions.set(agentId, this.version(agentId) + 1);
    this.tails.delete(agentId);
  }
}
