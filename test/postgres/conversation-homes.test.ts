// Conversation homes (docs/decisions/0101), at the store: a conversation
// that has nothing anywhere is moved, in one statement, from its partition
// (held by another process) into a partition held by the process its start
// landed at. From then on that partition's fence is its fence: the natural
// owner's write is refused without losing its partition, the mover writes,
// a takeover of the home partition fences the mover and recovers the
// conversation, and a process opened later places it by its home. A
// conversation with any row (an execution, a queued message, a filed start,
// a schedule) is not moved. Moves asked together leave as one statement
// (docs/decisions/0113).

import { describe, expect, it, vi } from "vitest";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { prepare, providerBarrier } from "../store/fixtures.js";
import { atEnd, withClient } from "./database.js";
import { eventually } from "./fixtures/free-schema.js";
import { conversationIn, twoStoresOnePartitionEach } from "./fixtures/two-stores.js";

const leaseMs = 1_000;

const setUp = () => twoStoresOnePartitionEach(leaseMs);

describe("conversation homes (PostgreSQL)", () => {
  it("moves a conversation with nothing anywhere to the process its start landed at; the natural owner is fenced out and keeps its partition", async () => {
    const { schema, a, b, pa, pb } = await setUp();
    const moved = conversationIn(pa, "moved");
    expect(b.conversationPartition(moved)).toBe(pa);
    expect(await b.takeConversationHere(moved)).toEqual({ outcome: "moved", partition: pb });
    expect(b.conversationPartition(moved)).toBe(pb);
    expect(b.fenceOf(moved)).toEqual({ owner: "b", epoch: b.heldPartitions()[0]!.epoch });
    // Its home is recorded once; asked again, from either side, it names it.
    expect(await b.takeConversationHere(moved)).toEqual({ outcome: "home", partition: pb });
    const rows = await withClient((client) => client.query(`SELECT agent_id, partition, moved_by FROM ${schema}.conversation_homes`));
    expect(rows.rows).toEqual([{ agent_id: moved, partition: pb, moved_by: "b" }]);

    // The natural owner does not know yet: its preparation is refused by
    // the fence (the home's), it learns the home, and keeps its partition.
    expect(a.conversationPartition(moved)).toBe(pa);
    const refused = (await a.run(prepare("e-a", moved))) as { outcome: string; error?: { code: string; details?: Record<string, unknown> } };
    expect(refused.outcome).toBe("not_established");
    expect(refused.error?.code).toBe("AGENT_BUSY");
    // The refusal names the home: the core places the start again (0112).
    expect(refused.error?.details).toMatchObject({ reason: "lease_not_held", movedTo: pb });
    expect(a.conversationPartition(moved)).toBe(pb);
    expect(a.heldPartitions().map((grant) => grant.partition)).toEqual([pa]);
    expect(await a.run(prepare("e-a2", conversationIn(pa, "own")))).toMatchObject({ outcome: "active" });

    // The mover writes under its own partition's fence.
    expect(await b.run(prepare("e-b", moved))).toMatchObject({ outcome: "active", revision: 1 });
    expect(await b.run(providerBarrier("e-b", 1))).toBeDefined();
    expect(await a.takeConversationHere(moved)).toEqual({ outcome: "home", partition: pb });
  });

  it("moves asked in one event-loop round leave as one statement, each answered as if alone (docs/decisions/0113)", async () => {
    const { schema, a, b, pa, pb } = await setUp();
    const ran = conversationIn(pa, "ran-batch");
    expect(await a.run(prepare("e-ran-batch", ran))).toMatchObject({ outcome: "active" });
    const first = conversationIn(pa, "batch-1");
    const second = conversationIn(pa, "batch-2");
    // Spied, not replaced: the pool's own query runs.
    const spy = vi.spyOn(b.pool, "query");
    const moves = () => spy.mock.calls.filter(([text]) => typeof text === "string" && text.includes("home_conversation"));
    try {
      const answers = await Promise.all([first, second, ran, first].map((agentId) => b.takeConversationHere(agentId)));
      expect(answers).toEqual([
        { outcome: "moved", partition: pb },
        { outcome: "moved", partition: pb },
        { outcome: "refused", partition: pa },
        { outcome: "moved", partition: pb },
      ]);
      expect(moves()).toHaveLength(1);
      // Asked again in a later round: a statement of its own, answering the home.
      expect(await b.takeConversationHere(second)).toEqual({ outcome: "home", partition: pb });
      expect(moves()).toHaveLength(2);
    } finally {
      spy.mockRestore();
    }
    const homes = await withClient((client) => client.query(`SELECT agent_id, partition FROM ${schema}.conversation_homes ORDER BY agent_id`));
    expect(homes.rows).toEqual([first, second].sort().map((agentId) => ({ agent_id: agentId, partition: pb })));
    expect(b.movedHere(first) && b.movedHere(second)).toBe(true);
    expect(b.movedHere(ran)).toBe(false);
  });

  it("refuses to move a conversation that has an execution, a queued message, a filed start or a schedule", async () => {
    const { schema, a, b, pa } = await setUp();
    const ran = conversationIn(pa, "ran");
    expect(await a.run(prepare("e-ran", ran))).toMatchObject({ outcome: "active" });
    const filed = conversationIn(pa, "filed");
    await b.fileStart({ decisionId: "d-filed", executionId: "e-filed", agentId: filed, start: { input: "hi", options: {} }, filedAt: 1 });
    const queued = conversationIn(pa, "queued");
    await withClient((client) =>
      client.query(`INSERT INTO ${schema}.queued_messages (execution_id, agent_id, seq, input, config, created_at) VALUES ('e-q', $1, 1, '"hi"', '{}', 1)`, [
        queued,
      ]),
    );
    const scheduled = conversationIn(pa, "scheduled");
    await withClient((client) =>
      client.query(
        `INSERT INTO ${schema}.schedules (schedule_id, agent_id, input, options, state, revision, created_at, updated_at) VALUES ('s-1', $1, '"hi"', '{}', 'active', 1, 1, 1)`,
        [scheduled],
      ),
    );
    for (const agentId of [ran, filed, queued, scheduled]) {
      expect(await b.takeConversationHere(agentId), agentId).toEqual({ outcome: "refused", partition: pa });
      expect(b.conversationPartition(agentId)).toBe(pa);
    }
    // Its own partition: nothing to move.
    expect(await a.takeConversationHere(conversationIn(pa, "own"))).toEqual({ outcome: "refused", partition: pa });
    const homes = await withClient((client) => client.query(`SELECT count(*)::int AS n FROM ${schema}.conversation_homes`));
    expect(homes.rows[0]).toEqual({ n: 0 });
  });

  it("a takeover of the home partition fences the mover and recovers the conversation; a process opened later places it by its home", async () => {
    const { schema, url, a, b, pa, pb } = await setUp();
    const moved = conversationIn(pa, "moved");
    expect(await b.takeConversationHere(moved)).toMatchObject({ outcome: "moved" });
    expect(await b.run(prepare("e-b", moved))).toMatchObject({ outcome: "active", revision: 1 });
    const epochB = b.heldPartitions()[0]!.epoch;

    // The mover's lease ends (as at kill -9: expiry) and `a` takes its partition.
    const taken = await eventually(
      async () => {
        await withClient((client) => client.query(`UPDATE ${schema}.partitions SET expires_at = clock_timestamp() WHERE owner = 'b'`));
        return a.acquireLease(conversationIn(pb, "other"));
      },
      (acquisition) => acquisition.acquired,
      "a takes b's expired partition",
    );
    expect(taken).toMatchObject({ acquired: true, owner: "a" });
    // The recovery read of the taken partition finds the moved conversation's execution.
    const unfinished = await a.unfinishedExecutionsInPartitions([pb]);
    expect(unfinished.map((row) => [row.executionId, row.agentId])).toEqual([["e-b", moved]]);
    expect(a.conversationPartition(moved)).toBe(pb);
    // Not among the natural partition's.
    expect((await a.unfinishedExecutionsInPartitions([pa])).map((row) => row.executionId)).toEqual([]);
    // The mover's write at its old epoch is refused.
    await expect(b.run(providerBarrier("e-b", 1))).rejects.toMatchObject({
      code: "EXECUTION_REHYDRATION_REQUIRED",
      details: { reason: "lease_lost", epoch: epochB },
    });
    // The successor writes it.
    expect(await a.run(providerBarrier("e-b", 1))).toBeDefined();

    // A process opened later learns the homes of the partitions it holds.
    await a.close();
    await b.close();
    const c = await PostgresStore.open(url, { instanceId: "a" });
    atEnd(() => c.close());
    await eventually(
      () => c.heldPartitions().map((grant) => grant.partition),
      (held) => held.includes(pb),
      "the restarted process holds the home partition",
    );
    expect(c.conversationPartition(moved)).toBe(pb);
  });
});
