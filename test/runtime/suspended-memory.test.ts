// What a suspended execution keeps in memory (docs/decisions/0043, 0052):
// the start's listener is let go once its terminal event
// (approval_required) was delivered, the execution's start keeps only what
// a resumed session reads — the resume still runs with the start's
// options — and of the start's Run only the settling of its result: a Run
// the application dropped is collected, one whose result it kept settles.

import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { tool, type ExecutionEvent } from "../../host/index.js";
import type { Waiter } from "../../host/runtime/run.js";
import { openEnvironment, scriptedModel } from "./helpers.js";

describe("a suspended execution", () => {
  it("lets go of the start's listener and of what a resume does not read; the resume keeps the start's options and metadata", async () => {
    const env = await openEnvironment();
    try {
      const refund = tool({ inputSchema: z.object({ amount: z.number() }), needsApproval: () => true, execute: () => "ok" });
      // Asks for a refund on every turn, 60 tokens each: the resumed session
      // must still hold the start's token budget (100), so its turn fails.
      const model = scriptedModel(() => ({
        toolCalls: [{ toolName: "refund", input: { amount: 30 } }],
        usage: { inputTokens: 40, outputTokens: 20, totalTokens: 60 },
      }));
      const support = env.agent({ name: "support", model, tools: { refund }, memoryWindow: 1 });
      const events: ExecutionEvent[] = [];
      const approvals: string[] = [];
      const run = support.conversation("user-1").start("refund me", {
        onEvent: (event) => events.push(event),
        metadata: { ticket: "T-1" },
        tokenBudget: 100,
        approvalListener: (request) => {
          approvals.push(request.approvalId);
        },
      });
      const executionId = await run.executionId;
      await expect.poll(() => events.at(-1)?.type, { timeout: 30_000 }).toBe("approval_required");
      await expect.poll(() => approvals.length, { timeout: 30_000 }).toBe(1);
      expect((run as Waiter).listener).toBeUndefined();
      const entry = env.coordinator.entryById(executionId)!;
      expect(entry.suspended).toBe(true);
      expect(entry.start.options.onEvent).toBeUndefined();
      // Kept: the resumed session's tools are handed it (issue 27).
      expect(entry.start.options.metadata).toEqual({ ticket: "T-1" });
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

  it("keeps only the settling of the start's result: a dropped Run is collected, a kept result still settles", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const env = await openEnvironment();
    try {
      const refund = tool({ inputSchema: z.object({ amount: z.number() }), needsApproval: () => true, execute: () => "ok" });
      const model = scriptedModel(({ messages }) =>
        messages.at(-1)?.role === "tool" ? { text: "refunded" } : { toolCalls: [{ toolName: "refund", input: { amount: 30 } }] },
      );
      const support = env.agent({ name: "support", model, tools: { refund }, memoryWindow: 1 });
      const approvals: string[] = [];
      // The Run is dropped; only its result is kept, as a handler that
      // awaits the end in the background would.
      const { collected, result, executionId } = await (async () => {
        const run = support.conversation("user-2").start("refund me", {
          approvalListener: (request) => {
            approvals.push(request.approvalId);
          },
        });
        const events = new WeakRef(run.events);
        for await (const event of run.events) if (event.type === "approval_required") break;
        return { collected: events, result: run.result, executionId: await run.executionId };
      })();
      await expect.poll(() => approvals.length, { timeout: 30_000 }).toBe(1);
      await expect
        .poll(
          () => {
            gc();
            return collected.deref();
          },
          { timeout: 30_000 },
        )
        .toBeUndefined();
      expect(env.coordinator.entryById(executionId)!.waiters).toHaveLength(1);
      const resumed = support.conversation("user-2").resume(executionId, { approvalId: approvals[0]!, approved: true });
      await expect(resumed.result).resolves.toMatchObject({ outcome: "completed", output: "refunded" });
      await expect(result).resolves.toMatchObject({ executionId, outcome: "completed", output: "refunded" });
    } finally {
      await env.close();
    }
  });
});
