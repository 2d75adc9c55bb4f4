// A group commit (`transaction.ts`, docs/decisions/0103) runs its
// operations without savepoints first; when one throws, the whole
// transaction is rolled back and the group runs again with a savepoint
// each, where the one that threw fails alone. Nothing the first run wrote
// survives it: the operations before the failure are written once.

import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ExecutionRehydrationRequiredError } from "../../host/errors.js";
import type { SqliteConnection } from "../../host/store/sqlite/driver.js";
import { openStoreConnection } from "../../host/store/sqlite/schema.js";
import { listSteps } from "../../host/store/sqlite/timeline.js";
import { commitGroup } from "../../host/store/sqlite/transaction.js";
import { prepare, providerBarrier, temporaryDirectory } from "./fixtures.js";

async function connectionTo(): Promise<SqliteConnection> {
  return openStoreConnection(join(await temporaryDirectory(), "group.db"), { synchronous: "NORMAL" });
}

const revisionOf = (connection: SqliteConnection, executionId: string) =>
  Number(connection.prepare("SELECT revision FROM executions WHERE execution_id = ?").get(executionId)?.["revision"]);

describe("group commit", () => {
  it("a group whose operations all succeed commits them in one transaction, each settled with its value", async () => {
    const connection = await connectionTo();
    const settlements = commitGroup(connection, [prepare("e1"), providerBarrier("e1", 1), prepare("e2")]);
    expect(settlements.map((settlement) => settlement.ok)).toEqual([true, true, true]);
    expect(settlements[1]).toEqual({ ok: true, value: { revision: 2 } });
    expect([revisionOf(connection, "e1"), revisionOf(connection, "e2")]).toEqual([2, 1]);
    connection.close();
  });

  it("one operation that throws after others wrote fails alone; the others are written once, not twice", async () => {
    const connection = await connectionTo();
    // The stale barrier throws after the first two operations wrote rows
    // and steps; the last comes after it.
    const settlements = commitGroup(connection, [prepare("e1"), providerBarrier("e1", 1), providerBarrier("e1", 1), prepare("e2")]);
    expect(settlements.map((settlement) => settlement.ok)).toEqual([true, true, false, true]);
    const failed = settlements[2];
    expect(failed?.ok === false && failed.error).toBeInstanceOf(ExecutionRehydrationRequiredError);
    expect([revisionOf(connection, "e1"), revisionOf(connection, "e2")]).toEqual([2, 1]);
    expect(listSteps(connection, "e1").map((step) => step.kind)).toEqual(["input", "provider_barrier"]);
    expect(listSteps(connection, "e2").map((step) => step.kind)).toEqual(["input"]);
    expect(Number(connection.prepare("SELECT count(*) AS n FROM journal").get()?.["n"])).toBe(2);
    connection.close();
  });
});
