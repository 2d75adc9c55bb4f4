// bench/e2e/conversations: the conversation shape (issue 12,
// docs/decisions/0024-conversations.md) on SQLite FULL. Prints figures,
// asserts nothing.
//
//   1. 1,000 runs with 100 in flight, each run its own conversation of one
//      definition, against the same 1,000 runs on a pool of 100 agents
//      (each running 10 in turn); rounds alternate, each shape's figure is
//      printed per round and the ratio of their medians.
//   2. 10,000 conversations suspended for approval: RSS and live heap after GC.
//   3. 1,000,000 conversations defined (handles held), 1% of them run:
//      the define cost per conversation, RSS after GC.
//
//   npm run bench:conversations            (BENCH_ROUNDS=3 BENCH_SUSPENDED=2000 BENCH_DEFINED=100000 for a quicker look;
//                                           BENCH_ONLY=throughput|suspended|defined for one section)
//
// `npm run bench:conversations` runs it on the compiled package
// (scripts/bench-compiled.mjs), as an application runs: under tsx every
// figure of RSS carried tsx's two loader threads, ≈50 MB
// (docs/decisions/0028-memory-of-idle-and-suspended.md). RSS is printed
// twice: right after a forced GC, and settled (sampled each second until it
// has not fallen for 10 s, at most 30 s): V8 keeps the young generation and free
// old-generation pages a burst grew for a few seconds after it, and gives
// them back once the process is idle.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Phronomy, type Agent, type Environment } from "../../host/index.js";
import { agentRunModel, defineRefunds, IN_FLIGHT, lookup, suspendConversations } from "./workload.js";

const RUNS = Number(process.env.BENCH_RUNS ?? 1_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SUSPENDED = Number(process.env.BENCH_SUSPENDED ?? 10_000);
const DEFINED = Number(process.env.BENCH_DEFINED ?? 1_000_000);
const ACTIVE_SHARE = 0.01;
const SETTLE_SECONDS = Number(process.env.BENCH_SETTLE_SECONDS ?? 30);

function megabytes(bytes: number): string {
  return (bytes / 2 ** 20).toFixed(0);
}

function afterGc(): NodeJS.MemoryUsage {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  return process.memoryUsage();
}

/** RSS once it stopped falling (after GC, sampled each second until 10 s
 * without a fall, at most `SETTLE_SECONDS`): what an idle process keeps. */
async function settled(): Promise<NodeJS.MemoryUsage> {
  let last = afterGc();
  let steady = 0;
  for (let second = 0; second < SETTLE_SECONDS && steady < 10; second += 1) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const now = afterGc();
    // V8's memory reducer gives pages back in steps several seconds apart.
    steady = last.rss - now.rss > 2 ** 20 ? 0 : steady + 1;
    last = now;
  }
  return last;
}

