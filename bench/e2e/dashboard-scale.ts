// bench/e2e/dashboard-scale: does a store of 100,000 executions page,
// search and count in under 200 ms per page (issue 29, docs/decisions/0082)?
// Fills a SQLite store and a PostgreSQL schema with `BENCH_EXECUTIONS`
// rows in bulk — SQL inserts straight into the migrated tables, the SQLite
// search index then filled by the store's own sweep (docs/decisions/0095),
// PostgreSQL's by the triggers its writes use (going through the store's operations one execution at a
// time would take minutes and measure the writes, not the reads) — then
// times, through the store's public reads, the first page, a deep page
// and the way back from it, filtered pages (by agent and by definition),
// searches and the counts, each `BENCH_ROUNDS` times, beside the floor: a
// plain indexed SELECT of one page (`listExecutions`) in the same run.
// Then the owner's side (docs/decisions/0089): dashboard refreshes (the
// counts and a page, as the list page reads them) every 20 ms for 2 s
// while `monitorEventLoopDelay` watches the event loop, and how long each
// refresh held the loop. SQLite's searches are timed again with
// `BENCH_UNINDEXED` (500) more rows written and not swept yet: what a search
// reads outside the index while the sweep lags (docs/decisions/0095).
// Prints median and p95 in ms; asserts nothing.
//
//   npm run bench:dashboard
//   BENCH_EXECUTIONS=100000 BENCH_ROUNDS=20 npm run bench:dashboard
//   npm run bench:dashboard -- --store sqlite      # one backend only (sqlite | postgres)

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { parseArgs } from "node:util";
import Database from "better-sqlite3";
import pg from "pg";
import { SqliteStore } from "../../host/index.js";
import { encodeCursor, type ExecutionPageQuery, type PagingStore } from "../../host/store/execution-pages.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { openStoreConnection } from "../../host/store/sqlite/schema.js";
import { sweepSearchIndex } from "../../host/store/sqlite/search-index.js";
import type { ExecutionStore } from "../../host/store/store.js";

const executions = Number(process.env.BENCH_EXECUTIONS ?? 100_000);
const unindexed = Number(process.env.BENCH_UNINDEXED ?? 500);
const rounds = Number(process.env.BENCH_ROUNDS ?? 20);
const postgresUrl = process.env.BENCH_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const pageRows = 50;
const agents = 1_000;
/** Agent definitions the conversations belong to (`metadata.config.definition`). */
const definitions = 10;
const baseAt = 1_750_000_000_000;
/** BENCH_KEEP=1 keeps the filled SQLite file and PostgreSQL schema (named on the output) to look into. */
const keep = process.env.BENCH_KEEP === "1";
const { values: options } = parseArgs({ options: { store: { type: "string" } } });

const customers = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Margaret", "Ken"];
// Seven topics beside eight customers: every pair occurs.
const topics = ["refund", "delivery", "invoice", "password", "subscription", "warranty", "address"];

/** The i-th row, oldest first: 80% completed, 10% failed, 5% running,
 * 5% waiting for approval; one in 1,000 mentions "needle". */
function rowOf(index: number): unknown[] {
  const kind = index % 20;
  const status = kind < 18 ? "terminal" : kind === 18 ? "active" : "suspended";
  const outcome = kind < 16 ? "completed" : kind < 18 ? "failed" : kind === 19 ? "suspended" : null;
  const input = `${customers[index % customers.length]} asks about the ${topics[index % topics.length]} of order ${index}${index % 1_000 === 7 ? " needle" : ""}`;
  const output = outcome === "completed" ? `Order ${index} shipped with carrier ${index % 13}` : null;
  const error = outcome === "failed" ? { code: "MODEL_FAILED", message: "the provider is down" } : null;
  const at = baseAt + index * 1_000;
  return [
    `bench-${String(index).padStart(7, "0")}-${randomBytes(3).toString("hex")}`,
    `agent-${index % agents}`,
    status,
    status === "terminal" ? "terminal" : status === "active" ? "calling_llm" : "suspended",
    JSON.stringify(input),
    JSON.stringify({ config: { replayable: true, definition: `definition-${index % definitions}` } }),
    outcome,
    JSON.stringify(output),
    JSON.stringify(error),
    at,
    at + 900,
  ];
}

