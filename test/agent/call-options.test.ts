// What a model call passes to the AI SDK beyond its messages is built once
// per definition and reused (docs/decisions/0067): these check the rule that
// keeps the reuse right — the part built is reused only while the request
// names the same model, instructions, tools, output and settings object,
// and a definition is read as it was when defined.

import { describe, expect, it } from "vitest";
import { callModel, type ModelCallSettings } from "../../host/agent/model.js";
import type { ToolSpecification } from "../../host/agent/tools.js";
import { scriptedModel } from "../../host/testing.js";
import { openEnvironment } from "../runtime/helpers.js";
import { fakeV4Model, v4Usage } from "./fake-models.js";

const lookupTool: ToolSpecification = {
  name: "lookup",
  description: "Finds an order.",
  inputJsonSchema: { type: "object", properties: { orderId: { type: "number" } }, required: ["orderId"] },
};

function textModel(modelId = "fake-v4") {
  const model = fakeV4Model(() => ({
    content: [{ type: "text", text: "ok" }],
    finishReason: { unified: "stop", raw: "stop" },
    usage: v4Usage(1, 1),
    warnings: [],
  }));
  return Object.assign(model, { modelId });
}

function call(model: ReturnType<typeof textModel>, extra: { system?: string; tools?: ToolSpecification[]; settings?: ModelCallSettings } = {}) {
  return callModel(model, {
    system: extra.system ?? "Be brief.",
    messages: [{ role: "user", content: "hi" }],
    tools: extra.tools ?? [lookupTool],
    signal: new AbortController().signal,
    settings: extra.settings,
  });
}

describe("call options built once per definition", () => {
  it("the same settings object with other instructions, model or tools sends what this request names", async () => {
    const settings: ModelCallSettings = { temperature: 0.5 };
    const first = textModel("first");
    const second = textModel("second");
    await call(first, { settings });
    await call(first, { settings, system: "Be thorough." });
    await call(second, { settings, tools: [] });
    expect(first.calls.map((options) => options.prompt[0])).toEqual([
      { role: "system", content: "Be brief." },
      { role: "system", content: "Be thorough." },
    ]);
    expect(first.calls.map((options) => options.temperature)).toEqual([0.5, 0.5]);
    expect(first.calls[1]!.tools).toHaveLength(1);
    expect(second.calls).toHaveLength(1);
    expect(second.calls[0]!.tools).toBeUndefined();
    expect(second.calls[0]!.temperature).toBe(0.5);
  });

  it("each call gets its own messages and abort signal", async () => {
    const model = textModel();
    const settings: ModelCallSettings = {};
    const signals = [new AbortController().signal, new AbortController().signal];
    for (const [index, signal] of signals.entries()) {
      await callModel(model, { messages: [{ role: "user", content: `message ${index}` }], tools: [lookupTool], signal, settings });
    }
    expect(model.calls.map((options) => options.prompt.at(-1))).toEqual([
      { role: "user", content: [{ type: "text", text: "message 0" }] },
      { role: "user", content: [{ type: "text", text: "message 1" }] },
    ]);
    expect(model.calls[0]!.abortSignal).not.toBe(model.calls[1]!.abortSignal);
  });

  it("two agents sharing one tool set call their own models with their own settings", async () => {
    const env = await openEnvironment();
    const tools = {};
    const a = scriptedModel(() => ({ text: "from a" }));
    const b = scriptedModel(() => ({ text: "from b" }));
    const agentA = env.agent({ id: "a", model: a, tools, temperature: 0.1 });
    const agentB = env.agent({ id: "b", model: b, tools, temperature: 0.9 });
    for (let round = 0; round < 2; round += 1) {
      expect((await agentA.start("hi").result).output).toBe("from a");
      expect((await agentB.start("hi").result).output).toBe("from b");
    }
    expect(a.lastCallOptions?.temperature).toBe(0.1);
    expect(b.lastCallOptions?.temperature).toBe(0.9);
  });

  it("a definition is read as it was defined: changing its object afterwards does not reach the model", async () => {
    const env = await openEnvironment();
    const model = scriptedModel(() => ({ text: "ok" }));
    const definition = { id: "fixed", model, temperature: 0.2 };
    const agent = env.agent(definition);
    // Changed before its first run, and again after: neither is read.
    definition.temperature = 5;
    await agent.start("hi").result;
    expect(model.lastCallOptions?.temperature).toBe(0.2);
    definition.temperature = 7;
    await agent.start("hi").result;
    expect(model.lastCallOptions?.temperature).toBe(0.2);
  });
});
