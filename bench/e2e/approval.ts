// bench/e2e/approval: suspend 10,000 runs for approval, then resume them
// all; the process's RSS while they wait; and the time to recover 10,000
// runs in flight after the process that ran them was killed (kill -9).
// Prints figures, asserts nothing.
//
//   npm run bench:approval            (BENCH_RUNS=2000 for a quicker look)

import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { Phronomy, tool, type Agent, type Environment } from "../../host/index.js";
import { refundModel } from "./workload.js";

const RUNS = Number(process.env.BENCH_RUNS ?? 10_000);
const role = process.argv[2];

/** A refund that needs approval; `gate` holds it (for the crash case). */
function refundTool(gate?: Promise<void>) {
  return tool({
    inputSchema: z.object({ amount: z.number() }),
    needsApproval: () => gate === undefined,
    execute: async () => {
      if (gate) await gate;
      return "ok";
    },
  });
}

function defineAgents(env: Environment, count: number, gate?: Promise<void>): Agent[] {
  const refund = refundTool(gate);
  const model = refundModel();
  return Array.from({ length: count }, (_, index) => env.agent({ id: `agent-${index}`, model, tools: { refund }, memoryWindow: 1 }));
}

function rssMb(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().rss / 2 ** 20;
}

/** Live JavaScript heap after a full collection: what the suspended runs
 * really hold (RSS also keeps what the burst of work before it touched). */
function heapMb(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

async function suspendAndResume(directory: string): Promise<void> {
  const env = await Phronomy.open({ store: join(directory, "approval.db"), logger: { warn: () => undefined } });
  const agents = defineAgents(env, RUNS);
  await Promise.all(agents.map((agent) => agent.ready));
  const baseline = rssMb();
  const baselineHeap = heapMb();
  let suspendedCount = 0;
  const allSuspended = new Promise<void>((resolve) => {
    const started = performance.now();
    for (const agent of agents) {
      agent.start("refund me", {
        onEvent: (event) => {
          if (event.type !== "approval_required") return;
          suspendedCount += 1;
          if (suspendedCount === RUNS) {
            console.log(
              `  suspend: ${RUNS} runs suspended in ${((performance.now() - started) / 1000).toFixed(2)} s = ${(RUNS / ((performance.now() - started) / 1000)).toFixed(0)} suspends/s (prepare with its first barrier + suspended terminal each)`,
            );
            resolve();
          }
        },
      });
    }
  });
  await allSuspended;
  console.log(
    `  RSS with ${RUNS} suspended: ${rssMb().toFixed(0)} MB (${baseline.toFixed(0)} MB with the agents defined and nothing running); live heap ${heapMb().toFixed(0)} MB (${baselineHeap.toFixed(0)} MB before): ${(((heapMb() - baselineHeap) * 2 ** 20) / RUNS / 1024).toFixed(1)} KB per suspended run`,
  );
  const pending = await env.pendingApprovals();
  const byAgent = new Map(agents.map((agent) => [agent.id, agent]));
  const started = performance.now();
  await Promise.all(pending.map((item) => byAgent.get(item.agentId)!.resume(item.executionId, { approvalId: item.request.approvalId, approved: true }).result));
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `  resume: ${pending.length} approvals decided and run to completion in ${seconds.toFixed(2)} s = ${(pending.length / seconds).toFixed(0)} resumes/s`,
  );
  await env.close();
}

/** Child: starts RUNS runs whose tool never returns, and says when every
 * one is in flight (its tool barrier durable); the parent then kills it. */
async function crashChild(path: string): Promise<void> {
  const env = await Phronomy.open({ store: path, logger: { warn: () => undefined } });
  const agents = defineAgents(env, RUNS, new Promise(() => undefined));
  await Promise.all(agents.map((agent) => agent.ready));
  let running = 0;
  for (const agent of agents) {
    agent.start("refund me", {
      onEvent: (event) => {
        if (event.type === "tool_call_started" && ++running === RUNS) console.log("in-flight");
      },
    });
  }
}

async function recoverAfterKill(directory: string): Promise<void> {
  const path = join(directory, "crash.db");
  const child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "crash-child", path], { stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes("in-flight")) resolve();
    });
    child.on("exit", (code) => reject(new Error(`crash child exited early (${code})`)));
  });
  child.kill("SIGKILL");
  await new Promise((resolve) => child.once("exit", resolve));
  const started = performance.now();
  const env = await Phronomy.open({ store: path, logger: { warn: () => undefined } });
  const opened = performance.now();
  const agents = defineAgents(env, RUNS);
  const reports = await Promise.all(agents.map((agent) => env.recovery(agent.id)));
  const recovered = reports.flat().filter((item) => item.status === "continued").length;
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `  recovery after kill -9: ${recovered} of ${RUNS} runs in flight re-installed and continued in ${seconds.toFixed(2)} s (open ${((opened - started) / 1000).toFixed(2)} s, agent definitions + recovery ${((performance.now() - opened) / 1000).toFixed(2)} s)`,
  );
  await env.close().catch(() => undefined);
}

if (role === "crash-child") {
  await crashChild(process.argv[3]!);
} else {
  const directory = await mkdtemp(join(tmpdir(), "phronomy-approval-"));
  try {
    console.log(`bench/e2e/approval — ${RUNS} runs, synchronous=FULL, node ${process.version}`);
    await suspendAndResume(directory);
    await recoverAfterKill(directory);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}
