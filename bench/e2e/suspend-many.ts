// Many conversations suspended in one process, and what they cost: the
// machinery of `npm run bench:million` (decision 0066) and of the waits
// section of `npm run bench` (decision 0085). Prints figures, asserts
// nothing.
//
// `suspendMany` starts `count` conversations, `inFlight` not yet suspended
// at a time, each suspending on its wait (an approval, a timer, a keyed
// event wait: the caller's `start` says which); the application keeps no
// Run. It prints suspends/s and the process's CPU per suspend for every
// slice of 100,000 (a tenth of N when N is smaller), and RSS and live heap
// after GC at 10,000, 100,000, 1,000,000 and N, each per suspended
// conversation over the idle process measured before. The clock of a
// slice, and its CPU, stop while memory is measured (two full GCs).

import type { Environment, ExecutionEvent } from "../../host/index.js";
import { dueWaitsBatchMax, dueWaitsStoreOf, type DueCursor } from "../../host/store/due-waits.js";
import { memoryAfterGc } from "../memory.js";

export function megabytes(bytes: number): string {
  return (bytes / 2 ** 20).toFixed(0);
}

/** After two full GCs, once the pages they freed were given back
 * (bench/memory.ts). */
export const afterGc = memoryAfterGc;

/** RSS once it stopped falling for 5 s (at most 20 s): what an idle
 * process keeps after the pages a burst grew were given back. */
