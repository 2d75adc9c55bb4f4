// Every AI SDK `ToolLoopAgent` setting an agent definition takes is
// honoured (issue 27 item 5, docs/decisions/0071): the loop's own
// (`stopWhen`, `prepareStep`, `onStepFinish`, `onFinish`, `prepareCall`
// with `callOptionsSchema`) at Phronomy's barriers, and those of each model
// call (`toolChoice`, `activeTools`, `experimental_repairToolCall`,
// `timeout`, `experimental_telemetry`) passed to the AI SDK. Through the
// public API with the scripted model; what the provider was sent is read
// from the calls it received.

import type { LanguageModelV4, LanguageModelV4CallOptions } from "@ai-sdk/provider";
import { hasToolCall, isStepCount, jsonSchema } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { tool, type AgentStep, type FinishEvent } from "../../host/index.js";
import type { ScriptedModel } from "../../host/testing.js";
import { deferred, lookupTool, openEnvironment, scriptedModel, turnOf, recordCalls } from "./helpers.js";

type Scripted = ScriptedModel<LanguageModelV4>;

/** Calls lookup on every turn, saying which turn it is. */
function loopingModel(): Scripted {
  return scriptedModel(({ messages }) => {
    const turn = turnOf(messages);
    return { text: `turn ${turn}`, toolCalls: [{ toolName: "lookup", input: { orderId: String(40 + turn) } }] };
  });
}

function systemOf(call: LanguageModelV4CallOptions | undefined): unknown {
  return call?.prompt.find((message) => message.role === "system")?.content;
}

const finishTool = tool({ description: "Says the work is done", inputSchema: z.object({}), execute: () => "ok" });

describe("stopWhen", () => {
  it("isStepCount(2) stops after the second step, with its text; the model is not called a third time", async () => {
    const env = await openEnvironment();
    const model = loopingModel();
    const agent = env.agent({ id: "a", model, tools: { lookup: lookupTool() }, stopWhen: isStepCount(2) });
    const result = await agent.start("go").result;
    expect(result).toMatchObject({ outcome: "completed", output: "turn 1" });
    expect(model.turnsServed).toBe(2);
  });

  it("hasToolCall(name) stops after the step that called it; the default stop (no tool calls) stays", async () => {
    const env = await openEnvironment();
    const model = scriptedModel(({ messages }) =>
      turnOf(messages) === 0
        ? { toolCalls: [{ toolName: "lookup", input: { orderId: "1" } }] }
        : { text: "all done", toolCalls: [{ toolName: "finish", input: {} }] },
    );
    const agent = env.agent({ id: "a", model, tools: { lookup: lookupTool(), finish: finishTool }, stopWhen: [hasToolCall("finish")] });
    expect(await agent.start("go").result).toMatchObject({ outcome: "completed", output: "all done" });
    expect(model.turnsServed).toBe(2);
    const plain = env.agent({ id: "b", model: scriptedModel([{ text: "hi" }]), stopWhen: isStepCount(5) });
    expect(await plain.start("go").result).toMatchObject({ outcome: "completed", output: "hi" });
  });

  it("a condition that throws fails the execution STREAM_CALLBACK, naming stopWhen", async () => {
    const env = await openEnvironment();
    const agent = env.agent({
      id: "a",
      model: loopingModel(),
      tools: { lookup: lookupTool() },
      stopWhen: () => {
        throw new Error("broken condition");
      },
    });
    await expect(agent.start("go").result).rejects.toMatchObject({ code: "STREAM_CALLBACK", details: { setting: "stopWhen" } });
  });
});

describe("prepareStep", () => {
  it("runs before each model call with the steps so far and changes that call's tool choice, active tools and instructions", async () => {
    const env = await openEnvironment();
    const model = scriptedModel(({ messages }) =>
      turnOf(messages) === 0 ? { toolCalls: [{ toolName: "lookup", input: { orderId: "1" } }] } : { text: "done" },
    );
    const calls = recordCalls(model);
    const seen: { stepNumber: number; steps: number; lastTool: string | undefined }[] = [];
    const agent = env.agent({
      id: "a",
      model,
      instructions: "Be brief.",
      tools: { lookup: lookupTool(), finish: finishTool },
      prepareStep: ({ stepNumber, steps }) => {
        seen.push({ stepNumber, steps: steps.length, lastTool: steps.at(-1)?.toolResults[0]?.toolName });
        return stepNumber === 0
          ? { toolChoice: { type: "tool", toolName: "lookup" } }
          : { activeTools: ["finish"], instructions: "Now finish.", toolChoice: "none" };
      },
    });
    expect(await agent.start("go").result).toMatchObject({ outcome: "completed", output: "done" });
    expect(seen).toEqual([
      { stepNumber: 0, steps: 0, lastTool: undefined },
      { stepNumber: 1, steps: 1, lastTool: "lookup" },
    ]);
    expect(calls[0]?.toolChoice).toEqual({ type: "tool", toolName: "lookup" });
    expect(systemOf(calls[0])).toBe("Be brief.");
    expect(calls[1]?.toolChoice).toEqual({ type: "none" });
    expect(calls[1]?.tools?.map((candidate) => candidate.name)).toEqual(["finish"]);
    expect(systemOf(calls[1])).toBe("Now finish.");
  });

  it("may change the model of one step", async () => {
    const env = await openEnvironment();
    const first = loopingModel();
    const second = scriptedModel([{ text: "from the second model" }]);
    const agent = env.agent({
      id: "a",
      model: first,
      tools: { lookup: lookupTool() },
      prepareStep: ({ stepNumber }) => (stepNumber === 1 ? { model: second } : undefined),
    });
    expect(await agent.start("go").result).toMatchObject({ output: "from the second model" });
    expect([first.turnsServed, second.turnsServed]).toEqual([1, 1]);
  });
});

