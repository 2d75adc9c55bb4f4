// A decision sent again after its approval commit failed, on PostgreSQL
// (issue 24, item 4; docs/decisions/0057): the same host path as SQLite's
// (test/runtime/approval-commit-faults.test.ts), with PostgreSQL's own
// heal of held conversations (decision 0055) running beside it. The
// store's approval commit is failed at its door: once with nothing
// written, once after it wrote, its outcome unknown.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Phronomy, StoreError, tool, type Environment } from "../../host/index.js";
import type { StoreOperation, StoreResult } from "../../host/store/records.js";
import type { PostgresStore } from "../../host/store/postgres-store.js";
import { recordingLogger, scriptedModel, turnOf, waitFor } from "../runtime/helpers.js";
import { atEnd, freshSchemaUrl } from "./database.js";

const refundModel = scriptedModel(({ messages }) =>
  turnOf(messages) === 0 ? { toolCalls: [{ toolName: "refund", input: { orderId: "42" } }] } : { text: "Refunded." },
);

/** Fails the first approval commit: before it runs (`written` false, a
 * plain StoreError) or after it committed (its outcome unknown). */
function failFirstApprovalCommit(store: PostgresStore, written: boolean): void {
  const run = store.run.bind(store);
  let failed = false;
  Object.assign(store, {
    run: async <O extends StoreOperation>(operation: O): Promise<StoreResult<O>> => {
      if (operation.type !== "approvalCommit" || failed) return run(operation);
      failed = true;
      if (!written) throw new StoreError("injected: the transaction of approvalCommit failed");
      await run(operation);
      throw new StoreError("injected: the connection was lost after COMMIT was sent", { details: { outcome: "unknown" } });
    },
  });
}

async function suspendedRefund(written: boolean) {
  const env: Environment = await Phronomy.open({ store: freshSchemaUrl(), logger: recordingLogger() });
  atEnd(() => env.close());
  failFirstApprovalCommit(env.store as PostgresStore, written);
  const refunds: string[] = [];
  const refund = tool({
    description: "Refunds an order",
    inputSchema: z.object({ orderId: z.string() }),
    needsApproval: true,
    execute: ({ orderId }, { idempotencyKey }) => {
      refunds.push(idempotencyKey);
      return { refunded: orderId };
    },
  });
  const agent = env.agent({ id: "support", model: refundModel, tools: { refund } });
  const executionId = await agent.start("Refund order 42").executionId;
  const pending = await waitFor(async () => (await env.pendingApprovals()).find((approval) => approval.executionId === executionId));
  return { env, agent, executionId, approvalId: pending.request.approvalId, refunds };
}

describe("a decision sent again after its approval commit failed (PostgreSQL)", () => {
  it("nothing written: refused STORE, still pending, and the same decision sent again completes the run", async () => {
    const { agent, executionId, approvalId, refunds } = await suspendedRefund(false);
    await expect(agent.resume(executionId, { approvalId, approved: true }).result).rejects.toMatchObject({ code: "STORE", executionId });
    await expect(agent.resume(executionId, { approvalId, approved: true }).result).resolves.toMatchObject({
      executionId,
      outcome: "completed",
      output: "Refunded.",
    });
    expect(refunds).toEqual([`${executionId}:call-0-0`]);
  }, 60_000);

  it("written, outcome unknown: the decision sent again is refused from the row (already decided), and the run completes once", async () => {
    const { env, agent, executionId, approvalId, refunds } = await suspendedRefund(true);
    await expect(agent.resume(executionId, { approvalId, approved: true }).result).rejects.toMatchObject({ executionId });
    const refusal = await agent.resume(executionId, { approvalId, approved: true }).result.then(
      () => undefined,
      (error: unknown) => error as { code?: string; details?: { mismatch?: string } },
    );
    expect(refusal?.code).toBe("APPROVAL_MISMATCH");
    expect(["already_decided", "execution_ended"]).toContain(refusal?.details?.mismatch);
    await expect(env.wait(executionId).result).resolves.toMatchObject({ outcome: "completed", output: "Refunded." });
    expect(refunds).toEqual([`${executionId}:call-0-0`]);
  }, 60_000);
});
