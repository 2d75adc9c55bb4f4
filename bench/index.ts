// `npm run bench`: every figure of issue 16's table, each beside the floor
// measured in the same run, over several rounds, on the compiled package
// (scripts/bench-compiled.mjs), SQLite, a conversation per run. Prints
// figures, asserts nothing. A few minutes.
//
//   npm run bench                          # BENCH_ROUNDS=3, BENCH_SECONDS=2
//   BENCH_ROUNDS=5 BENCH_SECONDS=3 npm run bench
//   BENCH_ONLY=sequential|inflight|approvals|crash|waits npm run bench   # one section
//   BENCH_ONLY=postgres npm run bench      # only Phronomy's PostgreSQL loops (sequential, 100 in flight), no peers
//
// Every loop below (sequential, 100 in flight; SQLite and PostgreSQL) and
// each peer's two loops (bench/peers/workload.ts `measureLoops`) first
// runs BENCH_WARM_UP runs (1,000), 100 at a time, uncounted: after only
// 100 the hot path is not compiled yet and the first window pays for the
// compilation (decision 0124's addendum). Each then measures BENCH_SECONDS.
//
// Each round measures, in order:
//   * the floor: fdatasync of one 4 KB page, one-row commits (FULL and
//     NORMAL) and commits of 100 rows (FULL), on a bare connection with the
//     store's settings (`bench/store/floor.ts`);
//   * sequential runs/s, FULL and NORMAL: one run after another, each on a
//     new conversation (model → tool → model → tool → model);
//   * 100 in flight, FULL: 100 loops, each starting a run on a new
//     conversation as soon as its last ended; runs/s, p50, p99; then on,
//     until the process has done BENCH_STEADY_AFTER runs (10,000), and a
//     second window of the same length: its CPU per run is what a process
//     that has compiled its hot path pays (decision 0123);
//   * approvals (a child process): 10,000 conversations suspended for
//     approval (suspends/s), RSS after GC with them all suspended (beside
//     the RSS of a bare `node` started in the same round, and of the child
//     before it started any) and again at rest, 15 s later (decision 0109), then every one approved and run to its end
//     (resumes/s);
//   * kill -9: a child with 100 runs in flight (each in its tool) is killed;
//     a new process opens the store, recovers the 100 and runs 900 more
//     (100 in flight): the time from open until 1,000 runs are done
//     (BENCH_CRASH_TOTAL).
//
// After the rounds, once: the waits section (bench/e2e/waits.ts, decision
// 0085), a child process with BENCH_WAITS (default 1,000,000) pending
// waits, half timers and half keyed event waits: suspends/s, RSS and heap
// per pending wait over the idle process, the due reads, a sample fired
// and signalled, the due sweep at its due time. 10–20 minutes at 1,000,000;
// BENCH_ONLY=waits runs it alone (no rounds, no peers).
//
// Then the peers' table (issue 26, bench/peers): the same measures of
// Phronomy on PostgreSQL (BENCH_POSTGRES, the local server's `test` by
// default, a schema per measure, dropped; `off` skips it) and of each peer
// — LangGraph.js on SQLite, DBOS on the same PostgreSQL, Restate's server —
// over BENCH_PEERS_ROUNDS rounds (default 1), beside Phronomy's figures of
// this run and as a ratio to the best peer. BENCH_PEERS=langgraph,dbos,restate
// picks peers, `none` skips the table. Each PostgreSQL round first prints the
// page cache not yet on disk (Dirty, Writeback): a round measured behind an
// earlier section's write-back would wait on it (decision 0124).
//
// Beside the rates, the process's CPU (user + system, every thread: the
// SQLite worker's too) over each measured span, per run (per suspend, per
// resume): the work a run costs, which other load on the machine inflates
// far less than it slows the rates.
//
// The floor beside each figure is what the disk allows for it: the
// transactions a run commits (counted in the offload, `store operations`)
// at the one-row commit rate when one run is alone, at the 100-row batched
// rate when many are in flight. "× floor" is the figure over that.

