// `npm run bench:million`: a million conversations suspended for approval
// in one process (issue 26), on SQLite with default options. Prints
// figures, asserts nothing (docs/decisions/0066).
//
//   1. Opens the store, defines the named definition "support" (README's
//      shape: a conversation per user), and measures the idle process.
//   2. Suspends BENCH_SUSPENDED conversations (default 1,000,000), each a
//      conversation of its own, BENCH_IN_FLIGHT (default 1,000) starts at
//      once; the application keeps no Run. Prints suspends/s for every
//      slice of 100,000 (a tenth of N when N is smaller), and RSS and live
//      heap after GC at 10,000, 100,000 and 1,000,000 suspended (and at N).
//   3. Resumes BENCH_SAMPLE (default 1,000) of them, spread over the whole
//      range, and says how many completed.
//
//   BENCH_SUSPENDED=100000 npm run bench:million     (a quicker look)
//
// With BENCH_TIMERS=N (decision 0076) the N conversations each wait on a
// timer due in an hour instead of an approval: "a million timers pending
// cost rows, not memory". It prints the suspended rows with a due time
// the store holds, the due sweep's read of the next due time over them,
// and fires the sample now with { waitId, fire: true }.
//
//   BENCH_TIMERS=100000 npm run bench:million
//
// Runs on the compiled package (scripts/bench-compiled.mjs), as an
// application runs: under tsx every RSS figure carries tsx's loader
// threads (docs/decisions/0028). The clock of a slice stops while RSS is
// measured (two full GCs).

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Phronomy, type DefinedAgent, type Environment } from "../../host/index.js";
import { dueWaitsBatchMax, dueWaitsStoreOf, type DueCursor } from "../../host/store/due-waits.js";
import { memoryAfterGc } from "../memory.js";
import { defineRefunds, defineSleepers } from "./workload.js";

const TIMERS = Number(process.env.BENCH_TIMERS ?? 0);
const SUSPENDED = TIMERS > 0 ? TIMERS : Number(process.env.BENCH_SUSPENDED ?? 1_000_000);
const WHAT = TIMERS > 0 ? "waiting on a timer due in an hour" : "suspended for approval";
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 1_000);
const SAMPLE = Math.min(SUSPENDED, Number(process.env.BENCH_SAMPLE ?? 1_000));
const SLICE = Math.min(100_000, Math.max(1, Math.floor(SUSPENDED / 10)));
const CHECKPOINTS = new Set([10_000, 100_000, 1_000_000, SUSPENDED].filter((count) => count <= SUSPENDED));

function megabytes(bytes: number): string {
  return (bytes / 2 ** 20).toFixed(0);
}

/** After two full GCs, once the pages they freed were given back
 * (bench/memory.ts). */
const afterGc = memoryAfterGc;

/** RSS once it stopped falling for 5 s (at most 20 s): what an idle
 * process keeps after the pages a burst grew were given back. */
async function settled(): Promise<NodeJS.MemoryUsage> {
  let last = afterGc();
  let steady = 0;
  for (let second = 0; second < 20 && steady < 5; second += 1) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const now = afterGc();
    steady = last.rss - now.rss > 2 ** 20 ? 0 : steady + 1;
    last = now;
  }
  return last;
}

function memoryLine(label: string, usage: NodeJS.MemoryUsage, idle: NodeJS.MemoryUsage, count: number): string {
  const perRss = count > 0 ? ` = ${((usage.rss - idle.rss) / count).toFixed(0)} B of RSS` : "";
  const perHeap = count > 0 ? `, ${((usage.heapUsed - idle.heapUsed) / count).toFixed(0)} B of heap per suspended conversation` : "";
  return `  ${label}: RSS ${megabytes(usage.rss)} MB, heap ${megabytes(usage.heapUsed)} MB used of ${megabytes(usage.heapTotal)} MB, external ${megabytes(usage.external)} MB (array buffers ${megabytes(usage.arrayBuffers)} MB)${perRss}${perHeap}`;
}

