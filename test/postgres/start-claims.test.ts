// Filed starts claimed together and told to their filer (issue 13,
// docs/decisions/0047), at the store: one claim statement takes the filed
// starts of every conversation in the partitions held, each at its
// partition's epoch, and only while that epoch is held; a successor claims
// them again at its own. The owner's writes of a claimed start (and its
// refusal) reach the filer on its own channel, in the write's transaction.

import { describe, expect, it } from "vitest";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { prepare, providerBarrier } from "../store/fixtures.js";
import { atEnd, withClient } from "./database.js";
import { eventually, freePartitionsSchema } from "./fixtures/free-schema.js";
import { quietSignals } from "../../host/store/capabilities.js";

const leaseMs = 1_000;
const start = { input: "hello", options: {} };

/** Two stores on a schema of one partition (every conversation in it):
 * `owner` holds it at epoch 1, `filer` files. */
async function setUp(): Promise<{ schema: string; owner: PostgresStore; filer: PostgresStore }> {
  const { schema, url } = await freePartitionsSchema(leaseMs, 1);
  const owner = await PostgresStore.open(url, { instanceId: "owner" });
  atEnd(() => owner.close());
  const filer = await PostgresStore.open(url, { instanceId: "filer" });
  atEnd(() => filer.close());
  expect(owner.heldPartitions().map((grant) => grant.epoch)).toEqual([1]);
  return { schema, owner, filer };
}

describe("filed starts claimed together and told to their filer (PostgreSQL)", () => {
  it("one claim takes the starts of every conversation in the partitions held, oldest first; a successor claims them again at its epoch, the former owner none", async () => {
    const { schema, owner, filer } = await setUp();
    for (const [index, agentId] of ["c1", "c2", "c3"].entries()) {
      await filer.fileStart({ decisionId: `d-${index}`, executionId: `e-${index}`, agentId, start, filedAt: 100 + index });
    }
    const claims = await owner.claimFiledStarts();
    expect(claims.map((claim) => [claim.executionId, claim.agentId, claim.claimedEpoch, claim.claims])).toEqual([
      ["e-0", "c1", 1, 1],
      ["e-1", "c2", 1, 1],
      ["e-2", "c3", 1, 1],
    ]);
    expect(claims[0]).toMatchObject({ kind: "start", filedBy: "filer", start });
    expect(await owner.claimFiledStarts()).toEqual([]);
    // The filer holds nothing: it claims nothing.
    expect(await filer.claimFiledStarts()).toEqual([]);

    // The partition expires under the owner and the filer takes it (epoch 2,
    // or later: the owner's own tick, every third of the lease, may take
    // the expired partition back first — 1 run in 3 under load — and then
    // it is expired again).
    const taken = await eventually(
      async () => {
        await withClient((client) => client.query(`UPDATE ${schema}.partitions SET expires_at = clock_timestamp() WHERE owner <> 'filer'`));
        return filer.acquireLease("c1");
      },
      (acquisition) => acquisition.acquired,
      "the filer takes the expired partition",
    );
    expect(taken).toMatchObject({ acquired: true, owner: "filer" });
    const epoch = taken.epoch;
    expect(epoch).toBeGreaterThanOrEqual(2);
    expect(await owner.claimFiledStarts()).toEqual([]);
    // Settled together (one statement): none lands, the claims are not the owner's now.
    expect(await Promise.all(claims.map((claim) => owner.settleDecision(claim, { applied: true })))).toEqual([false, false, false]);
    const again = await eventually(
      () => filer.claimFiledStarts(),
      (found) => found.length > 0,
      "the successor claims the starts again",
    );
    expect(again.map((claim) => [claim.executionId, claim.claimedEpoch, claim.claims])).toEqual([
      ["e-0", epoch, 2],
      ["e-1", epoch, 2],
      ["e-2", epoch, 2],
    ]);
    const busy = { applied: false, error: { code: "AGENT_BUSY", message: "busy" } } as const;
    expect(await Promise.all(again.map((claim) => filer.settleDecision(claim, claim.executionId === "e-2" ? busy : { applied: true })))).toEqual([
      true,
      true,
      true,
    ]);
    const { rows } = await withClient((client) =>
      client.query<{ execution_id: string; state: string }>(`SELECT execution_id, state FROM ${schema}.approval_inbox ORDER BY execution_id`),
    );
    expect(rows).toEqual([
      { execution_id: "e-0", state: "applied" },
      { execution_id: "e-1", state: "applied" },
      { execution_id: "e-2", state: "refused" },
    ]);
  });

  it("the filer hears each write of its start claimed by the owner, and its refusal; nothing of executions it did not file", async () => {
    const { owner, filer } = await setUp();
    const heard: string[] = [];
    filer.listen({
      ...quietSignals,
      filedStartMoved: (executionId) => {
        if (executionId !== undefined) heard.push(executionId);
      },
    });
    filer.listenForDecisions();
    await eventually(
      () => filer.hearsFiledStarts,
      (up) => up,
      "the filer listens",
    );
    await owner.acquireLease("c");

    await filer.fileStart({ decisionId: "d-1", executionId: "e-1", agentId: "c", start, filedAt: 1 });
    const [claim] = await owner.claimFiledStarts();
    expect(claim).toMatchObject({ executionId: "e-1" });
    expect(await owner.run(prepare("e-1", "c"))).toMatchObject({ outcome: "active", revision: 1 });
    await eventually(
      () => heard.length,
      (count) => count === 1,
      "the preparation is heard",
    );
    await owner.run(providerBarrier("e-1", 1));
    await eventually(
      () => heard.length,
      (count) => count === 2,
      "the barrier is heard",
    );
    // A local execution of the owner: nobody is told.
    await owner.run(prepare("local", "c"));

    await filer.fileStart({ decisionId: "d-2", executionId: "e-2", agentId: "c", start, filedAt: 2 });
    const [refused] = await owner.claimFiledStarts();
    expect(await owner.settleDecision(refused!, { applied: false, error: { code: "AGENT_BUSY", message: "busy" } })).toBe(true);
    await eventually(
      () => heard.length,
      (count) => count === 3,
      "the refusal is heard",
    );
    expect(heard).toEqual(["e-1", "e-1", "e-2"]);
  });
});
