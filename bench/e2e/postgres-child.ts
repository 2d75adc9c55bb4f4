// One coordinator process of bench/e2e's PostgreSQL spread measurement
// (`postgres.ts` starts it: `node --import tsx postgres-child.ts <json>`).
// It opens the store's schema, waits until the processes have balanced the
// partitions (docs/decisions/0030), warms up on conversations of its own
// partitions, reports `ready`, waits for a `go` line on stdin, runs the
// workload for the given seconds, reports `finished` with its figures,
// closes and exits. One JSON report per stdout line. (`postgres.ts`
// imports only its types.)
//
// The restart-to-done measurement has a child of its own
// (`postgres-restart-child.ts`).

import { createInterface } from "node:readline";
import { Phronomy } from "../../host/index.js";
import type { PostgresStore } from "../../host/store/postgres-store.js";
import { startTiming, type RunPhase, type StartMarks } from "../../host/store/start-timing.js";
import { openTally } from "./postgres-profile.js";
import { defineConversations, runConversationsFor } from "./workload.js";

export interface ChildConfig {
  /** The database URL (the schema is given apart). */
  readonly url: string;
  readonly schema: string;
  readonly seconds: number;
  /** Runs in flight in this process, each on a new conversation. */
  readonly workers: number;
  /** Its conversation ids start with this. */
  readonly prefix: string;
  /** Processes sharing the partitions (to know when they are balanced). */
  readonly processes: number;
  /** Which conversations a spread process starts: `own` (default) those of
   * its own partitions; `any` every one, as starts arriving at random
   * processes behind a load balancer — the others' are filed for their
   * owners (docs/decisions/0031). */
  readonly routing?: "own" | "any";
}

/** How long a child waits for its share of the partitions. */
const balanceTimeoutMs = 60_000;

export interface ChildReport {
  readonly type: "ready" | "finished" | "failed";
  readonly runs?: number;
  /** Runs fenced because their partition moved (not counted in `runs`). */
  readonly lost?: number;
  readonly elapsedMs?: number;
  readonly latencies?: number[];
  readonly message?: string;
  /** Routing `any`: the marks of filed starts taken in the measured window
   * (`host/store/start-timing.ts`), by execution id, and the samples. */
  readonly startMarks?: Record<string, StartMarks>;
  readonly startSamples?: Record<string, number[]>;
  /** Each run's phases in ms, by the way it ran (`runPhases`). */
  readonly phases?: Record<string, number[]>;
  /** The round trips of the measured window, by kind (`postgres-profile.ts`). */
  readonly tally?: {
    readonly roundTrips: number;
    readonly statements: number;
    readonly awaitingMs: number;
    readonly kinds: [string, { count: number; ms: number }][];
  };
}

function report(line: ChildReport): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

