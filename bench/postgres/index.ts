// PostgreSQL figures (issue 7 §5), in one run on this machine's server:
// * the raw floor: single-row autocommit INSERTs per second over loopback,
//   on one connection (latency-bound) and on ten (what group commit of WAL
//   flushes gives);
// * runs/s of the agent-run workload (model → tool → model → tool → model,
//   7 store transactions per run) with 100 in flight, on one process.
// Each measurement uses a fresh schema, dropped afterwards.
//
//   npx tsx bench/postgres/index.ts [postgres://postgres@127.0.0.1:5432/test] [runs=3000]

import { randomBytes } from "node:crypto";
import pg from "pg";
import { z } from "zod";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { Phronomy, tool } from "../../host/index.js";

const url = process.argv[2] ?? "postgres://postgres@127.0.0.1:5432/test";
const runsTotal = Number(process.argv[3] ?? 3_000);
/** Runs in flight: one per agent (an agent admits one execution at a time). */
const inFlight = 100;
const floorCommits = 3_000;

async function withSchema<T>(body: (schema: string) => Promise<T>): Promise<T> {
  const schema = `phronomy_bench_${randomBytes(4).toString("hex")}`;
  try {
    return await body(schema);
  } finally {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
  }
}

async function rawFloor(connections: number): Promise<number> {
  return withSchema(async (schema) => {
    const pool = new pg.Pool({ connectionString: url, max: connections });
    await pool.query(`CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.floor (id bigint PRIMARY KEY, payload text)`);
    let next = 0;
    const started = performance.now();
    await Promise.all(Array.from({ length: connections }, async () => {
      const client = await pool.connect();
      while (next < floorCommits) {
        const id = next++;
        await client.query(`INSERT INTO ${schema}.floor (id, payload) VALUES ($1, $2)`, [id, "x".repeat(200)]);
      }
      client.release();
    }));
    const seconds = (performance.now() - started) / 1000;
    await pool.end();
    return floorCommits / seconds;
  });
}

function workloadModel() {
  return scriptedModel(({ messages }) => {
    const lastUser = messages.map((message) => message.role).lastIndexOf("user");
    const turn = messages.slice(lastUser + 1).filter((message) => message.role === "assistant").length;
    if (turn < 2) return { toolCalls: [{ toolName: "lookup", input: { orderId: `4${turn}` } }] };
    return { text: "Order 42 has shipped." };
  });
}

async function runsPerSecond(): Promise<number> {
  return withSchema(async (schema) => {
    const env = await Phronomy.open({ store: `${url}?schema=${schema}`, logger: { warn: () => undefined } });
    const lookup = tool({ inputSchema: z.object({ orderId: z.string() }), execute: ({ orderId }) => ({ orderId, status: "shipped" }) });
    const agents = Array.from({ length: inFlight }, (_, index) => env.agent({ id: `agent-${index}`, model: workloadModel(), tools: { lookup } }));
    await Promise.all(agents.map((agent) => agent.start("warm up").result));
    let remaining = runsTotal;
    const started = performance.now();
    await Promise.all(agents.map(async (agent) => {
      while (remaining > 0) {
        remaining -= 1;
        const result = await agent.start("Where is order 42?").result;
        if (result.outcome !== "completed") throw new Error(`a run ended ${result.outcome}`);
      }
    }));
    const seconds = (performance.now() - started) / 1000;
    await env.close();
    return runsTotal / seconds;
  });
}

const floorOne = await rawFloor(1);
const floorTen = await rawFloor(10);
const runs = await runsPerSecond();
console.log(JSON.stringify({
  url: url.replace(/:[^:@/]*@/, ":***@"),
  rawFloorCommitsPerSecond: { oneConnection: Math.round(floorOne), tenConnections: Math.round(floorTen) },
  runsPerSecond: { inFlight, runs: runsTotal, value: Math.round(runs), storeTransactionsPerSecond: Math.round(runs * 7) },
}, null, 2));
