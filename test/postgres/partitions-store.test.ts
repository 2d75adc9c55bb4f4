// Ownership by partitions in PostgresStore, several stores in one process
// (docs/decisions/0030, 0010): the partition count kept in the schema and
// the same hash on both sides; one owner per partition (a second store is
// refused naming the first, admits nothing, and takes over at epoch + 1
// once the first leaves); a partition taken away is noticed by the tick;
// the instance lock (an id in use is refused, default ids step aside);
// balance as stores join (a fourth one included) and leave; partitions with
// executions running are given up last.

import { describe, expect, it } from "vitest";
import { busyReleaseDeferredTicksMax, naturalPartitionsMax } from "../../host/store/postgres/partition-book.js";
import { partitionOf } from "../../host/store/postgres/partitions.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import type { PrepareExecutionOperation } from "../../host/store/records.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "./database.js";
import { quietSignals } from "../../host/store/capabilities.js";

/** Long enough that a loaded machine never lets a live store's lease
 * lapse (ticks every second): what expires, the tests expire themselves,
 * by writing the partition rows or closing a store. */
const defaultLeaseMs = 3_000;

async function open(schema: string, leaseMs = defaultLeaseMs, options: { instanceId?: string; partitions?: number } = {}): Promise<PostgresStore> {
  const store = await PostgresStore.open(`${postgresUrl}?schema=${schema}`, { leaseMs, ...options });
  atEnd(() => store.close());
  return store;
}

function prepare(executionId: string): PrepareExecutionOperation {
  return { type: "prepareExecution", executionId, agentId: "support", mode: "invoke", input: "hi", config: {}, journal: [], at: 1 };
}

/** The balance test's lease: ticks every half second. */
const balanceLeaseMs = 1_500;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean, what: () => string, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`timed out waiting: ${what()}`);
    await sleep(50);
  }
}

