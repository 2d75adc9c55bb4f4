// SQLite migration 6 (the inbox's `retry` kind, docs/decisions/0026): a
// store written at version 5 opens migrated, every inbox row kept with its
// kind and state, and the rebuilt table takes retries and refuses an
// unknown kind.

import { describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import { openSqlite } from "../../host/store/sqlite/driver.js";
import { applicationId, migrations, schemaVersion } from "../../host/store/sqlite/schema.js";
import { temporaryStorePath } from "../runtime/helpers.js";

/** A store file as version 5 left it, with two inbox rows. */
function writeVersion5(path: string): void {
  const connection = openSqlite(path);
  try {
    connection.exec("PRAGMA journal_mode = WAL");
    connection.exec("BEGIN IMMEDIATE");
    for (const migration of migrations.slice(0, 5)) migration(connection);
    connection.exec(`PRAGMA application_id = ${applicationId}`);
    connection.exec("PRAGMA user_version = 5");
    connection.exec(`
      INSERT INTO approval_inbox (decision_id, execution_id, agent_id, approval_id, approved, reason, execution_revision, filed_by, filed_at, state, kind)
      VALUES ('d-1', 'e-1', 'support', 'a-1', 1, 'ok', 3, 'visitor', 10, 'filed', 'approval'),
             ('d-2', 'e-2', 'support', 'cancel:d-2', 0, NULL, 4, 'visitor', 11, 'applied', 'cancel');
    `);
    connection.exec("COMMIT");
  } finally {
    connection.close();
  }
}

describe("SQLite migration 6: the inbox's retry kind", () => {
  it("keeps every inbox row and its indexes, and takes retries", async () => {
    const path = await temporaryStorePath();
    writeVersion5(path);
    const store = await SqliteStore.open(path);
    await store.close();
    const database = new Database(path);
    try {
      expect(database.pragma("user_version", { simple: true })).toBe(schemaVersion);
      expect(database.prepare("SELECT decision_id, kind, state, reason, execution_revision FROM approval_inbox ORDER BY decision_id").all()).toEqual([
        { decision_id: "d-1", kind: "approval", state: "filed", reason: "ok", execution_revision: 3 },
        { decision_id: "d-2", kind: "cancel", state: "applied", reason: null, execution_revision: 4 },
      ]);
      const indexes = (
        database
          .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'approval_inbox' AND name NOT LIKE 'sqlite_%' ORDER BY name")
          .all() as { name: string }[]
      ).map((row) => row.name);
      expect(indexes).toEqual(["approval_inbox_by_execution", "approval_inbox_one_per_approval", "approval_inbox_unsettled"]);
      const insert = database.prepare(
        "INSERT INTO approval_inbox (decision_id, execution_id, agent_id, approval_id, approved, execution_revision, filed_by, filed_at, state, kind) VALUES (?, 'e-3', 'support', ?, 0, 5, 'visitor', 12, 'filed', ?)",
      );
      insert.run("d-3", "retry:d-3", "retry");
      expect(() => insert.run("d-4", "x:d-4", "resume")).toThrow(/CHECK constraint failed/);
    } finally {
      database.close();
    }
  });
});
