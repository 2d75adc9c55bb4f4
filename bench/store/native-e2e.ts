// bench/store/native-e2e: the native writer prototype (native/writer.c,
// docs/decisions/0044) in the whole runtime, against the store as shipped
// (policy `adaptive`, the JS store worker), on the shapes issue 16 measures:
//
//   1. runs/s and p99 with 100 runs in flight, a conversation per run
//      (bench/e2e/conversations.ts's shape), SQLite FULL;
//   2. RSS with 10,000 conversations suspended for approval, after GC and
//      settled.
//
// The native variant opens the store with policy `inline` (no worker
// thread) and sends every operation the writer runs (prepare, barriers,
// terminal commit) to it; anything else goes to the store as usual and is
// counted (`fallback`). One process per variant and round, compiled:
//
//   sh native/build.sh && node scripts/bench-compiled.mjs bench/store/native-e2e.ts
//
// BENCH_SYNCHRONOUS (FULL, or NORMAL), BENCH_RUNS (default 1,000) runs per round, BENCH_ROUNDS (3) rounds,
// BENCH_SUSPENDED (10,000), BENCH_ONLY=throughput|suspended. Asserts nothing.

import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Phronomy, type Environment } from "../../host/index.js";
import type { OffloadOperation } from "../../host/store/offload-operation.js";
import type { StoreOperation } from "../../host/store/records.js";
import type { SynchronousMode } from "../../host/store/sqlite/schema.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import { agentRunModel, defineRefunds, IN_FLIGHT, lookup, percentile, suspendConversations } from "../e2e/workload.js";
import { NativeWriter } from "./native-writer.js";

type Mode = "adaptive" | "native";
const RUNS = Number(process.env.BENCH_RUNS ?? 1_000);
/** FULL as issue 16's table; NORMAL shows the CPU side when the disk is
 * contended (on a shared machine FULL measures mostly fsync). */
const SYNCHRONOUS = (process.env.BENCH_SYNCHRONOUS ?? "FULL") as SynchronousMode;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SUSPENDED = Number(process.env.BENCH_SUSPENDED ?? 10_000);
const nativeTypes = new Set<string>(["prepareExecution", "providerBarrier", "toolBarrier", "terminalCommit"]);
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();
const mb = (bytes: number): number => Math.round(bytes / 1e5) / 10;

interface Opened {
  readonly env: Environment;
  readonly close: () => Promise<void>;
  readonly fallback: () => number;
}

async function open(mode: Mode, path: string): Promise<Opened> {
  if (mode === "adaptive") {
    const env = await Phronomy.open({ store: path, synchronous: SYNCHRONOUS, logger: { warn: () => undefined } });
    return { env, close: () => env.close(), fallback: () => 0 };
  }
  const store = await SqliteStore.open(path, { synchronous: SYNCHRONOUS, offloadPolicy: "inline" });
  const writer = NativeWriter.open(path, SYNCHRONOUS, "binary");
  const original = store.run.bind(store);
  let fallback = 0;
  (store as { run: (operation: StoreOperation) => Promise<unknown> }).run = (operation) => {
    if (nativeTypes.has(operation.type) && !(operation.type === "prepareExecution" && operation.blockedBy !== undefined))
      return writer.run(operation as OffloadOperation);
    fallback += 1;
    return original(operation);
  };
  const env = await Phronomy.open({ store, logger: { warn: () => undefined } });
  return {
    env,
    close: async () => {
      await env.close();
      await writer.close();
      await store.close();
    },
    fallback: () => fallback,
  };
}

/** CPU seconds (user + system) of the whole process and of its main thread,
 * from /proc (Linux): the machine is shared, so runs/s mostly measures the
 * other tenants; CPU per run says what each variant itself spends, and the
 * main thread's share what bounds it on a machine of its own. */
function cpuSeconds(): { process: number; main: number; threads: Map<string, number> } {
  const ticks = (path: string): number => {
    const fields = readFileSync(path, "utf8").split(")").pop()!.trim().split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime (fields 14, 15), USER_HZ = 100
  };
  // Every other thread by id (the store worker, V8's helpers, libuv's
  // pool, the native writer: Node names them all "node").
  const threads = new Map<string, number>();
  for (const task of readdirSync("/proc/self/task")) {
    if (task === String(process.pid)) continue;
    try {
      threads.set(task, ticks(`/proc/self/task/${task}/stat`));
    } catch {
      // the thread ended meanwhile
    }
  }
  return { process: ticks("/proc/self/stat"), main: ticks(`/proc/self/task/${process.pid}/stat`), threads };
}

