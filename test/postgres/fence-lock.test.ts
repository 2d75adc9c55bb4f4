// The partition fence lock (docs/decisions/0042): the two interleavings of
// a write and a takeover of its partition, forced with a second connection
// instead of timing.
//
// * A write in flight (its fence checked, then held on a row lock another
//   connection holds) keeps a takeover of its partition waiting; the write
//   commits, then the takeover. Under migration 10's functions (the fence
//   read without a lock) the same interleaving lets the takeover commit
//   first and the stale write after it: the gap this closes.
// * A write arriving while a takeover is uncommitted waits for it, then
//   sees it and is refused (`lease_lost`), for the grouped writes
//   (`barrier`) and the transactions (`enqueueMessage`) alike.
// * The cancel of a queued message is fenced too (docs/decisions/0047): a
//   process that lost the partition writes nothing.
//
// The write ledger (`fixtures/write-ledger.ts`) checks each case's order.

import pg from "pg";
import { describe, expect, it } from "vitest";
import { fenceWritesByPartition } from "../../host/store/postgres/functions.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import type { PrepareExecutionOperation, ProviderBarrierOperation } from "../../host/store/records.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "./database.js";
import { installWriteLedger, readLeaseHistory, readWrites, writesAfterTakeover, writesOutsideLease } from "./fixtures/write-ledger.js";

/** Long: no tick of the store's runs during a case (a renewal holding the
 * partition rows would make the takeover skip them). */
const leaseMs = 60_000;

function prepare(executionId: string): PrepareExecutionOperation {
  return { type: "prepareExecution", executionId, agentId: "support", mode: "invoke", input: "hi", config: {}, journal: [], at: 1 };
}

