// A suspended execution let go of by its owner (docs/decisions/0066) is
// decided from another environment on the same PostgreSQL schema: the
// decision is filed in the approval inbox, the owner rebuilds the
// execution from its row and resumes it, and the owner's Run, whose
// result was read before it suspended, settles with the real end.

import { describe, expect, it } from "vitest";
import { Phronomy } from "../../host/index.js";
import { approvalRefundTool, recordingLogger, scriptedModel } from "../runtime/helpers.js";
import { atEnd, freshSchema, postgresUrl } from "./database.js";

/** Asks approval for one refund, then answers. */
function refundModel() {
  return scriptedModel(({ messages }) =>
    messages.at(-1)?.role === "tool" ? { text: "Refunded." } : { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] },
  );
}

describe("a suspended execution let go of, decided from another process (PostgreSQL)", () => {
  it("is rebuilt from its row by its owner when the decision filed in the inbox is claimed; both runs settle", async () => {
    const url = `${postgresUrl}?schema=${freshSchema()}&lease_ms=60000`;
    const refunds: string[] = [];
    const owner = await Phronomy.open({ store: url, logger: recordingLogger() });
    atEnd(() => owner.close());
    const ownerAgent = owner.agent({ id: "billing", model: refundModel(), tools: { refund: approvalRefundTool(refunds) } });
    await owner.recovery("billing");
    const standby = await Phronomy.open({ store: url, logger: recordingLogger() });
    atEnd(() => standby.close());
    const standbyAgent = standby.agent({ id: "billing", model: refundModel(), tools: { refund: approvalRefundTool(refunds) } });
    await standby.recovery("billing");

    const original = ownerAgent.start("Refund order 42");
    const result = original.result;
    const executionId = await original.executionId;
    await expect.poll(() => owner.coordinator.dormant.has(executionId), { timeout: 30_000 }).toBe(true);
    const pending = (await standby.pendingApprovals()).find((item) => item.executionId === executionId)!;
    const decided = standbyAgent.resume(executionId, { approvalId: pending.request.approvalId, approved: true });
    await expect(decided.result).resolves.toMatchObject({ executionId, outcome: "completed", output: "Refunded." });
    await expect(result).resolves.toMatchObject({ executionId, outcome: "completed", output: "Refunded." });
    expect(refunds).toHaveLength(1);
    expect(owner.coordinator.dormant.has(executionId)).toBe(false);
  });
});