async function throughput(mode: Mode, directory: string): Promise<object> {
  const { env, close, fallback } = await open(mode, join(directory, "throughput.db"));
  const support = env.agent({ name: "support", model: agentRunModel(), tools: { lookup }, memoryWindow: 1 });
  let next = 0;
  await Promise.all(Array.from({ length: IN_FLIGHT }, () => support.conversation(`warm-${next++}`).start("warm up").result));
  let remaining = RUNS;
  const latencies: number[] = [];
  const cpuBefore = cpuSeconds();
  const began = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (remaining > 0) {
        remaining -= 1;
        const started = performance.now();
        const result = await support.conversation(`user-${next++}`).start("Where is order 42?").result;
        if (result.outcome !== "completed") throw new Error(`a bench run ended ${result.outcome}`);
        latencies.push(performance.now() - started);
      }
    }),
  );
  const runsPerSecond = RUNS / ((performance.now() - began) / 1000);
  const cpuAfter = cpuSeconds();
  latencies.sort((a, b) => a - b);
  const cpuMsPerRun = (seconds: number): number => Math.round((seconds * 1e6) / RUNS) / 1000;
  const figures = {
    runsPerSecond: Math.round(runsPerSecond),
    p50: Math.round(percentile(latencies, 0.5)),
    p99: Math.round(percentile(latencies, 0.99)),
    cpuMsPerRun: cpuMsPerRun(cpuAfter.process - cpuBefore.process),
    mainThreadCpuMsPerRun: cpuMsPerRun(cpuAfter.main - cpuBefore.main),
    busiestOtherThreadsCpuMsPerRun: [...cpuAfter.threads]
      .map(([id, seconds]) => cpuMsPerRun(seconds - (cpuBefore.threads.get(id) ?? 0)))
      .sort((a, b) => b - a)
      .slice(0, 4),
    fallback: fallback(),
  };
  await close();
  return figures;
}

/** RSS once it stopped falling (a GC before each sample, one a second,
 * until 5 s without a fall of 1 MB, at most 20 s). */
async function settledRss(): Promise<number> {
  gc();
  let last = process.memoryUsage.rss();
  for (let second = 0, steady = 0; second < 20 && steady < 5; second += 1) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    gc();
    const now = process.memoryUsage.rss();
    steady = last - now > 2 ** 20 ? 0 : steady + 1;
    last = Math.min(last, now);
  }
  return last;
}

async function suspended(mode: Mode, directory: string): Promise<object> {
  const beforeOpen = await settledRss();
  const { env, close, fallback } = await open(mode, join(directory, "suspended.db"));
  const support = defineRefunds(env);
  await support.ready;
  const before = await settledRss();
  const began = performance.now();
  await suspendConversations(support, SUSPENDED);
  const suspendsPerSecond = SUSPENDED / ((performance.now() - began) / 1000);
  gc();
  const afterGc = process.memoryUsage.rss();
  const settled = await settledRss();
  const figures = {
    suspendsPerSecond: Math.round(suspendsPerSecond),
    beforeOpen: mb(beforeOpen),
    before: mb(before),
    afterGc: mb(afterGc),
    settled: mb(settled),
    fallback: fallback(),
  };
  await close();
  return figures;
}

const child = process.env.BENCH_NATIVE_E2E_MODE as Mode | undefined;
if (child !== undefined) {
  const directory = mkdtempSync(join(tmpdir(), "phronomy-native-e2e-"));
  try {
    const section = process.env.BENCH_NATIVE_E2E_SECTION;
    console.log(JSON.stringify(section === "suspended" ? await suspended(child, directory) : await throughput(child, directory)));
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
} else {
  const only = process.env.BENCH_ONLY;
  const sections = (["throughput", "suspended"] as const).filter((section) => only === undefined || only === section);
  console.log(
    `bench/store/native-e2e — SQLite ${SYNCHRONOUS}, node ${process.version}, ${IN_FLIGHT} in flight, ${RUNS} runs a round, a conversation per run; ${SUSPENDED} suspended; one process per line`,
  );
  for (let round = 1; round <= ROUNDS; round += 1) {
    for (const section of sections) {
      for (const mode of ["adaptive", "native"] as Mode[]) {
        const result = spawnSync(process.execPath, [...process.execArgv, process.argv[1]!], {
          env: { ...process.env, BENCH_NATIVE_E2E_MODE: mode, BENCH_NATIVE_E2E_SECTION: section },
          encoding: "utf8",
        });
        const line = result.stdout.trim().split("\n").pop() ?? "";
        const label = mode === "adaptive" ? "js worker (adaptive)" : "native (binary)";
        if (result.status !== 0 || !line.startsWith("{"))
          console.log(`  round ${round} ${section} ${label}: failed (${result.status}): ${result.stderr.trim().split("\n").slice(-4).join(" | ")}`);
        else console.log(`  round ${round} ${section.padEnd(10)} ${label.padEnd(20)} ${line}`);
      }
    }
  }
}