import { spawn, spawnSync } from "node:child_process";
import { closeSync, fdatasyncSync, openSync, readFileSync, writeSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { assistantMessage, type ConversationMessage } from "../host/agent/messages.js";
import { callModel } from "../host/agent/model.js";
import { resolveTools } from "../host/agent/tools.js";
import { Phronomy, tool, type DefinedAgent, type Environment } from "../host/index.js";
import type { SqliteStore } from "../host/store/sqlite-store.js";
import type { SynchronousMode } from "../host/store/sqlite/schema.js";
import { memoryAfterGc, memoryAtRest, restMs } from "./memory.js";
import { measureRawFloor } from "./store/floor.js";
import { waitsChild } from "./e2e/waits.js";
import { agentRunModel, defineRefunds, lookup, percentile, suspendConversations, type SuspendedConversation } from "./e2e/workload.js";
import { measurePeers, peersWanted } from "./peers/run.js";
import { type PhronomyColumn, printPeersTable } from "./peers/table.js";
import { APPROVALS_IN_FLIGHT, CRASH_TOTAL, pool, SUSPENDED, WARM_UP } from "./peers/workload.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const IN_FLIGHT = 100;
// SUSPENDED (BENCH_SUSPENDED, 10,000) and CRASH_TOTAL (BENCH_CRASH_TOTAL,
// 1,000) are the peers' too (bench/peers/workload.ts): one workload.
const CRASH_IN_FLIGHT = 100;
const ONLY = process.env.BENCH_ONLY;
/** Rounds of each peer (bench/peers), and of Phronomy on PostgreSQL. */
const PEERS_ROUNDS = Number(process.env.BENCH_PEERS_ROUNDS ?? 1);
const quiet = { warn: () => undefined };

// -- helpers ------------------------------------------------------------------------

function store(env: Environment): SqliteStore {
  return (env as unknown as { store: SqliteStore }).store;
}

/** Store operations submitted so far (each one transaction, or a savepoint
 * of a group commit); NaN on PostgreSQL, whose store counts none. */
function operations(env: Environment): number {
  return (store(env) as Partial<SqliteStore>).offloadStatistics?.submitted ?? Number.NaN;
}

function range(values: readonly number[], digits = 0): string {
  if (values.length === 0) return "–";
  const low = Math.min(...values);
  const high = Math.max(...values);
  const format = (value: number) => value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
  return low === high ? format(low) : `${format(low)}–${format(high)}`;
}

/** After two full GCs, RSS once the pages they freed were given back
 * (bench/memory.ts says why). */
const gcRss = memoryAfterGc;

const mb = (bytes: number) => bytes / 2 ** 20;

/** The kernel's page cache not yet on disk (/proc/meminfo Dirty and
 * Writeback, MB), printed before a section whose rates depend on fsync:
 * a section measured while an earlier one's pages are still being written
 * back waits behind them. "" where /proc/meminfo is not (not Linux). */
function unwritten(): string {
  let text: string;
  try {
    text = readFileSync("/proc/meminfo", "utf8");
  } catch {
    return "";
  }
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? Number.NaN);
  return `page cache not yet on disk: Dirty ${(kib("Dirty") / 1024).toFixed(0)} MB, Writeback ${(kib("Writeback") / 1024).toFixed(0)} MB`;
}

/** fdatasync of one overwritten 4 KB page, per second. */
function fdatasyncFloor(directory: string, durationMs: number): number {
  const fd = openSync(join(directory, `fdatasync-${process.pid}.bin`), "w");
  const page = Buffer.alloc(4096, 1);
  try {
    const started = performance.now();
    let count = 0;
    while (performance.now() - started < durationMs) {
      writeSync(fd, page, 0, page.length, 0);
      fdatasyncSync(fd);
      count += 1;
    }
    return count / ((performance.now() - started) / 1000);
  } finally {
    closeSync(fd);
  }
}

/** Where a measurement's store lives: a SQLite directory, or
 * `postgres:<schema>`, a fresh schema of POSTGRES (the PostgreSQL column of
 * the peers' table; dropped at the end). */
type Where = string;
const POSTGRES = process.env.BENCH_POSTGRES ?? "postgresql://postgres@127.0.0.1:5432/test";
const postgresSchema = (where: Where) => (where.startsWith("postgres:") ? where.slice("postgres:".length) : undefined);

let opened = 0;
/** `name`: the SQLite file (a new one by default); `instanceId`: the
 * PostgreSQL instance a restarted process takes over (decision 0030). */
async function open(where: Where, synchronous: SynchronousMode = "FULL", name?: string, instanceId?: string): Promise<Environment> {
  opened += 1;
  const schema = postgresSchema(where);
  if (schema !== undefined) return Phronomy.open({ store: POSTGRES, postgres: { schema, ...(instanceId === undefined ? {} : { instanceId }) }, logger: quiet });
  return Phronomy.open({ store: join(where, name ?? `bench-${process.pid}-${opened}.db`), synchronous, logger: quiet });
}

function support(env: Environment): DefinedAgent {
  return env.agent({ name: "support", model: agentRunModel(), tools: { lookup }, memoryWindow: 1 });
}

let conversationNumber = 0;
async function runOne(definition: DefinedAgent): Promise<number> {
  const started = performance.now();
  const result = await definition.conversation(`user-${conversationNumber++}`).start("Where is order 42?").result;
  if (result.outcome !== "completed") throw new Error(`a bench run ended ${result.outcome}`);
  return performance.now() - started;
}

interface Loop {
  runs: number;
  seconds: number;
  latencies: number[];
  operationsPerRun: number;
  /** CPU of the whole process (every thread) over the loop, µs per run. */
  cpuMicrosPerRun: number;
  /** The same loop measured again once the process has run STEADY_AFTER
   * runs (decision 0123): V8 has compiled the hot path by then, so this
   * window's CPU is what every later run costs. */
  steady?: { runs: number; seconds: number; after: number; cpuMicrosPerRun: number };
}

/** Process CPU (user + system, every thread) since `before`, in µs. */
function cpuMicrosSince(before: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(before);
  return used.user + used.system;
}

/** Runs a process has done before the steady window of the in-flight loop
 * (decision 0123: after ≈4,000 runs V8 still compiles the hot path). */
const STEADY_AFTER = Number(process.env.BENCH_STEADY_AFTER ?? 10_000);

/** `workers` loops of runs on new conversations until `until` says stop;
 * the runs' latencies, the wall time and the process's CPU per run. */