/** Milliseconds of CPU (user + system, every thread) since `since`, per operation. */
function cpuMsPer(since: NodeJS.CpuUsage, operations: number): string {
  const used = process.cpuUsage(since);
  return ((used.user + used.system) / 1000 / operations).toFixed(3);
}

interface Sampled {
  readonly id: string;
  readonly executionId: string;
  readonly approvalId: string;
}

/** Suspends `SUSPENDED` conversations, `IN_FLIGHT` at once; returns the
 * sample's approvals (every `SUSPENDED / SAMPLE`-th conversation). Every
 * rate is on a clock that stops while memory is measured. */
async function suspendAll(support: DefinedAgent, idle: NodeJS.MemoryUsage): Promise<Sampled[]> {
  const stride = Math.max(1, Math.floor(SUSPENDED / SAMPLE));
  const sampled: Sampled[] = [];
  let paused = 0;
  const clock = (): number => performance.now() - paused;
  let started = 0;
  let suspended = 0;
  const began = clock();
  let sliceBegan = began;
  // CPU of the whole process (every thread) per suspend: on a shared
  // machine the rate follows the other processes, this does less.
  let sliceCpu = process.cpuUsage();
  let stepBegan = began;
  let slowestStep = Number.POSITIVE_INFINITY;
  const STEP = Math.min(10_000, SLICE);
  const counted = (): void => {
    suspended += 1;
    if (suspended % STEP === 0) {
      // The slowest STEP suspends of the slice: "throughout", not on average.
      const now = clock();
      slowestStep = Math.min(slowestStep, STEP / ((now - stepBegan) / 1000));
      stepBegan = now;
    }
    if (suspended % SLICE === 0) {
      const now = clock();
      console.log(
        `  ${(suspended - SLICE).toLocaleString("en-US")}–${suspended.toLocaleString("en-US")}: ${(SLICE / ((now - sliceBegan) / 1000)).toFixed(0)} suspends/s (slowest ${STEP.toLocaleString("en-US")} of the slice ${slowestStep.toFixed(0)}/s); CPU ${cpuMsPer(sliceCpu, SLICE)} ms per suspend`,
      );
      sliceBegan = now;
      sliceCpu = process.cpuUsage();
      slowestStep = Number.POSITIVE_INFINITY;
    }
    if (CHECKPOINTS.has(suspended)) {
      const measuring = performance.now();
      const cpuBefore = process.cpuUsage();
      console.log(memoryLine(`${suspended.toLocaleString("en-US")} suspended, after GC`, afterGc(), idle, suspended));
      paused += performance.now() - measuring;
      // Nor does the measurement's CPU (two full GCs) count in the slice.
      const measured = process.cpuUsage(cpuBefore);
      sliceCpu = { user: sliceCpu.user + measured.user, system: sliceCpu.system + measured.system };
    }
  };
  await new Promise<void>((resolve, reject) => {
    const startNext = (): void => {
      if (started >= SUSPENDED) return;
      const index = started++;
      const id = `user-${index}`;
      // The Run is not kept, nor its result awaited (it settles only once
      // the approval is decided): an event ending it otherwise fails the bench.
      support.conversation(id).start("refund me", {
        onEvent: (event) => {
          if (event.type === "error" || event.type === "done" || event.type === "cancelled" || event.type === "timeout") {
            reject(new Error(`conversation ${id} ended with ${event.type} before its approval`));
            return;
          }
          if (event.type !== "approval_required") return;
          if (index % stride === 0 && sampled.length < SAMPLE) sampled.push({ id, executionId: event.executionId, approvalId: event.request.approvalId });
          counted();
          if (suspended === SUSPENDED) resolve();
          else startNext();
        },
      });
    };
    for (let index = 0; index < Math.min(IN_FLIGHT, SUSPENDED); index += 1) startNext();
  });
  const seconds = (clock() - began) / 1000;
  console.log(
    `  ${SUSPENDED.toLocaleString("en-US")} suspended in ${seconds.toFixed(1)} s = ${(SUSPENDED / seconds).toFixed(0)} suspends/s overall (${IN_FLIGHT} in flight)`,
  );
  return sampled;
}

