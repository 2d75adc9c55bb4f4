// The peers' table: each peer's figures (the range over its rounds) beside
// Phronomy's of the same run, and how many times better Phronomy's median
// is than the best peer's median (above 1: Phronomy better; rates divide
// Phronomy by the peer, RSS and seconds the peer by Phronomy).

import { type PeerName, type PeerResults, type PeerRound, peerTitles } from "./run.js";
import { restMs } from "../memory.js";
import { CRASH_TOTAL, SUSPENDED } from "./workload.js";

/** Phronomy's figures for one store, a value per round. */
export interface PhronomyColumn {
  readonly title: string;
  readonly sequential: readonly number[];
  /** Sequential at `synchronous = NORMAL` (SQLite only), beside LangGraph as it ships. */
  readonly sequentialNormal?: readonly number[];
  readonly inFlight: readonly number[];
  readonly suspends: readonly number[];
  readonly resumes: readonly number[];
  readonly rssSuspended: readonly number[];
  /** The same, at rest (bench/memory.ts `memoryAtRest`). */
  readonly rssAtRest: readonly number[];
  readonly crashSeconds: readonly number[];
}

interface Measure {
  readonly name: string;
  readonly higherIsBetter: boolean;
  readonly digits: number;
  readonly peer: (round: PeerRound) => number | undefined;
  readonly phronomy: (column: PhronomyColumn) => readonly number[];
}

const measures: readonly Measure[] = [
  { name: "sequential runs/s", higherIsBetter: true, digits: 0, peer: (r) => r.loops?.sequential.runsPerSecond, phronomy: (c) => c.sequential },
  { name: "100 in flight runs/s", higherIsBetter: true, digits: 0, peer: (r) => r.loops?.inFlight.runsPerSecond, phronomy: (c) => c.inFlight },
  {
    name: `${SUSPENDED.toLocaleString("en-US")} approvals: suspends/s`,
    higherIsBetter: true,
    digits: 0,
    peer: (r) => r.approvals?.suspendsPerSecond,
    phronomy: (c) => c.suspends,
  },
  { name: "… resumes/s", higherIsBetter: true, digits: 0, peer: (r) => r.approvals?.resumesPerSecond, phronomy: (c) => c.resumes },
  {
    name: `RSS MB with ${SUSPENDED.toLocaleString("en-US")} suspended`,
    higherIsBetter: false,
    digits: 0,
    // Restate keeps them in its server: the server's RSS.
    peer: (r) => r.approvals?.serverRssSuspended ?? r.approvals?.rssSuspended,
    phronomy: (c) => c.rssSuspended,
  },
  {
    name: `… at rest, ${restMs / 1000} s later`,
    higherIsBetter: false,
    digits: 0,
    peer: (r) => r.approvals?.serverRssAtRest ?? r.approvals?.rssAtRest,
    phronomy: (c) => c.rssAtRest,
  },
  {
    name: `kill -9 at 100 in flight → all ${CRASH_TOTAL.toLocaleString("en-US")} done, s`,
    higherIsBetter: false,
    digits: 2,
    peer: (r) => r.restart?.seconds,
    phronomy: (c) => c.crashSeconds,
  },
];

function format(value: number, digits: number): string {
  return value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

function range(values: readonly number[], digits: number): string {
  if (values.length === 0) return "–";
  const low = Math.min(...values);
  const high = Math.max(...values);
  return low === high ? format(low, digits) : `${format(low, digits)}–${format(high, digits)}`;
}

function median(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Prints the table; `phronomy` holds the columns measured in the same run
 * (none under `npm run bench:peers`). */
export function printPeersTable(results: PeerResults, phronomy: readonly PhronomyColumn[] = []): void {
  const peers = Object.keys(results) as PeerName[];
  const header = [
    "measure",
    ...peers.map((peer) => peerTitles[peer]),
    ...phronomy.map((column) => column.title),
    ...phronomy.map((column) => `${column.title} × best peer`),
  ];
  const rows: string[][] = [];
  for (const measure of measures) {
    const peerValues = peers.map((peer) => (results[peer] ?? []).map(measure.peer).filter((value): value is number => value !== undefined));
    const medians = peerValues.map(median).filter((value): value is number => value !== undefined);
    const best = medians.length === 0 ? undefined : measure.higherIsBetter ? Math.max(...medians) : Math.min(...medians);
    const ratios = phronomy.map((column) => {
      const ours = median(measure.phronomy(column));
      if (ours === undefined || best === undefined) return "–";
      return `${format(measure.higherIsBetter ? ours / best : best / ours, 1)}×`;
    });
    rows.push([
      measure.name,
      ...peerValues.map((values) => range(values, measure.digits)),
      ...phronomy.map((column) => range(measure.phronomy(column), measure.digits)),
      ...ratios,
    ]);
  }
  const widths = header.map((_, column) => Math.max(...[header, ...rows].map((row) => row[column]!.length)));
  const line = (row: readonly string[]) => `  ${row.map((cell, column) => cell.padEnd(widths[column]!)).join(" | ")}`;
  console.log(`\n${line(header)}`);
  console.log(`  ${widths.map((width) => "-".repeat(width)).join("-|-")}`);
  for (const row of rows) console.log(line(row));
  const failed = peers.flatMap((peer) =>
    (results[peer] ?? []).filter((round) => round.error !== undefined).map((round) => `  ${peerTitles[peer]}: ${round.error}`),
  );
  if (failed.length > 0) console.log(`\n  failed rounds (not in the table):\n${failed.join("\n")}`);
  printShipped(results, phronomy);
}

/** LangGraph as its checkpointer ships (`synchronous = NORMAL`: no fsync at
 * a commit) beside Phronomy at NORMAL: the same durability, the other one
 * than the table's (docs/decisions/0106). */
function printShipped(results: PeerResults, phronomy: readonly PhronomyColumn[]): void {
  const shipped = (results.langgraph ?? []).flatMap((round) => (round.shippedLoops ? [round.shippedLoops] : []));
  if (shipped.length === 0) return;
  const sequential = shipped.map((loops) => loops.sequential.runsPerSecond);
  const inFlight = shipped.map((loops) => loops.inFlight.runsPerSecond);
  let line = `\n  LangGraph as shipped (SQLite NORMAL, no fsync at a commit): sequential ${range(sequential, 0)} runs/s, 100 in flight ${range(inFlight, 0)} runs/s`;
  const normal = phronomy.find((column) => column.sequentialNormal !== undefined && column.sequentialNormal.length > 0)?.sequentialNormal;
  const ours = normal === undefined ? undefined : median(normal);
  const theirs = median(sequential);
  if (normal !== undefined && ours !== undefined && theirs !== undefined)
    line += `; Phronomy NORMAL sequential ${range(normal, 0)} runs/s (${format(ours / theirs, 1)}×)`;
  console.log(line);
}