describe("toolChoice and activeTools", () => {
  it("go to every model call", async () => {
    const env = await openEnvironment();
    const model = scriptedModel([{ text: "ok" }]);
    const calls = recordCalls(model);
    const agent = env.agent({ id: "a", model, tools: { lookup: lookupTool(), finish: finishTool }, toolChoice: "none", activeTools: ["lookup"] });
    await agent.start("go").result;
    expect(calls[0]?.toolChoice).toEqual({ type: "none" });
    expect(calls[0]?.tools?.map((candidate) => candidate.name)).toEqual(["lookup"]);
  });

  it("naming a tool the agent does not have is refused when the agent is defined", async () => {
    const env = await openEnvironment();
    const model = scriptedModel([]);
    expect(() => env.agent({ id: "a", model, tools: { lookup: lookupTool() }, toolChoice: { type: "tool", toolName: "nope" } })).toThrow(/toolChoice.*"nope"/);
    expect(() => env.agent({ id: "b", model, tools: { lookup: lookupTool() }, activeTools: ["nope"] })).toThrow(/activeTools.*"nope"/);
    expect(() => env.agent({ id: "c", model, stopWhen: 3 as never })).toThrow(/stopWhen/);
    expect(() => env.agent({ id: "d", model, onStepFinish: "log" as never })).toThrow(/onStepFinish" must be a function/);
  });
});

describe("onStepFinish and onFinish", () => {
  it("onStepFinish is told each step (its calls, results, usage) in order; onFinish once with every step", async () => {
    const env = await openEnvironment();
    const steps: AgentStep[] = [];
    const finishes: FinishEvent[] = [];
    const model = scriptedModel(({ messages }) =>
      turnOf(messages) === 0 ? { toolCalls: [{ toolName: "lookup", input: { orderId: "42" } }] } : { text: "Order 42 has shipped." },
    );
    const agent = env.agent({
      id: "a",
      model,
      tools: { lookup: lookupTool() },
      onStepFinish: (step) => {
        steps.push(step);
      },
      onFinish: (event) => {
        finishes.push(event);
      },
    });
    const run = agent.start("Where is order 42?");
    await run.result;
    expect(steps.map((step) => [step.stepNumber, step.finishReason, step.toolCalls.length, step.toolResults.length, step.text])).toEqual([
      [0, "tool-calls", 1, 1, ""],
      [1, "stop", 0, 0, "Order 42 has shipped."],
    ]);
    expect(steps[0]?.toolResults[0]).toEqual({
      type: "tool-result",
      toolCallId: "call-0-0",
      toolName: "lookup",
      input: { orderId: "42" },
      output: { orderId: "42", status: "shipped" },
    });
    expect(steps[0]?.usage.totalTokens).toBeGreaterThan(0);
    expect(finishes).toHaveLength(1);
    expect(finishes[0]).toMatchObject({
      executionId: await run.executionId,
      text: "Order 42 has shipped.",
      output: "Order 42 has shipped.",
      finishReason: "stop",
    });
    expect(finishes[0]?.steps).toHaveLength(2);
    expect(finishes[0]?.totalUsage.totalTokens).toBe((steps[0]!.usage.totalTokens ?? 0) + (steps[1]!.usage.totalTokens ?? 0));
  });

  it("an onFinish that throws fails the execution STREAM_CALLBACK", async () => {
    const env = await openEnvironment();
    const agent = env.agent({
      id: "a",
      model: scriptedModel([{ text: "hi" }]),
      onFinish: () => {
        throw new Error("cannot save");
      },
    });
    await expect(agent.start("go").result).rejects.toMatchObject({ code: "STREAM_CALLBACK", details: { setting: "onFinish" } });
  });
});

describe("experimental_repairToolCall", () => {
  it("repairs a call of a tool the model misnamed; the repaired call runs", async () => {
    const env = await openEnvironment();
    const model = scriptedModel(({ messages }) =>
      turnOf(messages) === 0 ? { toolCalls: [{ toolName: "lokup", input: { orderId: "42" } }] } : { text: "done" },
    );
    const looked: string[] = [];
    const lookup = tool({
      inputSchema: z.object({ orderId: z.string() }),
      execute: ({ orderId }) => {
        looked.push(orderId);
        return "shipped";
      },
    });
    const agent = env.agent({
      id: "a",
      model,
      tools: { lookup },
      experimental_repairToolCall: async ({ toolCall }) => ({ ...toolCall, toolName: "lookup" }),
    });
    expect(await agent.start("go").result).toMatchObject({ outcome: "completed", output: "done" });
    expect(looked).toEqual(["42"]);
  });
});

describe("timeout", () => {
  it("is the AI SDK's timeout of each model call: a call past it fails MODEL_FAILED", async () => {
    const env = await openEnvironment();
    const model = scriptedModel([{ text: "late" }], { latencyMs: 30_000 });
    const agent = env.agent({ id: "a", model, maxRetries: 0, timeout: 20 });
    await expect(agent.start("go").result).rejects.toMatchObject({ code: "MODEL_FAILED" });
    expect(model.turnsServed).toBe(0);
  });
});

describe("experimental_telemetry", () => {
  it("the application's setting is used as it is: its integration hears the call", async () => {
    const env = await openEnvironment();
    const started: unknown[] = [];
    const agent = env.agent({
      id: "a",
      model: scriptedModel([{ text: "ok" }]),
      experimental_telemetry: { isEnabled: true, functionId: "support", integrations: [{ onStart: (event) => void started.push(event.operationId) }] },
    });
    await agent.start("go").result;
    expect(started.length).toBeGreaterThan(0);
  });
});

describe("callOptionsSchema and prepareCall", () => {
  const schema = z.object({ userName: z.string() });

  function greeter(env: Awaited<ReturnType<typeof openEnvironment>>) {
    const model = scriptedModel(() => ({ text: "hello" }));
    const calls = recordCalls(model);
    const agent = env.agent({
      id: "a",
      model,
      instructions: "Be kind.",
      callOptionsSchema: schema,
      prepareCall: ({ options, ...rest }) => ({ ...rest, instructions: `${rest.instructions} The user is ${(options as { userName: string }).userName}.` }),
    });
    return { agent, calls };
  }

  it("a start's options are validated, stored with the execution, and given to prepareCall, which changes the calls", async () => {
    const env = await openEnvironment();
    const { agent, calls } = greeter(env);
    const run = agent.start("hi", { options: { userName: "Ada" } });
    await run.result;
    expect(systemOf(calls[0])).toBe("Be kind. The user is Ada.");
    const row = await env.execution(await run.executionId);
    expect(row?.metadata.config?.["callOptions"]).toEqual({ userName: "Ada" });
  });

  it("options the schema refuses, or options for an agent without a schema, are INVALID_INPUT", async () => {
    const env = await openEnvironment();
    const { agent } = greeter(env);
    await expect(agent.start("hi", { options: { userName: 7 } }).result).rejects.toMatchObject({ code: "INVALID_INPUT", message: /callOptionsSchema/ });
    const plain = env.agent({ id: "b", model: scriptedModel([]) });
    await expect(plain.start("hi", { options: { userName: "Ada" } }).result).rejects.toMatchObject({ code: "INVALID_INPUT", message: /has none/ });
    expect(() => env.agent({ id: "c", model: scriptedModel([]), callOptionsSchema: jsonSchema({ type: "object" }), prepareCall: 5 as never })).toThrow(
      /prepareCall/,
    );
  });
});

describe("steps across an approval", () => {
  it("the resumed session rebuilds the steps: onStepFinish and stopWhen see the step that waited for approval", async () => {
    const env = await openEnvironment();
    const refund = tool({ inputSchema: z.object({ orderId: z.string() }), needsApproval: true, execute: () => "refunded" });
    const model = scriptedModel(({ messages }) =>
      turnOf(messages) === 0
        ? { toolCalls: [{ toolName: "refund", input: { orderId: "42" } }] }
        : { text: "never", toolCalls: [{ toolName: "refund", input: { orderId: "43" } }] },
    );
    const told: [number, number][] = [];
    const agent = env.agent({
      id: "a",
      model,
      tools: { refund },
      onStepFinish: (step) => void told.push([step.stepNumber, step.toolResults.length]),
      stopWhen: isStepCount(1),
    });
    const approval = deferred<string>();
    const run = agent.start("refund 42", {
      onEvent: (event) => {
        if (event.type === "approval_required") approval.resolve(event.request.approvalId);
      },
    });
    const approvalId = await approval.promise;
    expect(told).toEqual([]);
    const resumed = await agent.resume(await run.executionId, { approvalId, approved: true }).result;
    expect(resumed).toMatchObject({ outcome: "completed", output: "" });
    await expect(run.result).resolves.toEqual(resumed);
    expect(told).toEqual([[0, 1]]);
    expect(model.turnsServed).toBe(1);
  });
});