async function window(definition: DefinedAgent, workers: number, until: (runs: number) => boolean) {
  const latencies: number[] = [];
  const began = performance.now();
  const cpuBefore = process.cpuUsage();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (!until(latencies.length)) latencies.push(await runOne(definition));
    }),
  );
  const seconds = (performance.now() - began) / 1000;
  return { latencies, seconds, cpuMicrosPerRun: cpuMicrosSince(cpuBefore) / latencies.length };
}

/** `workers` loops of runs on new conversations for SECONDS, after a warm-up
 * of WARM_UP runs, IN_FLIGHT at a time (each peer's loops get the same,
 * bench/peers/workload.ts `measureLoops`); with `steady`, then runs until the process has done
 * STEADY_AFTER and measures SECONDS more (`Loop.steady`). */
async function loop(directory: string, synchronous: SynchronousMode, workers: number, steady = false): Promise<Loop> {
  const env = await open(directory, synchronous);
  try {
    const definition = support(env);
    await definition.ready;
    await pool(WARM_UP, IN_FLIGHT, async () => {
      await runOne(definition);
    });
    const before = operations(env);
    const measured = await window(definition, workers, seconds(SECONDS));
    const result: Loop = {
      runs: measured.latencies.length,
      seconds: measured.seconds,
      latencies: measured.latencies,
      operationsPerRun: (operations(env) - before) / measured.latencies.length,
      cpuMicrosPerRun: measured.cpuMicrosPerRun,
    };
    if (steady) {
      const done = WARM_UP + measured.latencies.length;
      if (done < STEADY_AFTER) await window(definition, workers, (runs) => runs >= STEADY_AFTER - done);
      const later = await window(definition, workers, seconds(SECONDS));
      result.steady = { runs: later.latencies.length, seconds: later.seconds, after: Math.max(done, STEADY_AFTER), cpuMicrosPerRun: later.cpuMicrosPerRun };
    }
    return result;
  } finally {
    await env.close();
  }
}

/** A window's stop: true once `duration` seconds have passed since its
 * first call. */
function seconds(duration: number): (runs: number) => boolean {
  let ends: number | undefined;
  return () => {
    ends ??= performance.now() + duration * 1000;
    return performance.now() >= ends;
  };
}

/** CPU time of a run's three model calls (`callModel`: the direct call
 * through the AI SDK's pieces, decision 0093, on the scripted model, the conversation of the bench's
 * run), microseconds per run, nothing else running: the share of each run
 * that is the model adapter. */
async function modelCallsPerRun(durationMs: number): Promise<number> {
  const model = agentRunModel();
  const tools = resolveTools({ lookup });
  const signal = new AbortController().signal;
  const oneRun = async () => {
    const messages: ConversationMessage[] = [{ role: "user", content: "Where is order 42?" }];
    for (let turn = 0; turn < 3; turn += 1) {
      const answer = await callModel(model, { messages, tools, signal, settings: {}, agentId: "bench", executionId: "bench" });
      messages.push(assistantMessage(answer));
      for (const call of answer.toolCalls)
        messages.push({
          role: "tool",
          results: [{ callId: call.callId, toolName: call.toolName, output: { orderId: "42", status: "shipped" }, isError: false }],
        });
    }
  };
  for (let warm = 0; warm < 1_000; warm += 1) await oneRun();
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  let runs = 0;
  while (performance.now() - started < durationMs) {
    await oneRun();
    runs += 1;
  }
  // The process's CPU, not the wall time: nothing else runs in it, and
  // other load on the machine stretches the wall time, not the CPU.
  return cpuMicrosSince(cpuBefore) / runs;
}

// -- the child processes -------------------------------------------------------------

/** How the approvals child suspends and resumes (BENCH_APPROVALS):
 * `peers` (the default) as the peers do (bench/peers/workload.ts
 * `measureApprovals`): APPROVALS_IN_FLIGHT at a time, keeping between suspend
 * and resume only what an application keeps — each conversation's execution
 * and approval ids, as an approval link or an HTTP request carries them — and
 * resuming through `definition.conversation(id).resume(...)`; `burst`: all
 * SUSPENDED started at once, each `SuspendedConversation` handle kept (the
 * shape of every table before decision 0121). */
const APPROVALS_SHAPE = process.env.BENCH_APPROVALS ?? "peers";
if (APPROVALS_SHAPE !== "peers" && APPROVALS_SHAPE !== "burst") throw new Error(`BENCH_APPROVALS must be "peers" or "burst", got ${APPROVALS_SHAPE}`);

/** Child: SUSPENDED conversations suspended for approval, then approved, in
 * the shape BENCH_APPROVALS says (on PostgreSQL always IN_FLIGHT at a time:
 * all 10,000 at once there suspended ≈10 a second here, under load:
 * decision 0069). */
