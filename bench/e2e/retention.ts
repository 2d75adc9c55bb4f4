// bench/e2e/retention: does a short retention keep the store bounded under
// the e2e workload, and what does pruning cost the hot path? The "agent
// run" workload (`workload.ts`, 100 in flight; SQLite FULL with the
// adaptive offload, or PostgreSQL) runs in alternating rounds with retention `forever` (nothing
// pruned: the floor) and with a short retention (the background pruner
// deleting in the store's batches while the workload
// runs). Prints, per round, the store's size and rows every few seconds, throughput, p99 latency,
// the event loop's p99 delay and the prune batches' durations; asserts
// nothing (docs/decisions/0027 quotes its figures).
//
//   npm run bench:retention
//   npm run bench:retention -- --store postgres://postgres@127.0.0.1:5432/test   # PostgreSQL (a fresh schema per round, dropped)
//   BENCH_SECONDS=60 BENCH_ROUNDS=2 BENCH_RETENTION_MS=5000 BENCH_JOURNAL_KEPT=20 npm run bench:retention

import { statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import Database from "better-sqlite3";
import pg from "pg";
import { Phronomy, SqliteStore, type Agent, type ExecutionStore, type RetentionOptions } from "../../host/index.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { pruneBatchExecutionsMax, type PruneCounts, type PruneExecutionsOperation, type PruningStore } from "../../host/store/prune.js";
import { IN_FLIGHT, defineAgents, percentile, warmUp } from "./workload.js";

const seconds = Number(process.env.BENCH_SECONDS ?? 30);
const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
const retentionMs = Number(process.env.BENCH_RETENTION_MS ?? 5_000);
/** The journal each conversation keeps in the short-retention rounds: the
 * default memory window (20); the default (1,000 records per conversation)
 * would plateau only after ≈500 runs of each of the 100 agents. */
const journalKept = Number(process.env.BENCH_JOURNAL_KEPT ?? 20);
const sampleEveryMs = 5_000;
const vacuumEveryMs = 10_000;

interface StoreSize {
  /** Database file and write-ahead log, bytes on disk. */
  readonly fileBytes: number;
  /** SQLite: pages in use (page_count − freelist_count) × page size, what
   * the rows hold. PostgreSQL: the tables with their indexes and TOAST
   * (`pg_total_relation_size`, dead rows included until vacuumed). */
  readonly usedBytes: number;
  readonly executions: number;
  readonly steps: number;
  readonly journal: number;
}

function sizeOf(path: string): StoreSize {
  const size = (file: string) => {
    try {
      return statSync(file).size;
    } catch {
      return 0;
    }
  };
  const database = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const value = (sql: string) => Number(Object.values(database.prepare(sql).get() as object)[0]);
    const pageSize = value("PRAGMA page_size");
    return {
      fileBytes: size(path) + size(`${path}-wal`),
      usedBytes: (value("PRAGMA page_count") - value("PRAGMA freelist_count")) * pageSize,
      executions: value("SELECT count(*) FROM executions"),
      steps: value("SELECT count(*) FROM steps"),
      journal: value("SELECT count(*) FROM journal"),
    };
  } finally {
    database.close();
  }
}

const mb = (bytes: number) => (bytes / 1_048_576).toFixed(1);

interface RoundFigures {
  readonly runsPerSecond: number;
  readonly p99Ms: number;
  readonly loopDelayP99Ms: number;
  readonly end: StoreSize;
  /** Growth of the used space over the round's second half (after a
   * short retention has reached its steady state). */
  readonly growthMbPerSecond: number;
  readonly pruned: PruneCounts;
  readonly batchMs: number[];
}

/** Where a round runs: a store it opens, how big that store is, and how to drop it. */
interface Target {
  readonly name: string;
  open(label: string): Promise<{ store: ExecutionStore & PruningStore; size: () => Promise<StoreSize>; drop: () => Promise<void> }>;
}

function sqliteTarget(directory: string): Target {
  return {
    name: "SQLite FULL",
    async open(label) {
      const path = join(directory, `retention-${label}-${Date.now()}.db`);
      return { store: await SqliteStore.open(path), size: async () => sizeOf(path), drop: async () => undefined };
    },
  };
}

