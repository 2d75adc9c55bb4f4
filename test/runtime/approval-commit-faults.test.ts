// A decision whose approval commit failed, sent again (issue 24, item 4;
// docs/decisions/0057): a failure known to have written nothing gives the
// suspension back at once, so the same decision sent again is committed;
// a commit whose outcome is not known is found out from the store when the
// decision comes again — written, the execution goes on from it; not
// written, the decision is committed now. Never "already being committed"
// when nothing is.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { StoreError, tool, type Environment } from "../../host/index.js";
import type { StoreOperation, StoreResult } from "../../host/store/records.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import type { ExecutionStore } from "../../host/store/store.js";
import { faultyStore } from "./faulty-store.js";
import { openEnvironment, scriptedModel, temporaryStorePath, turnOf, waitFor } from "./helpers.js";

const refundModel = scriptedModel(({ messages }) =>
  turnOf(messages) === 0 ? { toolCalls: [{ toolName: "refund", input: { orderId: "42" } }] } : { text: "Refunded." },
);

function refundTool(refunds: string[]) {
  return tool({
    description: "Refunds an order",
    inputSchema: z.object({ orderId: z.string() }),
    needsApproval: true,
    execute: ({ orderId }, { idempotencyKey }) => {
      refunds.push(idempotencyKey);
      return { refunded: orderId };
    },
  });
}

async function suspended(env: Environment, refunds: string[]) {
  const agent = env.agent({ id: "support", model: refundModel, tools: { refund: refundTool(refunds) } });
  const original = agent.start("Refund order 42");
  const executionId = await original.executionId;
  const pending = await waitFor(async () => (await env.pendingApprovals()).find((approval) => approval.executionId === executionId));
  return { agent, original, executionId, approvalId: pending.request.approvalId };
}

/** A SQLite store whose first approval commit runs (and commits) when
 * `written`, then fails: with its outcome unknown, as a PostgreSQL
 * connection lost after COMMIT does, unless `marked` is false (a plain
 * StoreError, which may or may not have committed). */
async function unknownOutcomeStore(path: string, written: boolean, marked = true): Promise<ExecutionStore> {
  const store = await SqliteStore.open(path);
  let failed = false;
  const run = async <O extends StoreOperation>(operation: O): Promise<StoreResult<O>> => {
    if (operation.type !== "approvalCommit" || failed) return store.run(operation);
    failed = true;
    if (written) await store.run(operation);
    throw new StoreError("injected: the connection was lost during approvalCommit", marked ? { details: { outcome: "unknown" } } : {});
  };
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === "run") return run;
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as unknown as ExecutionStore;
}

/** `store`, whose scan of unfinished executions leaves `hidden` out: a
 * recovery pass then finds nothing to release for it (its own row is not
 * terminal), and the execution stays held. */