async function approvalsChild(directory: Where): Promise<void> {
  const burst = APPROVALS_SHAPE === "burst";
  const inFlight = burst && postgresSchema(directory) === undefined ? SUSPENDED : APPROVALS_IN_FLIGHT;
  const before = gcRss();
  const env = await open(directory);
  const definition = defineRefunds(env);
  await definition.ready;
  // A warm-up, so the suspends do not pay the first compilation.
  await new Promise<void>((resolve) => {
    definition
      .conversation("warm")
      .start("refund me", {
        onEvent: (event) => {
          if (event.type === "approval_required") resolve();
        },
      })
      .result.catch(() => undefined);
  });
  const opened = gcRss();
  const startOps = operations(env);
  const handles: SuspendedConversation[] = [];
  const executionIds: string[] = [];
  const approvalIds: string[] = [];
  const began = performance.now();
  const suspendCpu = process.cpuUsage();
  if (burst) await suspendConversations(definition, SUSPENDED, (suspended) => handles.push(suspended), inFlight);
  else
    await pool(
      SUSPENDED,
      inFlight,
      (index) =>
        new Promise<void>((resolve) => {
          definition.conversation(`user-${index}`).start("refund me", {
            onEvent: (event) => {
              if (event.type !== "approval_required") return;
              executionIds[index] = event.executionId;
              approvalIds[index] = event.request.approvalId;
              resolve();
            },
          });
        }),
    );
  const suspendSeconds = (performance.now() - began) / 1000;
  const suspendCpuMicros = cpuMicrosSince(suspendCpu) / SUSPENDED;
  const suspendOps = (operations(env) - startOps) / SUSPENDED;
  const suspended = gcRss();
  const settled = await memoryAtRest(); // V8 gives back what the burst grew (decision 0109)
  const resumeOps0 = operations(env);
  const resumedAt = performance.now();
  const resumeCpu = process.cpuUsage();
  await pool(SUSPENDED, inFlight, async (index) => {
    if (burst) {
      const { conversation, executionId, approvalId } = handles[index]!;
      await conversation.resume(executionId, { approvalId, approved: true }).result;
    } else await definition.conversation(`user-${index}`).resume(executionIds[index]!, { approvalId: approvalIds[index]!, approved: true }).result;
  });
  const resumeSeconds = (performance.now() - resumedAt) / 1000;
  const resumeCpuMicros = cpuMicrosSince(resumeCpu) / SUSPENDED;
  const resumeOps = (operations(env) - resumeOps0) / SUSPENDED;
  await env.close();
  console.log(
    JSON.stringify({
      suspendsPerSecond: SUSPENDED / suspendSeconds,
      suspendOps,
      suspendCpuMicros,
      resumesPerSecond: SUSPENDED / resumeSeconds,
      resumeOps,
      resumeCpuMicros,
      rssBefore: mb(before.rss),
      rssOpened: mb(opened.rss),
      rssSuspended: mb(suspended.rss),
      rssSuspendedRightAfterGc: mb(suspended.rssRightAfterGc),
      rssSettled: mb(settled.rss),
      heapPerSuspended: (suspended.heapUsed - opened.heapUsed) / SUSPENDED,
      heapSettled: settled.heapUsed / 2 ** 20,
    }),
  );
}

const gateNever = new Promise<void>(() => undefined);

/** Crash child: CRASH_IN_FLIGHT runs in their tools, then "in-flight". */
async function crashChild(where: Where, name: string): Promise<void> {
  const env = await open(where, "FULL", name, "bench-crash");
  const hang = tool({
    inputSchema: z.object({ orderId: z.string() }),
    execute: async () => {
      await gateNever;
      return "never";
    },
  });
  const definition = env.agent({ name: "support", model: agentRunModel(), tools: { lookup: hang }, memoryWindow: 1 });
  await definition.ready;
  let running = 0;
  for (let index = 0; index < CRASH_IN_FLIGHT; index += 1) {
    definition
      .conversation(`crashed-${index}`)
      .start("Where is order 42?", {
        onEvent: (event) => {
          if (event.type === "tool_call_started" && ++running === CRASH_IN_FLIGHT) console.log("in-flight");
        },
      })
      .result.catch(() => undefined);
  }
}

/** Restart child: opens the killed process's store, recovers its runs and
 * runs new ones until CRASH_TOTAL are done; prints the time. */
async function restartChild(where: Where, name: string): Promise<void> {
  const began = performance.now();
  const cpuBefore = process.cpuUsage();
  const env = await open(where, "FULL", name, "bench-crash");
  const opened = performance.now();
  const definition = support(env);
  const recovered = (await definition.recovery()).filter((item) => item.status === "continued");
  const waits = recovered.map((item) => env.wait(item.executionId).result);
  let recoveredDone = began;
  let remaining = CRASH_TOTAL - recovered.length;
  await Promise.all([
    Promise.all(waits).then(() => {
      recoveredDone = performance.now();
    }),
    ...Array.from({ length: IN_FLIGHT }, async () => {
      while (remaining > 0) {
        remaining -= 1;
        await runOne(definition);
      }
    }),
  ]);
  const done = performance.now();
  // The process's CPU (every thread) over the same span: beside the wall
  // time it says whether the restart waits for the disk or computes.
  const cpu = process.cpuUsage(cpuBefore);
  await env.close();
  console.log(
    JSON.stringify({
      recovered: recovered.length,
      seconds: (done - began) / 1000,
      openSeconds: (opened - began) / 1000,
      recoveredSeconds: (recoveredDone - began) / 1000,
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
    }),
  );
}

const self = fileURLToPath(import.meta.url);
/** This file's own runner (`--import tsx` under tsx). */
function childArgs(): string[] {
  return [...process.execArgv.filter((argument) => !argument.startsWith("--cpu-prof")), "--expose-gc", self];
}

function runChild(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...childArgs(), ...args], { stdio: ["ignore", "pipe", "inherit"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.on("exit", (code) => (code === 0 ? resolve(output.trim().split("\n").at(-1) ?? "") : reject(new Error(`bench child ${args[0]} exited ${code}`))));
  });
}

