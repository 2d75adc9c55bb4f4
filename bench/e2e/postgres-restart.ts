// bench/e2e's restart-to-done on PostgreSQL (issue 13: ≤ 1 s), with the
// breakdown of the restarted process's time. `postgres.ts` runs it as the
// last figure of `bench:e2e --store postgres://…`; alone, compiled as an
// application runs (no tsx in the children either):
//
//   node scripts/bench-compiled.mjs bench/e2e/postgres-restart.ts postgres://127.0.0.1:5432/test
//
// A process with `IN_FLIGHT` runs in flight, each inside its first tool
// call, is killed (kill -9) and a process with the same `instanceId`
// started; the time from spawning it until every run is terminal (the
// schema watched from here), and where that time went: the process start,
// loading modules, the store's open (its connections and statements),
// the recovery's reads, the runs' writes (`postgres-restart-child.ts`
// records every round trip). A process that only opens the store, timed
// first, gives the floor no store change removes, and what loading the
// AI SDK costs.

import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { JsonLinesChild } from "./json-lines-child.js";
import pg from "pg";
import type { RestartChildConfig, RestartChildReport, Trip } from "./postgres-restart-child.js";
import { IN_FLIGHT } from "./workload.js";

/** How long a restarted process may take to finish the dead one's runs. */
const restartTimeoutMs = 120_000;
/** A child that is not ready this long after it was started is hung. */
const childReadyTimeoutMs = 60_000;

const compiled = import.meta.url.endsWith(".js");
const childPath = fileURLToPath(new URL(`./postgres-restart-child.${compiled ? "js" : "ts"}`, import.meta.url));

export interface Restart {
  readonly runs: number;
  /** From spawning the restarted process until every run was terminal (watched from here). */
  readonly startToDoneMs: number;
  /** From spawning it until its store was open. */
  readonly startToOpenMs: number;
  /** The same for a process that only opens the store. */
  readonly bareOpenMs: number;
  /** The restarted process's timeline, one line per phase. */
  readonly breakdown: string[];
  /** Children compiled (plain node) or under tsx. */
  readonly compiled: boolean;
}

/** Kill -9 with `IN_FLIGHT` runs in flight, restart with the same
 * instance id, every run done: the figures and the breakdown. */
