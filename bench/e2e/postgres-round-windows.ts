// The PostgreSQL round of `npm run bench` (bench/index.ts `postgresRound`:
// the sequential loop, then 100 in flight, each in a fresh schema after a
// warm-up) with the in-flight loop measured over several consecutive
// windows, to see how far its first window is from the later ones
// (issue 26, decision 0124's addendum). Scratch measure.
//
//   BENCH_WARM=100 BENCH_SECONDS=2 BENCH_WINDOWS=5 BENCH_SEQUENTIAL=1 node scripts/bench-compiled.mjs bench/e2e/postgres-round-windows.ts

import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import pg from "pg";
import { Phronomy, type DefinedAgent } from "../../host/index.js";
import { agentRunModel, lookup } from "./workload.js";

const url = process.env.BENCH_POSTGRES ?? "postgresql://postgres@127.0.0.1:5432/test";
const warm = Number(process.env.BENCH_WARM ?? 100);
const seconds = Number(process.env.BENCH_SECONDS ?? 2);
const windows = Number(process.env.BENCH_WINDOWS ?? 5);
const sequentialFirst = process.env.BENCH_SEQUENTIAL !== "0";
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0];

let conversationNumber = 0;
async function runOne(definition: DefinedAgent): Promise<void> {
  const result = await definition.conversation(`user-${conversationNumber++}`).start("Where is order 42?").result;
  if (result.outcome !== "completed") throw new Error(`a run ended ${result.outcome}`);
}

async function window(definition: DefinedAgent, workers: number, duration: number) {
  let runs = 0;
  const began = performance.now();
  const ends = began + duration * 1000;
  const cpu = process.cpuUsage();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (performance.now() < ends) {
        await runOne(definition);
        runs += 1;
      }
    }),
  );
  const used = process.cpuUsage(cpu);
  return { rate: runs / ((performance.now() - began) / 1000), cpu: (used.user + used.system) / runs };
}

async function main(): Promise<void> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const checkpoints = async () => (await admin.query<{ n: string }>("SELECT checkpoints_timed + checkpoints_req AS n FROM pg_stat_bgwriter")).rows[0]!.n;
  const schemas: string[] = [];
  const open = async () => {
    const schema = `phronomy_windows_${randomBytes(4).toString("hex")}`;
    schemas.push(schema);
    const env = await Phronomy.open({ store: url, postgres: { schema }, logger: { warn: () => undefined } });
    const definition = env.agent({ name: "support", model: agentRunModel(), tools: { lookup }, memoryWindow: 1 });
    await definition.ready;
    return { env, definition };
  };
  const parts: string[] = [`warm ${warm}, ${seconds} s windows, load ${load()}`];
  try {
    if (sequentialFirst) {
      const { env, definition } = await open();
      await Promise.all(Array.from({ length: 100 }, () => runOne(definition)));
      const sequential = await window(definition, 1, seconds);
      parts.push(`sequential ${sequential.rate.toFixed(0)}`);
      await env.close();
    }
    const { env, definition } = await open();
    const checkpointsBefore = await checkpoints();
    const started = performance.now();
    await Promise.all(Array.from({ length: warm }, () => runOne(definition)));
    parts.push(`warm-up ${((performance.now() - started) / 1000).toFixed(2)} s`);
    const rates: string[] = [];
    for (let index = 0; index < windows; index += 1) {
      const measured = await window(definition, 100, seconds);
      rates.push(`${measured.rate.toFixed(0)} (${measured.cpu.toFixed(0)} µs)`);
    }
    parts.push(`100 in flight windows: ${rates.join(", ")}`);
    parts.push(`checkpoints ${checkpointsBefore}→${await checkpoints()}, load ${load()}`);
    await env.close();
  } finally {
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  }
  console.log(parts.join("; "));
}

await main();
