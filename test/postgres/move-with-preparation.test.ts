// The core's `TakeHere` carried out by the start's preparation
// (docs/decisions/0119), through the public API: two processes opened with
// `takeIdleHere` on one database, two partitions, one each. The move has
// no statement of its own: `home_conversation` runs first in the
// preparation's statement, and the preparation only when it moved. A move
// refused — the conversation has rows, the other process won the race, its
// lock was not granted in time — writes nothing and refuses the start as
// the move's refusal (`moveRefused`), which the core places again: filed
// for the holder. A connection lost while the move waits leaves nothing:
// move and preparation are one transaction.

import { describe, expect, it } from "vitest";
import { Phronomy, type Environment } from "../../host/index.js";
import { moveLockClass } from "../../host/store/postgres/homes.js";
import { fenceLockClass, partitionOf } from "../../host/store/postgres/partitions.js";
import type { PostgresStore } from "../../host/store/postgres-store.js";
import { agentRunModel, lookupTool, recordingLogger } from "../runtime/helpers.js";
import { atEnd, backendBlockedBy, withClient } from "./database.js";
import { eventually, freePartitionsSchema } from "./fixtures/free-schema.js";
import { groupedStatementsOf } from "./fixtures/grouped-statements.js";

const count = 2;

async function openAs(url: string, instanceId: string): Promise<Environment> {
  const environment = await Phronomy.open({ store: url, logger: recordingLogger(), postgres: { instanceId, takeIdleHere: true } });
  atEnd(() => environment.close());
  return environment;
}

function conversationIn(partition: number, prefix: string): string {
  for (let index = 0; ; index += 1) if (partitionOf(`${prefix}-${index}`, count) === partition) return `${prefix}-${index}`;
}

function defineSupport(environment: Environment) {
  return environment.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
}

async function setUp(leaseMs: number) {
  const { schema, url } = await freePartitionsSchema(leaseMs, count);
  const a = await openAs(url, "a");
  const b = await openAs(url, "b");
  const held = (environment: Environment) => (environment.store as PostgresStore).heldPartitions().map((grant) => grant.partition);
  await eventually(
    () => [held(a).length, held(b).length],
    ([one, other]) => one === 1 && other === 1,
    "each process holds one partition",
  );
  const storeB = b.store as PostgresStore;
  await eventually(
    () => storeB.partitionScanned(conversationIn(held(b)[0]!, "other")),
    (yes) => yes,
    "b's partition recovered",
  );
  return { schema, sa: defineSupport(a), sb: defineSupport(b), storeB, pa: held(a)[0]!, pb: held(b)[0]! };
}

