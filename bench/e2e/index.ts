// bench/e2e: the "agent run" workload through the whole runtime — scripted
// model → instant tool → model → tool → model, durable at every step
// (prepare + 5 barriers + terminal = 7 transactions per run) — with the raw
// SQLite floor measured in the same run. Prints figures, asserts nothing.
//
//   npm run bench:e2e                       # FULL and NORMAL, adaptive offload
//   BENCH_SECONDS=5 npm run bench:e2e       # longer loops
//   BENCH_POLICIES=adaptive,worker npm run bench:e2e

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { Phronomy, tool, type Agent, type Environment } from "../../host/index.js";
import type { OffloadPolicy } from "../../host/store/offload.js";
import type { SynchronousMode } from "../../host/store/sqlite/schema.js";
import { measureRawFloor } from "../store/floor.js";

const seconds = Number(process.env.BENCH_SECONDS ?? 2);
const policies = (process.env.BENCH_POLICIES ?? "adaptive").split(",") as OffloadPolicy[];
const IN_FLIGHT = 100;
const OPERATIONS_PER_RUN = 7;

/** Two tool turns then the answer, decided from the conversation alone, so
 * one model instance serves every concurrent execution. */
function agentRunModel() {
  return scriptedModel(({ messages }) => {
    const lastUser = messages.map((message) => message.role).lastIndexOf("user");
    const turn = messages.slice(lastUser + 1).filter((message) => message.role === "assistant").length;
    return turn < 2 ? { toolCalls: [{ toolName: "lookup", input: { orderId: String(42 + turn) } }] } : { text: "Order 42 has shipped." };
  });
}

const lookup = tool({ inputSchema: z.object({ orderId: z.string() }), execute: ({ orderId }) => ({ orderId, status: "shipped" }) });

async function openBench(directory: string, synchronous: SynchronousMode, policy: OffloadPolicy, agents: number): Promise<{ env: Environment; agents: Agent[] }> {
  const env = await Phronomy.open({ store: join(directory, `e2e-${synchronous}-${policy}-${agents}.db`), synchronous, offloadPolicy: policy, logger: { warn: () => undefined } });
  const defined: Agent[] = [];
  for (let index = 0; index < agents; index += 1) {
    // No memory: every run sees only its own conversation, as in the floor.
    defined.push(env.agent({ id: `agent-${index}`, model: agentRunModel(), tools: { lookup }, memoryWindow: 1 }));
  }
  await Promise.all(defined.map((agent) => agent.ready));
  return { env, agents: defined };
}

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? 0;
}

async function sequential(directory: string, synchronous: SynchronousMode, policy: OffloadPolicy) {
  const { env, agents } = await openBench(directory, synchronous, policy, 1);
  const agent = agents[0]!;
  for (let warm = 0; warm < 20; warm += 1) await agent.start("warm up").result;
  const latencies: number[] = [];
  const until = performance.now() + seconds * 1000;
  while (performance.now() < until) {
    const started = performance.now();
    await agent.start("Where is order 42?").result;
    latencies.push(performance.now() - started);
  }
  await env.close();
  const total = latencies.reduce((sum, value) => sum + value, 0);
  return { runsPerSecond: latencies.length / (total / 1000), stepMs: total / latencies.length / OPERATIONS_PER_RUN };
}

async function concurrent(directory: string, synchronous: SynchronousMode, policy: OffloadPolicy) {
  const { env, agents } = await openBench(directory, synchronous, policy, IN_FLIGHT);
  const latencies: number[] = [];
  let stop = false;
  const worker = async (agent: Agent): Promise<void> => {
    while (!stop) {
      const started = performance.now();
      await agent.start("Where is order 42?").result;
      latencies.push(performance.now() - started);
    }
  };
  await Promise.all(agents.map((agent) => agent.start("warm up").result));
  const began = performance.now();
  const running = agents.map(worker);
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  stop = true;
  await Promise.all(running);
  const elapsed = (performance.now() - began) / 1000;
  await env.close();
  latencies.sort((a, b) => a - b);
  return { runsPerSecond: latencies.length / elapsed, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) };
}

const directory = await mkdtemp(join(tmpdir(), "phronomy-e2e-"));
try {
  console.log(`bench/e2e — agent run (model → tool → model → tool → model, ${OPERATIONS_PER_RUN} durable transactions per run), ${seconds}s per loop, node ${process.version}`);
  for (const synchronous of ["FULL", "NORMAL"] as SynchronousMode[]) {
    const floor = measureRawFloor(directory, synchronous, { durationMs: seconds * 1000 });
    console.log(`\nsynchronous=${synchronous}`);
    console.log(`  raw floor: ${floor.singleRowCommitsPerSecond.toFixed(0)} single-row commits/s (= ${(floor.singleRowCommitsPerSecond / OPERATIONS_PER_RUN).toFixed(0)} runs/s if each of the 7 paid one), ${floor.batchedRowsPerSecond.toFixed(0)} rows/s batched 100 per commit`);
    for (const policy of policies) {
      const one = await sequential(directory, synchronous, policy);
      const many = await concurrent(directory, synchronous, policy);
      console.log(`  offload ${policy}: sequential ${one.runsPerSecond.toFixed(0)} runs/s (${(one.stepMs * 1000).toFixed(0)} µs per durable step); ${IN_FLIGHT} in flight ${many.runsPerSecond.toFixed(0)} runs/s, p50 ${many.p50.toFixed(1)} ms, p99 ${many.p99.toFixed(1)} ms`);
    }
  }
} finally {
  await rm(directory, { recursive: true, force: true });
}
