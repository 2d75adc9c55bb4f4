// A start filed for the process that holds a conversation while that
// conversation is being recovered there (docs/decisions/0031, 0062): the
// owner claims it and asks the core `Admit` (source `Filed`), which answers
// `WaitUntilReady`; it waits for the core, as a start made there does
// (readiness-waiters.ts), not on a timer — once ready, the core queues it
// behind the suspended execution (`onBusy: "enqueue"`) and it runs once. Its
// fate in the inbox follows those verdicts (filed-start-fate.ts): admitted,
// never refused, never claimed again. Made deterministic by holding the
// owner's scan of unfinished executions, which `env.recover()` reads.

import { describe, expect, it } from "vitest";
import { ConversationPhase } from "../../assembly/abi.js";
import { Phronomy, type Environment } from "../../host/index.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import type { ExecutionStore } from "../../host/store/store.js";
import { approvalRefundTool, deferred, recordingLogger, scriptedModel, turnOf, waitFor } from "../runtime/helpers.js";
import { atEnd, withClient } from "./database.js";
import { eventually, freePartitionsSchema } from "./fixtures/free-schema.js";

const leaseMs = 1_000;

/** The store, except that the next scan of unfinished executions asked
 * for after `holdNextScan()` waits until released. */
function holdingScans(store: ExecutionStore): { store: ExecutionStore; holdNextScan: () => { caught: Promise<void>; release: () => void } } {
  let hold: { caught: () => void; released: Promise<void> } | undefined;
  const proxy = new Proxy(store, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (key === "unfinishedExecutions" && hold !== undefined) {
        const { caught, released } = hold;
        hold = undefined;
        return async () => {
          caught();
          await released;
          return target.unfinishedExecutions();
        };
      }
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  const holdNextScan = () => {
    const caught = deferred();
    const released = deferred();
    hold = { caught: caught.resolve, released: released.promise };
    return { caught: caught.promise, release: () => released.resolve() };
  };
  return { store: proxy, holdNextScan };
}

/** A refund needing approval for "Refund order 42", text otherwise. */
function refundModel(name: string, calls: string[]) {
  return scriptedModel(({ messages }) => {
    const users = messages.filter((message) => message.role === "user");
    const last = users[users.length - 1]?.content;
    calls.push(typeof last === "string" ? last : JSON.stringify(last));
    if (last === "Refund order 42" && turnOf(messages) === 0) return { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] };
    return { text: `${name}: ${String(last)}` };
  });
}

function phaseOf(environment: Environment, agentId: string): number | undefined {
  const slot = environment.conversations.slotOf(agentId);
  return slot === undefined ? undefined : environment.core.conversation(slot).phase;
}

describe("a start filed while its conversation is recovered at its owner (PostgreSQL)", () => {
  it("waits for the core's readiness (no timer), is queued behind the suspended execution and runs once; its claim is settled applied", async () => {
    const { schema, url } = await freePartitionsSchema(leaseMs, 1);
    const holding = holdingScans(await PostgresStore.open(url, { instanceId: "owner" }));
    const owner = await Phronomy.open({ store: holding.store, logger: recordingLogger() });
    atEnd(() => owner.close());
    const ownerCalls: string[] = [];
    const support = owner.agent({ id: "c", model: refundModel("owner", ownerCalls), tools: { refund: approvalRefundTool([]) } });
    const first = support.start("Refund order 42");
    const suspendedId = await first.executionId;
    const pending = await waitFor(async () => (await owner.pendingApprovals()).find((approval) => approval.executionId === suspendedId));

    const filer = await Phronomy.open({ store: url, logger: recordingLogger(), postgres: { instanceId: "filer" } });
    atEnd(() => filer.close());
    const filerCalls: string[] = [];
    const elsewhere = filer.agent({ id: "c", model: refundModel("filer", filerCalls), tools: { refund: approvalRefundTool([]) } });

    // The owner recovers the conversation; its scan is held.
    const scan = holding.holdNextScan();
    const recovered = owner.recover();
    await scan.caught;
    expect(phaseOf(owner, "c")).toBe(ConversationPhase.Recovering);

    const filed = elsewhere.start("during", { onBusy: "enqueue" });
    const filedId = await filed.executionId;
    // Claimed by the owner, asked of the core: it waits for the recovery.
    await eventually(
      () => owner.queues.waitingStarts(),
      (waiting) => waiting === 1,
      "the filed start waits for the conversation's recovery",
    );
    const released = performance.now();
    scan.release();
    // Nothing recovered to run; the filed start, if the core queued it
    // before the report read the queues, is reported queued (in its turn).
    const report = await recovered;
    expect(report.filter((item) => !(item.executionId === filedId && item.status === "queued"))).toEqual([]);
    // Ready: asked again at once (not after the inbox's 1 s retry), and
    // queued behind the suspended execution.
    await eventually(
      () => owner.core.conversation(owner.conversations.slotOf("c")!).queued,
      (queued) => queued === 1,
      "the filed start is queued at the owner",
    );
    expect(performance.now() - released).toBeLessThan(900);
    expect(owner.queues.waitingStarts()).toBe(0);
    // Its claim is settled applied (once its queued message is written), claimed once.
    await eventually(
      () =>
        withClient(
          async (client) =>
            (await client.query(`SELECT state, claims FROM ${schema}.approval_inbox WHERE kind = 'start' AND execution_id = $1`, [filedId])).rows,
        ),
      (rows) => rows.length === 1 && rows[0].state === "applied",
      "the filed start's claim is settled applied",
    ).then((rows) => expect(rows).toEqual([{ state: "applied", claims: 1 }]));

    const decided = support.resume(suspendedId, { approvalId: pending.request.approvalId, approved: true });
    expect((await decided.result).outcome).toBe("completed");
    await expect(filed.result).resolves.toMatchObject({ executionId: filedId, output: "owner: during" });
    expect(ownerCalls.filter((call) => call === "during")).toEqual(["during"]);
    expect(filerCalls).toEqual([]);
  }, 60_000);
});
