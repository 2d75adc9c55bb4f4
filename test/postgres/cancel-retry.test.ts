// Cancel and retry by id on PostgreSQL (docs/decisions/0026), two
// environments on one schema: the owner holds agent "billing"'s lease; the
// other process — with or without the agent defined — files its cancels in
// the inbox, which the owner applies; retry is the owner's, and is refused
// elsewhere naming why.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { CancellationError, ExecutionEndedError, Phronomy, RetryRefusedError, tool } from "../../host/index.js";
import { agentRunModel, approvalRefundTool, deferred, recordingLogger, scriptedModel, waitFor } from "../runtime/helpers.js";
import { atEnd, freshSchema, postgresUrl } from "./database.js";

async function twoProcesses() {
  const url = `${postgresUrl}?schema=${freshSchema()}&lease_ms=60000`;
  const owner = await Phronomy.open({ store: url, logger: recordingLogger() });
  atEnd(() => owner.close());
  const other = await Phronomy.open({ store: url, logger: recordingLogger() });
  atEnd(() => other.close());
  return { owner, other };
}

describe("cancel and retry by id on PostgreSQL", () => {
  it("a process that does not own the agent cancels a running execution through the inbox: the tool in flight finishes, both sides see it cancelled", async () => {
    const { owner, other } = await twoProcesses();
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
    const agent = owner.agent({ id: "billing", model: agentRunModel(), tools: { lookup } });
    await owner.recovery("billing");
    const run = agent.start("Where is order 42?");
    const executionId = await run.executionId;
    await started.promise;
    const cancelled = other.cancel(executionId, { reason: "operator" });
    await waitFor(async () => (owner.coordinator.entryById(executionId)?.session?.finished ? true : undefined));
    release.resolve();
    await expect(cancelled).resolves.toMatchObject({ executionId, agentId: "billing", outcome: "cancelled", error: { code: "CANCELLED" } });
    expect(finished).toEqual(["42"]);
    await expect(run.result).rejects.toBeInstanceOf(CancellationError);
    await expect(other.cancel(executionId)).rejects.toBeInstanceOf(ExecutionEndedError);
  });

  it("cancels a suspended execution from a process that defines the agent but does not hold its lease", async () => {
    const { owner, other } = await twoProcesses();
    const model = scriptedModel(({ turn }) => (turn === 0 ? { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] } : { text: "done" }));
    const refunds: string[] = [];
    const ownerAgent = owner.agent({ id: "billing", model, tools: { refund: approvalRefundTool(refunds) } });
    await owner.recovery("billing");
    other.agent({ id: "billing", model, tools: { refund: approvalRefundTool(refunds) } });
    await other.recovery("billing");
    const run = ownerAgent.start("Refund order 42");
    const executionId = await run.executionId;
    await waitFor(async () => ((await owner.pendingApprovals()).length > 0 ? true : undefined));
    await expect(other.cancel(executionId)).resolves.toMatchObject({ outcome: "cancelled" });
    await expect(run.result).rejects.toBeInstanceOf(CancellationError);
    expect(refunds).toEqual([]);
  });

  it("retries a MODEL_FAILED execution from a process that does not hold the agent: filed in the inbox, the owner retries it (the tool not run twice)", async () => {
    const { owner, other } = await twoProcesses();
    const failing = { on: true };
    const calls: string[] = [];
    const model = scriptedModel(({ turn }) =>
      turn === 0 ? { toolCalls: [{ toolName: "lookup", input: { orderId: "42" } }] } : failing.on ? { error: "down" } : { text: "Shipped." },
    );
    const lookup = tool({
      description: "Looks up",
      inputSchema: z.object({ orderId: z.string() }),
      execute: ({ orderId }, { idempotencyKey }) => {
        calls.push(idempotencyKey);
        return { orderId };
      },
    });
    const agent = owner.agent({ id: "billing", model, tools: { lookup } });
    await owner.recovery("billing");
    other.agent({ id: "billing", model, tools: { lookup } });
    await other.recovery("billing");
    const run = agent.start("Where is order 42?");
    const executionId = await run.executionId;
    await expect(run.result).rejects.toMatchObject({ code: "MODEL_FAILED" });
    failing.on = false;
    const retried = other.retry(executionId);
    expect(await retried.executionId).toBe(executionId);
    await expect(retried.result).resolves.toMatchObject({ outcome: "completed", output: "Shipped." });
    expect(calls).toEqual([`${executionId}:call-0-0`]);
    const timeline = await other.timeline(executionId);
    expect(timeline.filter((step) => step.kind === "terminal").map((step) => step.attempt)).toEqual([1, 2]);
    expect((await other.execution(executionId))?.metadata.attempt).toBe(2);
    // Completed now: refused at filing, nothing filed.
    const refused = await other.retry(executionId).result.catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RetryRefusedError);
    expect(refused).toMatchObject({ details: { reason: "completed" } });
  });
});
