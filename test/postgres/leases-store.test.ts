// The lease manager of PostgresStore in one process (docs/decisions/0010):
// acquisition in one statement (free → epoch 1, live owner → refused with
// its name, expired or released → epoch + 1), renewal, loss detected by the
// background renewal, admissions refused as a definite "not established"
// AGENT_BUSY, `?lease_ms=` and the `leaseMs` option.

import { describe, expect, it } from "vitest";
import { PostgresStore } from "../../host/store/postgres-store.js";
import type { PrepareExecutionOperation } from "../../host/store/records.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "./database.js";

async function open(schema: string, leaseMs = 300): Promise<PostgresStore> {
  const store = await PostgresStore.open(`${postgresUrl}?schema=${schema}`, { leaseMs });
  atEnd(() => store.close());
  return store;
}

function prepare(executionId: string): PrepareExecutionOperation {
  return { type: "prepareExecution", executionId, agentId: "support", mode: "invoke", input: "hi", config: {}, journal: [], at: 1 };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("PostgresStore leases", () => {
  it("reads lease_ms from the URL or the options, once, and checks it", async () => {
    const schema = freshSchema();
    const fromUrl = await PostgresStore.open(`${postgresUrl}?schema=${schema}&lease_ms=1500`);
    atEnd(() => fromUrl.close());
    expect(fromUrl.leaseMs).toBe(1500);
    expect(fromUrl.path).not.toContain("lease_ms");
    expect((await open(schema, 700)).leaseMs).toBe(700);
    const plain = await PostgresStore.open(`${postgresUrl}?schema=${schema}`);
    atEnd(() => plain.close());
    expect(plain.leaseMs).toBe(5000);
    await expect(PostgresStore.open(`${postgresUrl}?schema=${schema}&lease_ms=1500`, { leaseMs: 700 })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(PostgresStore.open(`${postgresUrl}?schema=${schema}&lease_ms=soon`)).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(PostgresStore.open(`${postgresUrl}?schema=${schema}`, { leaseMs: 5 })).rejects.toMatchObject({ code: "INVALID_INPUT" });
  });

  it("one owner at a time: the second is refused naming the first, admits nothing, and takes over at epoch 2 once the first releases", async () => {
    const schema = freshSchema();
    const first = await open(schema);
    const second = await open(schema);
    await first.ensureAgent("support", 1);
    expect(await first.acquireLease("support")).toMatchObject({ acquired: true, owner: first.leaseOwner, epoch: 1 });
    expect(await first.acquireLease("support")).toMatchObject({ acquired: true, epoch: 1 });
    const refused = await second.acquireLease("support");
    expect(refused).toMatchObject({ acquired: false, owner: first.leaseOwner, epoch: 1 });
    expect(refused.acquired === false && refused.message).toMatch(new RegExp(`^owned by ${first.leaseOwner} until \\d{4}-`));
    const busy = await second.run(prepare("e2"));
    expect(busy).toMatchObject({ outcome: "not_established", error: { code: "AGENT_BUSY", details: { reason: "lease_not_held", owner: first.leaseOwner } } });
    expect(await second.getExecution("e2")).toBeUndefined();
    expect(await first.run(prepare("e1"))).toEqual({ outcome: "active", revision: 1 });

    // Renewals keep the lease past its length.
    await sleep(700);
    expect(first.leaseOf("support")).toMatchObject({ epoch: 1 });
    expect(await first.run(prepare("e3"))).toEqual({ outcome: "active", revision: 1 });

    // Released on close; the standby's retry takes it over at epoch 2.
    const taken = new Promise<{ agentId: string; epoch: number }>((resolve) => {
      second.onLeaseAcquired = (agentId, grant) => resolve({ agentId, epoch: grant.epoch });
    });
    await first.close();
    expect(await taken).toEqual({ agentId: "support", epoch: 2 });
    expect(await second.run(prepare("e4"))).toEqual({ outcome: "active", revision: 1 });
    // The row names the new owner at the new epoch.
    const [row] = (await withClient((client) => client.query(`SELECT owner, epoch FROM ${schema}.leases`))).rows;
    expect(row).toEqual({ owner: second.leaseOwner, epoch: "2" });
  });

  it("a lease taken away is noticed by the renewal: admissions stop (AGENT_BUSY), barriers are fenced", async () => {
    const schema = freshSchema();
    const store = await open(schema);
    await store.ensureAgent("support", 1);
    await store.acquireLease("support");
    expect(await store.run(prepare("e1"))).toEqual({ outcome: "active", revision: 1 });
    await withClient((client) => client.query(`UPDATE ${schema}.leases SET owner = 'elsewhere', epoch = epoch + 1, expires_at = clock_timestamp() + interval '1 minute'`));
    await sleep(250);
    expect(store.leaseOf("support")).toBeUndefined();
    expect(await store.run(prepare("e2"))).toMatchObject({ outcome: "not_established", error: { code: "AGENT_BUSY" } });
    await expect(store.run({ type: "providerBarrier", executionId: "e1", expectedRevision: 1, callId: "m1", steps: [], usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 }, turns: 0, at: 2 }))
      .rejects.toMatchObject({ code: "EXECUTION_REHYDRATION_REQUIRED", details: { reason: "lease_lost", epoch: 1 } });
    expect((await store.getExecution("e1"))?.revision).toBe(1);
  });

  it("an agent asked for and never held is fenced with an epoch no lease has", async () => {
    const schema = freshSchema();
    const owner = await open(schema);
    const other = await open(schema);
    await owner.ensureAgent("support", 1);
    await owner.acquireLease("support");
    expect(await owner.run(prepare("e1"))).toEqual({ outcome: "active", revision: 1 });
    await other.acquireLease("support");
    expect(other.fenceOf("support")).toEqual({ owner: other.leaseOwner, epoch: 0 });
    await expect(other.run({ type: "providerBarrier", executionId: "e1", expectedRevision: 1, callId: "m1", steps: [], usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 }, turns: 0, at: 2 }))
      .rejects.toMatchObject({ details: { reason: "lease_lost" } });
  });
});
