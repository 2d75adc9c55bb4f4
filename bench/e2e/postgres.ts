// bench/e2e on PostgreSQL (issue 7 §5), every figure in one run against the
// given server, in a fresh schema dropped at the end:
//
// * the raw floor: single-row autocommit INSERTs per second, on one
//   connection (latency-bound: one WAL flush per commit) and on ten (what
//   PostgreSQL's own group commit of WAL flushes gives);
// * the agent-run workload with a NEW conversation per run (issue 13),
//   sequential (one run after another) and with `IN_FLIGHT` runs in flight
//   on one process;
// * suspend/resume: `SUSPENDS` conversations suspended for approval with
//   `IN_FLIGHT` in flight, then all approved;
// * `IN_FLIGHT` workers spread over `PROCESSES` child processes
//   (`postgres-child.ts`) on the same schema — each runs only conversations
//   of the partitions it holds (docs/decisions/0030), as an application
//   routing by partition would — started together once balanced; the total
//   runs/s is every child's runs over the longest child's window; then the
//   same with starts arriving at random processes (every process starts any
//   conversation; those of another's partitions are filed for their owner,
//   docs/decisions/0031), as behind a load balancer;
// * restart-to-done: a process with `IN_FLIGHT` runs in flight (each inside
//   its first tool call) is killed (kill -9) and a process with the same
//   `instanceId` started: the time from its start until every run is done
//   (instant reclaim, docs/decisions/0030), with where that time went
//   (`postgres-restart.ts`, docs/decisions/0049).
//
// Each figure is printed beside the floor measured in the same run, and
// the sequential and 100-in-flight loops with their round trips per run
// (`postgres-profile.ts`): time awaiting the server, and the rest.
//
// The URL's password is never printed (the store's redacted URL is).
//
// `BENCH_PG_SECTIONS` (comma-separated: sequential, many, suspend,
// spread-own, spread-any, restart) runs only those sections, after the
// floors (every figure is printed beside them); the default runs all.
// With both spread sections, own and random routing run interleaved on
// the same three processes: `BENCH_PG_PAIRS` (4) pairs of windows of the
// loop's seconds, own then any, then any then own, alternately, so that
// the load's drift between windows favours neither; each pair's ratio and
// added p50 is printed, and their median and mean (docs/decisions/0127).

import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { Phronomy } from "../../host/index.js";
import { parseLocation } from "../../host/store/postgres/connection.js";
import type { PostgresStore } from "../../host/store/postgres-store.js";
import type { ChildConfig, ChildReport } from "./postgres-child.js";
import { JsonLinesChild } from "./json-lines-child.js";
import { describeTally, openTally, type Tally } from "./postgres-profile.js";
import { describeStartProfile } from "./start-profile.js";
import { z } from "zod";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { tool } from "../../host/index.js";
import { printRestart, restartToDone } from "./postgres-restart.js";
import { IN_FLIGHT, OPERATIONS_PER_RUN, defineConversations, percentile, runConversationsFor, summarize } from "./workload.js";

/** Conversations suspended for approval, then approved, in the suspend/resume loop. */
const SUSPENDS = Number(process.env["BENCH_SUSPENDS"] ?? 2_000);

/** Store transactions of a suspend: the preparation (with its first
 * barrier) and the suspension. */
const TRANSACTIONS_PER_SUSPEND = 2;
/** Store transactions a run killed inside its first tool call still needs:
 * the tool barrier again, the second model and tool barriers, the answer's
 * barrier and the terminal commit. */
const TRANSACTIONS_AFTER_RESTART = 4;

/** Coordinator processes in the spread measurement (issue 7 names three). */
const PROCESSES = 3;
/** Connections of the ten-connection floor. */
const FLOOR_CONNECTIONS = 10;
/** A row like a barrier's: a model response of a few hundred bytes. */
const floorPayload = "x".repeat(300);
/** A child that is not ready this long after it was started is hung. */
const childReadyTimeoutMs = 60_000;

const sectionNames = ["sequential", "many", "suspend", "spread-own", "spread-any", "restart"] as const;
type Section = (typeof sectionNames)[number];