export async function restartToDone(url: string, schema: string, admin: pg.Client): Promise<Restart> {
  const instanceId = "bench-restart";
  const base = { url, schema, workers: IN_FLIGHT, prefix: "restart", instanceId };
  const bare = new Child("bare open", { ...base, instanceId: "bench-bare", mode: "open" });
  const bareOpened = await bare.report("opened", childReadyTimeoutMs);
  const bareOpenMs = bare.elapsed(bareOpened);
  const bareDone = await bare.report("done", childReadyTimeoutMs);
  await bare.exited;

  const victim = new Child("restart victim", { ...base, mode: "victim" });
  try {
    await victim.report("ready", childReadyTimeoutMs);
  } finally {
    victim.kill();
  }
  await victim.exited;
  const unfinished = async (): Promise<number> =>
    Number(
      (await admin.query<{ count: string }>(`SELECT count(*) AS count FROM ${schema}.executions WHERE status <> 'terminal' AND agent_id LIKE 'restart-%'`))
        .rows[0]?.count ?? 0,
    );
  const runs = await unfinished();
  const restarted = new Child("restarted", { ...base, workers: runs, mode: "recover" });
  try {
    while ((await unfinished()) > 0) {
      if (performance.now() - restarted.spawnedAt > restartTimeoutMs)
        throw new Error(`the restarted process had not finished the ${runs} runs in ${restartTimeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    const startToDoneMs = performance.now() - restarted.spawnedAt;
    const opened = await restarted.report("opened", childReadyTimeoutMs);
    const done = await restarted.report("done", childReadyTimeoutMs);
    return {
      runs,
      startToDoneMs,
      startToOpenMs: restarted.elapsed(opened),
      bareOpenMs,
      compiled,
      breakdown: describeRestart(restarted.spawnOffset(done), done.marks ?? {}, done.trips ?? [], bareDone.marks?.["ai load (ms)"]),
    };
  } finally {
    restarted.kill();
    await restarted.exited;
  }
}

/** The restarted process's time, phase by phase (ms from its spawn). */
function describeRestart(spawnMs: number, marks: Record<string, number>, answered: readonly Trip[], aiLoadMs: number | undefined): string[] {
  // Recorded as answered: in the order they were sent.
  const trips = [...answered].sort((a, b) => a.sent - b.sent);
  const at = (ms: number): string => `${(spawnMs + ms).toFixed(0)}`;
  const span = (from: number, to: number): string => `${(to - from).toFixed(0)} ms (${at(from)}–${at(to)})`;
  const lines: string[] = [];
  lines.push(`process spawned → node running: ${spawnMs.toFixed(0)} ms; node's own start → first line: ${marks["first line"]!.toFixed(0)} ms`);
  lines.push(
    `modules: pg ${span(marks["first line"]!, marks["pg loaded"]!)}, the host ${span(marks["pg loaded"]!, marks["host loaded"]!)}, the PostgreSQL store ${span(marks["host loaded"]!, marks["store module loaded"]!)}, the application's (zod, its model) ${span(marks["store module loaded"]!, marks["application loaded"]!)}${aiLoadMs === undefined ? "" : `; the AI SDK (loaded when the agent is defined, measured alone in the bare process): ${aiLoadMs.toFixed(0)} ms`}`,
  );
  const openBegan = marks["application loaded"]!;
  const openEnded = marks["store open"]!;
  const during = (from: number, to: number) => trips.filter((trip) => trip.sent >= from && trip.sent < to);
  lines.push(`Phronomy.open ${span(openBegan, openEnded)}: ${describeTrips(during(openBegan, openEnded), at)}`);
  const doneAt = marks["last run done"] ?? openEnded;
  const after = during(openEnded, doneAt + 1);
  const firstWrite = after.find((trip) => trip.kind === "group commit");
  lines.push(
    `after open until the first write ${firstWrite === undefined ? "(none)" : span(openEnded, firstWrite.sent)}: ${describeTrips(
      after.filter((trip) => firstWrite === undefined || trip.sent < firstWrite.sent),
      at,
    )}`,
  );
  if (firstWrite !== undefined) {
    const writes = after.filter((trip) => trip.sent >= firstWrite.sent);
    const groups = writes.filter((trip) => trip.kind === "group commit");
    const terminals = groups.reduce((sum, trip) => sum + trip.terminals, 0);
    lines.push(
      `the runs' writes ${span(firstWrite.sent, doneAt)}: ${groups.length} group commits (${groups.reduce((sum, trip) => sum + trip.barriers, 0)} barriers, ${terminals} terminal commits) and ${writes.length - groups.length} other round trips (${describeTrips(
        writes.filter((trip) => trip.kind !== "group commit"),
        at,
      )})`,
    );
  }
  lines.push(
    `agent defined at ${at(marks["agent defined"] ?? Number.NaN)} (the AI SDK there at ${at(marks["AI SDK loaded"] ?? Number.NaN)}), definition recovered at ${at(marks["definition recovered"] ?? Number.NaN)}, last run done at ${at(doneAt)} ms`,
  );
  return lines;
}

/** Round trips by kind, in order of first use: count, first sent – last answered. */
function describeTrips(trips: readonly Trip[], at: (ms: number) => string): string {
  if (trips.length === 0) return "no round trips";
  const kinds = new Map<string, { count: number; sent: number; answered: number }>();
  for (const trip of trips) {
    const entry = kinds.get(trip.kind);
    if (entry === undefined) kinds.set(trip.kind, { count: 1, sent: trip.sent, answered: trip.answered });
    else {
      entry.count += 1;
      entry.answered = Math.max(entry.answered, trip.answered);
    }
  }
  return [...kinds].map(([kind, entry]) => `${kind}${entry.count > 1 ? ` ×${entry.count}` : ""} ${at(entry.sent)}–${at(entry.answered)}`).join(", ");
}

/** One restart child and its JSON lines (`postgres-restart-child.ts`). */
class Child extends JsonLinesChild<RestartChildReport> {
  constructor(name: string, config: RestartChildConfig) {
    super(name, childPath, config, "ignore");
  }

  /** ms from the spawn until the child's process started (its time origin). */
  spawnOffset(report: RestartChildReport): number {
    return (report.origin ?? 0) - (performance.timeOrigin + this.spawnedAt);
  }

  /** ms from the spawn until this report's last mark. */
  elapsed(report: RestartChildReport): number {
    const last = Math.max(...Object.values(report.marks ?? { none: 0 }));
    return this.spawnOffset(report) + last;
  }
}

/** Alone: a fresh schema of the given database, dropped at the end. */
async function main(url: string | undefined): Promise<void> {
  if (url === undefined || !/^postgres(ql)?:\/\//i.test(url))
    throw new Error("usage: node scripts/bench-compiled.mjs bench/e2e/postgres-restart.ts postgres://user@host:port/database");
  const schema = `phronomy_bench_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    // The schema created (and migrated) once, as a deployed application's is.
    const setup = new Child("setup", { url, schema, workers: 0, prefix: "setup", instanceId: "bench-setup", mode: "open" });
    await setup.report("done", childReadyTimeoutMs);
    await setup.exited;
    printRestart(await restartToDone(url, schema, admin));
  } finally {
    await admin
      .query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      .catch((error: unknown) => console.error(`could not drop the bench schema ${schema}: ${String(error)}`));
    await admin.end();
  }
}

/** The figure and its breakdown, as `bench:e2e` prints them. */
export function printRestart(restart: Restart, floorTen?: number, transactionsAfterRestart?: number): void {
  const floor =
    floorTen === undefined || transactionsAfterRestart === undefined
      ? ""
      : `; the 10-connection floor for the runs' ${restart.runs * transactionsAfterRestart} remaining transactions: ${(((restart.runs * transactionsAfterRestart) / floorTen) * 1000).toFixed(0)} ms`;
  console.log(
    `  kill -9 with ${restart.runs} runs in flight, restart with the same instanceId (${restart.compiled ? "compiled, plain node" : "under tsx"}): every run done ${restart.startToDoneMs.toFixed(0)} ms after the new process was spawned (its store open at ${restart.startToOpenMs.toFixed(0)} ms; a process that only opens the store: ${restart.bareOpenMs.toFixed(0)} ms${floor})`,
  );
  for (const line of restart.breakdown) console.log(`    ${line}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    await main(process.argv[2]);
  } catch (error) {
    console.error(`bench/e2e/postgres-restart: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  }
}
