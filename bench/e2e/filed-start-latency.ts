// The latency a start adds by landing on a process that does not hold its
// conversation (issue 26 part 3, docs/decisions/0068), one start at a time
// so the figure is the filed path's own and not the machine's contention:
// two environments on one fresh PostgreSQL schema of one partition — the
// owner holds it, the filer holds none — and the same agent run started,
// alternately, at the owner (`own`) and at the filer (`any`, filed for the
// owner), each on a new conversation. Prints p50 / p90 of each and of the
// difference, with the raw floor (one single-row commit) of the same run.
//
//   npx tsx bench/e2e/filed-start-latency.ts postgres://postgres@127.0.0.1:5432/test [runs]

import { randomBytes } from "node:crypto";
import pg from "pg";
import { Phronomy, type Environment } from "../../host/index.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { describeTally, openTally } from "./postgres-profile.js";
import { defineConversations, percentile } from "./workload.js";

/** Runs of each kind measured (after `warmRuns` of each). */
const runsDefault = 200;
const warmRuns = 20;
/** Short, so the filer's lease tick (a third) comes soon after open. */
const leaseMs = 3_000;

async function main(url: string, runs: number): Promise<void> {
  const schema = `phronomy_latency_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const environments: Environment[] = [];
  try {
    const at = `${url}${url.includes("?") ? "&" : "?"}schema=${schema}&lease_ms=${leaseMs}`;
    await (await PostgresStore.open(at, { partitions: 1 })).close();
    await admin.query(`UPDATE ${schema}.partitions SET owner = '', epoch = 0; DELETE FROM ${schema}.partition_members`);
    const open = async (instanceId: string): Promise<Environment> => {
      const environment = await Phronomy.open({ store: at, postgres: { instanceId }, logger: { warn: () => undefined } });
      environments.push(environment);
      return environment;
    };
    const owner = await open("owner");
    const filer = await open("filer");
    const own = defineConversations(owner, "bench");
    const any = defineConversations(filer, "bench");
    // A tick of the filer's after its listener came up.
    await new Promise((resolve) => setTimeout(resolve, leaseMs));
    const floor = await floorMs(admin, schema);
    const latencies = { own: [] as number[], any: [] as number[] };
    let tally: ReturnType<typeof openTally> | undefined;
    for (let index = 0; index < warmRuns + runs; index += 1) {
      if (index === warmRuns) tally = openTally();
      for (const [kind, definition] of [
        ["own", own],
        ["any", any],
      ] as const) {
        const began = performance.now();
        const result = await definition.conversation(`${kind}-${index}`).start("Where is order 42?").result;
        if (result.outcome !== "completed") throw new Error(`a ${kind} run ended ${result.outcome}`);
        if (index >= warmRuns) latencies[kind].push(performance.now() - began);
      }
    }
    tally?.stop();
    const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
    const own50 = percentile(sorted(latencies.own), 0.5);
    const any50 = percentile(sorted(latencies.any), 0.5);
    const added = sorted(latencies.any.map((value, index) => value - latencies.own[index]!));
    console.log(`filed-start latency, ${runs} runs of each, one at a time, node ${process.version}; raw floor ${floor.toFixed(2)} ms per single-row commit`);
    console.log(
      `  own (started at the owner): p50 ${own50.toFixed(1)} ms, p90 ${percentile(sorted(latencies.own), 0.9).toFixed(1)} ms`
        + ` · any (filed for the owner): p50 ${any50.toFixed(1)} ms, p90 ${percentile(sorted(latencies.any), 0.9).toFixed(1)} ms`,
    );
    console.log(
      `  added: p50 of the pairs ${percentile(added, 0.5).toFixed(1)} ms, p90 ${percentile(added, 0.9).toFixed(1)} ms; p50 any − p50 own ${(any50 - own50).toFixed(1)} ms`,
    );
    if (tally !== undefined) console.log(`  per pair (own + any, both processes): ${describeTally(tally.tally, runs)}`);
  } finally {
    for (const environment of environments) await environment.close().catch(() => undefined);
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
    await admin.end();
  }
}

/** Median milliseconds of 50 single-row autocommit INSERTs on one connection. */
async function floorMs(client: pg.Client, schema: string): Promise<number> {
  await client.query(`CREATE TABLE ${schema}.latency_floor (id integer PRIMARY KEY, payload text NOT NULL)`);
  const times: number[] = [];
  for (let index = 0; index < 50; index += 1) {
    const began = performance.now();
    await client.query(`INSERT INTO ${schema}.latency_floor VALUES ($1, $2)`, [index, "x".repeat(300)]);
    times.push(performance.now() - began);
  }
  return percentile(
    times.sort((a, b) => a - b),
    0.5,
  );
}

const [url, runs] = process.argv.slice(2);
if (url === undefined) throw new Error("usage: tsx bench/e2e/filed-start-latency.ts postgres://… [runs]");
await main(url, Number(runs ?? runsDefault));