export async function settled(): Promise<NodeJS.MemoryUsage> {
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

/** One line of memory figures; with `count`, RSS and heap over `idle` per
 * one of them (`each` names it: "suspended conversation", "pending wait"). */
export function memoryLine(label: string, usage: NodeJS.MemoryUsage, idle: NodeJS.MemoryUsage, count: number, each = "suspended conversation"): string {
  const perRss = count > 0 ? ` = ${((usage.rss - idle.rss) / count).toFixed(0)} B of RSS` : "";
  const perBuffers = ((usage.arrayBuffers - idle.arrayBuffers) / count).toFixed(0);
  const perHeap = count > 0 ? `, ${((usage.heapUsed - idle.heapUsed) / count).toFixed(0)} B of heap, ${perBuffers} B of array buffers per ${each}` : "";
  return `  ${label}: RSS ${megabytes(usage.rss)} MB, heap ${megabytes(usage.heapUsed)} MB used of ${megabytes(usage.heapTotal)} MB, external ${megabytes(usage.external)} MB (array buffers ${megabytes(usage.arrayBuffers)} MB)${perRss}${perHeap}`;
}

/** Milliseconds of CPU (user + system, every thread) since `since`, per operation. */
export function cpuMsPer(since: NodeJS.CpuUsage, operations: number): string {
  const used = process.cpuUsage(since);
  return ((used.user + used.system) / 1000 / operations).toFixed(3);
}

/** One conversation suspended on its wait, as its suspension reported it. */
export interface Suspension {
  readonly index: number;
  readonly executionId: string;
  readonly waitId: string;
  /** An event wait's key. */
  readonly key: string | undefined;
}

export interface SuspendManyOptions {
  readonly count: number;
  readonly inFlight: number;
  /** Whether conversation `index` is one of the sample returned. */
  readonly sampled: (index: number) => boolean;
  /** Starts conversation `index` (a new one), its events to `onEvent`. */
  readonly start: (index: number, onEvent: (event: ExecutionEvent) => void) => void;
  /** What one of them is, in the memory lines. */
  readonly each: string;
  /** Only the overall rate: no slices, no memory. */
  readonly quiet?: boolean;
}

/** Suspends `count` conversations, `inFlight` at once; returns the sampled
 * ones' suspensions. Every rate is on a clock that stops while memory is
 * measured. */
export async function suspendMany(options: SuspendManyOptions, idle: NodeJS.MemoryUsage): Promise<Suspension[]> {
  const { count, inFlight, each } = options;
  const slice = options.quiet === true ? Number.POSITIVE_INFINITY : Math.min(100_000, Math.max(1, Math.floor(count / 10)));
  const step = Math.min(10_000, slice);
  const checkpoints = new Set(options.quiet === true ? [] : [10_000, 100_000, 1_000_000, count].filter((checkpoint) => checkpoint <= count));
  const sampled: Suspension[] = [];
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
  const counted = (): void => {
    suspended += 1;
    if (suspended % step === 0) {
      // The slowest `step` suspends of the slice: "throughout", not on average.
      const now = clock();
      slowestStep = Math.min(slowestStep, step / ((now - stepBegan) / 1000));
      stepBegan = now;
    }
    if (suspended % slice === 0) {
      const now = clock();
      console.log(
        `  ${(suspended - slice).toLocaleString("en-US")}–${suspended.toLocaleString("en-US")}: ${(slice / ((now - sliceBegan) / 1000)).toFixed(0)} suspends/s (slowest ${step.toLocaleString("en-US")} of the slice ${slowestStep.toFixed(0)}/s); CPU ${cpuMsPer(sliceCpu, slice)} ms per suspend`,
      );
      sliceBegan = now;
      sliceCpu = process.cpuUsage();
      slowestStep = Number.POSITIVE_INFINITY;
    }
    if (checkpoints.has(suspended)) {
      const measuring = performance.now();
      const cpuBefore = process.cpuUsage();
      console.log(memoryLine(`${suspended.toLocaleString("en-US")} suspended, after GC`, afterGc(), idle, suspended, each));
      paused += performance.now() - measuring;
      // Nor does the measurement's CPU (two full GCs) count in the slice.
      const measured = process.cpuUsage(cpuBefore);
      sliceCpu = { user: sliceCpu.user + measured.user, system: sliceCpu.system + measured.system };
    }
  };
  await new Promise<void>((resolve, reject) => {
    const startNext = (): void => {
      if (started >= count) return;
      const index = started++;
      // The Run is not kept, nor its result awaited (it settles only once
      // the wait is answered): an event ending it otherwise fails the bench.
      options.start(index, (event) => {
        if (event.type === "error" || event.type === "done" || event.type === "cancelled" || event.type === "timeout") {
          reject(new Error(`conversation ${index} ended with ${event.type} before its wait`));
          return;
        }
        if (event.type !== "approval_required") return;
        if (options.sampled(index)) sampled.push({ index, executionId: event.executionId, waitId: event.request.approvalId, key: event.request.key });
        counted();
        if (suspended === count) resolve();
        else startNext();
      });
    };
    for (let index = 0; index < Math.min(inFlight, count); index += 1) startNext();
  });
  const seconds = (clock() - began) / 1000;
  console.log(
    `  ${count.toLocaleString("en-US")} suspended in ${seconds.toFixed(1)} s = ${(count / seconds).toFixed(0)} suspends/s overall (${inFlight} in flight)`,
  );
  return sampled;
}

/** The rows the waits with a due time cost, read through the store's due
 * reads (the due sweep's own): the next due time (the read the sweep makes
 * after every sweep, `reads` times), then every wait due within
 * `withinMs` paged in the sweep's batches — what a sweep costs when all of
 * them fall due at once. */
export async function countDueRows(env: Environment, withinMs: number, reads = 1): Promise<void> {
  const due = dueWaitsStoreOf(env.store);
  if (due === undefined) throw new Error("the store indexes no due waits");
  let began = performance.now();
  let next: number | undefined;
  for (let read = 0; read < reads; read += 1) next = await due.nextDueAt(Date.now());
  const nextMs = (performance.now() - began) / reads;
  began = performance.now();
  let rows = 0;
  let batches = 0;
  let after: DueCursor | undefined;
  for (;;) {
    const batch = await due.dueWaits(Date.now() + withinMs, dueWaitsBatchMax, after);
    rows += batch.length;
    batches += 1;
    const last = batch.at(-1);
    if (last === undefined || batch.length < dueWaitsBatchMax) break;
    after = { dueAt: last.dueAt, executionId: last.executionId };
  }
  const pagedMs = performance.now() - began;
  console.log(
    `  ${rows.toLocaleString("en-US")} suspended rows with a due time (next due in ${(((next ?? 0) - Date.now()) / 60_000).toFixed(0)} min); the sweep's next-due read ${nextMs.toFixed(2)} ms${reads > 1 ? ` (mean of ${reads})` : ""}; reading them all in ${batches} batches of ${dueWaitsBatchMax}: ${pagedMs.toFixed(0)} ms`,
  );
}

/** How many of `outcomes` completed, and the others' kinds (three at most). */
export function completedOf(outcomes: readonly string[]): string {
  const completed = outcomes.filter((outcome) => outcome === "completed").length;
  const other = [...new Set(outcomes.filter((outcome) => outcome !== "completed"))].slice(0, 3);
  return `${completed} completed${other.length > 0 ? `; others: ${other.join("; ")}` : ""}`;
}
