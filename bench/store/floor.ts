// What the embedded store costs on this machine, as functions other
// benchmarks import (bench/e2e uses `measureRawFloor` as its floor).
//
// * `measureRawFloor`: the best SQLite can do with the store's settings (WAL,
//   the given `synchronous`, the same connection setup), on the calling
//   thread, with no store logic: a loop of one-row transactions, and
//   transactions of 100 rows each.
// * `measureOffload`: the store's own operations through each offload
//   policy, for a sequential stream of lone operations (one agent run after
//   another, each operation awaited) and for many runs in flight at once.
//   One run is the SPEC §4.1 shape: prepare, 5 barriers, terminal commit.
//
// Each measurement runs on a fresh file for a fixed wall-clock duration and
// reports rates; nothing is asserted (the machines are shared and noisy).

import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import type { OffloadPolicy, OffloadStatistics } from "../../host/store/offload.js";
import type { StoreOperation } from "../../host/store/records.js";
import { openStoreConnection, type SynchronousMode } from "../../host/store/sqlite/schema.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";

export interface RawFloor {
  readonly singleRowCommitsPerSecond: number;
  readonly batchedRowsPerSecond: number;
}

export interface MeasureOptions {
  /** Wall-clock time per measured loop. */
  readonly durationMs?: number;
}

/** Rows per transaction in the batched floor. */
const rowsPerBatch = 100;
/** A barrier's typical payload: a model response of a few hundred bytes. */
const payload = JSON.stringify({ text: "Order 42 ships today from the Rotterdam warehouse.".repeat(6) });

let filesCreated = 0;
function freshPath(directory: string, name: string): string {
  filesCreated += 1;
  return join(directory, `${name}-${process.pid}-${filesCreated}.db`);
}

export function measureRawFloor(directory: string, synchronous: SynchronousMode, options: MeasureOptions = {}): RawFloor {
  const durationMs = options.durationMs ?? 1_000;
  const connection = openStoreConnection(freshPath(directory, "floor"), { synchronous });
  try {
    connection.exec("CREATE TABLE floor (id INTEGER PRIMARY KEY, payload TEXT NOT NULL)");
    const insert = connection.prepare("INSERT INTO floor (payload) VALUES (?)");
    const single = timeLoop(durationMs, () => {
      connection.exec("BEGIN IMMEDIATE");
      insert.run(payload);
      connection.exec("COMMIT");
      return 1;
    });
    const batched = timeLoop(durationMs, () => {
      connection.exec("BEGIN IMMEDIATE");
      for (let row = 0; row < rowsPerBatch; row += 1) insert.run(payload);
      connection.exec("COMMIT");
      return rowsPerBatch;
    });
    return { singleRowCommitsPerSecond: single, batchedRowsPerSecond: batched };
  } finally {
    connection.close();
  }
}

/** Runs `body` until `durationMs` passed; returns units per second. */
function timeLoop(durationMs: number, body: () => number): number {
  const started = performance.now();
  let units = 0;
  while (performance.now() - started < durationMs) units += body();
  return units / ((performance.now() - started) / 1000);
}

export interface OffloadFigures {
  readonly policy: OffloadPolicy;
  /** One run at a time, each operation awaited before the next. */
  readonly sequentialOperationsPerSecond: number;
  /** `concurrency` runs in flight at once. */
  readonly concurrentOperationsPerSecond: number;
  readonly concurrentStatistics: OffloadStatistics;
  /** How long the calling thread's event loop was kept from running other
   * work while 100 runs were in flight (p99 and max, milliseconds): what
   * committing on the calling thread costs everything else on it. */
  readonly concurrentLoopDelayMs: { readonly p99: number; readonly max: number };
}

export interface OffloadMeasureOptions extends MeasureOptions {
  readonly synchronous: SynchronousMode;
  /** Runs in flight in the concurrent measurement (default 100). */
  readonly concurrency?: number;
  readonly policies?: readonly OffloadPolicy[];
}

/** Store operations per agent run: prepare, 5 barriers, terminal. */
export const operationsPerRun = 7;

export async function measureOffload(directory: string, options: OffloadMeasureOptions): Promise<OffloadFigures[]> {
  const figures: OffloadFigures[] = [];
  for (const policy of options.policies ?? ["adaptive", "worker", "inline"]) {
    const sequential = await measurePolicy(directory, policy, options, 1);
    const concurrent = await measurePolicy(directory, policy, options, options.concurrency ?? 100);
    figures.push({
      policy,
      sequentialOperationsPerSecond: sequential.operationsPerSecond,
      concurrentOperationsPerSecond: concurrent.operationsPerSecond,
      concurrentStatistics: concurrent.statistics,
      concurrentLoopDelayMs: concurrent.loopDelayMs,
    });
  }
  return figures;
}

async function measurePolicy(directory: string, policy: OffloadPolicy, options: OffloadMeasureOptions, concurrency: number) {
  const store = await SqliteStore.open(freshPath(directory, `offload-${policy}`), { synchronous: options.synchronous, offloadPolicy: policy });
  try {
    await store.ensureAgent("bench", 0);
    const durationMs = options.durationMs ?? 1_000;
    let runsStarted = 0;
    let operations = 0;
    const loopDelay = monitorEventLoopDelay({ resolution: 1 });
    loopDelay.enable();
    const started = performance.now();
    const lane = async (): Promise<void> => {
      while (performance.now() - started < durationMs) {
        runsStarted += 1;
        const done = await agentRun(store, `run-${runsStarted}`); // not `operations += await …`: lanes interleave
        operations += done;
      }
    };
    await Promise.all(Array.from({ length: concurrency }, lane));
    const seconds = (performance.now() - started) / 1000;
    loopDelay.disable();
    return {
      operationsPerSecond: operations / seconds,
      statistics: store.offloadStatistics,
      loopDelayMs: { p99: loopDelay.percentile(99) / 1e6, max: loopDelay.max / 1e6 },
    };
  } finally {
    await store.close();
  }
}

/** Anything that runs store operations: a SqliteStore, or the native writer
 * prototype (bench/store/native-writer.ts). */
export interface OperationRunner {
  run(operation: StoreOperation): Promise<unknown>;
}

/** One agent run's store operations, each awaited; returns how many ran. */
export async function agentRun(store: OperationRunner, executionId: string): Promise<number> {
  const at = Date.now();
  const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };
  const response = { kind: "model_response" as const, at, payload };
  await store.run({ type: "prepareExecution", executionId, agentId: "bench", mode: "run", input: "Where is order 42?", config: {}, journal: [], at });
  let revision = 1;
  for (let barrier = 0; barrier < 5; barrier += 1) {
    const operation: StoreOperation =
      barrier % 2 === 0
        ? {
            type: "providerBarrier",
            executionId,
            expectedRevision: revision,
            callId: `model-${barrier}`,
            steps: barrier === 0 ? [] : [response],
            usage,
            turns: barrier,
            at,
          }
        : {
            type: "toolBarrier",
            executionId,
            expectedRevision: revision,
            toolBatch: [{ callId: `tool-${barrier}`, toolName: "lookupOrder", input: { orderId: 42 }, idempotencyKey: `${executionId}:tool-${barrier}` }],
            steps: [response],
            usage,
            turns: barrier,
            at,
          };
    revision = ((await store.run(operation)) as { revision: number }).revision;
  }
  await store.run({
    type: "terminalCommit",
    executionId,
    expectedRevision: revision,
    outcome: "completed",
    output: "shipped",
    error: null,
    usage,
    approvalRequest: null,
    handoff: null,
    steps: [response],
    journal: [],
    at,
  });
  return operationsPerRun;
}
