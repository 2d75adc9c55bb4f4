// What a suspended execution keeps in memory (docs/decisions/0043): the
// start's listener is let go once its terminal event (approval_required)
// was delivered, and the execution's start keeps only what a resumed
// session reads — the resume still runs with the start's options.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { tool, type ExecutionEvent } from "../../host/index.js";
import type { Waiter } from "../../host/runtime/run.js";
import { openEnvironment, scriptedModel } from "./helpers.js";

describe("a suspended execution", () => {
  it("lets go of the start's listener and of what a resume does not read; the resume keeps the start's options", async () => {
    const env = await openEnvironment();
    try {
      const refund = tool({ inputSchema: z.object({ amount: z.number() }), needsApproval: () => true, execute: () => "ok" });
      // Asks for a refund on every turn, 60 tokens each: the resumed session
      // must still hold the start's token budget (100), so its turn fails.
      const model = scriptedModel(() => ({ toolCalls: [{ toolName: "refund", input: { amount: 30 } }], usage: { inputTokens: 40, outputTokens: 20, totalTokens: 60 } }));
      const support = env.agent({ name: "support", model, tools: { refund }, memoryWindow: 1 });
      const events: ExecutionEvent[] = [];
      const approvals: string[] = [];
      const run = support.conversation("user-1").start("refund me", {
        onEvent: (event) => events.push(event), metadata: { ticket: "T-1" }, tokenBudget: 100,
        approvalListener: (request) => { approvals.push(request.approvalId); },
      });
      const executionId = await run.executionId;
      await expect.poll(() => events.at(-1)?.type, { timeout: 30_000 }).toBe("approval_required");
      await expect.poll(() => approvals.length, { timeout: 30_000 }).toBe(1);
      expect((run as Waiter).listener).toBeUndefined();
      const entry = env.coordinator.entryById(executionId)!;
      expect(entry.suspended).toBe(true);
      expect(entry.start.options.onEvent).toBeUndefined();
      expect(entry.start.options.metadata).toBeUndefined();
      expect(entry.start.prepared).toBeUndefined();
      expect(entry.start.options.tokenBudget).toBe(100);
      expect(entry.start.input).toBe("refund me");
      const resumed = support.conversation("user-1").resume(executionId, { approvalId: approvals[0]!, approved: true });
      await expect(resumed.result).rejects.toMatchObject({ code: "BUDGET_EXCEEDED" });
      await expect(run.result).rejects.toMatchObject({ code: "BUDGET_EXCEEDED" });
      expect(events.map((event) => event.type)).not.toContain("error"); // the start's events ended at approval_required
      const row = await env.execution(executionId);
      expect((row?.metadata.config as { metadata?: unknown } | undefined)?.metadata).toEqual({ ticket: "T-1" });
    } finally {
      await env.close();
    }
  });
});
