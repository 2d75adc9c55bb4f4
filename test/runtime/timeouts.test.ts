// Timeouts through the public API, on real SQLite files
// (docs/decisions/0016): `timeoutMs` bounds the time an execution runs —
// the agent's value is the default of the start's, each start and each
// resume runs on its own budget, and the time suspended for approval does
// not count. (A recovered execution's budget: test/crash/timeouts.test.ts.)

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { TimeoutError, tool, type Environment } from "../../host/index.js";
import { fakeV4Model } from "../agent/fake-models.js";
import { deferred, openEnvironment, scriptedModel, waitFor } from "./helpers.js";

/** A model that never answers: its call settles only when aborted. */
function hangingModel() {
  return fakeV4Model(
    (options) =>
      new Promise<never>((_, reject) => {
        options.abortSignal?.addEventListener("abort", () => reject(options.abortSignal?.reason));
      }),
  );
}

/** Asks for the refund (which needs approval), then answers. */
function refundModel() {
  return scriptedModel(({ messages }) => {
    const lastUser = messages.map((message) => message.role).lastIndexOf("user");
    const answered = messages.slice(lastUser + 1).some((message) => message.role === "assistant");
    return answered ? { text: "Refunded." } : { toolCalls: [{ toolName: "refund", input: { orderId: "42" } }] };
  });
}

/** A refund tool that needs approval; `hang` makes it wait until aborted. */
function refundTool(calls: string[], options: { hang?: boolean } = {}) {
  return tool({
    description: "Refunds an order",
    inputSchema: z.object({ orderId: z.string() }),
    needsApproval: true,
    async execute({ orderId }, { idempotencyKey, signal }) {
      calls.push(idempotencyKey);
      if (options.hang) await new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
      return { refunded: orderId };
    },
  });
}

async function pendingApprovalOf(env: Environment, executionId: string): Promise<string> {
  const pending = await waitFor(async () => (await env.pendingApprovals()).find((approval) => approval.executionId === executionId));
  return pending.request.approvalId;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Fails with `what` instead of hanging the suite when a run never ends
 * (what these tests saw before the fix); not a measure of speed. */
function within<T>(promise: Promise<T>, what: string, milliseconds = 20_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`never settled: ${what}`)), milliseconds);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

describe("timeouts", () => {
  it("the agent's timeoutMs times out a hanging model: TIMEOUT, durably", async () => {
    const env = await openEnvironment();
    const agent = env.agent({ id: "support", model: hangingModel(), timeoutMs: 100 });
    const events: string[] = [];
    const run = agent.start("Where is order 42?", { onEvent: (event) => events.push(event.type) });
    const executionId = await run.executionId;
    const error = await within(run.result, "the agent-level timeout").then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error).toMatchObject({ code: "TIMEOUT", details: { timeoutMs: 100 } });
    expect(events.at(-1)).toBe("timeout");
    expect(await env.execution(executionId)).toMatchObject({ outcome: "failed", error: { code: "TIMEOUT" }, metadata: { config: { timeoutMs: 100 } } });
  });

  it("the start's timeoutMs overrides the agent's", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const model = scriptedModel(async () => {
      await gate.promise;
      return { text: "done" };
    });
    const agent = env.agent({ id: "support", model, timeoutMs: 50 });
    const run = agent.start("hi", { timeoutMs: 60_000 });
    const executionId = await run.executionId;
    await sleep(200);
    gate.resolve();
    await expect(run.result).resolves.toMatchObject({ executionId, outcome: "completed", output: "done" });
    expect((await env.execution(executionId))?.metadata.config).toMatchObject({ timeoutMs: 60_000 });
  });

  it("time suspended for approval does not count: approved 500 ms after a 200 ms start, the tool runs and the run completes", async () => {
    const env = await openEnvironment();
    const calls: string[] = [];
    const agent = env.agent({ id: "support", model: refundModel(), tools: { refund: refundTool(calls) } });
    const original = agent.start("Refund order 42", { timeoutMs: 200 });
    const executionId = await original.executionId;
    const approvalId = await pendingApprovalOf(env, executionId);
    await sleep(500);
    const resumed = agent.resume(executionId, { approvalId, approved: true });
    await expect(within(resumed.result, "the resumed run")).resolves.toMatchObject({ executionId, outcome: "completed", output: "Refunded." });
    await expect(original.result).resolves.toMatchObject({ outcome: "completed" });
    expect(calls).toEqual([`${executionId}:call-0-0`]);
    expect(await env.execution(executionId)).toMatchObject({ status: "terminal", outcome: "completed" });
  });

  it("a resume runs on a budget of its own: the resumed run that hangs ends TIMEOUT", async () => {
    const env = await openEnvironment();
    const calls: string[] = [];
    const agent = env.agent({ id: "support", model: refundModel(), tools: { refund: refundTool(calls, { hang: true }) }, timeoutMs: 150 });
    const original = agent.start("Refund order 42");
    const executionId = await original.executionId;
    const approvalId = await pendingApprovalOf(env, executionId);
    await sleep(300);
    const events: string[] = [];
    const resumed = agent.resume(executionId, { approvalId, approved: true, onEvent: (event) => events.push(event.type) });
    await expect(within(resumed.result, "the resume's own timeout")).rejects.toBeInstanceOf(TimeoutError);
    await expect(original.result).rejects.toMatchObject({ code: "TIMEOUT" });
    // The start's budget was long spent: the tool ran on the resume's own.
    expect(calls).toEqual([`${executionId}:call-0-0`]);
    expect(events).toContain("tool_call_started");
    expect(await env.execution(executionId)).toMatchObject({ outcome: "failed", error: { code: "TIMEOUT" } });
  });
});