const columns =
  "execution_id, agent_id, revision, status, phase, mode, input, metadata, outcome, output, error, usage, approval_request, created_at, updated_at";
const usage = JSON.stringify({ inputTokens: 20, outputTokens: 9, totalTokens: 29 });

async function fillSqlite(path: string): Promise<void> {
  await (await SqliteStore.open(path)).close(); // creates and migrates it
  const database = new Database(path);
  try {
    const insert = database.prepare(`INSERT INTO executions (${columns}) VALUES (?, ?, 2, ?, ?, 'run', ?, ?, ?, ?, ?, '${usage}', 'null', ?, ?)`);
    database.transaction(() => {
      for (let index = 0; index < executions; index++) insert.run(...(rowOf(index) as (string | number | null)[]));
      // The definition's own column (SQLite's, docs/decisions/0094), as the store's inserts write it.
      database.exec("UPDATE executions SET definition = json_extract(metadata, '$.config.definition')");
    })();
    database.exec("ANALYZE");
  } finally {
    database.close();
  }
  // Indexed for search as the store indexes rows written: by its sweep, a batch at a time.
  const connection = openStoreConnection(path, { synchronous: "NORMAL" });
  try {
    while (sweepSearchIndex(connection, Date.now()).more);
  } finally {
    connection.close();
  }
}

/** Rows written after the store's sweep ran (by a connection of their own,
 * so the store does not know to sweep them): a search reads them outside
 * the index. */
function writeUnindexed(path: string, count: number): void {
  const database = new Database(path);
  try {
    const insert = database.prepare(`INSERT INTO executions (${columns}) VALUES (?, ?, 2, ?, ?, 'run', ?, ?, ?, ?, ?, '${usage}', 'null', ?, ?)`);
    database.transaction(() => {
      for (let index = executions; index < executions + count; index++) insert.run(...(rowOf(index) as (string | number | null)[]));
    })();
  } finally {
    database.close();
  }
}

async function fillPostgres(client: pg.Client, schema: string): Promise<void> {
  await client.query(`SET search_path = "${schema}"`); // the store's triggers name its tables unqualified
  const batch = 5_000;
  for (let start = 0; start < executions; start += batch) {
    const rows = Array.from({ length: Math.min(batch, executions - start) }, (_, offset) => rowOf(start + offset));
    const transposed = rows[0]!.map((_, column) => rows.map((row) => row[column]));
    await client.query(
      `INSERT INTO "${schema}".executions (${columns})
       SELECT id, agent, 2, status, phase, 'run', input, metadata, outcome, output, error, '${usage}', 'null', created, updated
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::bigint[], $11::bigint[])
         AS given(id, agent, status, phase, input, metadata, outcome, output, error, created, updated)`,
      transposed,
    );
  }
  await client.query(`VACUUM ANALYZE "${schema}".executions`);
}

interface Figure {
  readonly name: string;
  readonly medianMs: number;
  readonly p95Ms: number;
  readonly rows: number;
}

async function time(name: string, body: () => Promise<{ rows: unknown[] } | unknown[] | object>): Promise<Figure> {
  const durations: number[] = [];
  let rows = 0;
  for (let round = 0; round < rounds; round++) {
    const started = performance.now();
    const result = await body().catch((error: unknown) => {
      // A filter an older store does not know (run against an earlier version to compare).
      if (round === 0) console.log(`  ${name}: refused: ${error instanceof Error ? error.message : String(error)}`);
      return [];
    });
    durations.push(performance.now() - started);
    rows = Array.isArray(result) ? result.length : "rows" in result ? (result as { rows: unknown[] }).rows.length : 1;
  }
  durations.sort((a, b) => a - b);
  return {
    name,
    medianMs: durations[Math.floor(durations.length / 2)]!,
    p95Ms: durations[Math.min(durations.length - 1, Math.ceil(durations.length * 0.95) - 1)]!,
    rows,
  };
}

