// The PostgreSQL store's group commit (docs/decisions/0012): concurrent
// hot operations travel as one query and one transaction; a refused
// compare-and-set or a failing statement touches only its own operation; a
// connection lost mid-group is read back for every member; values written
// into the SQL text come back byte for byte.

import { describe, expect, it } from "vitest";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { prepare, providerBarrier, terminalCommit, toolBarrier } from "../store/fixtures.js";
import { atEnd, backendBlockedBy, freshSchema, postgresUrl, withClient } from "./database.js";

async function open(schema: string): Promise<PostgresStore> {
  const store = await PostgresStore.open(`${postgresUrl}?schema=${schema}`);
  atEnd(() => store.close());
  return store;
}

async function preparedStore(executions: number): Promise<{ store: PostgresStore; schema: string; ids: string[] }> {
  const schema = freshSchema();
  const store = await open(schema);
  await store.ensureAgent("support", 1);
  const ids = Array.from({ length: executions }, (_, index) => `e${index}`);
  // One agent per execution would be the runtime's shape; the store itself admits any number.
  for (const id of ids) await store.run(prepare(id));
  return { store, schema, ids };
}

describe("group commit (PostgreSQL)", () => {
  it("operations submitted together leave as few groups, each one transaction, and every result is the operation's own", async () => {
    const { store, ids } = await preparedStore(40);
    const before = { ...store.groups.figures };
    const results = await Promise.all(ids.map((id) => store.run(providerBarrier(id, 1))));
    expect(results).toEqual(ids.map(() => ({ revision: 2 })));
    const groups = store.groups.figures.groups - before.groups;
    const statements = store.groups.figures.statements - before.statements;
    expect(statements).toBe(40);
    expect(groups).toBeLessThanOrEqual(4);
    // The benchmarks' timings (decision 0114): each group's wait for a
    // connection is part of its time on its way.
    const connecting = store.groups.figures.connectingMs - before.connectingMs;
    const inFlight = store.groups.figures.inFlightMs - before.inFlightMs;
    expect(connecting).toBeGreaterThanOrEqual(0);
    expect(inFlight).toBeGreaterThan(connecting);
    for (const id of ids) expect((await store.listSteps(id)).map((step) => step.kind)).toEqual(["input", "provider_barrier"]);
  });

  it("a refused compare-and-set in a group writes nothing and does not disturb its group-mates", async () => {
    const { store, ids } = await preparedStore(10);
    const settled = await Promise.allSettled(ids.map((id, index) => store.run(providerBarrier(id, index === 3 ? 7 : 1))));
    settled.forEach((outcome, index) => {
      if (index === 3) expect(outcome).toMatchObject({ status: "rejected", reason: { code: "EXECUTION_REHYDRATION_REQUIRED" } });
      else expect(outcome).toEqual({ status: "fulfilled", value: { revision: 2 } });
    });
    expect((settled[3] as PromiseRejectedResult).reason.message).toMatch(
      /e3 moved on: providerBarrier expected revision 7 with status active, the store holds revision 1 with status active/,
    );
    expect((await store.getExecution("e3"))?.revision).toBe(1);
    expect((await store.listSteps("e3")).map((step) => step.kind)).toEqual(["input"]);
  });

  it("a statement that fails aborts its group, which is sent again member by member: only the culprit fails", async () => {
    const { store, schema, ids } = await preparedStore(8);
    // A trigger that fails any step insert of e5 (a constraint the store does not know of).
    await withClient((client) =>
      client.query(`
      CREATE FUNCTION ${schema}.refuse_e5() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no steps for e5' USING ERRCODE = '23514'; END $$;
      CREATE TRIGGER refuse_e5 BEFORE INSERT ON ${schema}.steps FOR EACH ROW WHEN (NEW.execution_id = 'e5' AND NEW.seq > 1) EXECUTE FUNCTION ${schema}.refuse_e5();
    `),
    );
    const settled = await Promise.allSettled(ids.map((id) => store.run(toolBarrier(id, 1))));
    settled.forEach((outcome, index) => {
      if (index === 5) expect(outcome).toMatchObject({ status: "rejected", reason: { code: "STORE", details: { sqlState: "23514" } } });
      else expect(outcome).toEqual({ status: "fulfilled", value: { revision: 2 } });
    });
    expect((await store.getExecution("e5"))?.revision).toBe(1);
    expect((await store.getExecution("e4"))?.revision).toBe(2);
    expect((settled[5] as PromiseRejectedResult).reason.message).toMatch(/no steps for e5/);
  });

  it("a member alone chosen as a deadlock's victim is sent again once (docs/decisions/0119); a second deadlock is its error", async () => {
    const { store, schema } = await preparedStore(0);
    await withClient((client) =>
      client.query(`
        CREATE SEQUENCE ${schema}.victim_tries;
        CREATE FUNCTION ${schema}.victim(p_times integer) RETURNS integer LANGUAGE plpgsql AS $$
        BEGIN
          IF nextval('${schema}.victim_tries') <= p_times THEN RAISE EXCEPTION 'chosen as the victim' USING ERRCODE = '40P01'; END IF;
          RETURN 1;
        END $$`),
    );
    const tries = () => withClient(async (client) => Number((await client.query(`SELECT last_value FROM ${schema}.victim_tries`)).rows[0].last_value));
    expect(await store.groups.submit(`SELECT ${schema}.victim(1) AS applied`)).toBe(1);
    expect(await tries()).toBe(2);
    await expect(store.groups.submit(`SELECT ${schema}.victim(4) AS applied`)).rejects.toMatchObject({ code: "40P01" });
    expect(await tries()).toBe(4);
  });

  it("a connection lost mid-group: every member is read back (not committed), nothing written; retries commit", async () => {
    const { store, ids } = await preparedStore(6);
    const blocker = await store.pool.connect();
    await blocker.query("BEGIN");
    await blocker.query("SELECT 1 FROM executions WHERE execution_id = 'e0' FOR UPDATE");
    const pending = ids.map((id) => store.run(providerBarrier(id, 1)));
    const waiting = await backendBlockedBy(blocker);
    await withClient((client) => client.query("SELECT pg_terminate_backend($1)", [waiting]));
    const settled = await Promise.allSettled(pending);
    await blocker.query("ROLLBACK");
    blocker.release();
    // The group waited on e0's lock inside one transaction: all or nothing.
    for (const outcome of settled) expect(outcome).toMatchObject({ status: "rejected", reason: { code: "STORE", details: { outcome: "not_committed" } } });
    for (const id of ids) expect((await store.getExecution(id))?.revision).toBe(1);
    expect(await Promise.all(ids.map((id) => store.run(providerBarrier(id, 1))))).toEqual(ids.map(() => ({ revision: 2 })));
  });

  it("text written into the SQL comes back byte for byte: quotes, backslashes, dollar quotes, newlines, unicode", async () => {
    const schema = freshSchema();
    const store = await open(schema);
    await store.ensureAgent("support", 1);
    const awkward = "it's a \\path\\ with $$dollar$$ quotes, E'no', \"json\"\nnew line\ttab — ünïcödé 🚀 \u0001";
    await store.run(prepare("e1", "support", { input: awkward, config: { note: awkward } }));
    await store.run(providerBarrier("e1", 1, { steps: [{ kind: "note", at: 2, payload: { awkward } }] }));
    await store.run(terminalCommit("e1", 2, { output: awkward, journal: [{ executionId: "e1", role: "assistant", content: awkward, at: 3 }] }));
    const row = await store.getExecution("e1");
    expect(row?.input).toBe(awkward);
    expect(row?.output).toBe(awkward);
    expect((await store.listSteps("e1")).find((step) => step.kind === "note")?.payload).toEqual({ awkward });
    expect((await store.readJournal("support", 10)).at(-1)?.content).toBe(awkward);
  });

  it("a barrier of an execution this process did not write (a restart, another process) reads its row first", async () => {
    const schema = freshSchema();
    const first = await open(schema);
    await first.ensureAgent("support", 1);
    await first.run(prepare("e1", "support", { config: { maxTurns: 3 } }));
    await first.run(providerBarrier("e1", 1));
    const second = await open(schema);
    expect(await second.run(toolBarrier("e1", 2))).toEqual({ revision: 3 });
    // The first process's memory of the row is now stale: the compare-and-set refuses it.
    await expect(first.run(toolBarrier("e1", 2))).rejects.toThrow(
      /e1 moved on: toolBarrier expected revision 2 with status active, the store holds revision 3/,
    );
    const metadata = (await second.getExecution("e1"))?.metadata as { config?: unknown; toolBatch?: unknown };
    expect(metadata.config).toEqual({ maxTurns: 3 });
    expect(metadata.toolBatch).toBeDefined();
  });
});