function hidingFromScan(store: ExecutionStore, hidden: { executionId?: string }): ExecutionStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === "unfinishedExecutions") {
        return async () => (await target.unfinishedExecutions()).filter((row) => row.executionId !== hidden.executionId);
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

describe("a decision sent again after its approval commit failed", () => {
  it("nothing written (a store failure): refused STORE, the execution stays suspended, and the same decision sent again completes it", async () => {
    const store = await faultyStore(await temporaryStorePath(), { operation: "approvalCommit", occurrence: 1, fault: "store_failed" });
    const env = await openEnvironment({ store });
    const refunds: string[] = [];
    const { agent, original, executionId, approvalId } = await suspended(env, refunds);
    await expect(agent.resume(executionId, { approvalId, approved: true }).result).rejects.toMatchObject({ code: "STORE", executionId });
    expect(store.injected).toBe(1);
    expect((await env.pendingApprovals()).map((approval) => approval.executionId)).toEqual([executionId]);
    const again = await agent.resume(executionId, { approvalId, approved: true }).result;
    expect(again).toMatchObject({ executionId, outcome: "completed", output: "Refunded." });
    await expect(original.result).resolves.toMatchObject({ outcome: "completed" });
    expect(refunds).toEqual([`${executionId}:call-0-0`]);
    await env.close();
  });

  it("a plain store failure after the commit landed: read back, the resumed run goes on and completes", async () => {
    const env = await openEnvironment({ store: await unknownOutcomeStore(await temporaryStorePath(), true, false) });
    const refunds: string[] = [];
    const { agent, original, executionId, approvalId } = await suspended(env, refunds);
    await expect(agent.resume(executionId, { approvalId, approved: true }).result).resolves.toMatchObject({
      executionId,
      outcome: "completed",
      output: "Refunded.",
    });
    await expect(original.result).resolves.toMatchObject({ outcome: "completed" });
    expect(refunds).toEqual([`${executionId}:call-0-0`]);
    await env.close();
  });

  it("outcome unknown, not written: the decision sent again reads the store, finds it still pending and commits it", async () => {
    const env = await openEnvironment({ store: await unknownOutcomeStore(await temporaryStorePath(), false) });
    const refunds: string[] = [];
    const { agent, executionId, approvalId } = await suspended(env, refunds);
    await expect(agent.resume(executionId, { approvalId, approved: true }).result).rejects.toMatchObject({ executionId });
    const again = await agent.resume(executionId, { approvalId, approved: true }).result;
    expect(again).toMatchObject({ executionId, outcome: "completed", output: "Refunded." });
    expect(refunds).toEqual([`${executionId}:call-0-0`]);
    await env.close();
  });

  it("outcome unknown, written: the decision sent again finds it taken, the execution goes on from it, and the refusal says so", async () => {
    const env = await openEnvironment({ store: await unknownOutcomeStore(await temporaryStorePath(), true) });
    const refunds: string[] = [];
    const { agent, executionId, approvalId } = await suspended(env, refunds);
    await expect(agent.resume(executionId, { approvalId, approved: true }).result).rejects.toMatchObject({ executionId });
    const again = agent.resume(executionId, { approvalId, approved: true }).result;
    const refusal = await again.then(
      () => undefined,
      (error: unknown) => error as { code?: string; details?: { mismatch?: string } },
    );
    expect(refusal?.code).toBe("APPROVAL_MISMATCH");
    // Refused from the row: still running on the decision, or already ended from it.
    expect(["already_decided", "execution_ended"]).toContain(refusal?.details?.mismatch);
    await expect(env.wait(executionId).result).resolves.toMatchObject({ outcome: "completed", output: "Refunded." });
    expect(refunds).toEqual([`${executionId}:call-0-0`]);
    await env.close();
  });

  it("outcome unknown, and the recovery leaves it held: the decision sent again is refused STORE, naming the unknown commit, and decides nothing", async () => {
    const hidden: { executionId?: string } = {};
    const env = await openEnvironment({ store: hidingFromScan(await unknownOutcomeStore(await temporaryStorePath(), false), hidden) });
    const refunds: string[] = [];
    const { agent, executionId, approvalId } = await suspended(env, refunds);
    await expect(agent.resume(executionId, { approvalId, approved: true }).result).rejects.toMatchObject({ executionId });
    hidden.executionId = executionId;
    // Recovered once (the core asked for it), still held: refused, not recovered again.
    const refusal = await agent.resume(executionId, { approvalId, approved: true }).result.then(
      () => undefined,
      (error: unknown) => error as { code?: string; message?: string; cause?: { message?: string } },
    );
    expect(refusal?.code).toBe("STORE");
    expect(refusal?.message).toContain(`execution ${executionId} is held after a commit whose outcome is not known`);
    expect(refusal?.cause?.message).toContain("injected: the connection was lost during approvalCommit");
    expect(refunds).toEqual([]);
    // Once the scan sees it again, the same decision is committed.
    hidden.executionId = undefined;
    const again = await agent.resume(executionId, { approvalId, approved: true }).result;
    expect(again).toMatchObject({ executionId, outcome: "completed", output: "Refunded." });
    expect(refunds).toEqual([`${executionId}:call-0-0`]);
    await env.close();
  });
});