async function measure(label: string, store: ExecutionStore & PagingStore, searchesOnly = false): Promise<void> {
  const deepIndex = Math.floor(executions * 0.1); // 90% of the way down
  const deepAt = baseAt + deepIndex * 1_000;
  const deepRow = (await store.pageExecutions({ since: deepAt, until: deepAt + 1, limit: 1 })).rows[0]!;
  const deep = encodeCursor({ direction: "after", createdAt: deepRow.createdAt, executionId: deepRow.executionId });
  const back = encodeCursor({ direction: "before", createdAt: deepRow.createdAt, executionId: deepRow.executionId });
  const page = (query: ExecutionPageQuery) => () => store.pageExecutions({ limit: pageRows, ...query });
  const figures: Figure[] = [];
  figures.push(await time("floor: listExecutions, newest 50", () => store.listExecutions({ limit: pageRows })));
  if (!searchesOnly) await measurePages(figures, page, deep, back);
  figures.push(await time("search: common word (refund)", page({ text: "refund" })));
  figures.push(await time("search: rare word (needle)", page({ text: "needle" })));
  figures.push(await time("search: two words, prefix (grace invo)", page({ text: "grace invo" })));
  figures.push(await time("search + filter (shipped, one agent)", page({ text: "shipped", agentId: "agent-420" })));
  figures.push(await time("search: no match (zzzz)", page({ text: "zzzz" })));
  figures.push(await time("search: rare word + agent (needle)", page({ text: "needle", agentId: "agent-7" })));
  if (!searchesOnly) {
    figures.push(await time("filtered: one definition", page({ definition: "definition-3" })));
    figures.push(await time("filtered: one definition, deep", page({ definition: "definition-3", cursor: deep })));
  }
  figures.push(await time("search + definition (refund)", page({ text: "refund", definition: "definition-3" })));
  if (!searchesOnly) {
    figures.push(await time("counts over the whole store", () => store.countExecutions()));
    figures.push(await time("counts of one agent", () => store.countExecutions({ agentId: "agent-417" })));
  }
  const floor = figures[0]!.medianMs;
  console.log(`\n${label}: ${executions.toLocaleString("en")} executions, ${rounds} rounds each, ${pageRows} rows a page (median / p95 ms; × floor)`);
  for (const figure of figures) {
    console.log(
      `  ${figure.name.padEnd(44)} ${figure.medianMs.toFixed(1).padStart(7)} / ${figure.p95Ms.toFixed(1).padStart(7)} ms  ${(figure.medianMs / floor).toFixed(1).padStart(5)}×  (${figure.rows} rows)`,
    );
  }
}

async function measurePages(figures: Figure[], page: (query: ExecutionPageQuery) => () => Promise<object>, deep: string, back: string): Promise<void> {
  const deepIndex = Math.floor(executions * 0.1);
  figures.push(await time("first page", page({})));
  figures.push(await time(`deep page (${(executions - deepIndex).toLocaleString("en")} rows in)`, page({ cursor: deep })));
  figures.push(await time("previous page from the deep one", page({ cursor: back })));
  figures.push(await time("filtered: failed", page({ outcome: "failed" })));
  figures.push(await time("filtered: failed, deep", page({ outcome: "failed", cursor: deep })));
  figures.push(await time("filtered: one agent", page({ agentId: "agent-417" })));
  figures.push(await time("filtered: waiting, last 24 h", page({ status: "suspended", since: baseAt + (executions - 86_400) * 1_000 })));
}

