// Round trips of bench/e2e's PostgreSQL runs: every `query` of every `pg`
// client of this process (the store's pool, its tick session, the inbox
// listener) counted by kind, and the time from the call to its answer.
// What a run costs is then (time awaiting the server) + (the rest: the
// process's own work), per run — the breakdown in docs/decisions/0042.
//
// `pg.Client.prototype.query` is wrapped while a tally is open; the pool
// calls it with a callback, the store's own clients without (a promise):
// both are timed.

import pg from "pg";
import { callNotingAnswer, type Method } from "./answered.js";

export interface Tally {
  /** Round trips by kind (the statement's first words, literals cut). */
  readonly kinds: Map<string, { count: number; ms: number }>;
  roundTrips: number;
  /** Sum of (answer − call) over every round trip, in ms. */
  awaitingMs: number;
  /** Statements sent (a group commit's query holds many). */
  statements: number;
}

type Query = (this: pg.Client, ...args: unknown[]) => unknown;

/** Counts every round trip until the returned `stop` is called. */
export function openTally(): { readonly tally: Tally; readonly stop: () => void } {
  const tally: Tally = { kinds: new Map(), roundTrips: 0, awaitingMs: 0, statements: 0 };
  const prototype = pg.Client.prototype as unknown as { query: Query };
  const original = prototype.query;
  prototype.query = function (this: pg.Client, ...args: unknown[]): unknown {
    const text = typeof args[0] === "string" ? args[0] : (args[0] as { text?: unknown } | undefined)?.text;
    const kind = kindOf(typeof text === "string" ? text : "");
    const began = performance.now();
    const note = (): void => {
      const ms = performance.now() - began;
      tally.roundTrips += 1;
      tally.awaitingMs += ms;
      tally.statements += typeof text === "string" ? statementsIn(text) : 1;
      const entry = tally.kinds.get(kind) ?? { count: 0, ms: 0 };
      entry.count += 1;
      entry.ms += ms;
      tally.kinds.set(kind, entry);
    };
    return callNotingAnswer(original as Method, this, args, note);
  };
  return {
    tally,
    stop: () => {
      prototype.query = original;
    },
  };
}

/** A statement's kind: the called function for `SELECT f(…)`, else its
 * first three words. A group commit is named by its first statement and
 * how many it holds. */
function kindOf(text: string): string {
  const head = text.trimStart();
  const called = /^SELECT\s+(\w+)\(/i.exec(head);
  const name = called !== null ? `${called[1]}()` : head.split(/\s+/).slice(0, 3).join(" ").replace(/\(.*$/, "").slice(0, 40);
  const statements = statementsIn(text);
  return statements > 1 ? `group of ${statements} (${name} …)` : name;
}

function statementsIn(text: string): number {
  return text.split(";\nSELECT ").length;
}

/** One line: per run, round trips by kind; with `elapsedMs` (one run at a
 * time) also the time awaiting the server and the rest. */
export function describeTally(tally: Tally, runs: number, elapsedMs?: number): string {
  const perRun = (value: number) => (value / runs).toFixed(2);
  const kinds = [...tally.kinds.entries()]
    .sort((a, b) => b[1].count - a[1].count)
    .slice(0, 8)
    .map(([kind, entry]) => `${kind} ${perRun(entry.count)} (${(entry.ms / entry.count).toFixed(2)} ms each)`);
  const head = `per run ${perRun(tally.roundTrips)} round trips, ${perRun(tally.statements)} statements (${(tally.statements / tally.roundTrips).toFixed(1)} per round trip): ${kinds.join(", ")}`;
  if (elapsedMs === undefined) return head;
  return `${head}; ${(tally.awaitingMs / runs).toFixed(2)} ms of ${(elapsedMs / runs).toFixed(2)} ms awaiting PostgreSQL, ${((elapsedMs - tally.awaitingMs) / runs).toFixed(2)} ms in the process`;
}