describe("PostgresStore partitions", () => {
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
    await expect(PostgresStore.open(`${postgresUrl}?schema=${schema}`, { partitions: 0 })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(PostgresStore.open(`${postgresUrl}?schema=${schema}`, { instanceId: "" })).rejects.toMatchObject({ code: "INVALID_INPUT" });
  });

  it("keeps the partition count the schema was created with, and hashes an agent id to the same partition as the database", async () => {
    const schema = freshSchema();
    const first = await open(schema, 1_000, { partitions: 16 });
    expect(first.heldPartitions()).toHaveLength(16);
    await first.close();
    const again = await open(schema, 1_000, { partitions: 64 });
    expect(again.heldPartitions()).toHaveLength(16);
    // More ids than the store remembers (decision 0114): the first ones are
    // hashed again on the second pass, the last ones answered from memory.
    const ids = Array.from({ length: naturalPartitionsMax + 500 }, (_, index) => `conversation-${index}-${"é".repeat(index % 3)}`);
    const { rows } = await withClient((client) =>
      client.query<{ id: string; partition: number }>(`SELECT id, ${schema}.partition_of(id) AS partition FROM unnest($1::text[]) AS id`, [ids]),
    );
    expect(rows.map((row) => row.partition)).toEqual(ids.map((id) => partitionOf(id, 16)));
    expect(rows.map((row) => row.partition)).toEqual(ids.map((id) => again.partitionOf(id)));
    expect(rows.map((row) => row.partition)).toEqual(ids.map((id) => again.partitionOf(id)));
    expect(new Set(rows.map((row) => row.partition)).size).toBe(16);
  });

  it("one owner at a time: the second is refused naming the first, admits nothing, and takes over at epoch 2 once the first leaves", async () => {
    const schema = freshSchema();
    // One partition: the first keeps it while the second lives (with more,
    // it gives half of them to the second to balance).
    const first = await open(schema, defaultLeaseMs, { partitions: 1 });
    const second = await open(schema);
    await first.ensureAgent("support", 1);
    expect(await first.acquireLease("support")).toMatchObject({ acquired: true, owner: first.leaseOwner, epoch: 1 });
    expect(await first.acquireLease("support")).toMatchObject({ acquired: true, epoch: 1 });
    const refused = await second.acquireLease("support");
    expect(refused).toMatchObject({ acquired: false, owner: first.leaseOwner, epoch: 1 });
    expect(refused.acquired === false && refused.message).toMatch(new RegExp(`^partition \\d+ is held by ${first.leaseOwner} until \\d{4}-`));
    const busy = await second.run(prepare("e2"));
    expect(busy).toMatchObject({ outcome: "not_established", error: { code: "AGENT_BUSY", details: { reason: "lease_not_held", owner: first.leaseOwner } } });
    expect(await second.getExecution("e2")).toBeUndefined();
    expect(await first.run(prepare("e1"))).toEqual({ outcome: "active", revision: 1, firstOfAgent: true });

    // Renewals keep the partition past its lease: once the database's
    // clock is past the expiry of the first grant, it is still held at epoch 1.
    const firstExpiry = first.leaseOf("support")!.expiresAt;
    const serverNow = async () =>
      Number(
        (await withClient((client) => client.query<{ now: string }>("SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now"))).rows[0]!.now,
      );
    while ((await serverNow()) <= firstExpiry) await sleep(100);
    expect(first.leaseOf("support")).toMatchObject({ epoch: 1 });
    expect(first.leaseOf("support")!.expiresAt).toBeGreaterThan(firstExpiry);
    expect(await first.run(prepare("e3"))).toEqual({ outcome: "active", revision: 1 });

    // Released on close; the second's tick takes the partition at epoch 2.
    const taken = new Promise<{ agentId: string; epoch: number }>((resolve) => {
      second.listen({ ...quietSignals, leaseAcquired: (agentId, grant) => resolve({ agentId, epoch: grant.epoch }) });
    });
    await first.close();
    expect(await taken).toEqual({ agentId: "support", epoch: 2 });
    expect(await second.run(prepare("e4"))).toEqual({ outcome: "active", revision: 1 });
    const [row] = (
      await withClient((client) => client.query(`SELECT owner, epoch FROM ${schema}.partitions WHERE partition = ${schema}.partition_of('support')`))
    ).rows;
    expect(row).toEqual({ owner: second.leaseOwner, epoch: "2" });
  });

  it("a partition taken away is noticed by the tick: admissions stop (AGENT_BUSY), barriers are fenced", async () => {
    const schema = freshSchema();
    const store = await open(schema);
    await store.ensureAgent("support", 1);
    await store.acquireLease("support");
    expect(await store.run(prepare("e1"))).toEqual({ outcome: "active", revision: 1, firstOfAgent: true });
    await withClient((client) =>
      client.query(
        `UPDATE ${schema}.partitions SET owner = 'elsewhere', epoch = epoch + 1, expires_at = clock_timestamp() + interval '1 hour' WHERE partition = ${schema}.partition_of('support')`,
      ),
    );
    // The next tick's renewal finds it gone.
    await until(
      () => store.leaseOf("support") === undefined,
      () => "the tick to notice the partition taken away",
    );
    expect(await store.run(prepare("e2"))).toMatchObject({ outcome: "not_established", error: { code: "AGENT_BUSY" } });
    await expect(
      store.run({
        type: "providerBarrier",
        executionId: "e1",
        expectedRevision: 1,
        callId: "m1",
        steps: [],
        usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
        turns: 0,
        at: 2,
      }),
    ).rejects.toMatchObject({ code: "EXECUTION_REHYDRATION_REQUIRED", details: { reason: "lease_lost", epoch: 1 } });
    expect((await store.getExecution("e1"))?.revision).toBe(1);
  });

  it("an agent asked for whose partition was never held here is fenced with an epoch no partition has", async () => {
    const schema = freshSchema();
    const owner = await open(schema, defaultLeaseMs, { partitions: 1 });
    const other = await open(schema);
    await owner.ensureAgent("support", 1);
    await owner.acquireLease("support");
    expect(await owner.run(prepare("e1"))).toEqual({ outcome: "active", revision: 1, firstOfAgent: true });
    await other.acquireLease("support");
    expect(other.fenceOf("support")).toEqual({ owner: other.leaseOwner, epoch: 0 });
    await expect(
      other.run({
        type: "providerBarrier",
        executionId: "e1",
        expectedRevision: 1,
        callId: "m1",
        steps: [],
        usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
        turns: 0,
        at: 2,
      }),
    ).rejects.toMatchObject({ details: { reason: "lease_lost" } });
  });

  it("an instance id held by a live process is refused; default ids step aside (host, then host:pid)", async () => {
    const schema = freshSchema();
    const named = await open(schema, 1_000, { instanceId: "box-1" });
    expect(named.leaseOwner).toBe("box-1");
    await expect(PostgresStore.open(`${postgresUrl}?schema=${schema}`, { instanceId: "box-1" })).rejects.toMatchObject({
      code: "STORE",
      message: expect.stringContaining('instanceId "box-1" is in use by a live process'),
    });
    const first = await open(schema);
    const second = await open(schema);
    expect(second.leaseOwner).not.toBe(first.leaseOwner);
    expect(second.leaseOwner.startsWith(first.leaseOwner)).toBe(true);
    // Closed, the id is free again: a process opening with it reclaims what it held.
    await named.close();
    const reopened = await open(schema, 1_000, { instanceId: "box-1" });
    expect(reopened.leaseOwner).toBe("box-1");
  });

  it("balances as stores join (a fourth included) and leave, without a coordinator: each holds its share, every partition held once", async () => {
    const schema = freshSchema();
    // Shorter ticks: 16 partitions move per tick. A lease lapsing on a
    // loaded machine only moves partitions early; balance is still reached.
    const stores = [await open(schema, balanceLeaseMs)];
    const counts = () => stores.map((store) => store.heldPartitions().length);
    const balanced = (size: number) => {
      const held = counts();
      const share = Math.ceil(256 / size);
      return held.length === size && held.every((count) => count >= share - size && count <= share) && held.reduce((a, b) => a + b, 0) === 256;
    };
    expect(counts()).toEqual([256]);
    for (const size of [2, 3, 4]) {
      const joinedAt = Date.now();
      stores.push(await open(schema, balanceLeaseMs));
      await until(
        () => balanced(size),
        () => `balance over ${size}: ${JSON.stringify(counts())}`,
      );
      console.log(`${size} stores balanced ${Date.now() - joinedAt} ms after the join (lease ${balanceLeaseMs} ms): ${JSON.stringify(counts())}`);
    }
    // Every partition held by exactly one live store: the owner the database
    // names is the store that holds it, at the epoch it holds.
    const { rows } = await withClient((client) =>
      client.query<{ partition: number; owner: string; epoch: string; live: boolean }>(
        `SELECT partition, owner, epoch, expires_at > clock_timestamp() AS live FROM ${schema}.partitions ORDER BY partition`,
      ),
    );
    expect(rows.filter((row) => !row.live)).toEqual([]);
    const holders = new Map(
      stores.flatMap((store) => store.heldPartitions().map((grant) => [grant.partition, { owner: grant.owner, epoch: String(grant.epoch) }] as const)),
    );
    expect(rows.map((row) => ({ owner: row.owner, epoch: row.epoch }))).toEqual(rows.map((row) => holders.get(row.partition)));
    expect(new Set(rows.map((row) => row.owner))).toEqual(new Set(stores.map((store) => store.leaseOwner)));
    // One leaves: the other three take its partitions at once (released on close).
    const leaving = stores.pop()!;
    await leaving.close();
    await until(
      () => balanced(3),
      () => `balance after a leave: ${JSON.stringify(counts())}`,
    );
  });

  it("gives up idle partitions first: those with an execution running stay with their holder while idle ones move; busy ones move too once no idle one was found for a while", async () => {
    const schema = freshSchema();
    /** A conversation id in each partition. */
    const agentIn = new Map<number, string>();
    for (let index = 0; agentIn.size < 256; index += 1) {
      const agentId = `user-${index}`;
      if (!agentIn.has(partitionOf(agentId, 256))) agentIn.set(partitionOf(agentId, 256), agentId);
    }
    const first = await open(schema, balanceLeaseMs);
    expect(first.heldPartitions().length).toBe(256);
    // 100 partitions have an execution running in the first store.
    const busy = new Set(Array.from({ length: 100 }, (_, index) => index * 2));
    let running = [...busy].map((partition) => agentIn.get(partition)!);
    first.listen({ ...quietSignals, runningAgents: () => running });
    const second = await open(schema, balanceLeaseMs);
    const heldBy = (store: PostgresStore) => new Set(store.heldPartitions().map((grant) => grant.partition));
    await until(
      () => heldBy(first).size === 128 && heldBy(second).size === 128,
      () => `balance over 2: ${heldBy(first).size}, ${heldBy(second).size}`,
    );
    expect([...busy].filter((partition) => !heldBy(first).has(partition))).toEqual([]);
    // Every partition the first store holds is busy now: a third store
    // still gets its share, after the deferral.
    running = [...heldBy(first)].map((partition) => agentIn.get(partition)!);
    const third = await open(schema, balanceLeaseMs);
    await until(
      () => heldBy(first).size <= 86,
      () => `the first store kept ${heldBy(first).size} busy partitions (share 86) after ${busyReleaseDeferredTicksMax} ticks`,
    );
    expect(heldBy(third).size).toBeGreaterThan(0);
  });
});
