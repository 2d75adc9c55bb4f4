// Resumes that must be refused, through the public API on real SQLite
// files: a second resume while the first is being committed changes
// nothing of the first (its reason and signal stay the first's); a decision
// on an approval already decided, or a resume of an execution that ended,
// is APPROVAL_MISMATCH saying what happened — in the same process and
// after a restart; an unknown execution id is named.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ApprovalMismatchError, InvalidInputError, Phronomy, tool, type Environment } from "../../host/index.js";
import { openEnvironment, recordingLogger, scriptedModel, temporaryStorePath, waitFor } from "./helpers.js";

/** Asks for a refund (needs approval); once answered, says what it saw:
 * the decline reason, or the refund. Records every decline reason. */
function refundModel(reasonsSeen: string[]) {
  return scriptedModel(({ messages }) => {
    const last = messages.at(-1);
    if (last?.role !== "tool") return { toolCalls: [{ toolName: "refund", input: { orderId: "42" } }] };
    const output = last.results[0]?.output as { declined?: boolean; reason?: string } | undefined;
    if (output?.declined) {
      reasonsSeen.push(String(output.reason));
      return { text: `Declined: ${String(output.reason)}` };
    }
    return { text: "Refunded." };
  });
}

function refundTool(calls: string[]) {
  return tool({
    description: "Refunds an order",
    inputSchema: z.object({ orderId: z.string() }),
    needsApproval: true,
    execute: ({ orderId }, { idempotencyKey }) => {
      calls.push(idempotencyKey);
      return { refunded: orderId };
    },
  });
}

function defineSupport(env: Environment, reasonsSeen: string[], calls: string[]) {
  return env.agent({ id: "support", model: refundModel(reasonsSeen), tools: { refund: refundTool(calls) } });
}

async function suspendedRun(env: Environment, reasonsSeen: string[], calls: string[]) {
  const agent = defineSupport(env, reasonsSeen, calls);
  const original = agent.start("Refund order 42");
  const executionId = await original.executionId;
  const pending = await waitFor(async () => (await env.pendingApprovals()).find((approval) => approval.executionId === executionId));
  return { agent, original, executionId, approvalId: pending.request.approvalId };
}

describe("a second resume while the first is committed", () => {
  it("is refused, and neither its reason nor its signal reaches the run the first resumed", async () => {
    const env = await openEnvironment();
    const reasonsSeen: string[] = [];
    const calls: string[] = [];
    const { agent, original, executionId, approvalId } = await suspendedRun(env, reasonsSeen, calls);

    const first = agent.resume(executionId, { approvalId, approved: false, reason: "the first reason" });
    const controller = new AbortController();
    const second = agent.resume(executionId, { approvalId, approved: false, reason: "the second reason", signal: controller.signal });
    controller.abort();

    const refusal = await second.result.then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(ApprovalMismatchError);
    // Another reason than the decision being committed: not followed, refused saying so.
    expect(refusal).toMatchObject({ code: "APPROVAL_MISMATCH", details: { mismatch: "decision_in_progress" } });
    expect(String((refusal as Error).message)).toContain(`another decision on execution ${executionId} is being committed`);
    await expect(first.result).resolves.toMatchObject({ executionId, outcome: "completed", output: "Declined: the first reason" });
    await expect(original.result).resolves.toMatchObject({ outcome: "completed" });
    expect(reasonsSeen).toEqual(["the first reason"]);
    expect(calls).toEqual([]);
    const decided = (await env.timeline(executionId)).filter((step) => step.kind === "approval_decided");
    expect(decided).toEqual([expect.objectContaining({ payload: expect.objectContaining({ approvalId, approved: false, reason: "the first reason" }) })]);
  });
});

