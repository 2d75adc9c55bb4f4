// bench/e2e/profile: a fixed number of runs, each on a new conversation,
// SQLite, for a CPU profile of where a run's microseconds go
// (docs/decisions/0043). Prints the runs, the time and the store's offload
// statistics.
//
//   BENCH_NODE_OPTIONS="--cpu-prof --cpu-prof-dir=/tmp/prof" \
//     BENCH_SHAPE=sequential BENCH_RUNS=2000 node scripts/bench-compiled.mjs bench/e2e/profile.ts
//   node scripts/profile-summary.mjs /tmp/prof/<main>.cpuprofile 2000
//
// BENCH_SHAPE: sequential (one run after another) or inflight (100 loops);
// BENCH_SYNCHRONOUS: FULL (default) or NORMAL. The profile covers the
// warm-up too (100 runs), which the printed time does not.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Phronomy } from "../../host/index.js";
import type { SqliteStore } from "../../host/store/sqlite-store.js";
import type { SynchronousMode } from "../../host/store/sqlite/schema.js";
import { agentRunModel, lookup } from "./workload.js";

const RUNS = Number(process.env.BENCH_RUNS ?? 2_000);
const SHAPE = process.env.BENCH_SHAPE ?? "sequential";
const SYNCHRONOUS = (process.env.BENCH_SYNCHRONOUS ?? "FULL") as SynchronousMode;
const workers = SHAPE === "inflight" ? 100 : 1;

const directory = await mkdtemp(join(tmpdir(), "phronomy-profile-"));
try {
  const env = await Phronomy.open({ store: join(directory, "profile.db"), synchronous: SYNCHRONOUS, logger: { warn: () => undefined } });
  const support = env.agent({ name: "support", model: agentRunModel(), tools: { lookup }, memoryWindow: 1 });
  let next = 0;
  const run = async () => {
    const result = await support.conversation(`user-${next++}`).start("Where is order 42?").result;
    if (result.outcome !== "completed") throw new Error(`a run ended ${result.outcome}`);
  };
  await Promise.all(Array.from({ length: 100 }, run));
  const thread = (
    env as unknown as {
      store: { offload: { workerThread?: { performance: { eventLoopUtilization(): { utilization: number; active: number; idle: number } } } } };
    }
  ).store.offload.workerThread;
  const workerBefore = thread?.performance.eventLoopUtilization();
  let remaining = RUNS;
  const cpu = process.cpuUsage();
  const mainBefore = performance.eventLoopUtilization();
  const began = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (remaining > 0) {
        remaining -= 1;
        await run();
      }
    }),
  );
  const seconds = (performance.now() - began) / 1000;
  const used = process.cpuUsage(cpu);
  const mainBusy = performance.eventLoopUtilization(mainBefore).utilization;
  const workerAfter = thread?.performance.eventLoopUtilization();
  const workerActiveMs = workerBefore && workerAfter ? workerAfter.active - workerBefore.active : 0;
  const statistics = (env as unknown as { store: SqliteStore }).store.offloadStatistics;
  console.log(
    `${SHAPE} ${SYNCHRONOUS}: ${RUNS} runs in ${seconds.toFixed(2)} s = ${(RUNS / seconds).toFixed(0)} runs/s, ${((seconds * 1e6) / RUNS).toFixed(0)} µs per run; CPU of this process (every thread) ${((used.user + used.system) / RUNS).toFixed(0)} µs per run (${(used.system / RUNS).toFixed(0)} µs system); the store worker busy ${((workerActiveMs * 1000) / RUNS).toFixed(0)} µs per run (${((workerActiveMs / 1000 / seconds) * 100).toFixed(0)}% of the time); the main thread's event loop busy ${(mainBusy * 100).toFixed(0)}%; offload ${JSON.stringify(statistics)}`,
  );
  await env.close();
} finally {
  await rm(directory, { recursive: true, force: true });
}