async function main(config: ChildConfig): Promise<void> {
  // BENCH_PG_TAKE_IDLE_HERE=1: a start of a new conversation landing here
  // moves it here (`postgres.takeIdleHere`, docs/decisions/0101).
  const takeIdleHere = process.env["BENCH_PG_TAKE_IDLE_HERE"] === "1";
  const env = await Phronomy.open({ store: config.url, postgres: { schema: config.schema, takeIdleHere }, logger: { warn: () => undefined } });
  const store = env.store as PostgresStore;
  // Defined before anything else: a start another process files for a
  // partition this one holds is refused if its definition is not here yet.
  const definition = defineConversations(env, "bench");
  const until = Date.now() + balanceTimeoutMs;
  // Balanced: this process holds at least its share, less the rounding.
  while (store.heldPartitions().length < Math.floor(256 / config.processes) - config.processes && Date.now() < until)
    await new Promise((resolve) => setTimeout(resolve, 100));
  const mine = (id: string): boolean => store.leaseOf(id) !== undefined;
  const accept = config.routing === "any" ? (): boolean => true : mine;
  // A partition may still move to balance while runs are in flight: those
  // runs are fenced (recovered by the new owner), counted, not fatal.
  const moved = (error: unknown): boolean => ["EXECUTION_REHYDRATION_REQUIRED", "AGENT_BUSY"].includes(String((error as { code?: unknown } | null)?.code));
  // Warmed with own routing, then (routing `any`, which the interleaved
  // spread also runs own windows with) random routing: the first measured
  // window of either kind starts warm.
  await runConversationsFor(definition, `${config.prefix}-warm`, config.workers, 1, mine, moved);
  if (config.routing === "any") await runConversationsFor(definition, `${config.prefix}-warm-any`, config.workers, 1, accept, moved);
  // One line per window: `go` (the configured routing), `go own` or `go
  // any` (the interleaved spread, `postgres.ts`), `stop` to close.
  const commands: string[] = [];
  let wake: (() => void) | undefined;
  createInterface({ input: process.stdin })
    .on("line", (line) => {
      commands.push(line);
      wake?.();
    })
    .on("close", () => {
      commands.push("stop");
      wake?.();
    });
  const nextCommand = async (): Promise<string> => {
    while (commands.length === 0) await new Promise<void>((resolve) => (wake = resolve));
    return commands.shift()!;
  };
  report({ type: "ready" });
  for (let window = 0; ; window++) {
    const command = await nextCommand();
    if (!command.startsWith("go")) break;
    const routing = command === "go own" ? "own" : command === "go any" ? "any" : (config.routing ?? "own");
    report(await measureWindow(definition, routing === "any" ? (): boolean => true : mine, moved, `${config.prefix}-${window}`, config, routing));
    if (command === "go") break;
  }
  await env.close();
}

/** One measured window: the workload for `config.seconds` with this
 * routing, its figures, the round trips and the start marks of its runs
 * only (the marks of the window before are dropped). */
async function measureWindow(
  definition: ReturnType<typeof defineConversations>,
  accept: (id: string) => boolean,
  moved: (error: unknown) => boolean,
  prefix: string,
  config: ChildConfig,
  routing: "own" | "any",
): Promise<ChildReport> {
  startTiming.marks.clear();
  startTiming.samples.clear();
  startTiming.phases.clear();
  startTiming.enabled = true;
  const tally = openTally();
  const figures = await runConversationsFor(definition, prefix, config.workers, config.seconds, accept, moved, (id, moment) => startTiming.phase(id, moment));
  tally.stop();
  startTiming.enabled = false;
  return {
    type: "finished",
    runs: figures.runs,
    lost: figures.lost ?? 0,
    elapsedMs: figures.elapsedMs,
    latencies: figures.latencies,
    tally: { roundTrips: tally.tally.roundTrips, statements: tally.tally.statements, awaitingMs: tally.tally.awaitingMs, kinds: [...tally.tally.kinds] },
    phases: runPhases(startTiming.phases),
    ...(routing === "any" ? { startMarks: Object.fromEntries(startTiming.marks), startSamples: Object.fromEntries(startTiming.samples) } : {}),
  };
}

/** Each finished run's phases in ms, under the way it ran: `moved` (moved
 * here by this process), `here` (run here without a move), `filed` (run
 * by another process): from one mark to the next present (docs/decisions/0113). */
export function runPhases(marks: ReadonlyMap<string, Partial<Record<RunPhase, number>>>): Record<string, number[]> {
  const order: readonly RunPhase[] = ["begun", "moving", "moved", "preparing", "prepared", "terminating", "terminated", "ended"];
  const phases: Record<string, number[]> = {};
  const add = (name: string, value: number): void => {
    (phases[name] ??= []).push(value);
  };
  for (const run of marks.values()) {
    if (run.begun === undefined || run.ended === undefined) continue;
    const way = run.preparing === undefined ? "filed" : run.moving !== undefined ? "moved" : "here";
    let from: RunPhase = "begun";
    for (const phase of order.slice(1)) {
      if (run[phase] === undefined) continue;
      add(`${way} ${from}→${phase}`, run[phase]! - run[from]!);
      from = phase;
    }
    add(`${way} total`, run.ended - run.begun);
  }
  return phases;
}

try {
  await main(JSON.parse(process.argv[2] ?? "{}") as ChildConfig);
  process.exit(0);
} catch (error) {
  report({ type: "failed", message: error instanceof Error ? error.message : String(error) });
  process.exit(1);
}
