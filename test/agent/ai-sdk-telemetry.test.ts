// The AI SDK's telemetry around Phronomy's model calls (docs/decisions/0067):
// a call no one listens to goes without it (`telemetry: { isEnabled: false }`),
// and a listener — an integration registered with the SDK's
// `registerTelemetry`, or a subscriber of its tracing channel `ai:telemetry` —
// sees every call made after it appeared, through the same calls as before.

import { tracingChannel } from "node:diagnostics_channel";
import { registerTelemetry } from "ai";
import { afterEach, describe, expect, it } from "vitest";
import { aiSdkTelemetryListened } from "../../host/agent/ai-sdk-telemetry.js";
import { callModel } from "../../host/agent/model.js";
import type { ToolSpecification } from "../../host/agent/tools.js";
import { scriptedModel } from "../../host/testing.js";
import { openEnvironment } from "../runtime/helpers.js";
import { fakeV4Model, v4Usage } from "./fake-models.js";

type Integrations = { AI_SDK_TELEMETRY_INTEGRATIONS?: unknown[] };

afterEach(() => {
  // The SDK keeps its integrations on globalThis: each test starts without.
  delete (globalThis as Integrations).AI_SDK_TELEMETRY_INTEGRATIONS;
});

const lookupTool: ToolSpecification = {
  name: "lookup",
  description: "Finds an order.",
  inputJsonSchema: { type: "object", properties: { orderId: { type: "number" } }, required: ["orderId"] },
};

function textModel() {
  return fakeV4Model(() => ({
    content: [{ type: "text", text: "Shipped." }],
    finishReason: { unified: "stop", raw: "stop" },
    usage: v4Usage(10, 2),
    warnings: [],
  }));
}

async function callOnce(model: ReturnType<typeof textModel>) {
  return callModel(model, {
    system: "Be brief.",
    messages: [{ role: "user", content: "Where is order 42?" }],
    tools: [lookupTool],
    signal: new AbortController().signal,
  });
}

describe("AI SDK telemetry, built only when someone listens", () => {
  it("with no integration and no subscriber, no one is listening and the call answers as always", async () => {
    expect(aiSdkTelemetryListened()).toBe(false);
    const model = textModel();
    const turn = await callOnce(model);
    expect(turn.text).toBe("Shipped.");
    expect(model.calls).toHaveLength(1);
    expect(model.calls[0]!.tools).toEqual([expect.objectContaining({ type: "function", name: "lookup" })]);
  });

  it("with no one listening the SDK builds no telemetry dispatcher; with an integration it does", async () => {
    // The SDK's dispatcher reads the global integrations when it is built
    // (createTelemetryDispatcher), and only then: count those reads.
    let integrations: unknown[] | undefined;
    const dispatcherReads: string[] = [];
    Object.defineProperty(globalThis, "AI_SDK_TELEMETRY_INTEGRATIONS", {
      configurable: true,
      get() {
        const stack = new Error("read").stack ?? "";
        if (stack.includes("createTelemetryDispatcher")) dispatcherReads.push("read");
        return integrations;
      },
      set(value: unknown[]) {
        integrations = value;
      },
    });
    const model = textModel();
    await callOnce(model);
    await callOnce(model);
    expect(dispatcherReads).toEqual([]);
    registerTelemetry({ onStart: () => undefined });
    await callOnce(model);
    expect(dispatcherReads.length).toBeGreaterThan(0);
  });

  it("an integration registered with registerTelemetry sees every call made after it was registered", async () => {
    const model = textModel();
    await callOnce(model);
    const starts: { provider: string; modelId: string }[] = [];
    const modelCalls: string[] = [];
    registerTelemetry({
      onStart: (event) => void starts.push({ provider: event.provider, modelId: event.modelId }),
      onLanguageModelCallStart: (event) => void modelCalls.push(event.modelId),
    });
    expect(aiSdkTelemetryListened()).toBe(true);
    await callOnce(model);
    await callOnce(model);
    expect(starts).toEqual([
      { provider: "fake", modelId: "fake-v4" },
      { provider: "fake", modelId: "fake-v4" },
    ]);
    expect(modelCalls).toEqual(["fake-v4", "fake-v4"]);
    expect(model.calls).toHaveLength(3);
  });

  it("a subscriber of the tracing channel ai:telemetry sees the calls made while it is subscribed, and none after", async () => {
    const channel = tracingChannel("ai:telemetry");
    const seen: string[] = [];
    const handlers = {
      start: (message: unknown) => void seen.push((message as { type: string }).type),
      end: () => undefined,
      asyncStart: () => undefined,
      asyncEnd: () => undefined,
      error: () => undefined,
    };
    const model = textModel();
    await callOnce(model);
    expect(seen).toEqual([]);
    channel.subscribe(handlers);
    try {
      expect(aiSdkTelemetryListened()).toBe(true);
      await callOnce(model);
      // The SDK opens a span for the call's step and one for its model call.
      expect(seen.length).toBeGreaterThan(0);
      expect(seen).toContain("step");
    } finally {
      channel.unsubscribe(handlers);
    }
    const before = seen.length;
    expect(aiSdkTelemetryListened()).toBe(false);
    await callOnce(model);
    expect(seen).toHaveLength(before);
  });

  it("an agent's run reaches a registered integration: one start per model call of the run", async () => {
    const starts: string[] = [];
    registerTelemetry({ onStart: (event) => void starts.push(event.modelId) });
    const env = await openEnvironment();
    const model = scriptedModel([{ text: "Hello." }]);
    const result = await env.agent({ id: "telemetry", model }).start("Hi").result;
    expect(result.output).toBe("Hello.");
    expect(starts).toEqual([model.modelId]);
  });
});