interface Restart {
  recovered: number;
  seconds: number;
  openSeconds: number;
  recoveredSeconds: number;
  cpuSeconds: number;
}

async function crashAndRestart(where: Where, round: number): Promise<Restart> {
  const name = `crash-${round}.db`;
  const child = spawn(process.execPath, [...childArgs(), "crash-child", where, name], { stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes("in-flight")) resolve();
    });
    child.on("exit", (code) => reject(new Error(`crash child exited early (${code})`)));
  });
  child.kill("SIGKILL");
  await new Promise((resolve) => child.once("exit", resolve));
  return JSON.parse(await runChild(["restart-child", where, name]));
}

/** The waits section, in a child of its own; it prints as it goes. */
function waitsSection(directory: string): Promise<void> {
  console.log("\nwaits (decision 0085): pending timers and keyed event waits cost rows, not memory");
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...childArgs(), "waits-child", directory], { stdio: ["ignore", "inherit", "inherit"] });
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`bench child waits-child exited ${code}`))));
  });
}

function bareNodeRss(): number {
  const probe = spawnSync(process.execPath, ["--expose-gc", "-e", "gc(); console.log(process.memoryUsage().rss)"], { encoding: "utf8" });
  return mb(Number(probe.stdout.trim()));
}

// -- the table --------------------------------------------------------------------------

interface Round {
  fdatasync: number;
  fullCommits: number;
  fullBatched: number;
  normalCommits: number;
  modelMicros: number;
  sequentialFull?: Loop;
  sequentialNormal?: Loop;
  inFlight?: Loop;
  approvals?: {
    suspendsPerSecond: number;
    suspendOps: number;
    suspendCpuMicros: number;
    resumesPerSecond: number;
    resumeOps: number;
    resumeCpuMicros: number;
    rssBefore: number;
    rssOpened: number;
    rssSuspended: number;
    /** RSS read as the GC returned, before its pages were unmapped. */
    rssSuspendedRightAfterGc: number;
    rssSettled: number;
    heapPerSuspended: number;
  };
  nodeRss?: number;
  crash?: Restart;
}

async function round(directory: string, index: number): Promise<Round> {
  const floorMs = 500;
  const full = measureRawFloor(directory, "FULL", { durationMs: floorMs });
  const normal = measureRawFloor(directory, "NORMAL", { durationMs: floorMs });
  const result: Round = {
    fdatasync: fdatasyncFloor(directory, floorMs),
    fullCommits: full.singleRowCommitsPerSecond,
    fullBatched: full.batchedRowsPerSecond,
    normalCommits: normal.singleRowCommitsPerSecond,
    modelMicros: await modelCallsPerRun(floorMs),
  };
  if (ONLY === undefined || ONLY === "sequential") {
    result.sequentialFull = await loop(directory, "FULL", 1);
    result.sequentialNormal = await loop(directory, "NORMAL", 1);
  }
  if (ONLY === undefined || ONLY === "inflight") result.inFlight = await loop(directory, "FULL", IN_FLIGHT, true);
  if (ONLY === undefined || ONLY === "approvals") {
    result.nodeRss = bareNodeRss();
    result.approvals = JSON.parse(await runChild(["approvals-child", directory]));
  }
  if (ONLY === undefined || ONLY === "crash") result.crash = await crashAndRestart(directory, index);
  return result;
}

interface PostgresRound {
  sequential?: Loop;
  inFlight?: Loop;
  approvals?: NonNullable<Round["approvals"]>;
  crash?: Restart;
}

/** Phronomy on PostgreSQL (POSTGRES), the measures of the peers' table,
 * each in a schema of its own (listed in `schemas`, dropped by the caller). */
async function postgresRound(schemas: string[], index: number): Promise<PostgresRound> {
  const where = (section: string): Where => {
    const schema = `phronomy_bench_${process.pid}_${index}_${section}`;
    schemas.push(schema);
    return `postgres:${schema}`;
  };
  const result: PostgresRound = {};
  const loops = ONLY === "postgres";
  if (ONLY === undefined || loops || ONLY === "sequential") result.sequential = await loop(where("sequential"), "FULL", 1);
  if (ONLY === undefined || loops || ONLY === "inflight") result.inFlight = await loop(where("inflight"), "FULL", IN_FLIGHT);
  if (ONLY === undefined || ONLY === "approvals") result.approvals = JSON.parse(await runChild(["approvals-child", where("approvals")]));
  if (ONLY === undefined || ONLY === "crash") result.crash = await crashAndRestart(where("crash"), index);
  return result;
}

function describePostgres(round: PostgresRound, index: number): string {
  const rate = (loop: Loop) => (loop.runs / loop.seconds).toFixed(0);
  const parts: string[] = [];
  // The process's CPU per run (every thread), as the SQLite rounds print it:
  // the server's CPU is not in it (bench/e2e/postgres-server-cpu.ts reads that).
  const cpu = (loop: Loop) => `(CPU ${loop.cpuMicrosPerRun.toFixed(0)} µs per run)`;
  if (round.sequential) parts.push(`sequential ${rate(round.sequential)} runs/s ${cpu(round.sequential)}`);
  if (round.inFlight) parts.push(`100 in flight ${rate(round.inFlight)} runs/s ${cpu(round.inFlight)}`);
  if (round.approvals)
    parts.push(
      `${SUSPENDED} suspends ${round.approvals.suspendsPerSecond.toFixed(0)}/s, resumes ${round.approvals.resumesPerSecond.toFixed(0)}/s, RSS suspended ${round.approvals.rssSuspended.toFixed(0)} MB`,
    );
  if (round.crash) parts.push(`kill -9 → ${CRASH_TOTAL} done ${round.crash.seconds.toFixed(2)} s`);
  return `  PostgreSQL round ${index + 1}: ${parts.join("; ")}`;
}

