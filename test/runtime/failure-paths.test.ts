// Every failure of an application callback ends the run it belongs to, or
// is reported, and never leaves it pending or kills the process (issue 24,
// items 1–3 and 7c), through the public API on real SQLite files:
// a guardrail that throws (or answers no verdict) fails the run durably
// and frees the conversation; an async listener that rejects is a
// listener that threw, under the callback-error policy; the terminal
// record keeps a listener's failure and a cancel that came after the
// session had finished. (The tests run with --unhandled-rejections=strict:
// a rejection left unhandled fails them.)

// This file's subject is the async listener whose rejection the runtime
// reports (`EventListener` says it may be async; its type returns void so
// that any function fits): passing one is the point, not a slip.
/* eslint-disable @typescript-eslint/no-misused-promises */

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Phronomy, tool, type Environment, type ExecutionEvent, type Guardrail } from "../../host/index.js";
import { agentRunModel, deferred, lookupTool, openEnvironment, recordingLogger, scriptedModel, temporaryStorePath } from "./helpers.js";

async function onlyExecutionOf(env: Environment, agentId: string): Promise<string> {
  const rows = await env.executions({ agentId });
  expect(rows).toHaveLength(1);
  return rows[0]!.executionId;
}

describe("a guardrail that throws fails its run", () => {
  it("input: the run fails INPUT_BLOCKED (durably, nothing sent), the conversation admits the next start, close resolves", async () => {
    const env = await openEnvironment();
    const model = scriptedModel(() => ({ text: "ok" }));
    let broken = true;
    const inputGuardrail: Guardrail = () => {
      if (broken) throw new Error("guardrail bug");
      return { action: "allow" };
    };
    const agent = env.agent({ id: "guarded-in", model, inputGuardrail });
    const failure = await agent.start("hello").result.catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "INPUT_BLOCKED", agentId: "guarded-in", details: { guardrailFailed: true } });
    expect((failure as Error).message).toMatch(/input guardrail .* threw.*guardrail bug/);
    expect(model.turnsServed).toBe(0);
    const row = await env.execution(await onlyExecutionOf(env, "guarded-in"));
    expect(row).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "INPUT_BLOCKED" } });
    broken = false;
    await expect(agent.start("again").result).resolves.toMatchObject({ outcome: "completed", output: "ok" });
    await env.close();
  }, 30_000);

  it("input, queued: a message whose guardrail throws fails INPUT_BLOCKED, the one queued behind it runs, later starts work, close resolves", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const agent = env.agent({ id: "guarded-queue", model: agentRunModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const m0 = agent.start("m0");
    await m0.executionId;
    const throwing: Guardrail = () => {
      throw new Error("guardrail bug");
    };
    const m1 = agent.start("m1", { inputGuardrail: throwing });
    const m2 = agent.start("m2");
    gate.resolve();
    await expect(m0.result).resolves.toMatchObject({ outcome: "completed" });
    const failure = await m1.result.catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "INPUT_BLOCKED", details: { guardrailFailed: true } });
    const blockedId = await m1.executionId;
    expect(await env.execution(blockedId!)).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "INPUT_BLOCKED" } });
    await expect(m2.result).resolves.toMatchObject({ outcome: "completed" });
    await expect(agent.start("later", { onBusy: "reject" }).result).resolves.toMatchObject({ outcome: "completed" });
    await env.close();
  }, 30_000);

  it("input: two starts at once with one idempotency key whose guardrail blocks both fail INPUT_BLOCKED (the second follows the first's row)", async () => {
    const env = await openEnvironment();
    const inputGuardrail: Guardrail = () => ({ action: "block", reason: "not today" });
    const agent = env.agent({ id: "guarded-key", model: scriptedModel(() => ({ text: "ok" })), inputGuardrail });
    const first = agent.start("hello", { idempotencyKey: "k1" });
    const second = agent.start("hello", { idempotencyKey: "k1" });
    const failures = await Promise.all([first.result, second.result].map((result) => result.catch((error: unknown) => error)));
    for (const failure of failures) expect(failure).toMatchObject({ code: "INPUT_BLOCKED" });
    await env.close();
  }, 30_000);

  it("input: a start's guardrail answering no verdict (a promise) fails the run INPUT_BLOCKED", async () => {
    const env = await openEnvironment();
    const agent = env.agent({ id: "guarded-async", model: scriptedModel(() => ({ text: "ok" })) });
    const asyncGuardrail = (async () => ({ action: "allow" })) as unknown as Guardrail;
    await expect(agent.start("hello", { inputGuardrail: asyncGuardrail }).result).rejects.toMatchObject({ code: "INPUT_BLOCKED" });
    await expect(agent.start("again").result).resolves.toMatchObject({ outcome: "completed" });
    await env.close();
  }, 30_000);

  it("output: the run fails OUTPUT_BLOCKED with a terminal row, and a restart calls neither the model nor the guardrail again", async () => {
    const store = await temporaryStorePath();
    const logger = recordingLogger();
    const model = scriptedModel(() => ({ text: "the answer" }));
    let guardrailCalls = 0;
    const outputGuardrail: Guardrail = () => {
      guardrailCalls += 1;
      throw new Error("output guardrail bug");
    };
    const definition = { id: "guarded-out", model, outputGuardrail };
    const env = await Phronomy.open({ store, logger });
    const failure = await env
      .agent(definition)
      .start("tell me")
      .result.catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "OUTPUT_BLOCKED", agentId: "guarded-out", details: { guardrailFailed: true } });
    expect((failure as Error).message).toMatch(/output guardrail .* threw.*output guardrail bug/);
    const executionId = await onlyExecutionOf(env, "guarded-out");
    expect(await env.execution(executionId)).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "OUTPUT_BLOCKED" } });
    await env.close();
    const reopened = await Phronomy.open({ store, logger });
    reopened.agent(definition);
    expect(await reopened.recover()).toEqual([]);
    await reopened.close();
    expect({ modelCalls: model.turnsServed, guardrailCalls }).toEqual({ modelCalls: 1, guardrailCalls: 1 });
  }, 30_000);
});