function postgresTarget(url: string): Target {
  return {
    name: "PostgreSQL",
    async open() {
      const schema = `phronomy_bench_${randomBytes(4).toString("hex")}`;
      const store = await PostgresStore.open(url, { schema });
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      const value = async (sql: string, values: unknown[] = []) => Number(Object.values((await client.query(sql, values)).rows[0] as object)[0]);
      // Deleted rows take space until VACUUM makes it reusable; servers run
      // autovacuum (on by default). One started with it off (a test server)
      // gets this bench's own VACUUM every `vacuumEveryMs`, as autovacuum would.
      const autovacuum = (await client.query("SHOW autovacuum")).rows[0]?.autovacuum === "on";
      let vacuuming = Promise.resolve();
      const vacuum = autovacuum
        ? undefined
        : setInterval(() => {
            vacuuming = vacuuming
              .then(() => client.query(`VACUUM ${schema}.executions, ${schema}.steps, ${schema}.journal, ${schema}.approval_inbox`))
              .then(
                () => undefined,
                () => undefined,
              );
          }, vacuumEveryMs);
      if (!autovacuum)
        console.log(`    (the server's autovacuum is off: the bench vacuums the store's tables every ${vacuumEveryMs / 1000} s, as autovacuum would)`);
      return {
        store,
        size: async () => {
          const bytes = await value(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'",
            [schema],
          );
          return {
            fileBytes: bytes,
            usedBytes: bytes,
            executions: await value(`SELECT count(*) FROM ${schema}.executions`),
            steps: await value(`SELECT count(*) FROM ${schema}.steps`),
            journal: await value(`SELECT count(*) FROM ${schema}.journal`),
          };
        },
        drop: async () => {
          if (vacuum !== undefined) clearInterval(vacuum);
          await vacuuming;
          await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
          await client.end();
        },
      };
    },
  };
}

async function round(target: Target, label: string, retention: RetentionOptions): Promise<RoundFigures> {
  const opened = await target.open(label);
  const store = opened.store;
  // Each prune batch timed from submission to answer (queueing included).
  const batchMs: number[] = [];
  let pruned: PruneCounts = { executions: 0, steps: 0, journal: 0, approvals: 0 };
  const prune = store.pruneExecutions.bind(store);
  store.pruneExecutions = async (operation: PruneExecutionsOperation) => {
    const began = performance.now();
    const counts = await prune(operation);
    batchMs.push(performance.now() - began);
    pruned = {
      executions: pruned.executions + counts.executions,
      steps: pruned.steps + counts.steps,
      journal: pruned.journal + counts.journal,
      approvals: pruned.approvals + counts.approvals,
    };
    return counts;
  };
  const env = await Phronomy.open({ store, logger: { warn: (message) => console.warn(message) }, retention });
  const agents = await defineAgents(
    env,
    Array.from({ length: IN_FLIGHT }, (_, index) => `agent-${index}`),
  );
  await warmUp(agents);
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  const latencies: number[] = [];
  let stop = false;
  const worker = async (agent: Agent): Promise<void> => {
    while (!stop) {
      const started = performance.now();
      const result = await agent.start("Where is order 42?").result;
      if (result.outcome !== "completed") throw new Error(`a bench run ended ${result.outcome}`);
      latencies.push(performance.now() - started);
    }
  };
  const began = performance.now();
  let half: Promise<{ size: StoreSize; at: number }> | undefined;
  const halfway = setTimeout(() => {
    const at = performance.now();
    half = opened.size().then((size) => ({ size, at }));
  }, seconds * 500);
  loopDelay.enable();
  const running = agents.map(worker);
  const samples = setInterval(
    () =>
      void opened.size().then((size) => {
        const elapsed = (performance.now() - began) / 1000;
        console.log(
          `    ${label} t=${elapsed.toFixed(0).padStart(3)}s runs ${String(latencies.length).padStart(6)}  file ${mb(size.fileBytes).padStart(6)} MB  used ${mb(size.usedBytes).padStart(6)} MB  executions ${String(size.executions).padStart(6)}  steps ${String(size.steps).padStart(7)}  journal ${String(size.journal).padStart(6)}`,
        );
      }),
    sampleEveryMs,
  );
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  stop = true;
  await Promise.all(running);
  const elapsedMs = performance.now() - began;
  loopDelay.disable();
  clearInterval(samples);
  clearTimeout(halfway);
  const endedAt = performance.now();
  const end = await opened.size();
  const halfSize = await half;
  await env.close();
  await opened.drop();
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    runsPerSecond: latencies.length / (elapsedMs / 1000),
    p99Ms: percentile(sorted, 0.99),
    loopDelayP99Ms: loopDelay.percentile(99) / 1e6,
    end,
    growthMbPerSecond: halfSize === undefined ? Number.NaN : (end.usedBytes - halfSize.size.usedBytes) / 1_048_576 / ((endedAt - halfSize.at) / 1000),
    pruned,
    batchMs,
  };
}