function barrier(executionId: string, expectedRevision: number): ProviderBarrierOperation {
  return {
    type: "providerBarrier",
    executionId,
    expectedRevision,
    callId: `m${expectedRevision}`,
    steps: [],
    usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
    turns: 0,
    at: 2,
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A connection of the test's own in the store's schema (its functions
 * name its tables unqualified, as the store's connections find them), open
 * until the test ends. */
async function connection(schema: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: postgresUrl, options: `-c search_path=${schema}` });
  await client.connect();
  atEnd(() => client.end());
  return client;
}

/** Waits until a backend of `applicationName` whose query contains `text`
 * waits for a lock of this type (`advisory`, `transactionid`, `tuple`). */
async function waitingOn(applicationName: string, text: string, events: readonly string[]): Promise<void> {
  const end = Date.now() + 30_000;
  for (;;) {
    const { rows } = await withClient((client) =>
      client.query<{ wait_event: string }>(
        "SELECT wait_event FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock' AND wait_event = ANY($2::text[]) AND position($3 in query) > 0",
        [applicationName, events, text],
      ),
    );
    if (rows.length > 0) return;
    if (Date.now() > end) throw new Error(`timed out waiting for a backend of ${applicationName} running ${text} to wait on ${events.join(" or ")}`);
    await sleep(20);
  }
}

/** A store holding the 4 partitions at epoch 1 as instance `first`, with
 * execution e1 of `support` prepared and the write ledger installed. The
 * takeovers below are instant reclaims by the same instance id (as a
 * restarted process does): no expiry, so the store's own tick does not
 * take the partition back meanwhile. */
async function setUp(): Promise<{ schema: string; store: PostgresStore; name: string; partition: number }> {
  const schema = freshSchema();
  const name = `fence-${schema.slice(-10)}`;
  const store = await PostgresStore.open(`${postgresUrl}?schema=${schema}&application_name=${name}`, { leaseMs, instanceId: "first", partitions: 4 });
  atEnd(() => store.close());
  await withClient((client) => installWriteLedger(client, schema));
  await store.ensureAgent("support", 1);
  await store.acquireLease("support");
  expect(await store.run(prepare("e1"))).toEqual({ outcome: "active", revision: 1, firstOfAgent: true });
  return { schema, store, name, partition: store.partitionOf("support") };
}

/** Takes every partition of `first` at epoch + 1 (instant reclaim); the
 * epoch `partition` got. */
async function reclaim(client: pg.ClientBase, schema: string, partition: number): Promise<number | undefined> {
  const { rows } = await client.query<{ taken_partition: number; taken_epoch: string }>(`SELECT * FROM ${schema}.take_partitions('first', NULL, 60000, 60000)`);
  const row = rows.find((taken) => Number(taken.taken_partition) === partition);
  return row === undefined ? undefined : Number(row.taken_epoch);
}

describe("PostgreSQL partition fence lock", () => {
  it("a takeover waits for a write in flight, which commits first", async () => {
    const { schema, store, name, partition } = await setUp();
    // The barrier passes its fence check, then waits for e1's row lock.
    const holder = await connection(schema);
    await holder.query("BEGIN");
    await holder.query(`SELECT 1 FROM ${schema}.executions WHERE execution_id = 'e1' FOR UPDATE`);
    const written = store.run(barrier("e1", 1));
    await waitingOn(name, "barrier(", ["transactionid", "tuple"]);

    const taker = await connection(schema);
    await taker.query("SET application_name = 'fence-taker'");
    let taken = false;
    const takeover = reclaim(taker, schema, partition).finally(() => {
      taken = true;
    });
    // The takeover waits for the write's fence lock, however long the write takes.
    await waitingOn("fence-taker", "take_partitions", ["advisory"]);
    await sleep(200);
    expect(taken).toBe(false);

    await holder.query("COMMIT");
    expect(await written).toEqual({ revision: 2 });
    expect(await takeover).toBe(2);
    const history = await withClient((client) => readLeaseHistory(client, schema));
    const writes = await withClient((client) => readWrites(client, schema));
    const barrierWrites = writes.filter((write) => write.table === "executions" && write.leaseEpoch === 1 && write.writer === name);
    expect(barrierWrites.length).toBeGreaterThan(0);
    expect(writesAfterTakeover(writes, history)).toEqual([]);
  });

  it("without the lock (migration 10's functions) the same interleaving commits the stale write after the takeover", async () => {
    const { schema, store, name, partition } = await setUp();
    // The fence read without a lock, and a takeover that takes none.
    await withClient(async (client) => {
      await client.query(`SET search_path = ${schema}`);
      await fenceWritesByPartition(client);
    });
    const holder = await connection(schema);
    await holder.query("BEGIN");
    await holder.query(`SELECT 1 FROM ${schema}.executions WHERE execution_id = 'e1' FOR UPDATE`);
    const written = store.run(barrier("e1", 1));
    await waitingOn(name, "barrier(", ["transactionid", "tuple"]);

    // Another process takes the partition over and commits, the write paused.
    await withClient((client) =>
      client.query(
        `UPDATE ${schema}.partitions SET owner = 'second', epoch = epoch + 1, expires_at = clock_timestamp() + interval '1 minute' WHERE partition = $1`,
        [partition],
      ),
    );
    await holder.query("COMMIT");
    expect(await written).toEqual({ revision: 2 });
    // The barrier of epoch 1 committed after it: its commit saw 'second'.
    const writes = await withClient((client) => readWrites(client, schema));
    const late = writesOutsideLease(writes, name, "first");
    expect(late.length).toBeGreaterThan(0);
    expect(late.every((write) => write.executionId === "e1" && write.leaseOwner === "second" && write.leaseEpoch === 2)).toBe(true);
  });

  it("a write arriving during a takeover waits for it, sees it and is refused", async () => {
    const { schema, store, name, partition } = await setUp();
    const taker = await connection(schema);
    await taker.query("BEGIN");
    expect(await reclaim(taker, schema, partition)).toBe(2);

    const written = store.run(barrier("e1", 1));
    const settled = written.then(
      () => "applied",
      () => "refused",
    );
    await waitingOn(name, "barrier(", ["advisory"]);
    // A transaction's write (an enqueue) waits the same way.
    const queued = store.enqueueMessage({ executionId: "q1", agentId: "support", input: "later", config: {}, at: 3, limit: 10, front: false });
    const queuedSettled = queued.then(
      () => "applied",
      () => "refused",
    );
    await waitingOn(name, "partition_fence_held", ["advisory"]);
    await sleep(200);
    expect(await Promise.race([settled, sleep(0).then(() => "waiting")])).toBe("waiting");

    await taker.query("COMMIT");
    await expect(written).rejects.toMatchObject({ code: "EXECUTION_REHYDRATION_REQUIRED", details: { reason: "lease_lost", epoch: 1 } });
    await expect(queued).rejects.toMatchObject({ code: "EXECUTION_REHYDRATION_REQUIRED", details: { reason: "lease_lost", epoch: 1 } });
    expect(await queuedSettled).toBe("refused");
    expect((await store.getExecution("e1"))?.revision).toBe(1);
    const writes = await withClient((client) => readWrites(client, schema));
    expect(writes.filter((write) => write.leaseEpoch !== 1)).toEqual([]);
  });

  it("a queued message's cancel from a process whose partition was taken over writes nothing (lease_lost); the message stays queued", async () => {
    const { schema, store, partition } = await setUp();
    expect(await store.enqueueMessage({ executionId: "q1", agentId: "support", input: "later", config: {}, at: 3, limit: 10, front: false })).toEqual({
      seq: 1,
      position: 1,
    });
    const taker = await connection(schema);
    expect(await reclaim(taker, schema, partition)).toBe(2);
    const error = { code: "CANCELLED", message: "cancelled" };
    await expect(store.cancelQueued({ executionId: "q1", error, at: 4 })).rejects.toMatchObject({
      code: "EXECUTION_REHYDRATION_REQUIRED",
      details: { reason: "lease_lost", epoch: 1 },
    });
    expect(await store.getExecution("q1")).toBeUndefined();
    expect((await store.queuedMessages("support")).map((message) => message.executionId)).toEqual(["q1"]);
    // Its timeline holds the enqueue's step only: no terminal step.
    expect((await store.listSteps("q1")).map((step) => step.kind)).toEqual(["queued"]);
  });
});
