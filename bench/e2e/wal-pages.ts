// bench/e2e/wal-pages: pages a run writes to the SQLite store's
// write-ahead log, by the B-tree (table or index) each page belongs to
// (docs/decisions/0091). Every page a transaction changed is written to the
// log at its commit (4 KiB and a frame header each, checksummed, two
// `write` calls), so this is the store's commit work per run, counted
// rather than timed: it does not move with the machine's load.
//
//   node scripts/bench-compiled.mjs bench/e2e/wal-pages.ts [runs] [in flight]
//
// One definition by name, every run the first start of a new conversation
// (the `conversation` shape of bench/e2e/instructions.ts), one at a time,
// or `in flight` at a time (the store then groups their writes into fewer
// transactions, docs/decisions/0094).
// Warm-up runs first; then a second connection checkpoints the log and
// empties it (`wal_checkpoint(TRUNCATE)`), holds a read transaction so
// that the log cannot restart, and after the counted runs reads every
// frame's page number and names its B-tree through `dbstat`.

import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { Phronomy } from "../../host/index.js";
import { defineConversations } from "./workload.js";

const WAL_HEADER_BYTES = 32;
const FRAME_HEADER_BYTES = 24;

/** Waits until the search index's sweep has indexed every row (a store
 * whose index is kept by triggers, or has none, is caught up already). */
async function searchIndexCaughtUp(path: string): Promise<void> {
  const watcher = new Database(path, { readonly: true });
  try {
    const deferred = watcher.prepare("SELECT 1 FROM sqlite_schema WHERE name = 'execution_search_mark'").get() !== undefined;
    if (!deferred) return;
    const behind = watcher.prepare(
      "SELECT (SELECT count(*) FROM execution_search_pending) + ((SELECT coalesce(max(rowid), 0) FROM executions) > (SELECT mark FROM execution_search_mark)) AS n",
    );
    for (let waited = 0; (behind.get() as { n: number }).n > 0; waited += 10) {
      if (waited > 30_000) throw new Error("wal-pages: the search index's sweep did not catch up in 30 s");
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  } finally {
    watcher.close();
  }
}

const runs = Number(process.argv[2] ?? 200);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`wal-pages: runs must be a positive integer, got ${process.argv[2]}`);
const inFlight = Number(process.argv[3] ?? 1);
if (!Number.isInteger(inFlight) || inFlight < 1) throw new Error(`wal-pages: in flight must be a positive integer, got ${process.argv[3]}`);
const directory = await mkdtemp(join(tmpdir(), "phronomy-wal-pages-"));
try {
  const path = join(directory, "store.db");
  const env = await Phronomy.open({ store: path, synchronous: "NORMAL", logger: { warn: () => undefined } });
  const definition = defineConversations(env, "support");
  await definition.ready;
  let next = 0;
  const run = async () => {
    const result = await definition.conversation(`user-${next++}`).start("Where is order 42?").result;
    if (result.outcome !== "completed") throw new Error(`a run ended ${result.outcome}`);
  };
  const runMany = async (count: number) => {
    let started = 0;
    const lane = async () => {
      while (started < count) {
        started += 1;
        await run();
      }
    };
    await Promise.all(Array.from({ length: inFlight }, lane));
  };
  await runMany(300);
  const reader = new Database(path);
  reader.pragma("wal_checkpoint(TRUNCATE)");
  reader.prepare("BEGIN").run();
  reader.prepare("SELECT count(*) FROM executions").get();
  await runMany(runs);
  // The search index is swept off the runs (docs/decisions/0095): its pages
  // are counted too, once the sweep has caught up with every run.
  await searchIndexCaughtUp(path);
  const log = readFileSync(`${path}-wal`);
  reader.prepare("COMMIT").run();
  const owners = new Map((reader.prepare("SELECT name, pageno FROM dbstat").all() as { name: string; pageno: number }[]).map((row) => [row.pageno, row.name]));
  const pages = new Map<string, number>();
  let frames = 0;
  let commits = 0;
  for (let offset = WAL_HEADER_BYTES; offset + FRAME_HEADER_BYTES <= log.length; offset += FRAME_HEADER_BYTES + 4096) {
    const page = log.readUInt32BE(offset);
    if (log.readUInt32BE(offset + 4) !== 0) commits += 1;
    frames += 1;
    const owner = owners.get(page) ?? "(free or new)";
    pages.set(owner, (pages.get(owner) ?? 0) + 1);
  }
  reader.close();
  await env.close();
  console.log(
    `${(frames / runs).toFixed(2)} pages written per run in ${(commits / runs).toFixed(2)} transactions (${runs} runs after 300 of warm-up, ${inFlight} in flight)`,
  );
  for (const [owner, count] of [...pages].sort((a, b) => b[1] - a[1])) console.log(`  ${(count / runs).toFixed(2).padStart(6)}  ${owner}`);
} finally {
  await rm(directory, { recursive: true, force: true });
}
