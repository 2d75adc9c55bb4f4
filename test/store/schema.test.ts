// The store file: version stamping, refusing files that are not ours (left
// byte-for-byte unchanged), pragmas applied, and reopening reads back
// everything written.

import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { InvalidInputError, StoreError } from "../../host/errors.js";
import { openBetterSqlite3 } from "../../host/store/sqlite/driver.js";
import { dropCreationIndex } from "../../host/store/sqlite/pages.js";
import { applicationId, migrations, openStoreConnection, schemaVersion } from "../../host/store/sqlite/schema.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import { fileBytes, journalEntry, prepare, providerBarrier, rawExec, rawValue, temporaryDirectory, terminalCommit, toolBarrier, track } from "./fixtures.js";
import { searchIndexByTriggers } from "./search-index-fixtures.js";

async function openRefused(path: string): Promise<StoreError> {
  const error = await SqliteStore.open(path).then(
    (store) => {
      void store.close();
      throw new Error("the store opened");
    },
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(StoreError);
  expect((error as StoreError).message).toContain(path);
  return error as StoreError;
}

describe("store file", () => {
  it("stamps a new file with Phronomy's application_id and the schema version, in WAL mode", async () => {
    const path = join(await temporaryDirectory(), "new.db");
    await track(await SqliteStore.open(path)).close();
    expect(schemaVersion).toBeGreaterThanOrEqual(1);
    expect(rawValue(path, "PRAGMA application_id")).toBe(applicationId);
    expect(rawValue(path, "PRAGMA user_version")).toBe(schemaVersion);
    expect(rawValue(path, "PRAGMA journal_mode")).toBe("wal");
    expect(rawValue(path, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'execution_search%'")).toBe(9); // agents, executions, steps, journal, approval_inbox, queued_messages, schedules, event_signals, execution_counts
    // The search index (docs/decisions/0082): FTS5's table and its shadow tables.
    expect(rawValue(path, "SELECT count(*) FROM sqlite_schema WHERE name = 'execution_search'")).toBe(1);
  });

  it("initialises an empty existing file", async () => {
    const path = join(await temporaryDirectory(), "empty.db");
    await writeFile(path, "");
    const store = track(await SqliteStore.open(path));
    await store.ensureAgent("support", 1);
    await store.close();
    expect(rawValue(path, "PRAGMA user_version")).toBe(schemaVersion);
  });

  it("refuses a file written by a newer schema version and leaves it unchanged", async () => {
    const path = join(await temporaryDirectory(), "newer.db");
    await track(await SqliteStore.open(path)).close();
    rawExec(path, `PRAGMA user_version = ${schemaVersion + 1}`);
    const before = await fileBytes(path);
    const error = await openRefused(path);
    expect(error.message).toContain(`schema version ${schemaVersion + 1}`);
    expect(error.message).toMatch(/newer Phronomy/);
    expect((await fileBytes(path)).equals(before)).toBe(true);
  });

  it("refuses a file that is not SQLite and leaves it unchanged", async () => {
    const path = join(await temporaryDirectory(), "notes.db");
    await writeFile(path, "these are my notes, not a database\n".repeat(200));
    const before = await fileBytes(path);
    const error = await openRefused(path);
    expect(error.message).toMatch(/not a SQLite database/);
    expect((await fileBytes(path)).equals(before)).toBe(true);
  });

  it("refuses a SQLite file whose pages are garbage (corrupt) and leaves it unchanged", async () => {
    const path = join(await temporaryDirectory(), "corrupt.db");
    await writeFile(path, Buffer.concat([Buffer.from("SQLite format 3\0", "latin1"), Buffer.alloc(4096 - 16, 0xab)]));
    const before = await fileBytes(path);
    const error = await openRefused(path);
    expect(error.message).toMatch(/corrupt or not a database/);
    expect((await fileBytes(path)).equals(before)).toBe(true);
  });

  it("refuses a SQLite database of another application and leaves it unchanged", async () => {
    const path = join(await temporaryDirectory(), "inventory.db");
    rawExec(path, "CREATE TABLE products (sku TEXT PRIMARY KEY, name TEXT); INSERT INTO products VALUES ('a1', 'anvil');");
    const before = await fileBytes(path);
    const error = await openRefused(path);
    expect(error.message).toMatch(/another application \(application_id 0, tables products\)/);
    expect((await fileBytes(path)).equals(before)).toBe(true);
  });

  it("refuses a SQLite database stamped with another application_id, even without tables", async () => {
    const path = join(await temporaryDirectory(), "other.db");
    rawExec(path, "PRAGMA application_id = 1234");
    const before = await fileBytes(path);
    const error = await openRefused(path);
    expect(error.message).toMatch(/application_id 1234, no tables/);
    expect((await fileBytes(path)).equals(before)).toBe(true);
  });

  it.each(["FULL", "NORMAL"] as const)("applies synchronous=%s on the calling thread's connection", async (synchronous) => {
    const path = join(await temporaryDirectory(), "sync.db");
    const store = track(await SqliteStore.open(path, { synchronous }));
    expect(store.synchronous).toBe(synchronous);
    const connection = (store as unknown as { connection: { prepare(sql: string): { get(): Record<string, unknown> } } }).connection;
    expect(connection.prepare("PRAGMA synchronous").get()["synchronous"]).toBe(synchronous === "FULL" ? 2 : 1);
    expect(connection.prepare("PRAGMA busy_timeout").get()["timeout"]).toBeGreaterThan(0);
  });

  it("rejects unknown options, bad option values and in-memory paths with InvalidInputError", async () => {
    const directory = await temporaryDirectory();
    await expect(SqliteStore.open(join(directory, "a.db"), { synchronus: "FULL" } as never)).rejects.toThrow(/unknown SqliteStore option "synchronus"/);
    await expect(SqliteStore.open(join(directory, "a.db"), { synchronous: "OFF" } as never)).rejects.toBeInstanceOf(InvalidInputError);
    await expect(SqliteStore.open(join(directory, "a.db"), { offloadCapacity: 0 })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(SqliteStore.open(":memory:")).rejects.toBeInstanceOf(InvalidInputError);
  });

  it("reads back everything after a reopen", async () => {
    const path = join(await temporaryDirectory(), "reopen.db");
    const first = track(await SqliteStore.open(path));
    await first.ensureAgent("support", 1);
    await first.ensureAgent("billing", 1);
    await first.closeAgent("billing", 2);
    await first.run(prepare("e1"));
    await first.run(providerBarrier("e1", 1));
    await first.run(toolBarrier("e1", 2));
    await first.run(terminalCommit("e1", 3));
    await first.run(prepare("e2", "support", { journal: [journalEntry("e2", "user", "And order 43?", 50)], at: 50 }));
    const snapshot = {
      agents: [await first.getAgent("support"), await first.getAgent("billing")],
      executions: await first.listExecutions(),
      steps: [await first.listSteps("e1"), await first.listSteps("e2")],
      journal: await first.readJournal("support", 100),
      unfinished: await first.unfinishedExecutions(),
    };
    await first.close();

    const second = track(await SqliteStore.open(path));
    expect({
      agents: [await second.getAgent("support"), await second.getAgent("billing")],
      executions: await second.listExecutions(),
      steps: [await second.listSteps("e1"), await second.listSteps("e2")],
      journal: await second.readJournal("support", 100),
      unfinished: await second.unfinishedExecutions(),
    }).toEqual(snapshot);
    expect(snapshot.executions.map((row) => [row.executionId, row.status, row.revision])).toEqual([
      ["e2", "active", 1],
      ["e1", "terminal", 4],
    ]);
    expect(snapshot.steps[0]).toHaveLength(6);
    expect(snapshot.journal.map((record) => record.content)).toEqual(["Where is order 42?", "Order 42 ships today.", "And order 43?"]);
    expect(snapshot.unfinished.map((row) => row.executionId)).toEqual(["e2"]);
  });
});

describe("the index on created_at alone (docs/decisions/0091)", () => {
  it("is dropped from a version-12 file, and reads by creation time use executions_by_time", async () => {
    const path = join(await temporaryDirectory(), "version-12.db");
    await track(await SqliteStore.open(path)).close();
    expect(rawValue(path, "SELECT count(*) FROM sqlite_schema WHERE name = 'executions_by_creation'"), "a new store never keeps it").toBe(0);
    searchIndexByTriggers(path);
    rawExec(path, `CREATE INDEX executions_by_creation ON executions (created_at); PRAGMA user_version = ${migrations.indexOf(dropCreationIndex)}`);
    const store = track(await SqliteStore.open(path));
    await store.run(prepare("e1"));
    await store.close();
    expect(rawValue(path, "PRAGMA user_version")).toBe(schemaVersion);
    expect(rawValue(path, "SELECT count(*) FROM sqlite_schema WHERE name = 'executions_by_creation'")).toBe(0);
    const connection = openBetterSqlite3(path, { mustExist: true });
    try {
      const plan = (sql: string) =>
        connection
          .prepare(`EXPLAIN QUERY PLAN ${sql}`)
          .all()
          .map((row) => String(row["detail"]))
          .join("; ");
      expect(plan("SELECT * FROM executions ORDER BY created_at DESC, execution_id DESC LIMIT 10")).toContain("executions_by_time");
      expect(plan("SELECT * FROM executions WHERE created_at >= 5 AND created_at < 9 ORDER BY created_at, execution_id LIMIT 10")).toContain(
        "executions_by_time",
      );
    } finally {
      connection.close();
    }
  });
});

describe("a connection that must find its file (the store worker's)", () => {
  it("is refused with StoreError where the file is gone, and creates none", async () => {
    const path = join(await temporaryDirectory(), "removed.db");
    expect(() => openStoreConnection(path, { synchronous: "FULL", mustExist: true })).toThrow(StoreError);
    expect(existsSync(path), "no new file in place of the removed one").toBe(false);
    const opened = openStoreConnection(path, { synchronous: "FULL" });
    opened.close();
    expect(existsSync(path), "the owner's open creates it").toBe(true);
  });
});