/** The sections `BENCH_PG_SECTIONS` names (all by default); a name not
 * known ends the bench in one line. */
function sectionsWanted(): ReadonlySet<Section> {
  const given = process.env["BENCH_PG_SECTIONS"];
  if (given === undefined || given.trim() === "") return new Set(sectionNames);
  const names = given.split(",").map((name) => name.trim());
  for (const name of names) {
    if (!(sectionNames as readonly string[]).includes(name)) throw new Error(`BENCH_PG_SECTIONS: unknown section "${name}"; known: ${sectionNames.join(", ")}`);
  }
  return new Set(names as Section[]);
}

// Compiled (scripts/bench-compiled.mjs), the children run compiled too.
const compiled = import.meta.url.endsWith(".js");
const childPath = fileURLToPath(new URL(`./postgres-child.${compiled ? "js" : "ts"}`, import.meta.url));

export async function benchPostgres(url: string, seconds: number): Promise<void> {
  if (new URL(url).searchParams.has("schema")) throw new Error("the bench makes a fresh schema of its own and drops it: give the URL without ?schema=");
  const sections = sectionsWanted();
  const schema = `phronomy_bench_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect().catch((error: unknown) => {
    throw new Error(`cannot reach PostgreSQL at ${parseLocation(url, schema).redactedUrl}: ${error instanceof Error ? error.message : String(error)}`);
  });
  try {
    const server = await serverSettings(admin);
    const env = await Phronomy.open({ store: url, postgres: { schema }, logger: { warn: () => undefined } });
    const where = (env.store as PostgresStore).path;
    const poolSize = (env.store as PostgresStore).pool.options.max;
    console.log(
      `bench/e2e — agent run (model → tool → model → tool → model, ${OPERATIONS_PER_RUN} durable transactions per run), PostgreSQL, ${seconds}s per loop, node ${process.version}`,
    );
    console.log(
      `  store ${where} · PostgreSQL ${server.version}, synchronous_commit=${server.synchronousCommit}, fsync=${server.fsync} · pool ${poolSize} connections per process`,
    );

    const floorOne = await rawFloor(url, schema, 1, seconds);
    const floorTen = await rawFloor(url, schema, FLOOR_CONNECTIONS, seconds);
    console.log(
      `  raw floor: ${floorOne.toFixed(0)} single-row commits/s on 1 connection (= ${(floorOne / OPERATIONS_PER_RUN).toFixed(0)} runs/s if each of the ${OPERATIONS_PER_RUN} paid one), ${floorTen.toFixed(0)} on ${FLOOR_CONNECTIONS} (= ${(floorTen / OPERATIONS_PER_RUN).toFixed(0)} runs/s)`,
    );

    const runsFloorOne = floorOne / OPERATIONS_PER_RUN;
    const runsFloorTen = floorTen / OPERATIONS_PER_RUN;
    const ofFloor = (rate: number, floor: number, what: string) => `${(rate / floor).toFixed(2)}× the ${what} floor's ${floor.toFixed(0)}`;

    const definition = defineConversations(env, "bench");
    if (sections.has("sequential")) {
      await runConversationsFor(definition, "warm", 1, 1);
      const sequentialTally = openTally();
      const one = await runConversationsFor(definition, "sequential", 1, seconds);
      sequentialTally.stop();
      const total = one.latencies.reduce((sum, value) => sum + value, 0);
      const sequentialRate = one.runs / (total / 1000);
      console.log(
        `  sequential, a conversation per run: ${sequentialRate.toFixed(0)} runs/s, ${ofFloor(sequentialRate, runsFloorOne, "1-connection")} (${(total / one.runs / OPERATIONS_PER_RUN).toFixed(2)} ms per durable step against ${(1000 / floorOne).toFixed(2)} ms per floor commit)`,
      );
      console.log(`    ${describeTally(sequentialTally.tally, one.runs, one.elapsedMs)}`);
    }

    if (sections.has("many")) {
      await runConversationsFor(definition, "warm-many", IN_FLIGHT, 1);
      const manyTally = openTally();
      const manyFigures = await runConversationsFor(definition, "many", IN_FLIGHT, seconds);
      manyTally.stop();
      const many = summarize(manyFigures);
      console.log(
        `  one process, ${IN_FLIGHT} in flight, a conversation per run: ${many.runsPerSecond.toFixed(0)} runs/s, ${ofFloor(many.runsPerSecond, runsFloorTen, `${FLOOR_CONNECTIONS}-connection`)} (${(many.runsPerSecond * OPERATIONS_PER_RUN).toFixed(0)} store transactions/s), p50 ${many.p50.toFixed(1)} ms, p99 ${many.p99.toFixed(1)} ms`,
      );
      console.log(`    ${describeTally(manyTally.tally, manyFigures.runs)}`);
    }

    if (sections.has("suspend")) {
      const approvals = await suspendAndResume(env, SUSPENDS);
      const suspendFloor = floorTen / TRANSACTIONS_PER_SUSPEND;
      console.log(
        `  suspend/resume, ${SUSPENDS} conversations, ${IN_FLIGHT} in flight: ${approvals.suspendsPerSecond.toFixed(0)} suspends/s, ${ofFloor(approvals.suspendsPerSecond, suspendFloor, `${FLOOR_CONNECTIONS}-connection`)} (${TRANSACTIONS_PER_SUSPEND} transactions per suspend); ${approvals.resumesPerSecond.toFixed(0)} approvals completed/s`,
      );
      console.log(`    suspends: ${describeTally(approvals.suspendTally, SUSPENDS)}`);
      console.log(`    approvals: ${describeTally(approvals.resumeTally, SUSPENDS)}`);
    }
    await env.close();

    const routings = (["own", "any"] as const).filter((routing) => sections.has(`spread-${routing}`));
    const describeSpread = (routing: "own" | "any", spread: Spread, what = ""): string => {
      const how =
        routing === "own"
          ? "each process its own partitions' conversations"
          : `starts arriving at random processes: ${Math.round((1 - 1 / PROCESSES) * 100)}% filed for their owner`;
      return `  ${PROCESSES} processes, ${IN_FLIGHT} in flight in all (${spread.agentsPerProcess.join(" + ")} workers, ${how})${what}: ${spread.runsPerSecond.toFixed(0)} runs/s total, ${ofFloor(spread.runsPerSecond, runsFloorTen, `${FLOOR_CONNECTIONS}-connection`)} (${spread.perProcess.map((rate) => rate.toFixed(0)).join(" + ")}; ${(spread.runsPerSecond * OPERATIONS_PER_RUN).toFixed(0)} store transactions/s), p50 ${spread.p50.toFixed(1)} ms, p99 ${spread.p99.toFixed(1)} ms${spread.lost > 0 ? `; ${spread.lost} runs fenced as partitions moved, not counted` : ""}`;
    };
    if (routings.length === 2) {
      const pairs = Number(process.env["BENCH_PG_PAIRS"] ?? 4);
      if (!Number.isInteger(pairs) || pairs < 1)
        throw new Error(`BENCH_PG_PAIRS: a positive whole number of window pairs, not "${process.env["BENCH_PG_PAIRS"]}"`);
      const interleaved = await spreadInterleaved(url, schema, seconds, pairs);
      for (const routing of routings) {
        console.log(describeSpread(routing, interleaved.pooled[routing], `, ${pairs} windows of ${seconds}s pooled`));
        for (const line of interleaved.pooled[routing].profile) console.log(`    ${line}`);
      }
      console.log(
        `  own and random routing interleaved on the same 3 processes: ${pairs} pairs of ${seconds}s windows, own then any, any then own, alternately; per pair any/own runs/s and added p50 (any − own):`,
      );
      console.log(`    ${interleaved.pairs.map((pair) => `${pair.ratio.toFixed(2)}× ${pair.added >= 0 ? "+" : ""}${pair.added.toFixed(1)} ms`).join(" · ")}`);
      // The median (the mean of the middle two of an even count), and the
      // mean: over an even count of pairs alternating their order, a load
      // that drifts steadily through the run adds as much to own routing's
      // windows as to random routing's, so it cancels in the mean.
      const median = (values: number[]) => {
        const sorted = [...values].sort((x, y) => x - y);
        const half = Math.floor(sorted.length / 2);
        return sorted.length % 2 === 1 ? sorted[half]! : (sorted[half - 1]! + sorted[half]!) / 2;
      };
      const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
      const ratios = interleaved.pairs.map((pair) => pair.ratio);
      const added = interleaved.pairs.map((pair) => pair.added);
      console.log(
        `    over the pairs, median / mean: random routing ${median(ratios).toFixed(2)}× / ${mean(ratios).toFixed(2)}× own routing's runs/s, added p50 ${median(added).toFixed(1)} / ${mean(added).toFixed(1)} ms`,
      );
    } else {
      for (const routing of routings) {
        const spread = await spreadOverProcesses(url, schema, seconds, routing);
        console.log(describeSpread(routing, spread));
        for (const line of spread.profile) console.log(`    ${line}`);
      }
    }

    if (sections.has("restart")) printRestart(await restartToDone(url, schema, admin), floorTen, TRANSACTIONS_AFTER_RESTART);
  } finally {
    await admin
      .query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      .catch((error: unknown) => console.error(`could not drop the bench schema ${schema}: ${String(error)}`));
    await admin.end();
  }
}

