// bench/e2e: the "agent run" workload through the whole runtime — scripted
// model → instant tool → model → tool → model, durable at every step
// (prepare with the first barrier + 4 barriers + terminal = 6 transactions
// per run, `workload.ts`)
// — with the store's raw floor measured in the same run. Prints figures,
// asserts nothing.
//
//   npm run bench:e2e                       # SQLite: FULL and NORMAL, adaptive offload
//   BENCH_SECONDS=5 npm run bench:e2e       # longer loops
//   BENCH_POLICIES=adaptive,worker npm run bench:e2e
//   BENCH_QUEUED=500 npm run bench:e2e      # messages queued behind busy conversations (`queue.ts`)
//   npm run bench:e2e -- --store postgres://postgres@127.0.0.1:5432/test
//                                           # PostgreSQL (`postgres.ts`): the floor on 1 and 10
//                                           # connections, one process, three processes
//
// SQLite runs on files in a temporary directory; PostgreSQL in a fresh
// schema of the given database, dropped at the end.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Phronomy, type Agent, type Environment } from "../../host/index.js";
import type { OffloadPolicy } from "../../host/store/offload.js";
import type { SynchronousMode } from "../../host/store/sqlite/schema.js";
import { measureRawFloor } from "../store/floor.js";
import { benchPostgres } from "./postgres.js";
import { benchQueue } from "./queue.js";
import { IN_FLIGHT, OPERATIONS_PER_RUN, defineAgents, runFor, summarize, warmUp } from "./workload.js";

const seconds = Number(process.env.BENCH_SECONDS ?? 2);
const policies = (process.env.BENCH_POLICIES ?? "adaptive").split(",") as OffloadPolicy[];

async function openBench(
  directory: string,
  synchronous: SynchronousMode,
  policy: OffloadPolicy,
  agents: number,
): Promise<{ env: Environment; agents: Agent[] }> {
  const env = await Phronomy.open({
    store: join(directory, `e2e-${synchronous}-${policy}-${agents}.db`),
    synchronous,
    offloadPolicy: policy,
    logger: { warn: () => undefined },
  });
  return {
    env,
    agents: await defineAgents(
      env,
      Array.from({ length: agents }, (_, index) => `agent-${index}`),
    ),
  };
}

async function sequential(directory: string, synchronous: SynchronousMode, policy: OffloadPolicy) {
  const { env, agents } = await openBench(directory, synchronous, policy, 1);
  for (let warm = 0; warm < 20; warm += 1) await warmUp(agents);
  const figures = await runFor(agents, seconds);
  await env.close();
  const total = figures.latencies.reduce((sum, value) => sum + value, 0);
  return { runsPerSecond: figures.runs / (total / 1000), stepMs: total / figures.runs / OPERATIONS_PER_RUN };
}

async function concurrent(directory: string, synchronous: SynchronousMode, policy: OffloadPolicy) {
  const { env, agents } = await openBench(directory, synchronous, policy, IN_FLIGHT);
  await warmUp(agents);
  const figures = await runFor(agents, seconds);
  await env.close();
  return summarize(figures);
}

async function benchSqlite(): Promise<void> {
  const directory = await mkdtemp(join(tmpdir(), "phronomy-e2e-"));
  try {
    console.log(
      `bench/e2e — agent run (model → tool → model → tool → model, ${OPERATIONS_PER_RUN} durable transactions per run), SQLite, ${seconds}s per loop, node ${process.version}`,
    );
    for (const synchronous of ["FULL", "NORMAL"] as SynchronousMode[]) {
      const floor = measureRawFloor(directory, synchronous, { durationMs: seconds * 1000 });
      console.log(`\nsynchronous=${synchronous}`);
      console.log(
        `  raw floor: ${floor.singleRowCommitsPerSecond.toFixed(0)} single-row commits/s (= ${(floor.singleRowCommitsPerSecond / OPERATIONS_PER_RUN).toFixed(0)} runs/s if each of the ${OPERATIONS_PER_RUN} paid one), ${floor.batchedRowsPerSecond.toFixed(0)} rows/s batched 100 per commit`,
      );
      for (const policy of policies) {
        const one = await sequential(directory, synchronous, policy);
        const many = await concurrent(directory, synchronous, policy);
        console.log(
          `  offload ${policy}: sequential ${one.runsPerSecond.toFixed(0)} runs/s (${(one.stepMs * 1000).toFixed(0)} µs per durable step); ${IN_FLIGHT} in flight ${many.runsPerSecond.toFixed(0)} runs/s, p50 ${many.p50.toFixed(1)} ms, p99 ${many.p99.toFixed(1)} ms`,
        );
      }
    }
    await benchQueue(directory);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

/** The bench's mode from the command line; a mistake ends it in one line. */
async function main(): Promise<void> {
  const { values } = parseArgs({ options: { store: { type: "string" } }, strict: true });
  if (!Number.isFinite(seconds) || seconds <= 0) throw new Error(`BENCH_SECONDS must be a positive number of seconds, got ${process.env.BENCH_SECONDS}`);
  if (values.store === undefined) return benchSqlite();
  if (/^postgres(ql)?:\/\//i.test(values.store)) return benchPostgres(values.store, seconds);
  throw new Error("--store takes a postgres:// URL; without it the bench runs on SQLite files in a temporary directory");
}

try {
  await main();
} catch (error) {
  console.error(`bench/e2e: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
}
