// What only the PostgreSQL store has: its schema (created on open, versioned,
// migrated once when several processes open at once, refused when newer or
// foreign), its URL and options, and a connection lost mid-operation (the
// outcome read back, never guessed).

import { describe, expect, it } from "vitest";
import { InvalidInputError, StoreError } from "../../host/errors.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { resolveOutcome } from "../../host/store/postgres/outcome.js";
import { schemaVersion } from "../../host/store/postgres/schema.js";
import { prepare, providerBarrier } from "../store/fixtures.js";
import { atEnd, backendBlockedBy, freshSchema, postgresUrl, withClient } from "./database.js";

async function open(schema: string): Promise<PostgresStore> {
  const store = await PostgresStore.open(`${postgresUrl}?schema=${schema}`);
  atEnd(() => store.close());
  return store;
}

describe("PostgreSQL schema", () => {
  it("creates the schema on open with the current version; eight stores opening a new schema at once migrate it once", async () => {
    const schema = freshSchema();
    const stores = await Promise.all(Array.from({ length: 8 }, () => open(schema)));
    await stores[0]!.ensureAgent("support", 1);
    expect(await stores[7]!.getAgent("support")).toMatchObject({ lifecycle: "open" });
    const rows = await withClient((client) => client.query(`SELECT application, version FROM ${schema}.store_version`));
    expect(rows.rows).toEqual([{ application: "phronomy", version: schemaVersion }]);
    expect(stores[0]!.path).toContain(`schema=${schema}`);
  });

  it("refuses a schema written by a newer Phronomy, and one holding another application's tables, leaving them untouched", async () => {
    const newer = freshSchema();
    await (await open(newer)).close();
    await withClient((client) => client.query(`UPDATE ${newer}.store_version SET version = ${schemaVersion + 1}`));
    await expect(PostgresStore.open(`${postgresUrl}?schema=${newer}`)).rejects.toThrow(
      new RegExp(`written by a newer Phronomy \\(store schema version ${schemaVersion + 1}; this version reads up to ${schemaVersion}\\)`),
    );
    const foreign = freshSchema();
    await withClient((client) => client.query(`CREATE SCHEMA ${foreign}; CREATE TABLE ${foreign}.invoices (id int)`));
    const refused = PostgresStore.open(`${postgresUrl}?schema=${foreign}`);
    await expect(refused).rejects.toBeInstanceOf(StoreError);
    await expect(refused).rejects.toThrow(/holds tables of another application \(invoices\)/);
  });

  it("checks the URL, the schema name and the options; an unreachable database is a StoreError naming it", async () => {
    await expect(PostgresStore.open(`${postgresUrl}?schema=Robert'); DROP`)).rejects.toBeInstanceOf(InvalidInputError);
    await expect(PostgresStore.open("mysql://x")).rejects.toThrow(/postgres:\/\/ or postgresql:\/\//);
    await expect(PostgresStore.open(postgresUrl, { poolSize: 0 })).rejects.toThrow(/poolSize must be an integer from 1 to 64/);
    await expect(PostgresStore.open(postgresUrl, { bogus: 1 } as never)).rejects.toThrow(/unknown PostgresStore option "bogus"/);
    await expect(PostgresStore.open("postgres://postgres:secret@127.0.0.1:1/test")).rejects.toThrow(
      /cannot open the PostgreSQL store at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/test\?schema=phronomy/,
    );
  });
});

describe("a connection lost mid-operation", () => {
  it("the operation's backend killed while it waits: read back as not committed, StoreError, nothing written; a retry commits", async () => {
    const store = await open(freshSchema());
    await store.ensureAgent("support", 1);
    await store.run(prepare("e1"));
    const blocker = await store.pool.connect();
    await blocker.query("BEGIN");
    await blocker.query("SELECT 1 FROM executions WHERE execution_id = 'e1' FOR UPDATE");
    const barrier = store.run(providerBarrier("e1", 1));
    const waiting = await backendBlockedBy(blocker);
    await withClient((client) => client.query("SELECT pg_terminate_backend($1)", [waiting]));
    await expect(barrier).rejects.toMatchObject({ code: "STORE", details: { outcome: "not_committed" } });
    await expect(barrier).rejects.toThrow(/lost its connection during providerBarrier; reading back showed it did not commit/);
    await blocker.query("ROLLBACK");
    blocker.release();
    expect((await store.getExecution("e1"))?.revision).toBe(1);
    expect(await store.run(providerBarrier("e1", 1))).toEqual({ revision: 2 });
  });

  it("resolution finds a committed write by its write id and rebuilds its result", async () => {
    const store = await open(freshSchema());
    await store.ensureAgent("support", 1);
    await store.run(prepare("e1"));
    await store.run(providerBarrier("e1", 1));
    const client = await store.pool.connect();
    try {
      const [writeId] = (
        await client.query<{ write_id: string }>("SELECT write_id FROM steps WHERE execution_id = 'e1' AND kind = 'provider_barrier'")
      ).rows.map((row) => row.write_id);
      expect(await resolveOutcome(client, providerBarrier("e1", 1), writeId!, undefined)).toEqual({ committed: true, value: { revision: 2 } });
      expect(await resolveOutcome(client, providerBarrier("e1", 1), "another-write", undefined)).toEqual({ committed: false });
      const [prepareId] = (await client.query<{ write_id: string }>("SELECT write_id FROM steps WHERE execution_id = 'e1' AND kind = 'input'")).rows.map(
        (row) => row.write_id,
      );
      expect(await resolveOutcome(client, prepare("e1"), prepareId!, undefined)).toEqual({ committed: true, value: { outcome: "active", revision: 1 } });
    } finally {
      client.release();
    }
  });
});

describe("the fencing hook (partitions, docs/decisions/0009 and 0030)", () => {
  it("admission and barriers carry the partition's epoch in the same statement; after a takeover (epoch+1) they are refused and write nothing", async () => {
    const schema = freshSchema();
    const store = await open(schema);
    await store.ensureAgent("support", 1);
    // The store holds every partition (alone): the agent's at epoch 1.
    expect(await store.acquireLease("support")).toMatchObject({ acquired: true, epoch: 1 });
    expect(store.fenceOf("support")).toEqual({ owner: store.leaseOwner, epoch: 1 });
    expect(await store.run(prepare("e1"))).toEqual({ outcome: "active", revision: 1, firstOfAgent: true });
    expect(await store.run(providerBarrier("e1", 1))).toEqual({ revision: 2 });
    await withClient((client) =>
      client.query(
        `UPDATE ${schema}.partitions SET owner = 'process-b', epoch = epoch + 1, expires_at = now() + interval '1 minute' WHERE partition = ${schema}.partition_of('support')`,
      ),
    );
    const late = store.run(providerBarrier("e1", 2));
    await expect(late).rejects.toMatchObject({ code: "EXECUTION_REHYDRATION_REQUIRED", details: { reason: "lease_lost", epoch: 1 } });
    await expect(late).rejects.toThrow(
      new RegExp(`refused by the fencing check: this process \\(${store.leaseOwner}\\) no longer holds agent "support" at lease epoch 1`),
    );
    // The refusal told the store its partition is lost: admissions stop.
    expect(await store.run(prepare("e2"))).toMatchObject({ outcome: "not_established", error: { code: "AGENT_BUSY", details: { reason: "lease_not_held" } } });
    expect(await store.getExecution("e2")).toBeUndefined();
    expect((await store.getExecution("e1"))?.revision).toBe(2);
    expect((await store.listSteps("e1")).map((step) => step.kind)).toEqual(["input", "provider_barrier"]);
  });

  it("a write that can get no connection for a moment (the server's connection limit) is tried again and lands; one that never gets one fails with STORE, nothing written", async () => {
    const schema = freshSchema();
    const store = await open(schema);
    await store.ensureAgent("support", 1);
    await store.acquireLease("support");
    expect(await store.run(prepare("e1"))).toEqual({ outcome: "active", revision: 1, firstOfAgent: true });
    const pool = (store as unknown as { pool: { connect: () => Promise<unknown> } }).pool;
    const connect = pool.connect.bind(pool);
    let refusals = 2;
    const tooMany = () => Object.assign(new Error("sorry, too many clients already"), { code: "53300", severity: "FATAL" });
    pool.connect = () => (refusals-- > 0 ? Promise.reject(tooMany()) : connect());
    expect(await store.run(providerBarrier("e1", 1))).toEqual({ revision: 2 });
    expect(refusals).toBe(-1);
    pool.connect = () => Promise.reject(tooMany());
    await expect(store.run(providerBarrier("e1", 2))).rejects.toMatchObject({ code: "STORE", details: { outcome: "not_committed" } });
    pool.connect = connect;
    expect((await store.getExecution("e1"))?.revision).toBe(2);
  });

  it("a refusal names the epoch its statement carried, though the partition is held at a later one when it is explained (taken back meanwhile); a refused preparation wrote nothing and says so", async () => {
    const schema = freshSchema();
    const store = await open(schema);
    await store.ensureAgent("support", 1);
    await store.acquireLease("support");
    expect(await store.run(prepare("e1"))).toEqual({ outcome: "active", revision: 1, firstOfAgent: true });
    // Another process holds the partition at epoch 2, and this one is
    // about to hold it at epoch 3: its writes carry epoch 1 (built before
    // the retake was noted) and are explained after it.
    await withClient((client) =>
      client.query(
        `UPDATE ${schema}.partitions SET owner = 'process-b', epoch = 2, expires_at = now() + interval '1 minute' WHERE partition = ${schema}.partition_of('support')`,
      ),
    );
    const held = store.fenceOf;
    let built = 0;
    store.fenceOf = (agentId) => ((built += 1) === 1 ? held(agentId) : { owner: store.leaseOwner, epoch: 3 });
    await expect(store.run(providerBarrier("e1", 1))).rejects.toMatchObject({
      code: "EXECUTION_REHYDRATION_REQUIRED",
      details: { reason: "lease_lost", epoch: 1 },
    });
    built = 0;
    const refused = (await store.run(prepare("e2"))) as { outcome: string; error: { details?: { epoch?: number } } };
    expect(refused).toMatchObject({ outcome: "not_established" });
    expect(await store.getExecution("e2")).toBeUndefined();
  });
});