async function serverSettings(client: pg.Client): Promise<{ version: string; synchronousCommit: string; fsync: string }> {
  const setting = async (name: string) => String((await client.query(`SHOW ${name}`)).rows[0]?.[name] ?? "?");
  return { version: await setting("server_version"), synchronousCommit: await setting("synchronous_commit"), fsync: await setting("fsync") };
}

/** `count` conversations each suspended for approval (`IN_FLIGHT` at a
 * time), then all approved: both rates. */
async function suspendAndResume(
  env: Awaited<ReturnType<typeof Phronomy.open>>,
  count: number,
): Promise<{ suspendsPerSecond: number; resumesPerSecond: number; suspendTally: Tally; resumeTally: Tally }> {
  const refund = tool({ inputSchema: z.object({ amount: z.number() }), needsApproval: () => true, execute: () => "ok" });
  const model = scriptedModel(({ messages }) =>
    messages.at(-1)?.role === "tool" ? { text: "refunded" } : { toolCalls: [{ toolName: "refund", input: { amount: 30 } }] },
  );
  const definition = env.agent({ name: "approvals", model, tools: { refund }, memoryWindow: 1 });
  const inBatches = async <T>(body: (index: number) => Promise<T>): Promise<T[]> => {
    const results: T[] = new Array(count);
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < count) {
          const index = next++;
          results[index] = await body(index);
        }
      }),
    );
    return results;
  };
  const suspendTally = openTally();
  const suspendBegan = performance.now();
  const suspended = await inBatches(
    (index) =>
      new Promise<{ executionId: string; approvalId: string }>((resolve, reject) => {
        const run = definition.conversation(`approval-${index}`).start("refund", {
          onEvent: (event) => {
            if (event.type === "approval_required") resolve({ executionId: event.executionId, approvalId: event.request.approvalId });
          },
        });
        run.result.then(() => reject(new Error("a bench refund ended before its approval")), reject);
      }),
  );
  const suspendMs = performance.now() - suspendBegan;
  suspendTally.stop();
  const resumeTally = openTally();
  const resumeBegan = performance.now();
  await inBatches(async (index) => {
    const { executionId, approvalId } = suspended[index]!;
    const result = await definition.conversation(`approval-${index}`).resume(executionId, { approvalId, approved: true }).result;
    if (result.outcome !== "completed") throw new Error(`a bench approval ended ${result.outcome}`);
  });
  const resumeMs = performance.now() - resumeBegan;
  resumeTally.stop();
  return {
    suspendsPerSecond: count / (suspendMs / 1000),
    resumesPerSecond: count / (resumeMs / 1000),
    suspendTally: suspendTally.tally,
    resumeTally: resumeTally.tally,
  };
}