async function countOf(schema: string, table: string, agentId: string): Promise<number> {
  return withClient(
    async (client) => (await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.${table} WHERE agent_id = $1`, [agentId])).rows[0]!.n,
  );
}

const movingPreparations = (grouped: readonly string[]) => grouped.filter((text) => text.includes("home_conversation") && text.includes("prepare_execution"));

describe("the move carried by the preparation (PostgreSQL, docs/decisions/0119)", () => {
  it("a conversation with rows: the moving preparation writes nothing, the start is placed again and filed for its holder", async () => {
    const { schema, sa, sb, storeB, pa } = await setUp(3_000);
    const id = conversationIn(pa, "has-rows");
    expect((await sa.conversation(id).start("Where is order 42?").result).outcome).toBe("completed");
    const grouped = groupedStatementsOf(storeB);
    const result = await sb.conversation(id).start("And order 43?").result;
    expect(result.outcome).toBe("completed");
    expect(movingPreparations(grouped)).toHaveLength(1);
    expect(await countOf(schema, "conversation_homes", id)).toBe(0);
    expect(await countOf(schema, "approval_inbox", id)).toBe(1);
    expect(await countOf(schema, "executions", id)).toBe(2);
    // b noted no home: the conversation lives in its natural partition.
    expect(storeB.conversationPartition(id)).toBe(pa);
  }, 60_000);

  it("two processes racing for one new conversation: one runs it where it lives, the other's start is filed for it", async () => {
    const { schema, sa, sb, pb } = await setUp(3_000);
    const settle = (run: Promise<{ outcome: string }>) =>
      run.then(
        (result) => result.outcome,
        (error: unknown) => String((error as { code?: unknown }).code),
      );
    for (let round = 0; round < 4; round += 1) {
      const id = conversationIn(pb === 0 ? 1 : 0, `raced-${round}`);
      const outcomes = await Promise.all([
        settle(sa.conversation(id).start("Where is order 42?").result),
        settle(sb.conversation(id).start("And order 43?").result),
      ]);
      // Moved to b (a's start then filed for b), or kept by a (b's move
      // refused, its start filed for a): the second to reach the holder
      // may find the first still running (AGENT_BUSY, onBusy "reject"), as
      // two starts at one process do. Never a store failure, never two
      // runs of one conversation at once in two partitions.
      expect(
        outcomes.every((outcome) => outcome === "completed" || outcome === "AGENT_BUSY"),
        outcomes.join(),
      ).toBe(true);
      expect(outcomes).toContain("completed");
      const homes = await withClient((client) =>
        client.query<{ partition: number }>(`SELECT partition FROM ${schema}.conversation_homes WHERE agent_id = $1`, [id]),
      );
      expect(homes.rows.map((row) => row.partition).filter((partition) => partition !== pb)).toEqual([]);
      expect(await countOf(schema, "approval_inbox", id)).toBeLessThanOrEqual(1);
      const ran = await withClient((client) =>
        client.query<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM ${schema}.executions WHERE agent_id = $1 GROUP BY status`, [id]),
      );
      expect(ran.rows).toEqual([{ status: "terminal", n: outcomes.filter((outcome) => outcome === "completed").length }]);
    }
  }, 90_000);

  it("its lock not granted in time: the move is refused, nothing written, the start filed for the natural holder", async () => {
    const { schema, sb, storeB, pa } = await setUp(3_000);
    const id = conversationIn(pa, "locked");
    await withClient(async (holder) => {
      const key = moveLockClass(await fenceLockClass(holder, schema));
      await holder.query("SELECT pg_advisory_lock($1, hashtext($2))", [key, id]);
      const started = sb.conversation(id).start("Where is order 42?").result;
      // Refused after the wait (lease/6), placed again: filed for a.
      await eventually(
        () => countOf(schema, "approval_inbox", id),
        (n) => n === 1,
        "the start filed for a",
      );
      expect(await countOf(schema, "conversation_homes", id)).toBe(0);
      expect(storeB.conversationPartition(id)).toBe(pa);
      await holder.query("SELECT pg_advisory_unlock($1, hashtext($2))", [key, id]);
      expect((await started).outcome).toBe("completed");
    });
    expect(await countOf(schema, "conversation_homes", id)).toBe(0);
  }, 60_000);

  it("its connection lost while the move waits: nothing of the move nor the preparation is left; the next start moves it", async () => {
    const { schema, sb, storeB, pa, pb } = await setUp(6_000);
    const id = conversationIn(pa, "lost");
    const settled = await withClient(async (holder) => {
      const key = moveLockClass(await fenceLockClass(holder, schema));
      await holder.query("SELECT pg_advisory_lock($1, hashtext($2))", [key, id]);
      const started = sb
        .conversation(id)
        .start("Where is order 42?")
        .result.then(
          (result) => ({ result }),
          (error: unknown) => ({ error }),
        );
      // The moving preparation's backend, waiting for the conversation's lock: killed.
      const waiting = await backendBlockedBy(holder);
      await holder.query("SELECT pg_terminate_backend($1)", [waiting]);
      const outcome = await started;
      await holder.query("SELECT pg_advisory_unlock($1, hashtext($2))", [key, id]);
      return outcome;
    });
    // Whatever the start was told (read back, not committed), the database holds nothing of it.
    if ("result" in settled) expect(settled.result.outcome).not.toBe("completed");
    expect(await countOf(schema, "conversation_homes", id)).toBe(0);
    expect(await countOf(schema, "executions", id)).toBe(0);
    expect(await countOf(schema, "agents", id)).toBe(0);
    // Its pending move was dropped: b places it by its natural partition again …
    expect(storeB.conversationPartition(id)).toBe(pa);
    // … and the next start at b moves it and runs it there.
    expect((await sb.conversation(id).start("And order 43?").result).outcome).toBe("completed");
    expect(storeB.conversationPartition(id)).toBe(pb);
    expect(await countOf(schema, "approval_inbox", id)).toBe(0);
  }, 60_000);
});