/** The rows the timers cost, read through the store's due reads (the due
 * sweep's own): the next due time, then every wait due within two hours
 * paged in the sweep's batches — what a sweep costs when all of them fall
 * due at once. */
async function countDueRows(env: Environment): Promise<void> {
  const due = dueWaitsStoreOf(env.store);
  if (due === undefined) throw new Error("the store indexes no due waits");
  let began = performance.now();
  const next = await due.nextDueAt(Date.now());
  const nextMs = performance.now() - began;
  began = performance.now();
  let rows = 0;
  let reads = 0;
  let after: DueCursor | undefined;
  for (;;) {
    const batch = await due.dueWaits(Date.now() + 2 * 3_600_000, dueWaitsBatchMax, after);
    rows += batch.length;
    reads += 1;
    const last = batch.at(-1);
    if (last === undefined || batch.length < dueWaitsBatchMax) break;
    after = { dueAt: last.dueAt, executionId: last.executionId };
  }
  const pagedMs = performance.now() - began;
  console.log(
    `  ${rows.toLocaleString("en-US")} suspended rows with a due time (next due in ${(((next ?? 0) - Date.now()) / 60_000).toFixed(0)} min); the sweep's next-due read ${nextMs.toFixed(2)} ms; reading them all in ${reads} batches of ${dueWaitsBatchMax}: ${pagedMs.toFixed(0)} ms`,
  );
}

async function resumeSample(support: DefinedAgent, sampled: readonly Sampled[]): Promise<void> {
  const began = performance.now();
  const outcomes = await Promise.all(
    sampled.map(({ id, executionId, approvalId }) =>
      support
        .conversation(id)
        .resume(executionId, TIMERS > 0 ? { waitId: approvalId, fire: true } : { approvalId, approved: true })
        .result.then(
          (result) => result.outcome,
          (error: unknown) => `error ${(error as Error).message}`,
        ),
    ),
  );
  const seconds = (performance.now() - began) / 1000;
  const completed = outcomes.filter((outcome) => outcome === "completed").length;
  const other = [...new Set(outcomes.filter((outcome) => outcome !== "completed"))].slice(0, 3);
  console.log(
    `  resumed ${sampled.length.toLocaleString("en-US")} spread over the range in ${seconds.toFixed(2)} s: ${completed} completed${other.length > 0 ? `; others: ${other.join("; ")}` : ""}`,
  );
}

if ((globalThis as { gc?: () => void }).gc === undefined) console.log("  (run with node --expose-gc for figures after GC: npm run bench:million)");
const directory = await mkdtemp(join(tmpdir(), "phronomy-million-"));
try {
  console.log(`bench/e2e/million — ${SUSPENDED.toLocaleString("en-US")} conversations ${WHAT}, SQLite with default options, node ${process.version}`);
  const env = await Phronomy.open({ store: join(directory, "store.db"), logger: { warn: () => undefined } });
  const support = TIMERS > 0 ? defineSleepers(env) : defineRefunds(env);
  await support.ready;
  const idle = await settled();
  console.log(memoryLine("opened and idle, definition ready (settled)", idle, idle, 0));
  const sampled = await suspendAll(support, idle);
  console.log(memoryLine(`${SUSPENDED.toLocaleString("en-US")} suspended, settled`, await settled(), idle, SUSPENDED));
  if (TIMERS > 0) await countDueRows(env);
  await resumeSample(support, sampled);
  await env.close();
} finally {
  await rm(directory, { recursive: true, force: true });
}