async function open(directory: string, name: string): Promise<Environment> {
  return Phronomy.open({ store: join(directory, `${name}.db`), synchronous: "FULL", logger: { warn: () => undefined } });
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

/** `RUNS` runs, `IN_FLIGHT` workers each starting its next run when its
 * last ended, on the conversation `next()` gives: runs/s. */
async function drive(next: (worker: number) => Agent): Promise<number> {
  let remaining = RUNS;
  const worker = async (index: number): Promise<void> => {
    while (remaining > 0) {
      remaining -= 1;
      const result = await next(index).start("Where is order 42?").result;
      if (result.outcome !== "completed") throw new Error(`a bench run ended ${result.outcome}`);
    }
  };
  const began = performance.now();
  await Promise.all(Array.from({ length: IN_FLIGHT }, (_, index) => worker(index)));
  return RUNS / ((performance.now() - began) / 1000);
}

async function pooled(directory: string, round: number): Promise<number> {
  const env = await open(directory, `pooled-${round}`);
  const agents = Array.from({ length: IN_FLIGHT }, (_, index) =>
    env.agent({ id: `agent-${index}`, model: agentRunModel(), tools: { lookup }, memoryWindow: 1 }),
  );
  await Promise.all(agents.map((agent) => agent.start("warm up").result));
  const runsPerSecond = await drive((worker) => agents[worker]!);
  await env.close();
  return runsPerSecond;
}

async function conversationPerRun(directory: string, round: number): Promise<number> {
  const env = await open(directory, `conversations-${round}`);
  const support = env.agent({ name: "support", model: agentRunModel(), tools: { lookup }, memoryWindow: 1 });
  let next = 0;
  // The same warm-up as the pool: 100 runs, here on conversations of their own.
  await Promise.all(Array.from({ length: IN_FLIGHT }, () => support.conversation(`warm-${next++}`).start("warm up").result));
  const runsPerSecond = await drive(() => support.conversation(`user-${next++}`));
  await env.close();
  return runsPerSecond;
}

async function throughput(directory: string): Promise<void> {
  const pool: number[] = [];
  const perRun: number[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    pool.push(await pooled(directory, round));
    // BENCH_SHAPE=pool: the pool alone (to compare with another version).
    if (process.env.BENCH_SHAPE === "pool") {
      console.log(`  round ${round + 1}: pool of ${IN_FLIGHT} agents ${pool.at(-1)!.toFixed(0)} runs/s`);
      continue;
    }
    perRun.push(await conversationPerRun(directory, round));
    console.log(
      `  round ${round + 1}: pool of ${IN_FLIGHT} agents ${pool.at(-1)!.toFixed(0)} runs/s; a conversation per run ${perRun.at(-1)!.toFixed(0)} runs/s`,
    );
  }
  if (perRun.length === 0) return;
  console.log(
    `  ${RUNS} runs, ${IN_FLIGHT} in flight: conversation per run / pool = ${(median(perRun) / median(pool)).toFixed(2)} (medians ${median(perRun).toFixed(0)} / ${median(pool).toFixed(0)} runs/s)`,
  );
}

async function suspended(directory: string): Promise<void> {
  const env = await open(directory, "suspended");
  const support = defineRefunds(env);
  await support.ready;
  const before = await settled(); // after the earlier sections, too, have given their pages back
  const began = performance.now();
  await suspendConversations(support, SUSPENDED);
  const seconds = (performance.now() - began) / 1000;
  const after = afterGc();
  console.log(
    `  ${SUSPENDED} conversations suspended for approval in ${seconds.toFixed(2)} s: RSS ${megabytes(after.rss)} MB after GC (${megabytes(before.rss)} MB before), live heap ${megabytes(after.heapUsed)} MB (${megabytes(before.heapUsed)} MB before) = ${((after.heapUsed - before.heapUsed) / SUSPENDED / 1024).toFixed(1)} KB per suspended conversation; core entries ${env.conversations.liveCount}`,
  );
  const idle = await settled();
  console.log(
    `  settled: RSS ${megabytes(idle.rss)} MB (heap ${megabytes(idle.heapUsed)} MB used of ${megabytes(idle.heapTotal)} MB) = ${((idle.rss - before.rss) / SUSPENDED / 1024).toFixed(1)} KB of RSS per suspended conversation over the ${megabytes(before.rss)} MB before`,
  );
  await env.close();
}

async function defined(directory: string): Promise<void> {
  const env = await open(directory, "defined");
  const support = env.agent({ name: "support", model: agentRunModel(), tools: { lookup }, memoryWindow: 1 });
  await support.ready;
  const before = await settled(); // after the earlier sections, too, have given their pages back
  // Handles made and dropped (an application that asks for a conversation
  // per request): what defining costs by itself.
  const dropped = performance.now();
  for (let index = 0; index < DEFINED; index += 1) support.conversation(`user-${index}`);
  const droppedNs = ((performance.now() - dropped) * 1e6) / DEFINED;
  const afterDropped = afterGc();
  console.log(
    `  ${DEFINED} conversations defined, handles not kept: ${droppedNs.toFixed(0)} ns each; RSS ${megabytes(afterDropped.rss)} MB after GC (${megabytes(before.rss)} MB before), live heap ${megabytes(afterDropped.heapUsed)} MB (${megabytes(before.heapUsed)} MB before); core entries ${env.conversations.liveCount}`,
  );
  const began = performance.now();
  const conversations: Agent[] = new Array(DEFINED);
  for (let index = 0; index < DEFINED; index += 1) conversations[index] = support.conversation(`user-${index}`);
  const defineNs = ((performance.now() - began) * 1e6) / DEFINED;
  const afterDefine = afterGc();
  const active = Math.round(DEFINED * ACTIVE_SHARE);
  const stride = Math.floor(DEFINED / active);
  let cursor = 0;
  const ranAt = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (cursor < active) {
        const conversation = conversations[cursor++ * stride]!;
        await conversation.start("Where is order 42?").result;
      }
    }),
  );
  const ranSeconds = (performance.now() - ranAt) / 1000;
  const afterRun = afterGc();
  console.log(
    `  ${DEFINED} conversations defined, handles kept: ${defineNs.toFixed(0)} ns each; RSS ${megabytes(afterDefine.rss)} MB after GC (${megabytes(before.rss)} MB before; live heap ${megabytes(afterDefine.heapUsed)} MB, ${((afterDefine.heapUsed - before.heapUsed) / DEFINED).toFixed(0)} B per handle held by the application)`,
  );
  console.log(
    `  ${active} of them (1%) ran once, ${IN_FLIGHT} in flight, in ${ranSeconds.toFixed(2)} s: RSS ${megabytes(afterRun.rss)} MB after GC, live heap ${megabytes(afterRun.heapUsed)} MB; core entries left ${env.conversations.liveCount}`,
  );
  const idle = await settled();
  console.log(`  settled, handles still kept: RSS ${megabytes(idle.rss)} MB (heap ${megabytes(idle.heapUsed)} MB used of ${megabytes(idle.heapTotal)} MB)`);
  conversations.length = 0;
  await env.close();
}

const directory = await mkdtemp(join(tmpdir(), "phronomy-conversations-"));
try {
  if ((globalThis as { gc?: () => void }).gc === undefined) console.log("  (run with node --expose-gc for RSS after GC: npm run bench:conversations)");
  console.log(`bench/e2e/conversations — SQLite FULL, node ${process.version}`);
  const only = process.env.BENCH_ONLY;
  if (only === undefined || only === "throughput") await throughput(directory);
  if (only === undefined || only === "suspended") await suspended(directory);
  if (only === undefined || only === "defined") await defined(directory);
} finally {
  await rm(directory, { recursive: true, force: true });
}
