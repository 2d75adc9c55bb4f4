// Lease races a process resolves itself are waited for, not refused
// (docs/decisions/0055, "Lease races with itself"): a start on a partition
// held here whose renewal is late waits for this process's own tick; an
// acquire whose take found the partition already taken by this process's
// own tick waits for that tick, and never names this process as the holder.
// Both made deterministic by holding a statement on its way: the tick's
// through a TCP proxy, the on-demand take through the pool the book uses.

import pg from "pg";
import { describe, expect, it } from "vitest";
import { ConversationPhase, RecoveryCause } from "../../assembly/abi.js";
import { Phronomy, type Environment } from "../../host/index.js";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import type { PostgresStore } from "../../host/store/postgres-store.js";
import { PartitionBook } from "../../host/store/postgres/partition-book.js";
import { recordingLogger } from "../runtime/helpers.js";
import { CuttableProxy } from "../support/cuttable-proxy.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "./database.js";
import { eventually, freePartitionsSchema } from "./fixtures/free-schema.js";

const echoModel = scriptedModel(({ messages }) => {
  const lastUser = [...messages].reverse().find((message) => message.role === "user") as { content: string } | undefined;
  return { text: `echo: ${lastUser?.content ?? ""}` };
});

/** A statement held until released; `caught` once it is on its way. */
interface Held {
  readonly caught: Promise<void>;
  release(): void;
}

/** The pool's queries, except that the next `take_partitions` one asked
 * for after `holdNextTake()` waits until released. */
function holdingPool(pool: pg.Pool): { pool: pg.Pool; holdNextTake: () => Held } {
  let hold: { caught: () => void; released: Promise<void> } | undefined;
  const query = (text: string, values?: unknown[]): Promise<unknown> => {
    if (hold === undefined || !text.includes("take_partitions(")) return pool.query(text, values);
    const { caught, released } = hold;
    hold = undefined;
    caught();
    return released.then(() => pool.query(text, values));
  };
  const holdNextTake = (): Held => {
    let caught!: () => void;
    let release!: () => void;
    const caughtPromise = new Promise<void>((resolve) => {
      caught = resolve;
    });
    hold = {
      caught,
      released: new Promise<void>((resolve) => {
        release = resolve;
      }),
    };
    return { caught: caughtPromise, release };
  };
  return { pool: { query } as unknown as pg.Pool, holdNextTake };
}

describe("lease races with itself (PostgreSQL)", () => {
  it("a start on a partition held here whose renewal is late waits for this process's tick, and runs", async () => {
    const leaseMs = 3_000;
    const proxy = await CuttableProxy.start(postgresUrl);
    atEnd(() => proxy.close());
    const store = `${proxy.urlFor(postgresUrl)}?schema=${freshSchema()}&lease_ms=${leaseMs}`;
    const env: Environment = await Phronomy.open({ store, logger: recordingLogger() });
    atEnd(() => env.close());
    const postgres = env.store as PostgresStore;
    const agent = env.agent({ id: "support", model: echoModel });
    expect((await agent.start("before").result).output).toBe("echo: before");

    // The lease tick's statement is held on its way past the admission
    // window: the partition is still held here, its renewal late.
    const tick = proxy.holdWhen((text) => text.includes("INSERT INTO partition_members"));
    await tick.caught;
    await eventually(
      () => postgres.leaseOf("support"),
      (lease) => lease === undefined,
      "the admission window lapsed",
    );
    expect(postgres.partitionHeld("support")).toBe(true);

    const run = agent.start("during");
    run.result.catch(() => undefined);
    // Before: refused at once (AGENT_BUSY lease_not_held). Now it waits for
    // the tick, released after a moment (or once the run has ended): the
    // settling is a recovery the core knows (LeaseSettling), and the start
    // waits for it as the core answers (WaitUntilReady).
    const slot = env.conversations.slotOf("support")!;
    await eventually(
      () => env.core.conversation(slot),
      (record) => record.phase === ConversationPhase.Recovering && record.cause === RecoveryCause.LeaseSettling,
      "the settling told to the core",
    );
    await eventually(
      () => env.queues.waitingStarts(),
      (waiting) => waiting === 1,
      "the start waiting for the conversation",
    );
    await Promise.race([run.result.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 1_000))]);
    tick.release();
    expect((await run.result).output).toBe("echo: during");
    expect(env.core.conversation(slot).phase).toBe(ConversationPhase.Ready);
    expect(env.queues.waitingStarts()).toBe(0);
  }, 60_000);

  it("an acquire whose take lost to this process's own tick waits for that tick: acquired, never 'held by' itself", async () => {
    const leaseMs = 1_000;
    const { schema } = await freePartitionsSchema(leaseMs, 1);
    const heldElsewhere = `UPDATE ${schema}.partitions SET owner = 'elsewhere', epoch = 1, expires_at = clock_timestamp() + interval '1 hour'`;
    await withClient((client) => client.query(heldElsewhere));
    const real = new pg.Pool({ connectionString: postgresUrl, options: `-c search_path=${schema}`, max: 4 });
    atEnd(() => real.end());
    const session = await real.connect();
    atEnd(async () => session.release());
    // The tick's statement, on its own connection, held when asked.
    let tickHold: { caught: () => void; released: Promise<void> } | undefined;
    const tickSession = {
      query: (text: string, values?: unknown[]) => {
        if (tickHold === undefined) return session.query(text, values);
        const { caught, released } = tickHold;
        tickHold = undefined;
        caught();
        return released.then(() => session.query(text, values));
      },
    } as unknown as pg.ClientBase;
    const { pool, holdNextTake } = holdingPool(real);
    const book = new PartitionBook(pool, () => tickSession, "b", leaseMs, 1, {
      acquired: () => undefined,
      partitionsAcquired: () => undefined,
      lost: () => undefined,
      afterPass: async () => undefined,
      closing: () => false,
      busy: () => new Set(),
    });
    await book.start();
    atEnd(() => book.stop());

    // The tick waits on its way; the other owner's lease runs out.
    let releaseTick!: () => void;
    const tickCaught = new Promise<void>((caught) => {
      tickHold = {
        caught,
        released: new Promise<void>((resolve) => {
          releaseTick = resolve;
        }),
      };
    });
    await tickCaught;
    await withClient((client) => client.query(`UPDATE ${schema}.partitions SET expires_at = clock_timestamp()`));
    // The acquire's take is held; the tick goes on and takes the partition.
    const take = holdNextTake();
    const acquiring = book.acquire("c");
    await take.caught;
    releaseTick();
    await eventually(
      () => book.heldPartitions().length,
      (count) => count === 1,
      "the tick took the partition",
    );
    // Then the acquire's take reaches the database: the row is this process's.
    take.release();
    const acquisition = await acquiring;
    expect(acquisition).toMatchObject({ acquired: true, owner: "b", epoch: 2 });
  }, 60_000);
});
