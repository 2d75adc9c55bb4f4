// Human approval through the public API, on real SQLite files: a tool that
// needs approval suspends the execution durably; `agent.resume` decides it
// (in this environment, or in a new one on the same store after a
// restart); a decline never runs the tool; a mismatched or repeated
// decision changes nothing.

import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ApprovalMismatchError, Phronomy, tool, type Environment, type ExecutionEvent } from "../../host/index.js";
import { openEnvironment, recordingLogger, scriptedModel, temporaryStorePath, waitFor } from "./helpers.js";

/** Looks the order up, asks to refund it (needs approval), then answers
 * with what the refund tool said — or that it was declined. */
function refundModel() {
  return scriptedModel(({ messages }) => {
    const lastUser = messages.map((message) => message.role).lastIndexOf("user");
    const turn = messages.slice(lastUser + 1).filter((message) => message.role === "assistant").length;
    if (turn === 0) return { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] };
    const last = messages.at(-1);
    const declined = last?.role === "tool" && last.results.some((result) => result.isError);
    return { text: declined ? "The refund was declined." : "Your refund of 30 is on its way." };
  });
}

function refundTool(refunds: string[]) {
  return tool({
    description: "Refunds an order",
    inputSchema: z.object({ orderId: z.string(), amount: z.number() }),
    needsApproval: ({ amount }) => amount > 10,
    execute: ({ orderId }, { idempotencyKey }) => {
      refunds.push(idempotencyKey);
      return { refunded: orderId };
    },
  });
}

async function suspended(env: Environment, refunds: string[], events: ExecutionEvent[] = []) {
  const agent = env.agent({ id: "support", model: refundModel(), tools: { refund: refundTool(refunds) } });
  const original = agent.start("Refund order 42", { onEvent: (event) => events.push(event) });
  const executionId = await original.executionId;
  const approval = await waitFor(async () => (await env.pendingApprovals()).find((pending) => pending.executionId === executionId));
  return { agent, original, executionId, approvalId: approval.request.approvalId, approval };
}

