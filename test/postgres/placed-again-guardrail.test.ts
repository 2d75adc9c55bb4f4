// A start placed again (`refusedStartVerdict`, docs/decisions/0112) that
// runs here runs its input guardrail once (docs/decisions/0116): the
// guardrail's verdict is kept with the start request, and its second
// preparation reads it. The setting: process E moved a conversation out of
// the partition store "a" holds into its own, the home was pruned (the
// conversation had nothing anywhere), then "a" closed and E took its
// partition over. E still notes the pruned home, so its start is placed in
// E's home partition, fenced out by the natural partition (held by E at
// another epoch), refused naming the natural partition (`movedTo`), placed
// again, and run here.

import { describe, expect, it } from "vitest";
import { Phronomy } from "../../host/index.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { agentRunModel, lookupTool, recordingLogger } from "../runtime/helpers.js";
import { atEnd, withClient } from "./database.js";
import { conversationIn } from "./fixtures/two-stores.js";
import { eventually, freePartitionsSchema } from "./fixtures/free-schema.js";

const leaseMs = 1_000;

describe("a start placed again that runs here (PostgreSQL)", () => {
  it("runs its input guardrail once, and stores the input as that verdict redacted it", async () => {
    const { schema, url } = await freePartitionsSchema(leaseMs, 2);
    // Epochs far apart, so the natural partition's (taken over) is never
    // the one E's home partition is held at.
    await withClient((client) => client.query(`UPDATE ${schema}.partitions SET epoch = partition * 10`));
    const a = await PostgresStore.open(url, { instanceId: "a" });
    let aClosed = false;
    atEnd(async () => {
      if (!aClosed) await a.close();
    });
    const environment = await Phronomy.open({ store: url, logger: recordingLogger(), postgres: { instanceId: "e" } });
    atEnd(() => environment.close());
    const store = environment.store as PostgresStore;
    await eventually(
      () => [a.heldPartitions().length, store.heldPartitions().length],
      ([one, other]) => one === 1 && other === 1,
      "each holds one partition",
    );
    const pa = a.heldPartitions()[0]!.partition;
    const pe = store.heldPartitions()[0]!.partition;
    const id = conversationIn(pa, "placed-again");

    // Moved into E's partition, then its home pruned: E's note is stale.
    expect(await store.takeConversationHere(id)).toEqual({ outcome: "moved", partition: pe });
    await store.pruneExecutions({ type: "pruneExecutions", finishedBefore: Date.now() + 60_000, executionsMax: 100 });
    const homes = await withClient((client) => client.query(`SELECT count(*)::int AS n FROM ${schema}.conversation_homes`));
    expect(homes.rows[0]).toEqual({ n: 0 });
    expect(store.conversationPartition(id)).toBe(pe);

    // "a" leaves; E takes its partition over (at the next epoch).
    await a.close();
    aClosed = true;
    await eventually(
      () => store.heldPartitions().length,
      (held) => held === 2,
      "E holds both partitions",
    );
    const epochs = new Map(store.heldPartitions().map((grant) => [grant.partition, grant.epoch]));
    expect(epochs.get(pa)).not.toBe(epochs.get(pe));
    expect(store.conversationPartition(id)).toBe(pe);

    const seen: string[] = [];
    const support = environment.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const result = await support.conversation(id).start("Where is order 42? Card 4111-1111", {
      inputGuardrail: (text) => {
        seen.push(text);
        return { action: "redact", text: text.replace(/Card [0-9-]+/, "Card [redacted]") };
      },
    }).result;
    expect(result.outcome).toBe("completed");
    // Placed again: E forgot the pruned home, and ran it here (nothing filed).
    expect(store.conversationPartition(id)).toBe(pa);
    const inbox = await withClient((client) => client.query(`SELECT count(*)::int AS n FROM ${schema}.approval_inbox`));
    expect(inbox.rows[0]).toEqual({ n: 0 });
    // The guardrail ran once; the input stored is its redaction.
    expect(seen).toEqual(["Where is order 42? Card 4111-1111"]);
    const stored = await withClient((client) =>
      client.query<{ content: string }>(`SELECT content FROM ${schema}.journal WHERE agent_id = $1 AND role = 'user'`, [id]),
    );
    expect(stored.rows.map((row) => JSON.parse(row.content) as unknown)).toEqual(["Where is order 42? Card [redacted]"]);
  }, 60_000);
});
