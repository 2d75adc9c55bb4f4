// `env.cancel` from a visitor of a SQLite store, beside its live owner
// (docs/decisions/0015, 0026): the visitor files the cancel in the inbox,
// the owner applies it as its own `env.cancel` would, and the visitor
// settles with how the execution ended.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { CancellationError, ExecutionEndedError, ExecutionNotFoundError, Phronomy, tool, type Environment } from "../../host/index.js";
import { agentRunModel, approvalRefundTool, deferred, openEnvironment, recordingLogger, scriptedModel, waitFor } from "./helpers.js";

async function visitorOf(owner: Environment): Promise<Environment> {
  return Phronomy.open({ store: owner.store.path, visitor: true, logger: recordingLogger() });
}

describe("env.cancel from a SQLite visitor beside the owner", () => {
  it("cancels a running execution of the owner: its tool in flight finishes, the owner's run and the visitor's cancel both see it cancelled", async () => {
    const owner = await openEnvironment();
    const started = deferred();
    const release = deferred();
    const finished: string[] = [];
    const lookup = tool({
      description: "Looks an order up",
      inputSchema: z.object({ orderId: z.string() }),
      async execute({ orderId }) {
        started.resolve();
        await release.promise;
        finished.push(orderId);
        return { orderId };
      },
    });
    const run = owner.agent({ id: "support", model: agentRunModel(), tools: { lookup } }).start("Where is order 42?");
    const executionId = await run.executionId;
    await started.promise;
    const visitor = await visitorOf(owner);
    try {
      const cancelled = visitor.cancel(executionId, { reason: "from the dashboard" });
      // The owner picks the filed cancel up and cancels the session.
      await waitFor(async () => (owner.coordinator.entryById(executionId)?.session?.finished ? true : undefined));
      release.resolve();
      const result = await cancelled;
      expect(result).toMatchObject({ executionId, agentId: "support", outcome: "cancelled", error: { code: "CANCELLED" } });
      expect(result.error?.message).toContain("from the dashboard");
      expect(finished).toEqual(["42"]);
      await expect(run.result).rejects.toBeInstanceOf(CancellationError);
      await expect(visitor.cancel(executionId)).rejects.toBeInstanceOf(ExecutionEndedError);
      await expect(visitor.cancel("no-such-execution")).rejects.toBeInstanceOf(ExecutionNotFoundError);
    } finally {
      await visitor.close();
    }
  });

  it("cancels a suspended execution of the owner", async () => {
    const owner = await openEnvironment();
    const model = scriptedModel(({ turn }) => (turn === 0 ? { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] } : { text: "done" }));
    const refunds: string[] = [];
    const run = owner.agent({ id: "support", model, tools: { refund: approvalRefundTool(refunds) } }).start("Refund order 42");
    const executionId = await run.executionId;
    await waitFor(async () => ((await owner.pendingApprovals()).length > 0 ? true : undefined));
    const visitor = await visitorOf(owner);
    try {
      await expect(visitor.cancel(executionId)).resolves.toMatchObject({ executionId, outcome: "cancelled" });
      await expect(run.result).rejects.toBeInstanceOf(CancellationError);
      expect(await owner.pendingApprovals()).toEqual([]);
      expect(refunds).toEqual([]);
    } finally {
      await visitor.close();
    }
  });
});
