// `env.retry(executionId)` (docs/decisions/0026): a failed, timed-out or
// cancelled execution continues from its last durable point as a new
// attempt of the same execution; a tool that completed is not run again,
// tools keep their idempotency keys, the timeline shows both attempts;
// completed, running and busy cases are refused, nothing written.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AgentBusyError, ExecutionNotFoundError, RetryRefusedError, tool } from "../../host/index.js";
import { approvalRefundTool, deferred, lookupTool, openEnvironment, scriptedModel, temporaryStorePath, waitFor, type RecordedCall } from "./helpers.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import type { ExecutionStore } from "../../host/store/store.js";
import type { StoreOperation, StoreResult } from "../../host/store/records.js";

/** model → lookup → model; the second model call fails while `failing.on`. */
function flakyModel(failing: { on: boolean }) {
  return scriptedModel(({ turn }) => {
    if (turn === 0) return { toolCalls: [{ toolName: "lookup", input: { orderId: "42" } }] };
    if (failing.on) return { error: "the provider is down" };
    return { text: "Order 42 has shipped." };
  });
}

describe("env.retry", () => {
  it("continues after MODEL_FAILED as attempt 2: the tool is not run twice, the timeline shows both attempts", async () => {
    const env = await openEnvironment();
    const calls: RecordedCall[] = [];
    const failing = { on: true };
    const agent = env.agent({ id: "support", model: flakyModel(failing), tools: { lookup: lookupTool({ calls }) } });
    const started = agent.start("Where is order 42?");
    const executionId = await started.executionId;
    await expect(started.result).rejects.toMatchObject({ code: "MODEL_FAILED" });
    expect(calls).toHaveLength(1);
    expect(await env.execution(executionId)).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "MODEL_FAILED" } });

    failing.on = false;
    const retried = env.retry(executionId);
    expect(await retried.executionId).toBe(executionId);
    await expect(retried.result).resolves.toMatchObject({ executionId, outcome: "completed", output: "Order 42 has shipped." });
    expect(calls, "the lookup that completed before the failure was not run again").toHaveLength(1);
    const row = await env.execution(executionId);
    expect(row).toMatchObject({ status: "terminal", outcome: "completed", metadata: { attempt: 2 } });
    const timeline = await env.timeline(executionId);
    const retriedStep = timeline.find((step) => step.kind === "retried");
    expect(retriedStep).toMatchObject({
      attempt: 2,
      payload: { attempt: 2, resumeAt: "calling_llm", retried: { outcome: "failed", error: { code: "MODEL_FAILED" } } },
    });
    expect(timeline.filter((step) => step.kind === "terminal").map((step) => step.attempt)).toEqual([1, 2]);
    expect(timeline[0]).toMatchObject({ kind: "input", attempt: 1 });
    expect(timeline.at(-1)).toMatchObject({ kind: "terminal", attempt: 2, payload: { outcome: "completed" } });
  });

  it("continues a timed-out execution: the tool batch that never recorded results runs again with the same idempotency key", async () => {
    const env = await openEnvironment();
    const calls: RecordedCall[] = [];
    const gate = deferred();
    const model = scriptedModel(({ turn }) =>
      turn === 0 ? { toolCalls: [{ toolName: "lookup", input: { orderId: "42" } }] } : { text: "Order 42 has shipped." },
    );
    const agent = env.agent({ id: "support", model, tools: { lookup: lookupTool({ calls, gate: gate.promise }) } });
    const run = agent.start("Where is order 42?", { timeoutMs: 400 });
    const executionId = await run.executionId;
    await expect(run.result).rejects.toMatchObject({ code: "TIMEOUT" });
    gate.resolve();
    await expect(env.retry(executionId).result).resolves.toMatchObject({ outcome: "completed" });
    expect(calls.map((call) => call.idempotencyKey)).toEqual([`${executionId}:call-0-0`, `${executionId}:call-0-0`]);
    expect((await env.timeline(executionId)).find((step) => step.kind === "retried")?.payload).toMatchObject({
      resumeAt: "dispatching_tools",
      retried: { outcome: "failed", error: { code: "TIMEOUT" } },
    });
  });

  it("continues an execution cancelled while suspended: it waits for the same approval again, and the approved tool runs once", async () => {
    const env = await openEnvironment();
    const refunds: string[] = [];
    const model = scriptedModel(({ turn }) =>
      turn === 0 ? { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] } : { text: "Refunded." },
    );
    const agent = env.agent({ id: "support", model, tools: { refund: approvalRefundTool(refunds) } });
    const executionId = await agent.start("Refund order 42").executionId;
    const pending = await waitFor(async () => (await env.pendingApprovals())[0]);
    await expect(env.cancel(executionId)).resolves.toMatchObject({ outcome: "cancelled" });
    const retried = env.retry(executionId);
    const again = await waitFor(async () => (await env.pendingApprovals())[0]);
    expect(again.request.approvalId).toBe(pending.request.approvalId);
    await expect(agent.resume(executionId, { approvalId: again.request.approvalId, approved: true }).result).resolves.toMatchObject({ outcome: "completed" });
    await expect(retried.result).resolves.toMatchObject({ outcome: "completed", output: "Refunded." });
    expect(refunds).toEqual([`${executionId}:call-0-0`]);
    expect((await env.execution(executionId))?.metadata.attempt).toBe(2);
  });

  it("env.close() called while a retry of an execution cancelled while suspended reopens it resolves once it is suspended again (host fuzz seed 3389776446)", async () => {
    const path = await temporaryStorePath();
    const sqlite = await SqliteStore.open(path);
    const reopening = deferred();
    const reopened = deferred();
    const store = new Proxy(sqlite, {
      get(target, property, receiver) {
        if (property === "run")
          return async <O extends StoreOperation>(operation: O): Promise<StoreResult<O>> => {
            if (operation.type !== "reopenExecution") return target.run(operation);
            reopening.resolve();
            await reopened.promise;
            return target.run(operation);
          };
        const value = Reflect.get(target, property, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    }) as unknown as ExecutionStore;
    const env = await openEnvironment({ store });
    const model = scriptedModel(({ turn }) =>
      turn === 0 ? { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] } : { text: "Refunded." },
    );
    const agent = env.agent({ id: "support", model, tools: { refund: approvalRefundTool([]) } });
    const executionId = await agent.start("Refund order 42").executionId;
    await waitFor(async () => (await env.pendingApprovals())[0]);
    await expect(env.cancel(executionId)).resolves.toMatchObject({ outcome: "cancelled" });
    const retried = env.retry(executionId);
    await reopening.promise;
    const closing = env.close();
    reopened.resolve();
    await closing;
    await expect(retried.result).rejects.toMatchObject({ code: "RUNTIME_SHUTDOWN" });
    const reopenedStore = await SqliteStore.open(path);
    expect(await reopenedStore.getExecution(executionId)).toMatchObject({ status: "suspended", metadata: { attempt: 2 } });
    await reopenedStore.close();
  });

  it("refuses completed, running and unknown executions, and a busy conversation, writing nothing", async () => {
    const env = await openEnvironment();
    await expect(env.retry("no-such-execution").result).rejects.toBeInstanceOf(ExecutionNotFoundError);

    const failing = { on: true };
    let gate = deferred();
    gate.resolve();
    const lookup = tool({
      description: "Looks an order up; waits for the current gate",
      inputSchema: z.object({ orderId: z.string() }),
      execute: async ({ orderId }) => {
        await gate.promise;
        return { orderId };
      },
    });
    const agent = env.agent({ id: "support", model: flakyModel(failing), tools: { lookup } });
    const failed = agent.start("Where is order 42?");
    const failedId = await failed.executionId;
    await expect(failed.result).rejects.toMatchObject({ code: "MODEL_FAILED" });

    failing.on = false;
    const completed = agent.start("And order 43?");
    await completed.result;
    const completedError = await env.retry(await completed.executionId).result.catch((error: unknown) => error);
    expect(completedError).toBeInstanceOf(RetryRefusedError);
    expect(completedError).toMatchObject({ code: "RETRY_REFUSED", details: { reason: "completed" } });

    // A running execution is refused; so is a retry while the conversation
    // is busy with it (AGENT_BUSY), and the failed row stays as it was.
    gate = deferred();
    const running = agent.start("Where is order 44?");
    const runningId = await running.executionId;
    await expect(env.retry(runningId).result).rejects.toMatchObject({ code: "RETRY_REFUSED", details: { reason: "running" } });
    const before = await env.execution(failedId);
    await expect(env.retry(failedId).result).rejects.toBeInstanceOf(AgentBusyError);
    expect(await env.execution(failedId)).toEqual(before);
    gate.resolve();
    await running.result;
    await expect(env.retry(failedId).result).resolves.toMatchObject({ outcome: "completed" });
  });
});
