// bench/store/native-rss: the resident memory of a process whose store
// writes through the JS store worker (a second V8 isolate) against one whose
// store writes through the native writer thread (native/writer.c), and one
// with no writer thread at all (policy `inline`), each in a process of its
// own, compiled (under tsx every worker would carry tsx's loader again,
// docs/decisions/0028). Asserts nothing. Needs `sh native/build.sh` first.
//
//   node scripts/bench-compiled.mjs bench/store/native-rss.ts
//
// Each child opens a store (FULL), runs 100 agent runs in flight for
// BENCH_STORE_MS (default 3,000), then prints RSS: after open (idle), right
// after the burst and a GC, and settled (the lowest of 10 samples half a
// second apart, a GC before each). BENCH_ROUNDS alternations (default 3).

import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { agentRun } from "./floor.js";
import { openVariant, variantName, type Variant } from "./native-writer.js";

const modes = {
  inline: { kind: "worker", policy: "inline" },
  worker: { kind: "worker", policy: "worker" },
  native: { kind: "native", encoding: "binary" },
} as const satisfies Record<string, Variant>;
type Mode = keyof typeof modes;

const durationMs = Number(process.env.BENCH_STORE_MS ?? 3_000);
const mb = (bytes: number): number => Math.round(bytes / 1e5) / 10;
const gc = (globalThis as { gc?: () => void }).gc;

async function child(mode: Mode): Promise<void> {
  if (gc === undefined) throw new Error("run with --expose-gc (node scripts/bench-compiled.mjs bench/store/native-rss.ts)");
  const directory = mkdtempSync(join(tmpdir(), "phronomy-native-rss-"));
  try {
    gc();
    const beforeOpen = process.memoryUsage.rss();
    const { runner, close } = await openVariant(join(directory, "store.db"), modes[mode], "FULL");
    await new Promise((resolve) => setTimeout(resolve, 500));
    gc();
    const opened = process.memoryUsage.rss();
    let runsStarted = 0;
    let runs = 0;
    const started = performance.now();
    const lane = async (): Promise<void> => {
      while (performance.now() - started < durationMs) {
        runsStarted += 1;
        await agentRun(runner, `run-${runsStarted}`);
        runs += 1;
      }
    };
    await Promise.all(Array.from({ length: 100 }, lane));
    const runsPerSecond = runs / ((performance.now() - started) / 1000);
    gc();
    const afterBurst = process.memoryUsage.rss();
    let settled = afterBurst;
    for (let sample = 0; sample < 10; sample += 1) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      gc();
      settled = Math.min(settled, process.memoryUsage.rss());
    }
    await close();
    console.log(
      JSON.stringify({
        mode,
        beforeOpen: mb(beforeOpen),
        opened: mb(opened),
        afterBurst: mb(afterBurst),
        settled: mb(settled),
        runsPerSecond: Math.round(runsPerSecond),
      }),
    );
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

const mode = process.env.BENCH_NATIVE_RSS_MODE as Mode | undefined;
if (mode !== undefined) {
  await child(mode);
} else {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  console.log(`RSS in MB, FULL, 100 runs in flight for ${durationMs} ms; one process per line (${process.execArgv.join(" ") || "no flags"})`);
  console.log("  variant               before open  opened  after burst+GC  settled  runs/s");
  for (let round = 1; round <= rounds; round += 1) {
    for (const name of Object.keys(modes) as Mode[]) {
      const result = spawnSync(process.execPath, [...process.execArgv, process.argv[1]!], {
        env: { ...process.env, BENCH_NATIVE_RSS_MODE: name },
        encoding: "utf8",
      });
      const line = result.stdout.trim().split("\n").pop() ?? "";
      if (result.status !== 0 || !line.startsWith("{")) {
        console.log(`  ${name}: failed (${result.status}): ${result.stderr.trim().split("\n").slice(-3).join(" | ")}`);
        continue;
      }
      const figures = JSON.parse(line) as { beforeOpen: number; opened: number; afterBurst: number; settled: number; runsPerSecond: number };
      console.log(
        `  ${variantName(modes[name]).padEnd(21)} ${String(figures.beforeOpen).padStart(11)}  ${String(figures.opened).padStart(6)}  ${String(figures.afterBurst).padStart(14)}  ${String(figures.settled).padStart(7)}  ${String(figures.runsPerSecond).padStart(6)}`,
      );
    }
  }
}