/** Single-row autocommit INSERTs for `seconds` on `connections`
 * connections at once: commits per second. */
async function rawFloor(url: string, schema: string, connections: number, seconds: number): Promise<number> {
  const table = `${schema}.floor_${connections}`;
  const pool = new pg.Pool({ connectionString: url, max: connections });
  try {
    await pool.query(`CREATE TABLE ${table} (id bigint PRIMARY KEY, payload text NOT NULL)`);
    let next = 0;
    const until = performance.now() + seconds * 1000;
    const began = performance.now();
    await Promise.all(
      Array.from({ length: connections }, async () => {
        const client = await pool.connect();
        try {
          while (performance.now() < until) await client.query(`INSERT INTO ${table} (id, payload) VALUES ($1, $2)`, [next++, floorPayload]);
        } finally {
          client.release();
        }
      }),
    );
    return next / ((performance.now() - began) / 1000);
  } finally {
    await pool.end();
  }
}

interface Spread {
  readonly agentsPerProcess: number[];
  /** Runs fenced because their partition moved (not counted). */
  readonly lost: number;
  readonly perProcess: number[];
  readonly runsPerSecond: number;
  /** The longest child's window (the windows', pooled). */
  readonly windowMs: number;
  /** The children's reports, in the children's order (window after window, pooled). */
  readonly reports: readonly ChildReport[];
  readonly p50: number;
  readonly p99: number;
  /** The round trips per run; routing `any`: where a filed start's latency goes (`start-profile.ts`). */
  readonly profile: string[];
}

