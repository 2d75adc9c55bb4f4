// bench/store: prints the raw SQLite floor and each offload policy's rates
// for FULL and NORMAL, with ratios to the floor. Asserts nothing. Run with
// `npx tsx bench/store/index.ts` (BENCH_STORE_MS sets each loop's duration;
// BENCH_STORE_DIR the directory for the scratch files, default a temporary
// one that is removed afterwards).

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SynchronousMode } from "../../host/store/sqlite/schema.js";
import { measureOffload, measureRawFloor, operationsPerRun } from "./floor.js";

const durationMs = Number(process.env.BENCH_STORE_MS ?? 2_000);
const directory = process.env.BENCH_STORE_DIR ?? (await mkdtemp(join(tmpdir(), "phronomy-bench-store-")));

const rate = (perSecond: number): string => Math.round(perSecond).toLocaleString("en-US").padStart(9);
const ratio = (value: number, floor: number): string => `${(value / floor).toFixed(2)}×`.padStart(7);

try {
  for (const synchronous of ["FULL", "NORMAL"] as SynchronousMode[]) {
    const floor = measureRawFloor(directory, synchronous, { durationMs });
    console.log(`\nsynchronous=${synchronous}`);
    console.log(
      `  raw floor: ${rate(floor.singleRowCommitsPerSecond)} one-row commits/s (${(1e6 / floor.singleRowCommitsPerSecond).toFixed(0)} µs each), ${rate(floor.batchedRowsPerSecond)} rows/s in 100-row transactions`,
    );
    console.log("  policy     sequential ops/s (runs/s, ×floor)        100 in flight ops/s (runs/s, ×floor)   groups  largest  loop delay p99/max ms");
    for (const figures of await measureOffload(directory, { synchronous, durationMs })) {
      const statistics = figures.concurrentStatistics;
      console.log(
        `  ${figures.policy.padEnd(9)} ${rate(figures.sequentialOperationsPerSecond)} (${rate(figures.sequentialOperationsPerSecond / operationsPerRun)}, ${ratio(figures.sequentialOperationsPerSecond, floor.singleRowCommitsPerSecond)})`
          + `      ${rate(figures.concurrentOperationsPerSecond)} (${rate(figures.concurrentOperationsPerSecond / operationsPerRun)}, ${ratio(figures.concurrentOperationsPerSecond, floor.singleRowCommitsPerSecond)})`
          + `  ${String(statistics.inlineGroups + statistics.workerGroups).padStart(6)}  ${String(statistics.largestGroup).padStart(7)}`
          + `  ${figures.concurrentLoopDelayMs.p99.toFixed(1).padStart(6)} / ${figures.concurrentLoopDelayMs.max.toFixed(1)}`,
      );
    }
  }
} finally {
  if (process.env.BENCH_STORE_DIR === undefined) await rm(directory, { recursive: true, force: true });
}
