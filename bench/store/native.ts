// bench/store/native: the native writer prototype (native/writer.c,
// docs/decisions/0044) against the store worker (host/store/offload.ts), on
// the same store operations: prepare, 5 barriers, terminal commit per run
// (`agentRun` in floor.ts), one run at a time and 100 in flight, FULL and
// NORMAL, each beside the raw floor measured in the same run. Asserts
// nothing. Needs `sh native/build.sh` first.
//
//   npx tsx bench/store/native.ts
//
// BENCH_STORE_MS sets each loop's duration (default 2,000), BENCH_ROUNDS how
// many times the whole set is repeated (default 2; the variants alternate
// within a round, so a load change on the shared machine hits them all),
// BENCH_STORE_DIR the scratch directory. Memory is measured by
// bench/store/native-rss.ts (compiled, one process per variant).

import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHistogram, monitorEventLoopDelay } from "node:perf_hooks";
import type { SynchronousMode } from "../../host/store/sqlite/schema.js";
import { agentRun, measureRawFloor, operationsPerRun, type OperationRunner } from "./floor.js";
import { openVariant, variantName, variants, type Variant } from "./native-writer.js";

const durationMs = Number(process.env.BENCH_STORE_MS ?? 2_000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
const directory = process.env.BENCH_STORE_DIR ?? (await mkdtemp(join(tmpdir(), "phronomy-bench-native-")));

let files = 0;

interface Figures {
  readonly operationsPerSecond: number;
  readonly latencyMs: { readonly p50: number; readonly p99: number };
  readonly loopDelayP99Ms: number;
  /** Writer-thread time per operation (native only), µs. */
  readonly writerMicrosecondsPerOperation: number | undefined;
  /** The main thread's CPU per operation, µs (Linux /proc; 10 ms ticks). */
  readonly mainThreadCpuMicrosecondsPerOperation: number;
}

/** CPU seconds (user + system) of this process's main thread. */
function mainThreadCpuSeconds(): number {
  const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8").split(")").pop()!.trim().split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function measure(variant: Variant, synchronous: SynchronousMode, concurrency: number): Promise<Figures> {
  files += 1;
  const { runner, close, busySeconds } = await openVariant(join(directory, `native-${process.pid}-${files}.db`), variant, synchronous);
  try {
    const latency = createHistogram();
    const timed: OperationRunner = {
      run: async (operation) => {
        const started = process.hrtime.bigint();
        const value = await runner.run(operation);
        latency.record(process.hrtime.bigint() - started);
        return value;
      },
    };
    let runsStarted = 0;
    let operations = 0;
    const loopDelay = monitorEventLoopDelay({ resolution: 1 });
    loopDelay.enable();
    const busyBefore = busySeconds();
    const cpuBefore = mainThreadCpuSeconds();
    const started = performance.now();
    const lane = async (): Promise<void> => {
      while (performance.now() - started < durationMs) {
        runsStarted += 1;
        const done = await agentRun(timed, `run-${runsStarted}`);
        operations += done;
      }
    };
    await Promise.all(Array.from({ length: concurrency }, lane));
    const seconds = (performance.now() - started) / 1000;
    loopDelay.disable();
    const busyAfter = busySeconds();
    const cpuAfter = mainThreadCpuSeconds();
    return {
      mainThreadCpuMicrosecondsPerOperation: ((cpuAfter - cpuBefore) * 1e6) / operations,
      operationsPerSecond: operations / seconds,
      latencyMs: { p50: latency.percentile(50) / 1e6, p99: latency.percentile(99) / 1e6 },
      loopDelayP99Ms: loopDelay.percentile(99) / 1e6,
      writerMicrosecondsPerOperation: busyAfter === undefined || busyBefore === undefined ? undefined : ((busyAfter - busyBefore) * 1e6) / operations,
    };
  } finally {
    await close();
  }
}

const rate = (value: number): string => Math.round(value).toLocaleString("en-US").padStart(7);
const ms = (value: number): string => value.toFixed(2).padStart(6);

try {
  for (let round = 1; round <= rounds; round += 1) {
    for (const synchronous of ["FULL", "NORMAL"] as SynchronousMode[]) {
      const floor = measureRawFloor(directory, synchronous, { durationMs });
      console.log(
        `\nround ${round}, synchronous=${synchronous}: raw floor ${rate(floor.singleRowCommitsPerSecond)} one-row commits/s, ${rate(floor.batchedRowsPerSecond)} rows/s in 100-row transactions`,
      );
      console.log(
        "  variant               | sequential runs/s ×floor  op p50 ms | 100 in flight runs/s ×floor  op p50 / p99 ms  loop p99 ms  writer µs/op  main CPU µs/op",
      );
      for (const variant of variants) {
        const sequential = await measure(variant, synchronous, 1);
        const concurrent = await measure(variant, synchronous, 100);
        const runs = (figures: Figures): number => figures.operationsPerSecond / operationsPerRun;
        const times = (figures: Figures): string => `${(figures.operationsPerSecond / floor.singleRowCommitsPerSecond).toFixed(2)}×`.padStart(7);
        console.log(
          `  ${variantName(variant).padEnd(21)} | ${rate(runs(sequential))} ${times(sequential)}  ${ms(sequential.latencyMs.p50)}    |`
            + ` ${rate(runs(concurrent))} ${times(concurrent)}  ${ms(concurrent.latencyMs.p50)} / ${ms(concurrent.latencyMs.p99)}  ${ms(concurrent.loopDelayP99Ms)}`
            + `       ${concurrent.writerMicrosecondsPerOperation === undefined ? "    —" : concurrent.writerMicrosecondsPerOperation.toFixed(1).padStart(5)}`
            + `         ${concurrent.mainThreadCpuMicrosecondsPerOperation.toFixed(1).padStart(5)}`,
        );
      }
    }
  }
} finally {
  if (process.env.BENCH_STORE_DIR === undefined) await rm(directory, { recursive: true, force: true });
}