/** `IN_FLIGHT` agents split over `PROCESSES` children; each defines and
 * warms its share, then all start on one signal. */
async function spreadOverProcesses(url: string, schema: string, seconds: number, routing: "own" | "any"): Promise<Spread> {
  const children = await readyChildren(url, schema, seconds, routing);
  try {
    const spread = await spreadWindow(children, "go", 0, seconds, routing);
    await Promise.all(children.map((child) => child.exited));
    return spread;
  } finally {
    for (const child of children) child.kill();
  }
}

/** Own and random routing alternated on the same children, `pairs` pairs
 * of windows (own then any, then any then own, …: a drift of the
 * machine's load favours neither): each pair's any/own runs/s and added
 * p50, and each routing's windows pooled. */
async function spreadInterleaved(
  url: string,
  schema: string,
  seconds: number,
  pairs: number,
): Promise<{ pairs: { ratio: number; added: number }[]; pooled: Record<"own" | "any", Spread> }> {
  const children = await readyChildren(url, schema, seconds, "any");
  try {
    const windows: Record<"own" | "any", Spread[]> = { own: [], any: [] };
    let nth = 0;
    for (let pair = 0; pair < pairs; pair++) {
      const order = pair % 2 === 0 ? (["own", "any"] as const) : (["any", "own"] as const);
      for (const routing of order) windows[routing].push(await spreadWindow(children, `go ${routing}`, nth++, seconds, routing));
    }
    for (const child of children) child.send("stop");
    await Promise.all(children.map((child) => child.exited));
    const pooled = (routing: "own" | "any"): Spread => {
      const reports = windows[routing].flatMap((spread) => spread.reports);
      return figuresOf(
        windows[routing][0]!.agentsPerProcess,
        reports,
        windows[routing].reduce((sum, spread) => sum + spread.windowMs, 0),
        routing,
      );
    };
    return {
      pairs: windows.own.map((own, index) => {
        const any = windows.any[index]!;
        return { ratio: any.runsPerSecond / own.runsPerSecond, added: any.p50 - own.p50 };
      }),
      pooled: { own: pooled("own"), any: pooled("any") },
    };
  } finally {
    for (const child of children) child.kill();
  }
}

/** The children, each with its share of `IN_FLIGHT` agents, defined and
 * warmed (with this routing), ready for a window's signal. */
async function readyChildren(url: string, schema: string, seconds: number, routing: "own" | "any"): Promise<Child[]> {
  const agentsPerProcess = Array.from({ length: PROCESSES }, (_, index) => Math.floor(IN_FLIGHT / PROCESSES) + (index < IN_FLIGHT % PROCESSES ? 1 : 0));
  const children = agentsPerProcess.map((count, index) => {
    const config: ChildConfig = { url, schema, seconds, workers: count, prefix: `spread-${routing}-${index}`, processes: PROCESSES, routing };
    return new Child(`process ${index + 1}`, config, count);
  });
  try {
    await Promise.all(children.map((child) => child.report("ready", childReadyTimeoutMs)));
  } catch (error) {
    for (const child of children) child.kill();
    throw error;
  }
  return children;
}