/** The Phronomy columns of the peers' table. */
function phronomyColumns(rounds: readonly Round[], postgres: readonly PostgresRound[]): PhronomyColumn[] {
  const rate = (loop: Loop | undefined) => (loop === undefined ? [] : [loop.runs / loop.seconds]);
  const column = (title: string, list: readonly (Round | PostgresRound)[], sequential: (round: Round | PostgresRound) => Loop | undefined): PhronomyColumn => ({
    title,
    sequential: list.flatMap((round) => rate(sequential(round))),
    inFlight: list.flatMap((round) => rate(round.inFlight)),
    suspends: list.flatMap((round) => (round.approvals ? [round.approvals.suspendsPerSecond] : [])),
    resumes: list.flatMap((round) => (round.approvals ? [round.approvals.resumesPerSecond] : [])),
    rssSuspended: list.flatMap((round) => (round.approvals ? [round.approvals.rssSuspended] : [])),
    rssAtRest: list.flatMap((round) => (round.approvals ? [round.approvals.rssSettled] : [])),
    crashSeconds: list.flatMap((round) => (round.crash ? [round.crash.seconds] : [])),
  });
  const columns: PhronomyColumn[] = [
    {
      ...column("Phronomy FULL", rounds, (round) => (round as Round).sequentialFull),
      sequentialNormal: rounds.flatMap((round) => rate(round.sequentialNormal)),
    },
  ];
  if (postgres.length > 0) columns.push(column("Phronomy PG", postgres, (round) => (round as PostgresRound).sequential));
  return columns;
}

/** Phronomy on PostgreSQL, then the peers, then their table beside
 * Phronomy's figures of this run. BENCH_PEERS=none skips it all;
 * BENCH_POSTGRES=off the PostgreSQL column. */
async function peersSection(rounds: readonly Round[]): Promise<void> {
  if (process.env.BENCH_PEERS === "none") return;
  peersWanted(); // a wrong BENCH_PEERS ends the bench before anything is measured
  console.log(`
the peers' table (issue 26): Phronomy on PostgreSQL, ${PEERS_ROUNDS} round(s), then each peer (bench/peers), ${PEERS_ROUNDS} round(s)`);
  const postgres = process.env.BENCH_POSTGRES === "off" ? [] : await postgresSection();
  printPeersTable(await measurePeers(PEERS_ROUNDS), phronomyColumns(rounds, postgres));
}

