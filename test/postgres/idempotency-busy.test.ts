// One idempotency key started from two processes at once (issue 24, item
// 6; docs/decisions/0031, 0057): the owner's own start of the key is being
// prepared (its preparation held at the store's door here) when the same
// key, started from a process that does not hold the partition, is filed
// and claimed by the owner. The owner's core refuses the filed start busy;
// the filed start must then follow the execution being prepared under the
// same id — never answer its sender AGENT_BUSY.

import { describe, expect, it } from "vitest";
import { Phronomy, type Environment } from "../../host/index.js";
import type { StoreOperation, StoreResult } from "../../host/store/records.js";
import type { ClaimedDecision, DecisionSettlement } from "../../host/store/inbox-records.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { startExecutionIdOf } from "../../host/store/start-filing.js";
import { agentRunModel, deferred, lookupTool, recordingLogger, type RecordedCall } from "../runtime/helpers.js";
import { atEnd, withClient } from "./database.js";
import { freePartitionsSchema } from "./fixtures/free-schema.js";

async function openAs(url: string, instanceId: string): Promise<Environment> {
  const environment = await Phronomy.open({ store: url, logger: recordingLogger(), postgres: { instanceId } });
  atEnd(() => environment.close());
  return environment;
}

/** Holds the owner's preparation of `executionId` until `release`; tells
 * when the owner claimed the filed start of that id, and when it settled it. */
function instrument(store: PostgresStore, executionId: string) {
  const preparing = deferred();
  const gate = deferred();
  const claimed = deferred();
  const settled = deferred<DecisionSettlement>();
  const run = store.run.bind(store);
  Object.assign(store, {
    run: async <O extends StoreOperation>(operation: O): Promise<StoreResult<O>> => {
      if (operation.type === "prepareExecution" && operation.executionId === executionId) {
        preparing.resolve();
        await gate.promise;
      }
      return run(operation);
    },
  });
  const noteClaims = (claims: ClaimedDecision[]): ClaimedDecision[] => {
    if (claims.some((claim) => claim.executionId === executionId)) claimed.resolve();
    return claims;
  };
  const claimFiledStarts = store.claimFiledStarts.bind(store);
  const claimDecisions = store.claimDecisions.bind(store);
  const settleDecision = store.settleDecision.bind(store);
  Object.assign(store, {
    claimFiledStarts: () => claimFiledStarts().then(noteClaims),
    claimDecisions: (agentId: string, startsOnly?: boolean) => claimDecisions(agentId, startsOnly).then(noteClaims),
    settleDecision: (claim: ClaimedDecision, settlement: DecisionSettlement) => {
      if (claim.executionId === executionId) settled.resolve(settlement);
      return settleDecision(claim, settlement);
    },
  });
  return { preparing: preparing.promise, claimed: claimed.promise, settled: settled.promise, release: () => gate.resolve() };
}

describe("one idempotency key from two processes at once (PostgreSQL)", () => {
  it("the filed duplicate, refused busy by the owner while the owner prepares the same key, follows it to its outcome", async () => {
    const { schema, url } = await freePartitionsSchema(1_000, 1);
    const ownerCalls: RecordedCall[] = [];
    const owner = await openAs(url, "owner");
    const here = owner.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool({ calls: ownerCalls }) } });
    const sender = await openAs(url, "sender");
    const there = sender.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const executionId = startExecutionIdOf("customer-1", "order-42");
    const held = instrument(owner.store as PostgresStore, executionId);

    const first = here.conversation("customer-1").start("Where is order 42?", { idempotencyKey: "order-42" });
    await held.preparing;
    const filed = there.conversation("customer-1").start("Where is order 42?", { idempotencyKey: "order-42" });
    const filedOutcome = filed.result.then(
      (result) => ({ ok: true as const, result }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    // The preparation is let go once the owner answered the filed start
    // (the bug: refused AGENT_BUSY), or a while after it claimed it (the
    // fix: it waits for the preparation, so it answers nothing before).
    await held.claimed;
    await Promise.race([held.settled, new Promise((resolve) => setTimeout(resolve, 1_500))]);
    held.release();

    const [outcome, own] = await Promise.all([filedOutcome, first.result]);
    expect(outcome).toMatchObject({ ok: true, result: { executionId, outcome: "completed" } });
    expect(own).toMatchObject({ executionId, outcome: "completed" });
    expect(new Set(ownerCalls.map((call) => call.idempotencyKey))).toEqual(new Set([`${executionId}:call-0-0`, `${executionId}:call-1-0`]));
    const rows = await withClient((client) => client.query(`SELECT count(*)::int AS count FROM ${schema}.executions`));
    expect(rows.rows).toEqual([{ count: 1 }]);
  }, 60_000);
});
