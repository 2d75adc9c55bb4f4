// A barrier rewrites its execution row in place (docs/decisions/0108,
// migration 25): no index of `executions` names a column a barrier writes,
// so PostgreSQL updates the row without a new entry in any index (a HOT
// update). The terminal commit changes the status, which indexes name: not
// in place. The finish time and the definition's name have columns of
// their own, which the prune and the pages read.

import { describe, expect, it } from "vitest";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { executionsFillfactor, executionsFillfactorRoomier, roomForEveryBarrier } from "../../host/store/postgres/hot-barriers.js";
import { migrations } from "../../host/store/postgres/schema.js";
import { compareAndSetStatement, readKnownRow, type CompareAndSetOperation } from "../../host/store/postgres/statements.js";
import { prepare, providerBarrier, terminalCommit, toolBarrier } from "../store/fixtures.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "./database.js";

describe("barriers update their row in place (PostgreSQL)", () => {
  it("a provider and a tool barrier are HOT updates, the terminal commit is not; finished_at and definition follow the row", async () => {
    const schema = freshSchema();
    const store = await PostgresStore.open(postgresUrl, { schema });
    atEnd(() => store.close());
    await store.ensureAgent("support", 1);
    expect(await store.run(prepare("e-1", "support", { config: { replayable: true, definition: "support-desk" } }))).toMatchObject({ outcome: "active" });

    // A connection of the store's pool: its schema, its types.
    const client = await store.pool.connect();
    atEnd(async () => client.release());
    const counters = async () =>
      (
        await client.query<{ updated: string; hot: string }>(
          "SELECT pg_stat_get_xact_tuples_updated('executions'::regclass) AS updated, pg_stat_get_xact_tuples_hot_updated('executions'::regclass) AS hot",
        )
      ).rows.map((row) => [Number(row.updated), Number(row.hot)])[0];
    // The store's own statements (the function calls it sends), unfenced,
    // in one transaction of this client, whose counters are its own.
    const write = async (operation: CompareAndSetOperation) => {
      const known = await readKnownRow(client, operation);
      const statement = compareAndSetStatement(operation, known, undefined, `w-${operation.type}-${operation.expectedRevision}`);
      const applied = (await client.query<{ applied: number }>(statement.sql)).rows[0]!.applied;
      expect(applied).toBe(1);
    };
    await client.query("BEGIN");
    await write(providerBarrier("e-1", 1));
    expect(await counters()).toEqual([1, 1]);
    await write(toolBarrier("e-1", 2));
    expect(await counters()).toEqual([2, 2]);
    await write(terminalCommit("e-1", 3));
    expect(await counters()).toEqual([3, 2]);
    await client.query("COMMIT");

    const row = (
      await client.query<{ finished_at: string; updated_at: string; definition: string }>("SELECT finished_at, updated_at, definition FROM executions")
    ).rows[0]!;
    expect(row.finished_at).toBe(row.updated_at);
    expect(row.definition).toBe("support-desk");
    expect((await store.pageExecutions({ definition: "support-desk" })).rows.map((page) => page.executionId)).toEqual(["e-1"]);
    expect(await store.pruneExecutions({ type: "pruneExecutions", finishedBefore: Number(row.finished_at) + 1, executionsMax: 10 })).toMatchObject({
      executions: 1,
    });
  });

  it("migration 31 leaves more room on new pages of executions; the rows written before it go on", async () => {
    const schema = freshSchema();
    const before = await PostgresStore.open(postgresUrl, { schema });
    await before.ensureAgent("support", 1);
    await before.run(prepare("e-1", "support"));
    await before.close();
    // Version 30: migration 29's fill.
    await withClient((client) =>
      client.query(
        `ALTER TABLE "${schema}".executions SET (fillfactor = ${executionsFillfactor}); UPDATE "${schema}".store_version SET version = ${migrations.indexOf(roomForEveryBarrier)}`,
      ),
    );
    const fill = () =>
      withClient(
        async (client) =>
          (await client.query<{ options: string[] | null }>(`SELECT reloptions AS options FROM pg_class WHERE oid = '"${schema}".executions'::regclass`))
            .rows[0]!.options,
      );
    expect(await fill()).toEqual([`fillfactor=${executionsFillfactor}`]);
    expect(migrations.at(-1)).toBe(roomForEveryBarrier);

    const after = await PostgresStore.open(postgresUrl, { schema });
    atEnd(() => after.close());
    expect(await fill()).toEqual([`fillfactor=${executionsFillfactorRoomier}`]);
    const version = await withClient(
      async (client) => (await client.query<{ version: number }>(`SELECT version FROM "${schema}".store_version`)).rows[0]!.version,
    );
    expect(version).toBe(migrations.length);
    expect(await after.run(providerBarrier("e-1", 1))).toEqual({ revision: 2 });
    expect(await after.run(terminalCommit("e-1", 2))).toEqual({ revision: 3 });
  });
});