/** Phronomy on PostgreSQL, PEERS_ROUNDS rounds, each printed as it ends. */
async function postgresSection(): Promise<PostgresRound[]> {
  const postgres: PostgresRound[] = [];
  // Loaded here, not at the top: the SQLite children (this file) would
  // carry pg's RSS in their memory figures, and an application on
  // SQLite never loads it (the PostgreSQL store loads it itself).
  const { default: pg } = await import("pg");
  const admin = new pg.Client({ connectionString: POSTGRES });
  const schemas: string[] = [];
  try {
    await admin.connect();
    for (let index = 0; index < PEERS_ROUNDS; index += 1) {
      console.log(`  PostgreSQL round ${index + 1} starts; ${unwritten()}`);
      postgres.push(await postgresRound(schemas, index));
      console.log(describePostgres(postgres.at(-1)!, index));
    }
  } catch (error) {
    console.log(`  Phronomy on PostgreSQL not measured: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
    await admin.end().catch(() => undefined);
  }
  return postgres;
}

function describe(round: Round, index: number): string {
  const parts = [
    `floor: fdatasync ${round.fdatasync.toFixed(0)}/s, one-row commits ${round.fullCommits.toFixed(0)}/s FULL ${round.normalCommits.toFixed(0)}/s NORMAL, batched ${round.fullBatched.toFixed(0)} rows/s; 3 model calls ${round.modelMicros.toFixed(0)} µs`,
  ];
  const rate = (loop: Loop) => loop.runs / loop.seconds;
  if (round.sequentialFull && round.sequentialNormal)
    parts.push(
      `sequential ${rate(round.sequentialFull).toFixed(0)} FULL / ${rate(round.sequentialNormal).toFixed(0)} NORMAL runs/s (CPU ${round.sequentialFull.cpuMicrosPerRun.toFixed(0)} / ${round.sequentialNormal.cpuMicrosPerRun.toFixed(0)} µs per run)`,
    );
  if (round.inFlight) {
    const sorted = [...round.inFlight.latencies].sort((a, b) => a - b);
    parts.push(
      `100 in flight ${rate(round.inFlight).toFixed(0)} runs/s p50 ${percentile(sorted, 0.5).toFixed(0)} ms p99 ${percentile(sorted, 0.99).toFixed(0)} ms (CPU ${round.inFlight.cpuMicrosPerRun.toFixed(0)} µs per run)`,
    );
    const steady = round.inFlight.steady;
    if (steady)
      parts.push(
        `after ${steady.after} runs ${(steady.runs / steady.seconds).toFixed(0)} runs/s (CPU ${steady.cpuMicrosPerRun.toFixed(0)} µs per run, ${(steady.cpuMicrosPerRun - round.modelMicros).toFixed(0)} without the model calls)`,
      );
  }
  if (round.approvals)
    parts.push(
      `${SUSPENDED} suspends ${round.approvals.suspendsPerSecond.toFixed(0)}/s, resumes ${round.approvals.resumesPerSecond.toFixed(0)}/s (CPU ${round.approvals.suspendCpuMicros.toFixed(0)} / ${round.approvals.resumeCpuMicros.toFixed(0)} µs each), RSS suspended ${round.approvals.rssSuspended.toFixed(0)} MB`,
    );
  if (round.crash) parts.push(`kill -9 → ${CRASH_TOTAL} done ${round.crash.seconds.toFixed(2)} s`);
  return `  round ${index + 1}: ${parts.join("; ")}`;
}

function table(rounds: readonly Round[]): void {
  const of = <T>(pick: (round: Round) => T | undefined) => rounds.map(pick).filter((value): value is T => value !== undefined);
  const rate = (loop: Loop) => loop.runs / loop.seconds;
  const rows: [string, string, string, string][] = [];
  const fullCommits = of((r) => r.fullCommits);
  const batched = of((r) => r.fullBatched);
  const seqFull = of((r) => r.sequentialFull);
  if (seqFull.length > 0) {
    const perRun = seqFull[0]!.operationsPerRun;
    rows.push([
      "sequential runs/s, FULL",
      range(seqFull.map(rate)),
      `${range(rounds.map((r) => r.fullCommits / perRun))} (${perRun.toFixed(1)} one-row commits per run)`,
      range(
        rounds.map((r) => (r.sequentialFull ? rate(r.sequentialFull) / (r.fullCommits / r.sequentialFull.operationsPerRun) : NaN)).filter(Number.isFinite),
        2,
      ),
    ]);
    const seqNormal = of((r) => r.sequentialNormal);
    rows.push([
      "sequential runs/s, NORMAL",
      range(seqNormal.map(rate)),
      `${range(rounds.map((r) => r.normalCommits / perRun))}`,
      range(
        rounds
          .map((r) => (r.sequentialNormal ? rate(r.sequentialNormal) / (r.normalCommits / r.sequentialNormal.operationsPerRun) : NaN))
          .filter(Number.isFinite),
        2,
      ),
    ]);
  }
  const inFlight = of((r) => r.inFlight);
  if (inFlight.length > 0) {
    const perRun = inFlight[0]!.operationsPerRun;
    const p99 = inFlight.map((loop) =>
      percentile(
        [...loop.latencies].sort((a, b) => a - b),
        0.99,
      ),
    );
    const p50 = inFlight.map((loop) =>
      percentile(
        [...loop.latencies].sort((a, b) => a - b),
        0.5,
      ),
    );
    rows.push([
      `${IN_FLIGHT} in flight runs/s, FULL`,
      range(inFlight.map(rate)),
      `${range(batched.map((b) => b / perRun))} (${perRun.toFixed(1)} batched rows per run)`,
      range(rounds.map((r) => (r.inFlight ? rate(r.inFlight) / (r.fullBatched / r.inFlight.operationsPerRun) : NaN)).filter(Number.isFinite), 2),
    ]);
    rows.push([`${IN_FLIGHT} in flight p50 / p99 ms`, `${range(p50)} / ${range(p99)}`, "", ""]);
  }
  const cpuRow = (measure: string, values: readonly number[]) => {
    if (values.length > 0) rows.push([measure, range(values), "", "process CPU, every thread"]);
  };
  cpuRow(
    "CPU µs per run, sequential FULL",
    seqFull.map((loop) => loop.cpuMicrosPerRun),
  );
  cpuRow(
    "CPU µs per run, sequential NORMAL",
    of((r) => r.sequentialNormal).map((loop) => loop.cpuMicrosPerRun),
  );
  cpuRow(
    `CPU µs per run, ${IN_FLIGHT} in flight FULL`,
    inFlight.map((loop) => loop.cpuMicrosPerRun),
  );
  const steady = rounds.flatMap((r) => (r.inFlight?.steady ? [{ steady: r.inFlight.steady, model: r.modelMicros }] : []));
  if (steady.length > 0) {
    rows.push([
      `CPU µs per run, ${IN_FLIGHT} in flight FULL, after ${range(steady.map((s) => s.steady.after))} runs`,
      range(steady.map((s) => s.steady.cpuMicrosPerRun)),
      `${range(steady.map((s) => s.steady.runs / s.steady.seconds))} runs/s`,
      "process CPU, every thread: V8 has compiled the hot path (decision 0123)",
    ]);
    rows.push([
      "  … the host's own (less the run's 3 model calls, same round)",
      range(steady.map((s) => s.steady.cpuMicrosPerRun - s.model)),
      "",
      "issue 26: ≤ 300 µs",
    ]);
  }
  const approvals = of((r) => r.approvals);
  if (approvals.length > 0) {
    const suspendOps = approvals[0]!.suspendOps;
    const resumeOps = approvals[0]!.resumeOps;
    rows.push([
      `approvals: suspends/s (${SUSPENDED})`,
      range(approvals.map((a) => a.suspendsPerSecond)),
      `${range(batched.map((b) => b / suspendOps))} (${suspendOps.toFixed(1)} rows each)`,
      range(rounds.map((r) => (r.approvals ? r.approvals.suspendsPerSecond / (r.fullBatched / r.approvals.suspendOps) : NaN)).filter(Number.isFinite), 2),
    ]);
    rows.push([
      `approvals: resumes/s (${SUSPENDED})`,
      range(approvals.map((a) => a.resumesPerSecond)),
      `${range(batched.map((b) => b / resumeOps))} (${resumeOps.toFixed(1)} rows each)`,
      range(rounds.map((r) => (r.approvals ? r.approvals.resumesPerSecond / (r.fullBatched / r.approvals.resumeOps) : NaN)).filter(Number.isFinite), 2),
    ]);
    cpuRow(
      "CPU µs per suspend",
      approvals.map((a) => a.suspendCpuMicros),
    );
    cpuRow(
      "CPU µs per resume",
      approvals.map((a) => a.resumeCpuMicros),
    );
    const node = of((r) => r.nodeRss);
    rows.push([
      `RSS MB with ${SUSPENDED} suspended (after GC)`,
      range(approvals.map((a) => a.rssSuspended)),
      `${range(node)} bare node; ${range(approvals.map((a) => a.rssOpened))} opened, idle; ${range(approvals.map((a) => a.rssSuspendedRightAfterGc))} read as the GC returned`,
      `+${range(
        approvals.map((a) => ((a.rssSuspended - a.rssOpened) * 1024) / SUSPENDED),
        1,
      )} KB each`,
    ]);
    rows.push([
      `  … at rest, ${restMs / 1000} s later (after GC)`,
      range(approvals.map((a) => a.rssSettled)),
      "",
      // Signed: "opened, idle" is read before the store worker rests (decision 0121), at rest after.
      `${range(
        approvals.map((a) => ((a.rssSettled - a.rssOpened) * 1024) / SUSPENDED),
        1,
      )} KB each over opened (its store worker rested since); heap ${range(
        approvals.map((a) => a.heapPerSuspended / 1024),
        1,
      )} KB each`,
    ]);
  }
  rows.push([
    "the run's 3 model calls (the direct AI SDK call, scripted model), µs of CPU",
    range(of((r) => r.modelMicros)),
    "",
    "per run, in every figure above",
  ]);
  const crash = of((r) => r.crash);
  if (crash.length > 0) {
    // Floor: 500 runs' transactions at the batched rate.
    const perRun = inFlight[0]?.operationsPerRun ?? 6;
    rows.push([
      `kill -9, ${CRASH_IN_FLIGHT} in flight → restart → ${CRASH_TOTAL} done, s`,
      range(
        crash.map((c) => c.seconds),
        2,
      ),
      `${range(
        batched.map((b) => (CRASH_TOTAL * perRun) / b),
        3,
      )} (${CRASH_TOTAL} runs' rows batched)`,
      `${range(rounds.map((r) => (r.crash ? (CRASH_TOTAL * perRun) / r.fullBatched / r.crash.seconds : NaN)).filter(Number.isFinite), 2)} (open ${range(
        crash.map((c) => c.openSeconds),
        2,
      )} s, the ${CRASH_IN_FLIGHT} recovered done at ${range(
        crash.map((c) => c.recoveredSeconds),
        2,
      )} s; CPU ${range(
        crash.map((c) => c.cpuSeconds),
        2,
      )} s)`,
    ]);
  }
  const widths = [0, 1, 2, 3].map((column) =>
    Math.max(...[["measure", "figure", "floor in the same run", "× floor"], ...rows].map((row) => row[column]!.length)),
  );
  const line = (row: readonly string[]) => `  ${row.map((cell, column) => cell.padEnd(widths[column]!)).join(" | ")}`;
  console.log(`\n${line(["measure", "figure", "floor in the same run", "× floor"])}`);
  console.log(`  ${widths.map((width) => "-".repeat(width)).join("-|-")}`);
  for (const row of rows) console.log(line(row));
  void fullCommits;
}

async function main(): Promise<void> {
  const role = process.argv[2];
  if (role === "approvals-child") return approvalsChild(process.argv[3]!);
  if (role === "crash-child") return crashChild(process.argv[3]!, process.argv[4]!);
  if (role === "restart-child") return restartChild(process.argv[3]!, process.argv[4]!);
  if (role === "waits-child") return waitsChild(process.argv[3]!);
  const directory = await mkdtemp(join(tmpdir(), "phronomy-bench-"));
  try {
    if (ONLY === "waits") return await waitsSection(directory);
    if (ONLY === "postgres") return void (await postgresSection());
    console.log(
      `npm run bench — SQLite, a conversation per run (model → tool → model → tool → model), ${ROUNDS} rounds of ${SECONDS} s loops, node ${process.version}, ${import.meta.url.endsWith(".ts") ? "sources under tsx" : "compiled package"}`,
    );
    const rounds: Round[] = [];
    for (let index = 0; index < ROUNDS; index += 1) {
      rounds.push(await round(directory, index));
      console.log(describe(rounds.at(-1)!, index));
    }
    table(rounds);
    if (ONLY === undefined) await waitsSection(directory);
    await peersSection(rounds);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

await main();