describe("an async listener that rejects is a listener that threw", () => {
  const rejecting = async (_event: ExecutionEvent): Promise<void> => {
    throw new Error("async listener bug");
  };

  it("report (the default): rejections on every event are reported, the run completes", async () => {
    const logger = recordingLogger();
    const env = await openEnvironment({ logger });
    const agent = env.agent({ id: "async-report", model: agentRunModel(), tools: { lookup: lookupTool() } });
    await expect(agent.start("hi", { onEvent: rejecting }).result).resolves.toMatchObject({ outcome: "completed" });
    await env.close();
    const reported = logger.warnings.filter((warning) => warning.includes("async listener bug"));
    expect(reported.some((warning) => warning.includes('"model_call_started"'))).toBe(true);
    expect(reported.some((warning) => warning.includes('"done"'))).toBe(true);
  });

  it("fail_task: a rejection on done fails the run STREAM_CALLBACK with the rejection as cause", async () => {
    const env = await openEnvironment({ callbackErrorPolicy: "fail_task" });
    const agent = env.agent({ id: "async-fail", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const failure = await agent.start("hi", { onEvent: rejecting }).result.catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "STREAM_CALLBACK", cause: { message: "async listener bug" } });
    const executionId = await onlyExecutionOf(env, "async-fail");
    expect(await env.execution(executionId)).toMatchObject({ outcome: "completed" });
  });

  it("fail_task: a rejection on error or approval_required is reported, the run keeps its own outcome", async () => {
    const logger = recordingLogger();
    const env = await openEnvironment({ callbackErrorPolicy: "fail_task", logger });
    const blocked = env.agent({ id: "async-error", model: scriptedModel(() => ({ text: "x" })), outputGuardrail: () => ({ action: "block", reason: "no" }) });
    await expect(blocked.start("hi", { onEvent: rejecting }).result).rejects.toMatchObject({ code: "OUTPUT_BLOCKED" });
    const refund = tool({ inputSchema: z.object({}), needsApproval: true, execute: () => "refunded" });
    const model = scriptedModel(({ turn }) => (turn === 0 ? { toolCalls: [{ toolName: "refund", input: {} }] } : { text: "done" }));
    const suspending = env.agent({ id: "async-approval", model, tools: { refund } });
    const events: string[] = [];
    const run = suspending.start("refund", {
      onEvent: async (event) => {
        events.push(event.type);
        throw new Error("async listener bug");
      },
    });
    for await (const event of run.events) if (event.type === "approval_required") break;
    await env.close();
    expect(events.at(-1)).toBe("approval_required");
    const reported = logger.warnings.filter((warning) => warning.includes("async listener bug"));
    expect(reported.some((warning) => warning.includes('"error"'))).toBe(true);
    expect(reported.some((warning) => warning.includes('"approval_required"'))).toBe(true);
  });
});