/** Dashboard refreshes every `intervalMs` for `durationMs` (the list page
 * reads the counts and a page each second per open page; 20 ms stands for
 * a few dozen open pages), while the event loop's delay is sampled every
 * 1 ms: how long the owner's loop (its runs, its timers) waits behind them. */
async function eventLoop(label: string, store: ExecutionStore & PagingStore): Promise<void> {
  const intervalMs = 20;
  const durationMs = 2_000;
  console.log(`\n${label}: the owner's event loop during dashboard refreshes (counts + a page, every ${intervalMs} ms for ${durationMs / 1_000} s)`);
  const refreshes: [string, () => Promise<unknown>][] = [
    ["counts + first page", () => Promise.all([store.countExecutions(), store.pageExecutions({ limit: pageRows })])],
    [
      "counts + search + agent filter",
      () => Promise.all([store.countExecutions(), store.pageExecutions({ limit: pageRows, text: "shipped", agentId: "agent-420" })]),
    ],
    ["counts + rare word search", () => Promise.all([store.countExecutions(), store.pageExecutions({ limit: pageRows, text: "needle" })])],
  ];
  for (const [name, refresh] of refreshes) {
    const histogram = monitorEventLoopDelay({ resolution: 1 });
    const held: number[] = [];
    histogram.enable();
    const until = performance.now() + durationMs;
    while (performance.now() < until) {
      // The synchronous part of a refresh: what holds the loop before its first await.
      const started = performance.now();
      const pending = refresh().catch(() => undefined);
      held.push(performance.now() - started);
      await pending;
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
    histogram.disable();
    held.sort((a, b) => a - b);
    const ms = (ns: number) => (ns / 1e6).toFixed(1).padStart(6);
    console.log(
      `  ${name.padEnd(32)} loop delay p50 ${ms(histogram.percentile(50))} / p99 ${ms(histogram.percentile(99))} / max ${ms(histogram.max)} ms; held per refresh median ${held[Math.floor(held.length / 2)]!.toFixed(2)} / max ${held[held.length - 1]!.toFixed(2)} ms (${held.length} refreshes)`,
    );
  }
}

async function sqliteRun(): Promise<void> {
  const directory = await mkdtemp(join(tmpdir(), "phronomy-dashboard-scale-"));
  try {
    const path = join(directory, "store.db");
    const started = performance.now();
    await fillSqlite(path);
    console.log(`SQLite: filled ${executions.toLocaleString("en")} executions in ${((performance.now() - started) / 1_000).toFixed(1)} s`);
    const store = await SqliteStore.open(path);
    try {
      await measure("SQLite (better-sqlite3, FTS5)", store);
      await eventLoop("SQLite", store);
      writeUnindexed(path, unindexed);
      await measure(`SQLite searches, ${unindexed} rows not indexed yet`, store, true);
    } finally {
      await store.close();
    }
  } finally {
    if (keep) console.log(`kept ${directory}`);
    else await rm(directory, { recursive: true, force: true });
  }
}

async function postgresRun(): Promise<void> {
  const schema = `bench_dashboard_${randomBytes(4).toString("hex")}`;
  const client = new pg.Client({ connectionString: postgresUrl, application_name: "bench-dashboard-scale" });
  await client.connect();
  try {
    const store = await PostgresStore.open(postgresUrl, { schema });
    try {
      const started = performance.now();
      await fillPostgres(client, schema);
      console.log(`PostgreSQL: filled ${executions.toLocaleString("en")} executions in ${((performance.now() - started) / 1_000).toFixed(1)} s`);
      await measure("PostgreSQL (to_tsvector, GIN)", store);
      await eventLoop("PostgreSQL", store);
    } finally {
      await store.close();
    }
  } finally {
    if (keep) console.log(`kept schema ${schema}`);
    else await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await client.end();
  }
}

if (options.store === undefined || options.store === "sqlite") await sqliteRun();
if (options.store === undefined || options.store === "postgres") await postgresRun();