describe("a decision on a settled approval", () => {
  it("after the first decision ended the run (same process): APPROVAL_MISMATCH naming the outcome and the decision; nothing changes", async () => {
    const env = await openEnvironment();
    const calls: string[] = [];
    const { agent, executionId, approvalId } = await suspendedRun(env, [], calls);
    await expect(agent.resume(executionId, { approvalId, approved: true }).result).resolves.toMatchObject({ outcome: "completed" });
    const before = await env.execution(executionId);

    const again = await agent.resume(executionId, { approvalId, approved: false, reason: "changed my mind" }).result.then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(again).toBeInstanceOf(ApprovalMismatchError);
    expect(again).toMatchObject({
      code: "APPROVAL_MISMATCH",
      executionId,
      details: { mismatch: "execution_ended", outcome: "completed", decision: { approved: true } },
    });
    expect((again as Error).message).toMatch(
      new RegExp(`execution ${executionId} already ended with outcome completed \\(approval ${approvalId} was already approved\\)`),
    );
    expect((again as Error).message).not.toContain("env.recover()");
    expect(await env.execution(executionId)).toEqual(before);
    expect(calls).toHaveLength(1);
  });

  it("after a restart: the new process refuses it with APPROVAL_MISMATCH too", async () => {
    const store = await temporaryStorePath();
    const calls: string[] = [];
    const first = await Phronomy.open({ store, logger: recordingLogger() });
    const { agent, executionId, approvalId } = await suspendedRun(first, [], calls);
    await expect(agent.resume(executionId, { approvalId, approved: false, reason: "no" }).result).resolves.toMatchObject({ outcome: "completed" });
    await first.close();

    const second = await openEnvironment({ store });
    const again = defineSupport(second, [], calls).resume(executionId, { approvalId, approved: true });
    const error = await again.result.then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(ApprovalMismatchError);
    expect(error).toMatchObject({ code: "APPROVAL_MISMATCH", details: { mismatch: "execution_ended", decision: { approved: false } } });
    expect((error as Error).message).toContain(`approval ${approvalId} was already declined`);
    expect(calls).toEqual([]);
    expect(await second.execution(executionId)).toMatchObject({ status: "terminal", outcome: "completed", output: "Declined: no" });
  });

  it("a resume of an execution that completed without ever suspending: APPROVAL_MISMATCH naming its outcome", async () => {
    const env = await openEnvironment();
    const agent = env.agent({ id: "plain", model: scriptedModel([{ text: "hello" }]) });
    const run = agent.start("hi");
    const executionId = await run.executionId;
    await run.result;
    const error = await agent.resume(executionId, { approvalId: "any", approved: true }).result.then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(ApprovalMismatchError);
    expect((error as Error).message).toContain(`execution ${executionId} already ended with outcome completed`);
  });

  it("another approval id than the pending one: APPROVAL_MISMATCH naming both, also while a decision is being committed; nothing is decided", async () => {
    const env = await openEnvironment();
    const calls: string[] = [];
    const { agent, executionId, approvalId } = await suspendedRun(env, [], calls);
    const refusalOf = (run: { readonly result: Promise<unknown> }) =>
      run.result.then(
        () => undefined,
        (failure: unknown) => failure as ApprovalMismatchError,
      );
    const words = `approval approval-9 is not the pending approval of execution ${executionId} (that is ${approvalId}); nothing was decided`;
    const wrong = await refusalOf(agent.resume(executionId, { approvalId: "approval-9", approved: true }));
    expect(wrong).toBeInstanceOf(ApprovalMismatchError);
    expect(wrong?.message).toBe(words);
    expect(wrong).toMatchObject({ executionId, agentId: "support", details: { mismatch: "approval_id", approvalId: "approval-9" } });
    // Sent while the right decision is being committed: the same refusal (not "in progress").
    const first = agent.resume(executionId, { approvalId, approved: true });
    const during = await refusalOf(agent.resume(executionId, { approvalId: "approval-9", approved: true }));
    expect(during?.message).toBe(words);
    await expect(first.result).resolves.toMatchObject({ outcome: "completed", output: "Refunded." });
    expect(calls).toEqual([`${executionId}:call-0-0`]);
  });

  it("a resume with an unknown execution id: INVALID_INPUT naming the id", async () => {
    const env = await openEnvironment();
    const agent = defineSupport(env, [], []);
    const error = await agent.resume("no-such-execution", { approvalId: "a", approved: true }).result.then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as Error).message).toContain("no execution no-such-execution in this store");
  });
});