function report(label: string, figures: RoundFigures): void {
  const batches = [...figures.batchMs].sort((a, b) => a - b);
  const pruneText =
    batches.length === 0
      ? "no prune batches"
      : `${batches.length} prune batches (p50 ${percentile(batches, 0.5).toFixed(1)} ms, p99 ${percentile(batches, 0.99).toFixed(1)} ms, max ${(batches.at(-1) ?? 0).toFixed(1)} ms) removed ${figures.pruned.executions} executions, ${figures.pruned.steps} steps, ${figures.pruned.journal} journal records`;
  console.log(
    `  ${label}: ${figures.runsPerSecond.toFixed(0)} runs/s, p99 ${figures.p99Ms.toFixed(1)} ms, event loop p99 delay ${figures.loopDelayP99Ms.toFixed(1)} ms; at the end ${mb(figures.end.usedBytes)} MB used (file ${mb(figures.end.fileBytes)} MB), ${figures.end.executions} executions; used space grew ${figures.growthMbPerSecond.toFixed(2)} MB/s over the second half; ${pruneText}`,
  );
}

/** What one batch costs with nothing else running: 3,000 finished runs of
 * the workload, then `env.prune({ olderThanMs: 0 })` batch by batch (each
 * timed from submission to answer: the worker's transaction and the hop). */
async function isolatedBatches(target: Target): Promise<void> {
  const opened = await target.open("isolated");
  const store = opened.store;
  const batchMs: number[] = [];
  const prune = store.pruneExecutions.bind(store);
  store.pruneExecutions = async (operation: PruneExecutionsOperation) => {
    const began = performance.now();
    const counts = await prune(operation);
    batchMs.push(performance.now() - began);
    return counts;
  };
  const env = await Phronomy.open({ store, logger: { warn: (message) => console.warn(message) }, retention: { finishedMs: "forever" } });
  const agents = await defineAgents(
    env,
    Array.from({ length: IN_FLIGHT }, (_, index) => `agent-${index}`),
  );
  for (let index = 0; index < 30; index += 1) await warmUp(agents);
  await new Promise((resolve) => setTimeout(resolve, 5));
  const began = performance.now();
  const counts = await env.prune({ olderThanMs: 0 });
  const totalMs = performance.now() - began;
  await env.close();
  await opened.drop();
  const sorted = [...batchMs].sort((a, b) => a - b);
  console.log(
    `\nisolated: ${counts.executions} executions (${counts.steps} steps) pruned in ${batchMs.length} batches, ${totalMs.toFixed(0)} ms in all; batches starting at ${store.pruneBatchExecutions} and doubling while full (up to ${pruneBatchExecutionsMax}), p50 ${percentile(sorted, 0.5).toFixed(1)} ms, max ${(sorted.at(-1) ?? 0).toFixed(1)} ms (${((totalMs / Math.max(1, counts.executions)) * 1000).toFixed(0)} µs per execution)`,
  );
}

async function main(): Promise<void> {
  for (const [name, value] of [
    ["BENCH_SECONDS", seconds],
    ["BENCH_ROUNDS", rounds],
    ["BENCH_RETENTION_MS", retentionMs],
    ["BENCH_JOURNAL_KEPT", journalKept],
  ] as const) {
    if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got ${String(value)}`);
  }
  const { values } = parseArgs({ options: { store: { type: "string" } }, strict: true });
  if (values.store !== undefined && !/^postgres(ql)?:\/\//i.test(values.store))
    throw new Error("--store takes a postgres:// URL; without it the bench runs on SQLite files in a temporary directory");
  const directory = await mkdtemp(join(tmpdir(), "phronomy-retention-"));
  const target = values.store === undefined ? sqliteTarget(directory) : postgresTarget(values.store);
  const forever: RoundFigures[] = [];
  const short: RoundFigures[] = [];
  try {
    console.log(
      `bench/e2e/retention — agent run, ${IN_FLIGHT} in flight, ${target.name}, ${seconds}s per round, ${rounds} alternating rounds of retention "forever" and ${retentionMs} ms (journal ${journalKept} records per conversation), node ${process.version}`,
    );
    for (let index = 0; index < rounds; index += 1) {
      console.log(`\nround ${index + 1}`);
      const a = await round(target, "forever", { finishedMs: "forever" });
      report("retention forever", a);
      forever.push(a);
      const b = await round(target, `${retentionMs}ms`, { finishedMs: retentionMs, journalRecordsKept: journalKept });
      report(`retention ${retentionMs} ms`, b);
      short.push(b);
    }
    await isolatedBatches(target);
    console.log("\nsummary (ratios are short retention ÷ forever, per round)");
    for (let index = 0; index < rounds; index += 1) {
      const a = forever[index]!;
      const b = short[index]!;
      console.log(
        `  round ${index + 1}: throughput ×${(b.runsPerSecond / a.runsPerSecond).toFixed(2)}, p99 latency ×${(b.p99Ms / a.p99Ms).toFixed(2)}, used space at the end ×${(b.end.usedBytes / a.end.usedBytes).toFixed(2)} (${mb(b.end.usedBytes)} vs ${mb(a.end.usedBytes)} MB), growth ${b.growthMbPerSecond.toFixed(2)} vs ${a.growthMbPerSecond.toFixed(2)} MB/s`,
      );
    }
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
