// The server's own work per durable step on PostgreSQL (docs/decisions/0048):
// the same barriers sent to a schema at version 12 (steps numbered by
// `max(seq)`, migrations 3–12's functions) and at the current version
// (steps numbered from the row's `last_seq`), with `synchronous_commit =
// off` on the measuring connection so the WAL flush — the floor every
// commit pays, the same for both — does not hide the rest. Both variants
// hold every partition (the fence lock is taken, as in the store).
//
//   npx tsx bench/store/postgres-barrier-work.ts postgres://postgres@127.0.0.1:5432/test
//
// Each variant runs `ROUNDS` rounds over `EXECUTIONS` executions, a round
// being a provider barrier then a tool barrier of each (a model response
// of ≈300 bytes as the step), sent alone (one round trip each) and in
// groups of `GROUP` statements (one round trip per group, the group
// commit's shape). The variants alternate `REPEATS` times; printed: the
// least and the median µs per barrier of each, and after/before.

import { randomBytes, randomUUID } from "node:crypto";
import pg from "pg";
import type { ProviderBarrierOperation, ToolBarrierOperation } from "../../host/store/records.js";
import { migrations } from "../../host/store/postgres/schema.js";
import { compareAndSetStatement, prepareStatement, type KnownRow } from "../../host/store/postgres/statements.js";

const EXECUTIONS = Number(process.env["BENCH_EXECUTIONS"] ?? 200);
const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 5);
const GROUP = 50;
const REPEATS = Number(process.env["BENCH_REPEATS"] ?? 5);
const PARTITIONS = 16;
const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };
const response = "r".repeat(300);
const fence = { owner: "bench", epoch: 1 };

interface Variant {
  readonly name: string;
  /** Migrations applied (the schema version). */
  readonly version: number;
}

async function main(): Promise<void> {
  const url = process.argv[2];
  if (url === undefined) throw new Error("give the PostgreSQL URL: npx tsx bench/store/postgres-barrier-work.ts postgres://…");
  const variants: Variant[] = [
    { name: "version 12 (max(seq))", version: 12 },
    { name: `version ${migrations.length} (last_seq)`, version: migrations.length },
  ];
  const prepared = [];
  try {
    for (const variant of variants) prepared.push(await prepareVariant(url, variant));
    // Alternated, REPEATS times each: on a shared machine the least of a
    // variant's timings is the one least disturbed by the others' load.
    const timings = variants.map(() => ({ alone: [] as number[], grouped: [] as number[] }));
    for (let repeat = 0; repeat < REPEATS; repeat += 1) {
      for (const [index, variant] of prepared.entries()) {
        timings[index]!.alone.push(await timeRounds(variant.client, variant.known, 1));
        timings[index]!.grouped.push(await timeRounds(variant.client, variant.known, GROUP));
      }
    }
    const least = timings.map(({ alone, grouped }) => ({
      alone: Math.min(...alone),
      grouped: Math.min(...grouped),
      aloneMedian: median(alone),
      groupedMedian: median(grouped),
    }));
    for (const [index, variant] of variants.entries()) {
      const figure = least[index]!;
      console.log(
        `${variant.name}: ${figure.alone.toFixed(0)} µs per barrier sent alone (median ${figure.aloneMedian.toFixed(0)}), ${figure.grouped.toFixed(0)} µs in groups of ${GROUP} (median ${figure.groupedMedian.toFixed(0)}); least of ${REPEATS} alternated runs of ${EXECUTIONS} executions × ${ROUNDS} rounds × 2 barriers, synchronous_commit off`,
      );
    }
    const [before, after] = least as [(typeof least)[0], (typeof least)[0]];
    console.log(`after/before (least): ${(after.alone / before.alone).toFixed(2)}× alone, ${(after.grouped / before.grouped).toFixed(2)}× grouped`);
  } finally {
    for (const variant of prepared) await variant.drop();
  }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

interface PreparedVariant {
  readonly client: pg.Client;
  readonly known: Map<string, KnownRow>;
  readonly drop: () => Promise<void>;
}

/** A fresh schema at the variant's version, every partition held, and
 * `EXECUTIONS` executions prepared (each with its first barrier). */
async function prepareVariant(url: string, variant: Variant): Promise<PreparedVariant> {
  const schema = `phronomy_barrier_work_${randomBytes(4).toString("hex")}`;
  const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  await client.connect();
  const drop = async () => {
    await client.query(`DROP SCHEMA ${schema} CASCADE`).catch(() => undefined);
    await client.end();
  };
  try {
    await client.query(`CREATE SCHEMA ${schema}; SET synchronous_commit = off`);
    await client.query("BEGIN");
    for (const migration of migrations.slice(0, variant.version)) await migration(client, { partitionCount: PARTITIONS, schema });
    await client.query("COMMIT");
    await client.query("SELECT * FROM take_partitions('bench', NULL, 600000, 600000)");
    const known = new Map<string, KnownRow>();
    for (let index = 0; index < EXECUTIONS; index += 1) {
      const executionId = `e${index}`;
      const statement = prepareStatement(
        {
          type: "prepareExecution",
          executionId,
          agentId: `agent-${index}`,
          mode: "invoke",
          input: "hi",
          config: { maxTurns: 8 },
          journal: [],
          at: 1,
          firstBarrier: { callId: "m0" },
        },
        fence,
        randomUUID(),
      );
      await client.query(statement.sql);
      known.set(executionId, statement.after!);
    }
    return { client, known, drop };
  } catch (error) {
    await drop();
    throw error;
  }
}

/** µs per barrier over `ROUNDS` rounds, `size` statements per query. */
async function timeRounds(client: pg.Client, known: Map<string, KnownRow>, size: number): Promise<number> {
  let barriers = 0;
  const began = performance.now();
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const type of ["providerBarrier", "toolBarrier"] as const) {
      const statements = [...known.entries()].map(([executionId, row]) => {
        const statement = compareAndSetStatement(barrierOf(type, executionId, row), row, fence, randomUUID());
        known.set(executionId, statement.after!);
        return statement.sql;
      });
      for (let index = 0; index < statements.length; index += size) {
        await client.query(statements.slice(index, index + size).join(";\n"));
      }
      barriers += statements.length;
    }
  }
  return ((performance.now() - began) * 1000) / barriers;
}

function barrierOf(type: "providerBarrier" | "toolBarrier", executionId: string, row: KnownRow): ProviderBarrierOperation | ToolBarrierOperation {
  const at = row.revision * 10;
  const steps = [{ kind: "model_response" as const, at, payload: { text: response } }];
  if (type === "providerBarrier") {
    return { type, executionId, expectedRevision: row.revision, callId: `m${row.revision}`, steps, usage, turns: row.revision, at };
  }
  const toolBatch = [{ callId: `t${row.revision}`, toolName: "lookupOrder", input: { orderId: 42 }, idempotencyKey: `${executionId}:t${row.revision}` }];
  return { type, executionId, expectedRevision: row.revision, toolBatch, steps, usage, turns: row.revision, at };
}

try {
  await main();
} catch (error) {
  console.error(`bench/store/postgres-barrier-work: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
}