/** One window: every child sent `command` at once, its `nth` `finished`
 * report awaited. */
async function spreadWindow(children: readonly Child[], command: string, nth: number, seconds: number, routing: "own" | "any"): Promise<Spread> {
  const finished = children.map((child) => child.report("finished", childReadyTimeoutMs + seconds * 1000, nth));
  for (const child of children) child.send(command);
  const reports = await Promise.all(finished);
  const windowMs = Math.max(...reports.map((report) => report.elapsedMs ?? 0));
  return figuresOf(
    children.map((child) => child.workers),
    reports,
    windowMs,
    routing,
  );
}

/** The figures of these children's reports over `windowMs`. */
function figuresOf(agentsPerProcess: number[], reports: readonly ChildReport[], windowMs: number, routing: "own" | "any"): Spread {
  const runs = reports.reduce((sum, report) => sum + (report.runs ?? 0), 0);
  const latencies = reports.flatMap((report) => report.latencies ?? []).sort((a, b) => a - b);
  const lost = reports.reduce((sum, report) => sum + (report.lost ?? 0), 0);
  const perProcess = agentsPerProcess.map((_, index) => {
    const own = reports.filter((_, at) => at % agentsPerProcess.length === index);
    return own.reduce((sum, report) => sum + (report.runs ?? 0), 0) / (own.reduce((sum, report) => sum + (report.elapsedMs ?? 1), 0) / 1000);
  });
  return {
    agentsPerProcess,
    perProcess,
    runsPerSecond: runs / (windowMs / 1000),
    windowMs,
    reports,
    lost,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    profile: [describeTally(mergedTally(reports), runs), ...describeRunPhases(reports), ...(routing === "any" ? describeStartProfile(reports) : [])],
  };
}

/** Each way a run ran (moved here, run here, filed): how many, and the
 * p50 of each phase in ms (`postgres-child.ts`'s `runPhases`). */
function describeRunPhases(reports: readonly ChildReport[]): string[] {
  const joined = new Map<string, number[]>();
  for (const report of reports) for (const [name, values] of Object.entries(report.phases ?? {})) joined.set(name, [...(joined.get(name) ?? []), ...values]);
  const ways = [...new Set([...joined.keys()].map((name) => name.split(" ")[0]!))].sort();
  return ways.map((way) => {
    const entries = [...joined].filter(([name]) => name.startsWith(`${way} `));
    const total = entries.find(([name]) => name === `${way} total`)?.[1] ?? [];
    const p50 = (values: number[]) =>
      percentile(
        [...values].sort((a, b) => a - b),
        0.5,
      ).toFixed(1);
    return `${way} runs ${total.length}, p50 ms: ${entries.map(([name, values]) => `${name.slice(way.length + 1)} ${p50(values)}`).join(" · ")}`;
  });
}

/** The children's round trips as one tally. */
function mergedTally(reports: readonly ChildReport[]): Tally {
  const tally: Tally = { kinds: new Map(), roundTrips: 0, awaitingMs: 0, statements: 0 };
  for (const report of reports) {
    if (report.tally === undefined) continue;
    tally.roundTrips += report.tally.roundTrips;
    tally.statements += report.tally.statements;
    tally.awaitingMs += report.tally.awaitingMs;
    for (const [kind, entry] of report.tally.kinds) {
      const sum = tally.kinds.get(kind) ?? { count: 0, ms: 0 };
      sum.count += entry.count;
      sum.ms += entry.ms;
      tally.kinds.set(kind, sum);
    }
  }
  return tally;
}

/** One child process and its JSON lines (`postgres-child.ts`). */
class Child extends JsonLinesChild<ChildReport> {
  constructor(
    name: string,
    config: ChildConfig,
    readonly workers: number,
  ) {
    super(name, childPath, config);
  }
}
