// Checkpoints off the commit path (docs/decisions/0050): with a worker, no
// commit checkpoints the write-ahead log below its bound; the offload asks
// the worker for a passive checkpoint every `checkpointEveryPages` pages
// (by estimate), and the committed rows reach the database file through
// it. Under `inline` there is no worker: the connection checkpoints inside
// its commits, as SQLite does by default.

import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkpointEveryPages, estimatedLogPages, inlineAutocheckpointPages, type OffloadPolicy } from "../../host/store/offload.js";
import { openSqlite, type SqliteConnection } from "../../host/store/sqlite/driver.js";
import { autocheckpointPagesDefault } from "../../host/store/sqlite/schema.js";
import type { SqliteStore } from "../../host/store/sqlite-store.js";
import { openTemporaryStore, prepare, temporaryDirectory } from "./fixtures.js";

async function workerStarted(store: SqliteStore): Promise<void> {
  while (store.offloadStatistics.workerState === "starting") await new Promise((resolve) => setTimeout(resolve, 5));
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}

function connectionOf(store: SqliteStore): SqliteConnection {
  return (store as unknown as { connection: SqliteConnection }).connection;
}

/** Executions in the database file alone: a copy of it without its log. */
async function executionsInDatabaseFile(store: SqliteStore): Promise<number> {
  const copy = join(await temporaryDirectory(), "copy.db");
  copyFileSync(store.path, copy);
  const connection = openSqlite(copy, { mustExist: true });
  try {
    // Before the first checkpoint even the schema is in the log only.
    if (connection.prepare("SELECT 1 AS found FROM sqlite_schema WHERE name = 'executions'").get() === undefined) return 0;
    return Number(connection.prepare("SELECT count(*) AS n FROM executions").get()?.["n"]);
  } finally {
    connection.close();
  }
}

/** Lone transactions enough for one checkpoint (each counted at its
 * estimate): the agent's, then the preparations, the last of which asks. */
const transactionsPerCheckpoint = Math.ceil(checkpointEveryPages / estimatedLogPages(1));
const preparationsPerCheckpoint = transactionsPerCheckpoint - 1;

describe("checkpoints", () => {
  it.each<OffloadPolicy>(["adaptive", "worker"])("policy %s: the worker checkpoints the log; commits do not, below 4× SQLite's bound", async (policy) => {
    const store = await openTemporaryStore({ offloadPolicy: policy });
    await workerStarted(store);
    expect(connectionOf(store).prepare("PRAGMA wal_autocheckpoint").get()).toEqual({ wal_autocheckpoint: inlineAutocheckpointPages });
    await store.ensureAgent("support", 1);
    expect(await executionsInDatabaseFile(store)).toBe(0);
    for (let index = 0; index < preparationsPerCheckpoint - 1; index += 1) await store.run(prepare(`e${index}`));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(store.offloadStatistics.checkpoints).toBe(0);
    await store.run(prepare("last"));
    await until(() => store.offloadStatistics.checkpoints >= 1);
    expect(store.offloadStatistics.checkpoints).toBe(1);
    expect(await executionsInDatabaseFile(store)).toBe(preparationsPerCheckpoint);
  });

  it("policy worker: a checkpoint asked while groups commit runs between them, and every operation settles", async () => {
    const store = await openTemporaryStore({ offloadPolicy: "worker" });
    await store.ensureAgent("support", 1);
    const operations = 4 * checkpointEveryPages;
    const revisions = await Promise.all(Array.from({ length: operations }, (_, index) => store.run(prepare(`e${index}`))));
    expect(revisions).toHaveLength(operations);
    await until(() => store.offloadStatistics.checkpoints >= 1);
    expect(await executionsInDatabaseFile(store)).toBeGreaterThan(0);
  });

  it("policy inline: no worker, so the connection checkpoints inside its commits at SQLite's default", async () => {
    const store = await openTemporaryStore({ offloadPolicy: "inline" });
    expect(connectionOf(store).prepare("PRAGMA wal_autocheckpoint").get()).toEqual({ wal_autocheckpoint: autocheckpointPagesDefault });
    await store.ensureAgent("support", 1);
    for (let index = 0; index < 2 * transactionsPerCheckpoint; index += 1) await store.run(prepare(`e${index}`));
    expect(store.offloadStatistics.checkpoints).toBe(0);
    expect(await executionsInDatabaseFile(store)).toBeGreaterThan(0);
  });
});
