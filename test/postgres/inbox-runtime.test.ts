// The approval inbox through the public API, two environments in one
// process on one schema (docs/decisions/0011-approval-inbox.md): the first
// owns agent "billing", the second stands by and resumes through the inbox.
// What the multi-process tests do not reach: a refusal decided by the owner
// (not at filing), an execution that suspends again, a resume carrying a
// signal, and the standby closing while it waits.

import { describe, expect, it } from "vitest";
import { ApprovalMismatchError, Phronomy, type Environment, type ExecutionEvent } from "../../host/index.js";
import { approvalRefundTool, recordingLogger, scriptedModel } from "../runtime/helpers.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "./database.js";

/** Asks approval for one refund per amount in `amounts`, one after the other, then answers. */
function refundModel(amounts: readonly number[]) {
  return scriptedModel(({ messages }) => {
    const lastUser = messages.map((message) => message.role).lastIndexOf("user");
    const turn = messages.slice(lastUser + 1).filter((message) => message.role === "assistant").length;
    const amount = amounts[turn];
    if (amount !== undefined) return { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount } }] };
    return { text: "Refunded." };
  });
}

async function twoEnvironments(amounts: readonly number[] = [30]) {
  const schema = freshSchema();
  const url = `${postgresUrl}?schema=${schema}&lease_ms=60000`;
  const refunds: string[] = [];
  const owner = await Phronomy.open({ store: url, logger: recordingLogger() });
  atEnd(() => owner.close());
  const ownerAgent = owner.agent({ id: "billing", model: refundModel(amounts), tools: { refund: approvalRefundTool(refunds) } });
  await owner.recovery("billing");
  const standby = await Phronomy.open({ store: url, logger: recordingLogger() });
  atEnd(() => standby.close());
  const standbyAgent = standby.agent({ id: "billing", model: refundModel(amounts), tools: { refund: approvalRefundTool(refunds) } });
  await standby.recovery("billing");
  const original = ownerAgent.start("Refund order 42");
  const executionId = await original.executionId;
  const approvalId = (await pendingOn(owner, executionId)).request.approvalId;
  return { schema, owner, standby, standbyAgent, original, executionId, approvalId, refunds };
}

async function pendingOn(env: Environment, executionId: string, other?: string) {
  for (let attempt = 0; attempt < 500; attempt += 1) {
    const found = (await env.pendingApprovals()).find((item) => item.executionId === executionId && item.request.approvalId !== other);
    if (found) return found;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`execution ${executionId} never waited for an approval`);
}

describe("the approval inbox through the public API (PostgreSQL)", () => {
  it("a refusal decided by the owner (the tool arguments changed since the request) rejects the standby's run with ApprovalMismatchError; the row is refused", async () => {
    const { schema, standbyAgent, executionId, approvalId, refunds } = await twoEnvironments();
    await withClient(async (client) => {
      const { rows } = await client.query<{ metadata: string }>(`SELECT metadata FROM ${schema}.executions WHERE execution_id = $1`, [executionId]);
      const metadata = JSON.parse(rows[0]!.metadata) as { toolBatch: { input: { amount: number } }[] };
      metadata.toolBatch[0]!.input.amount = 3000;
      await client.query(`UPDATE ${schema}.executions SET metadata = $2 WHERE execution_id = $1`, [executionId, JSON.stringify(metadata)]);
    });
    const run = standbyAgent.resume(executionId, { approvalId, approved: true });
    expect(await run.executionId).toBe(executionId);
    await expect(run.result).rejects.toBeInstanceOf(ApprovalMismatchError);
    await expect(run.result).rejects.toThrow(/the tool calls of execution \S+ changed since approval/);
    const [row] = (await withClient((client) => client.query(`SELECT state, error FROM ${schema}.approval_inbox`))).rows;
    expect(row.state).toBe("refused");
    expect(JSON.parse(row.error)).toMatchObject({ code: "APPROVAL_MISMATCH", executionId });
    expect(refunds).toEqual([]);
  });

  it("an execution that suspends again: the standby's run gets approval_required (its last event) and keeps waiting; a second resume from the standby completes both runs", async () => {
    const { owner, standbyAgent, original, executionId, approvalId, refunds } = await twoEnvironments([30, 40]);
    const events: ExecutionEvent[] = [];
    const first = standbyAgent.resume(executionId, { approvalId, approved: true, onEvent: (event) => events.push(event) });
    const second = await pendingOn(owner, executionId, approvalId);
    for (let attempt = 0; attempt < 200 && events.length === 0; attempt += 1) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(events).toEqual([{ type: "approval_required", executionId, request: expect.objectContaining({ approvalId: second.request.approvalId }) }]);
    const lastEvents: string[] = [];
    const last = standbyAgent.resume(executionId, { approvalId: second.request.approvalId, approved: true, onEvent: (event) => lastEvents.push(event.type) });
    const result = await last.result;
    expect(result).toMatchObject({ executionId, agentId: "billing", outcome: "completed", output: "Refunded." });
    await expect(first.result).resolves.toEqual(result);
    await expect(original.result).resolves.toMatchObject({ outcome: "completed", output: "Refunded." });
    // One terminal event per Run (docs/decisions/0018): the first resume's
    // events end at the new approval_required, the last one hears done.
    expect(events.map((event) => event.type)).toEqual(["approval_required"]);
    expect(lastEvents).toEqual(["done"]);
    expect(refunds).toEqual([`${executionId}:call-0-0`, `${executionId}:call-1-0`]);
  });

  it("refuses a signal on a resume that goes through the inbox, and settles the standby's waits with RUNTIME_SHUTDOWN when it closes (the decision stays and is applied)", async () => {
    const { schema, owner, standby, standbyAgent, original, executionId, approvalId } = await twoEnvironments();
    await expect(standbyAgent.resume(executionId, { approvalId, approved: true, signal: new AbortController().signal }).result).rejects.toMatchObject({
      code: "INVALID_INPUT",
    });
    const run = standbyAgent.resume(executionId, { approvalId, approved: false, reason: "not eligible" });
    await run.executionId;
    await standby.close();
    await expect(run.result).rejects.toMatchObject({ code: "RUNTIME_SHUTDOWN" });
    await expect(original.result).resolves.toMatchObject({ outcome: "completed", output: "Refunded." });
    // The owner marks the decision applied in a write of its own, which may
    // land after the execution it resumed has finished.
    const inboxStates = async () => (await withClient((client) => client.query(`SELECT state FROM ${schema}.approval_inbox`))).rows;
    for (let attempt = 0; attempt < 250 && (await inboxStates())[0]?.state !== "applied"; attempt += 1) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await inboxStates()).toEqual([{ state: "applied" }]);
    expect((await owner.timeline(executionId)).filter((step) => step.kind === "approval_decided")).toEqual([
      expect.objectContaining({ payload: expect.objectContaining({ approved: false, reason: "not eligible" }) }),
    ]);
  });
});
