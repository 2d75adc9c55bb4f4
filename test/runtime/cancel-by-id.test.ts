// `env.cancel(executionId)` in the owning process (docs/decisions/0026): a
// running execution ends cancelled once its work in flight finished; a
// suspended one ends at once, its waiters settled; unknown and ended ids are
// typed errors; a second cancel of a cancelling execution is not an error.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { CancellationError, ExecutionEndedError, ExecutionNotFoundError, InvalidInputError, tool } from "../../host/index.js";
import { agentRunModel, approvalRefundTool, deferred, lookupTool, openEnvironment, scriptedModel, waitFor } from "./helpers.js";

/** A tool that ignores its abort signal: it finishes when released. */
function stubbornTool(started: () => void, release: Promise<void>, finished: string[]) {
  return tool({
    description: "Looks an order up, slowly",
    inputSchema: z.object({ orderId: z.string() }),
    async execute({ orderId }) {
      started();
      await release;
      finished.push(orderId);
      return { orderId, status: "shipped" };
    },
  });
}

describe("env.cancel in the owning process", () => {
  it("cancels a running execution: the tool in flight finishes, then the execution ends cancelled with the reason", async () => {
    const env = await openEnvironment();
    const started = deferred();
    const release = deferred();
    const finished: string[] = [];
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: stubbornTool(() => started.resolve(), release.promise, finished) } });
    const run = agent.start("Where is order 42?");
    const executionId = await run.executionId;
    await started.promise;
    const cancelled = env.cancel(executionId, { reason: "the customer hung up" });
    let settled = false;
    void cancelled.then(
      () => {
        settled = true;
      },
      () => {
        settled = true;
      },
    );
    // The cancel waits for the tool in flight (quiescent terminal): while it
    // runs, the row is still active and the cancel unsettled.
    expect(await env.execution(executionId)).toMatchObject({ status: "active", phase: "dispatching_tools" });
    expect(settled).toBe(false);
    release.resolve();
    const result = await cancelled;
    expect(result).toMatchObject({ executionId, agentId: "support", outcome: "cancelled", error: { code: "CANCELLED" } });
    expect(result.error?.message).toContain("the customer hung up");
    expect(finished).toEqual(["42"]);
    await expect(run.result).rejects.toBeInstanceOf(CancellationError);
    expect(await env.execution(executionId)).toMatchObject({
      status: "terminal",
      outcome: "failed",
      error: { code: "CANCELLED", details: { reason: "the customer hung up" } },
    });
    // The agent admits again.
    await expect(agent.start("And order 43?").result).resolves.toMatchObject({ outcome: "completed" });
  });

  it("cancels a suspended execution at once: terminal cancelled, its waiters settled, the approval never runs", async () => {
    const env = await openEnvironment();
    const refunds: string[] = [];
    const model = scriptedModel(({ turn }) => (turn === 0 ? { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] } : { text: "done" }));
    const agent = env.agent({ id: "support", model, tools: { refund: approvalRefundTool(refunds) } });
    const run = agent.start("Refund order 42");
    const executionId = await run.executionId;
    const pending = await waitFor(async () => (await env.pendingApprovals()).find((approval) => approval.executionId === executionId));
    const result = await env.cancel(executionId, { reason: "duplicate request" });
    expect(result).toMatchObject({ executionId, outcome: "cancelled", error: { code: "CANCELLED" } });
    await expect(run.result).rejects.toBeInstanceOf(CancellationError);
    expect(await env.pendingApprovals()).toEqual([]);
    const row = await env.execution(executionId);
    expect(row).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "CANCELLED" } });
    expect((await env.timeline(executionId)).map((step) => step.kind).slice(-2)).toEqual(["note", "terminal"]);
    await expect(agent.resume(executionId, { approvalId: pending.request.approvalId, approved: true }).result).rejects.toMatchObject({
      code: "APPROVAL_MISMATCH",
    });
    expect(refunds).toEqual([]);
    await expect(agent.start("Refund order 43").executionId).resolves.toBeTypeOf("string");
  });

  it("refuses an unknown id and an ended one with typed errors naming the outcome", async () => {
    const env = await openEnvironment();
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    await expect(env.cancel("no-such-execution")).rejects.toBeInstanceOf(ExecutionNotFoundError);
    const run = agent.start("Where is order 42?");
    await run.result;
    const executionId = await run.executionId;
    const ended = await env.cancel(executionId).catch((error: unknown) => error);
    expect(ended).toBeInstanceOf(ExecutionEndedError);
    expect(ended).toMatchObject({ code: "EXECUTION_ENDED", details: { outcome: "completed" } });
    await expect(env.cancel("", {})).rejects.toBeInstanceOf(InvalidInputError);
    await expect(env.cancel(executionId, { reason: 7 } as never)).rejects.toBeInstanceOf(InvalidInputError);
    await expect(env.cancel(executionId, { why: "x" } as never)).rejects.toBeInstanceOf(InvalidInputError);
  });

  it("is idempotent: a second cancel of a cancelling execution settles with the same end; after it, the ended outcome is named", async () => {
    const env = await openEnvironment();
    const started = deferred();
    const release = deferred();
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: stubbornTool(() => started.resolve(), release.promise, []) } });
    const run = agent.start("Where is order 42?");
    const executionId = await run.executionId;
    await started.promise;
    const first = env.cancel(executionId, { reason: "first" });
    const second = env.cancel(executionId, { reason: "second" });
    release.resolve();
    const [a, b] = await Promise.all([first, second]);
    expect(a).toEqual(b);
    expect(a.outcome).toBe("cancelled");
    expect(a.error?.message).toContain("first");
    await expect(env.cancel(executionId)).rejects.toMatchObject({ code: "EXECUTION_ENDED", details: { outcome: "cancelled" } });
  });
});