describe("the terminal record", () => {
  it("keeps the first listener failure of the execution (a throw, or a rejection)", async () => {
    const env = await openEnvironment();
    const agent = env.agent({ id: "recorded", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const throwing = (event: ExecutionEvent): void => {
      if (event.type === "tool_call_started") throw new Error("listener bug");
    };
    const first = await agent.start("one", { onEvent: throwing }).result;
    expect((await env.execution(first.executionId))?.metadata).toMatchObject({ callbackFailure: { eventType: "tool_call_started", message: "listener bug" } });
    const rejecting = async (event: ExecutionEvent): Promise<void> => {
      if (event.type === "model_call_finished") throw new Error("async listener bug");
    };
    const second = await agent.start("two", { onEvent: rejecting }).result;
    expect((await env.execution(second.executionId))?.metadata).toMatchObject({
      callbackFailure: { eventType: "model_call_finished", message: "async listener bug" },
    });
    const third = await agent.start("three").result;
    expect((await env.execution(third.executionId))?.metadata).not.toHaveProperty("callbackFailure");
  });

  it("keeps a cancel requested after the session finished (timed out, its tool still running)", async () => {
    const env = await openEnvironment();
    const aborted = deferred();
    const gate = deferred();
    const stubborn = tool({
      inputSchema: z.object({}),
      async execute(_input, { signal }) {
        signal.addEventListener("abort", () => aborted.resolve(), { once: true });
        await gate.promise; // finishes its work whatever the abort says
        return "done anyway";
      },
    });
    const model = scriptedModel(({ turn }) => (turn === 0 ? { toolCalls: [{ toolName: "stubborn", input: {} }] } : { text: "never" }));
    const agent = env.agent({ id: "late-cancel", model, tools: { stubborn } });
    const controller = new AbortController();
    const run = agent.start("go", { timeoutMs: 1_000, signal: controller.signal });
    // The session timed out while its tool ran: its terminal waits for the tool.
    const toolAborted = await Promise.race([
      aborted.promise.then(() => true),
      run.result.then(
        () => false,
        () => false,
      ),
    ]);
    expect(toolAborted).toBe(true);
    controller.abort();
    gate.resolve();
    await expect(run.result).rejects.toMatchObject({ code: "TIMEOUT" });
    const row = await env.execution(await run.executionId);
    expect(row).toMatchObject({ outcome: "failed", error: { code: "TIMEOUT" }, metadata: { cancelRequested: true } });
    const plain = await env.agent({ id: "no-cancel", model: scriptedModel(() => ({ text: "ok" })) }).start("go").result;
    expect((await env.execution(plain.executionId))?.metadata).not.toHaveProperty("cancelRequested");
  });
});