describe("approval", () => {
  it("suspends durably, lists the pending approval, and an approval runs the tool and completes every waiter", async () => {
    const env = await openEnvironment();
    const refunds: string[] = [];
    const events: ExecutionEvent[] = [];
    const { agent, original, executionId, approvalId, approval } = await suspended(env, refunds, events);
    expect(approval).toMatchObject({ agentId: "support", request: { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] } });
    expect(events.map((event) => event.type)).toContain("approval_required");
    expect(refunds).toEqual([]);
    const resumed = agent.resume(executionId, { approvalId, approved: true });
    const result = await resumed.result;
    expect(result).toMatchObject({ executionId, outcome: "completed", output: "Your refund of 30 is on its way." });
    await expect(original.result).resolves.toEqual(result);
    expect(refunds).toEqual([`${executionId}:call-0-0`]);
    const timeline = (await env.timeline(executionId)).map((step) => step.kind);
    expect(timeline).toEqual(expect.arrayContaining(["approval_requested", "approval_decided", "tool_barrier", "tool_results", "terminal"]));
    expect(await env.pendingApprovals()).toEqual([]);
  });

  it("a decline never runs the tool: the model is told, and the run goes on", async () => {
    const env = await openEnvironment();
    const refunds: string[] = [];
    const { agent, executionId, approvalId } = await suspended(env, refunds);
    const result = await agent.resume(executionId, { approvalId, approved: false, reason: "not eligible" }).result;
    expect(result.output).toBe("The refund was declined.");
    expect(refunds).toEqual([]);
  });

  it("cancels a resumed run through the resume's signal: terminal CANCELLED, the tool never ran", async () => {
    const env = await openEnvironment();
    const refunds: string[] = [];
    const { agent, executionId, approvalId, original } = await suspended(env, refunds);
    const run = agent.resume(executionId, { approvalId, approved: true, signal: AbortSignal.abort() });
    await expect(run.result).rejects.toMatchObject({ code: "CANCELLED" });
    await expect(original.result).rejects.toMatchObject({ code: "CANCELLED" });
    expect(refunds).toEqual([]);
    expect(await env.execution(executionId)).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "CANCELLED" } });
  });

  it("refuses a mismatched approval id with ApprovalMismatchError and changes nothing", async () => {
    const env = await openEnvironment();
    const refunds: string[] = [];
    const { agent, executionId, approvalId } = await suspended(env, refunds);
    await expect(agent.resume(executionId, { approvalId: "not-the-one", approved: true }).result).rejects.toBeInstanceOf(ApprovalMismatchError);
    expect((await env.execution(executionId))?.status).toBe("suspended");
    await expect(agent.resume(executionId, { approvalId, approved: true }).result).resolves.toMatchObject({ outcome: "completed" });
  });

  it("refuses a second decision on the same request, and a resume of an execution that is not suspended", async () => {
    const env = await openEnvironment();
    const refunds: string[] = [];
    const { agent, executionId, approvalId } = await suspended(env, refunds);
    const first = agent.resume(executionId, { approvalId, approved: true });
    const second = agent.resume(executionId, { approvalId, approved: false });
    await expect(second.result).rejects.toBeInstanceOf(ApprovalMismatchError);
    await first.result;
    await expect(agent.resume(executionId, { approvalId, approved: true }).result).rejects.toMatchObject({ code: "APPROVAL_MISMATCH" });
    expect(refunds).toHaveLength(1);
  });

  it("refuses an approval whose tool arguments changed in the store since the request", async () => {
    const path = await temporaryStorePath();
    const env = await openEnvironment({ store: path });
    const refunds: string[] = [];
    const { agent, executionId, approvalId } = await suspended(env, refunds);
    // Someone edits the durable tool batch behind the approval's back.
    const side = new Database(path);
    const row = side.prepare("SELECT metadata FROM executions WHERE execution_id = ?").get(executionId) as { metadata: string };
    const metadata = JSON.parse(row.metadata) as { toolBatch: { input: { amount: number } }[] };
    metadata.toolBatch[0]!.input.amount = 3000;
    side.prepare("UPDATE executions SET metadata = ? WHERE execution_id = ?").run(JSON.stringify(metadata), executionId);
    side.close();
    await expect(agent.resume(executionId, { approvalId, approved: true }).result).rejects.toBeInstanceOf(ApprovalMismatchError);
    expect(refunds).toEqual([]);
    expect((await env.execution(executionId))?.status).toBe("suspended");
  });

  it("survives a restart: a new environment on the same store recovers the suspension and resumes it", async () => {
    const path = await temporaryStorePath();
    const refunds: string[] = [];
    const first = await Phronomy.open({ store: path, logger: recordingLogger() });
    const { executionId, approvalId, original } = await suspended(first, refunds);
    await first.close();
    await expect(original.result).rejects.toMatchObject({ code: "RUNTIME_SHUTDOWN" });
    const second = await openEnvironment({ store: path });
    const agent = second.agent({ id: "support", model: refundModel(), tools: { refund: refundTool(refunds) } });
    expect(await second.recovery("support")).toEqual([expect.objectContaining({ executionId, status: "suspended" })]);
    const result = await agent.resume(executionId, { approvalId, approved: true }).result;
    expect(result).toMatchObject({ outcome: "completed", output: "Your refund of 30 is on its way." });
    expect(refunds).toEqual([`${executionId}:call-0-0`]);
  });

  it("asks every tool call with approvalPolicy always, none with never", async () => {
    const env = await openEnvironment();
    const calls: string[] = [];
    const lookup = tool({
      inputSchema: z.object({ orderId: z.string() }),
      execute: ({ orderId }) => {
        calls.push(orderId);
        return "ok";
      },
    });
    const model = scriptedModel(({ messages }) =>
      messages.at(-1)?.role === "tool" ? { text: "done" } : { toolCalls: [{ toolName: "lookup", input: { orderId: "42" } }] },
    );
    const always = env.agent({ id: "always", model, tools: { lookup } });
    const run = always.start("go", { approvalPolicy: "always" });
    const executionId = await run.executionId;
    const pending = await waitFor(async () => (await env.pendingApprovals()).find((item) => item.executionId === executionId));
    expect(calls).toEqual([]);
    await always.resume(executionId, { approvalId: pending.request.approvalId, approved: true }).result;
    expect(calls).toEqual(["42"]);
    const never = env.agent({ id: "never", model, tools: { refund: refundTool([]), lookup } });
    await expect(never.start("go", { approvalPolicy: "never" }).result).resolves.toMatchObject({ outcome: "completed" });
  });
});
