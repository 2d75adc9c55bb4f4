// Every recovery of a live conversation enters the core (docs/decisions/0062,
// "One way back in"): `env.recover()` asks `RecoveryRequested`, runs the
// pass the core ordered under a new epoch, and reports `RecoveryFinished`;
// the conversation is ready again in the core, and a suspended execution
// recovered by the pass is decided afterwards as before.

import { describe, expect, it } from "vitest";
import { ConversationPhase } from "../../assembly/abi.js";
import type { Environment } from "../../host/index.js";
import { approvalRefundTool, openEnvironment, scriptedModel, turnOf, waitFor } from "./helpers.js";

/** The core's record of the conversation registered for `agentId`. */
function conversationRecord(env: Environment, agentId: string) {
  const slots = env.core.snapshot().conversations;
  const live = slots.filter((record) => record.phase !== ConversationPhase.None);
  expect(live, `one conversation live (${agentId})`).toHaveLength(1);
  return live[0]!;
}

describe("the one way back in", () => {
  it("env.recover() of a conversation live here runs one pass under a new epoch and leaves it ready", async () => {
    const env = await openEnvironment();
    try {
      const refunds: string[] = [];
      const model = scriptedModel(({ messages }) =>
        turnOf(messages) === 0 ? { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] } : { text: "done" },
      );
      const agent = env.agent({ id: "support", model, tools: { refund: approvalRefundTool(refunds) } });
      const run = agent.start("Refund order 42");
      const executionId = await run.executionId;
      const pending = await waitFor(async () => (await env.pendingApprovals()).find((approval) => approval.executionId === executionId));
      const before = conversationRecord(env, "support");
      expect(before.phase).toBe(ConversationPhase.Ready);

      const report = await env.recover();
      expect(report).toEqual([]);
      const after = conversationRecord(env, "support");
      expect(after.phase).toBe(ConversationPhase.Ready);
      expect(after.recoveryEpoch).toBeGreaterThan(before.recoveryEpoch);

      // Twice at once: the second waits for the first and runs a pass of its own.
      await Promise.all([env.recover(), env.recover()]);
      expect(conversationRecord(env, "support").recoveryEpoch).toBe(after.recoveryEpoch + 2);

      const decided = agent.resume(executionId, { approvalId: pending.request.approvalId, approved: true });
      expect((await decided.result).outcome).toBe("completed");
      expect(refunds).toHaveLength(1);
    } finally {
      await env.close();
    }
  });
});
