// The direct model call (host/agent/direct-call.ts, decision 0093) against
// `generateText`: the same hand-written v2, v3 and v4 models answer both
// paths, and the two must give equal turns, equal errors, equal warnings and
// equal options to the provider. The `generateText` side is the same
// definition with `telemetry: { isEnabled: false }` set, which is exactly
// what a call without a listener passed before (0067) and which keeps it
// on `generateText`; a wrapper around `ai`'s `generateText` counts which
// path each call took. Then: every feature that needs the pipeline still
// goes through `generateText`.

import type { LanguageModelV4CallOptions, LanguageModelV4Content, LanguageModelV4GenerateResult } from "@ai-sdk/provider";
import { getEventListeners } from "node:events";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ConversationMessage, ModelTurn } from "../../host/agent/messages.js";
import { callModel, type CallOverrides, type LanguageModel, type ModelCallRequest } from "../../host/agent/model.js";
import type { ToolSpecification } from "../../host/agent/tools.js";
import { type LanguageModelV2GenerateResult, fakeV2Model, fakeV3Model, fakeV4Model, v4Usage } from "./fake-models.js";

const counted = vi.hoisted(() => ({ generateText: 0, streamText: 0 }));

vi.mock("ai", async (importOriginal) => {
  const original = await importOriginal<typeof import("ai")>();
  return {
    ...original,
    generateText: (options: Parameters<typeof original.generateText>[0]) => {
      counted.generateText += 1;
      return original.generateText(options);
    },
    streamText: (options: Parameters<typeof original.streamText>[0]) => {
      counted.streamText += 1;
      return original.streamText(options);
    },
  };
});

type Globals = { AI_SDK_LOG_WARNINGS?: unknown; AI_SDK_DEFAULT_PROVIDER?: unknown; AI_SDK_TELEMETRY_INTEGRATIONS?: unknown };
const globals = globalThis as Globals;

let warnings: unknown[] = [];

beforeEach(() => {
  warnings = [];
  globals.AI_SDK_LOG_WARNINGS = (options: unknown) => warnings.push(options);
  counted.generateText = 0;
  counted.streamText = 0;
});

afterEach(() => {
  delete globals.AI_SDK_LOG_WARNINGS;
  delete globals.AI_SDK_DEFAULT_PROVIDER;
  delete globals.AI_SDK_TELEMETRY_INTEGRATIONS;
});

const lookupTool: ToolSpecification = {
  name: "lookup",
  description: "Finds an order.",
  inputJsonSchema: { type: "object", properties: { orderId: { type: "number" } }, required: ["orderId"] },
};
const notifyTool: ToolSpecification = {
  name: "notify",
  description: undefined,
  title: "Notify",
  strict: true,
  providerOptions: { fake: { cache: true } },
  inputExamples: [{ input: { to: "ops" } }],
  inputJsonSchema: { type: "object", properties: { to: { type: "string" } } },
};
const tools = [lookupTool, notifyTool];

const conversation: ConversationMessage[] = [
  { role: "user", content: "Where is order 42?" },
  { role: "assistant", text: "Let me look.", toolCalls: [{ callId: "c0", toolName: "lookup", input: { orderId: 42 } }] },
  { role: "tool", results: [{ callId: "c0", toolName: "lookup", output: { status: "shipped" }, isError: false }] },
  { role: "user", content: "And the invoice?" },
];

/** The settings a definition gives, in both paths (the other path's copy adds the telemetry setting). */
const richSettings: Record<string, unknown> = {
  maxOutputTokens: 200,
  temperature: 0.3,
  topP: 0.9,
  seed: 7,
  stopSequences: ["END"],
  headers: { "X-Trace": "t-1", "User-Agent": "shop/2", "X-Unset": undefined },
  providerOptions: { fake: { mode: "fast" } },
  toolOrder: ["notify"],
};

interface Outcome {
  readonly turn?: ModelTurn;
  readonly error?: { readonly name: string; readonly code?: unknown; readonly message: string; readonly details?: unknown; readonly cause?: unknown };
  readonly options: unknown[];
  readonly warnings: unknown[];
}

interface Case {
  readonly model: LanguageModel;
  /** The options the provider received; the model's own record by default. */
  readonly calls?: unknown[];
  readonly settings?: Record<string, unknown>;
  readonly tools?: readonly ToolSpecification[];
  readonly system?: string;
  readonly overrides?: CallOverrides;
  readonly signal?: AbortSignal;
  readonly messages?: readonly ConversationMessage[];
}

/** One call on the direct path and the same on `generateText`, each with
 * the options the provider received and the warnings logged. */
async function bothPaths(input: Case): Promise<{ direct: Outcome; pipeline: Outcome }> {
  counted.generateText = 0;
  const direct = await outcomeOf(input, input.settings ?? {});
  expect(counted.generateText).toBe(0);
  const pipeline = await outcomeOf(input, { ...input.settings, telemetry: { isEnabled: false } });
  expect(counted.generateText).toBe(1);
  return { direct, pipeline };
}

async function outcomeOf(input: Case, settings: Record<string, unknown>): Promise<Outcome> {
  const calls = input.calls ?? (input.model as unknown as { readonly calls: unknown[] }).calls;
  const before = calls.length;
  warnings = [];
  const request: ModelCallRequest = {
    system: input.system ?? "Be brief.",
    messages: input.messages ?? conversation,
    tools: input.tools ?? tools,
    signal: input.signal ?? sharedSignal,
    settings: settings as ModelCallRequest["settings"],
    ...(input.overrides !== undefined ? { overrides: input.overrides } : {}),
    agentId: "agent-1",
    executionId: "e-1",
  };
  try {
    const turn = await callModel(input.model, request);
    return { turn, options: calls.slice(before), warnings };
  } catch (caught) {
    const error = caught as { name: string; code?: unknown; message: string; details?: unknown; cause?: unknown };
    return {
      error: { name: error.name, code: error.code, message: error.message, details: error.details, cause: causeOf(error.cause) },
      options: calls.slice(before),
      warnings,
    };
  }
}

function causeOf(cause: unknown): unknown {
  if (!(cause instanceof Error)) return cause;
  return { name: cause.name, message: cause.message };
}

const sharedSignal = new AbortController().signal;

function expectSame({ direct, pipeline }: { direct: Outcome; pipeline: Outcome }): void {
  expect(direct.options).toHaveLength(1);
  expect(direct.options).toStrictEqual(pipeline.options);
  expect(direct.turn).toStrictEqual(pipeline.turn);
  expect(direct.error).toStrictEqual(pipeline.error);
  expect(direct.warnings).toStrictEqual(pipeline.warnings);
}

const richContent: LanguageModelV4Content[] = [
  { type: "reasoning", text: "They want the invoice.", providerMetadata: { fake: { signature: "sig" } } },
  { type: "text", text: "Here is " },
  { type: "text", text: "the invoice." },
  { type: "source", sourceType: "url", id: "s1", url: "https://example.com/a", title: "A" },
  { type: "source", sourceType: "document", id: "s2", mediaType: "application/pdf", title: "Invoice", filename: "i.pdf" },
  { type: "file", mediaType: "image/png", data: { type: "data", data: "iVBORw0KGgo=" } },
  { type: "reasoning", text: "Done." },
];

function v4Answer(content: LanguageModelV4Content[], extra: Partial<LanguageModelV4GenerateResult> = {}): LanguageModelV4GenerateResult {
  return {
    content,
    finishReason: { unified: "stop", raw: "end_turn" },
    usage: {
      inputTokens: { total: 120, noCache: 20, cacheRead: 100, cacheWrite: 7 },
      outputTokens: { total: 40, text: 10, reasoning: 30 },
    },
    warnings: [{ type: "unsupported", feature: "topK" }],
    providerMetadata: { fake: { requestId: "r-1" } },
    response: { id: "resp-1", modelId: "fake-v4-2026" },
    ...extra,
  };
}

describe("a direct call and generateText give the same", () => {
  it("v4: text, reasoning, sources, a file, cache and reasoning usage, warnings, every setting and the user agent", async () => {
    const model = fakeV4Model(() => v4Answer(richContent));
    const outcome = await bothPaths({ model, settings: { ...richSettings } });
    expectSame(outcome);
    const sent = outcome.direct.options[0] as LanguageModelV4CallOptions;
    expect(sent.headers).toStrictEqual({ "user-agent": expect.stringMatching(/^shop\/2 ai\/7\./), "x-trace": "t-1" });
    expect(sent.tools?.map((tool) => tool.name)).toEqual(["notify", "lookup"]);
    expect(outcome.direct.turn).toMatchObject({ text: "Here is the invoice.", usage: { cacheReadTokens: 100, cacheWriteTokens: 7, reasoningTokens: 30 } });
    expect(outcome.direct.warnings).toHaveLength(1);
  });

  it("v4: tool calls, one of an unknown tool, one with an empty input, provider-executed ones left out", async () => {
    const model = fakeV4Model(() =>
      v4Answer(
        [
          { type: "text", text: "Checking." },
          { type: "tool-call", toolCallId: "t1", toolName: "lookup", input: '{"orderId":42}' },
          { type: "tool-call", toolCallId: "t2", toolName: "refund", input: '{"amount":3}' },
          { type: "tool-call", toolCallId: "t3", toolName: "notify", input: "" },
          { type: "tool-call", toolCallId: "t4", toolName: "web_search", input: '{"q":"x"}', providerExecuted: true },
          { type: "tool-result", toolCallId: "t4", toolName: "web_search", result: { hits: 1 } },
        ],
        { finishReason: { unified: "tool-calls", raw: "tool_use" }, warnings: [] },
      ),
    );
    const outcome = await bothPaths({ model, settings: { toolChoice: "auto" } });
    expectSame(outcome);
    expect(outcome.direct.turn?.toolCalls).toEqual([
      { callId: "t1", toolName: "lookup", input: { orderId: 42 } },
      { callId: "t2", toolName: "refund", input: { amount: 3 } },
      { callId: "t3", toolName: "notify", input: {} },
    ]);
  });

  it("v4: a tool call whose input is not JSON is the same model error", async () => {
    const model = fakeV4Model(() =>
      v4Answer([{ type: "tool-call", toolCallId: "t1", toolName: "lookup", input: "{orderId:" }], { finishReason: { unified: "tool-calls", raw: "tool_use" } }),
    );
    const outcome = await bothPaths({ model });
    expectSame(outcome);
    expect(outcome.direct.error).toMatchObject({ code: "MODEL_FAILED", cause: { name: "AI_InvalidToolInputError" } });
  });

  it("v3: content, usage and finish reason", async () => {
    const model = fakeV3Model({
      content: [
        { type: "reasoning", text: "Hm." },
        { type: "text", text: "Shipped." },
        { type: "tool-call", toolCallId: "t1", toolName: "notify", input: '{"to":"ops"}' },
      ],
      finishReason: { unified: "tool-calls", raw: "tool_calls" },
      usage: { inputTokens: { total: 9, noCache: 4, cacheRead: 5, cacheWrite: undefined }, outputTokens: { total: 3, text: 1, reasoning: 2 } },
      warnings: [{ type: "other", message: "v3 says hi" }],
    });
    expectSame(await bothPaths({ model, settings: { temperature: 0 } }));
  });

  it("v2: usage with cached and reasoning tokens, an unknown finish reason, and the compatibility warning at each call", async () => {
    const result: LanguageModelV2GenerateResult = {
      content: [
        { type: "text", text: "Old provider." },
        { type: "tool-call", toolCallId: "t1", toolName: "lookup", input: '{"orderId":1}' },
      ],
      finishReason: "unknown",
      usage: { inputTokens: 11, outputTokens: 5, totalTokens: 16, cachedInputTokens: 6, reasoningTokens: 2 },
      warnings: [{ type: "unsupported-setting", setting: "seed" }],
    };
    const model = fakeV2Model(result);
    const outcome = await bothPaths({ model, settings: { seed: 3 } });
    expectSame(outcome);
    expect(outcome.direct.turn).toMatchObject({ finishReason: "other", usage: { cacheReadTokens: 6, reasoningTokens: 2 } });
    expect(outcome.direct.warnings).toHaveLength(2);
    // And again at the next call, as generateText logs it at each.
    const again = await outcomeOf({ model }, {});
    expect(again.warnings).toHaveLength(2);
  });

  it("a provider error: the same ModelFailedError with its status", async () => {
    const failure = Object.assign(new Error("rate limited"), { name: "AI_APICallError", statusCode: 429, isRetryable: true });
    const model = fakeV4Model(() => {
      throw failure;
    });
    const outcome = await bothPaths({ model });
    expectSame(outcome);
    expect(outcome.direct.error).toMatchObject({ code: "MODEL_FAILED", details: { statusCode: 429 } });
  });

  it("the AI Gateway's authentication error: the same explanation", async () => {
    const unauthenticated = Object.assign(new Error("no key"), {
      [Symbol.for("vercel.ai.gateway.error")]: true,
      [Symbol.for("vercel.ai.gateway.error.GatewayAuthenticationError")]: true,
      statusCode: 401,
    });
    const model = fakeV4Model(() => {
      throw unauthenticated;
    });
    const outcome = await bothPaths({ model });
    expectSame(outcome);
    expect(outcome.direct.error?.message).toContain("Unauthenticated request to AI Gateway");
  });

  it("an abort during the call: the abort, as it is", async () => {
    const controller = new AbortController();
    const model = fakeV4Model(() => {
      controller.abort(new Error("cancelled by test"));
      throw controller.signal.reason;
    });
    const direct = await outcomeOf({ model, signal: controller.signal }, {});
    expect(counted.generateText).toBe(0);
    const again = new AbortController();
    const model2 = fakeV4Model(() => {
      again.abort(new Error("cancelled by test"));
      throw again.signal.reason;
    });
    const pipeline = await outcomeOf({ model: model2, signal: again.signal }, { telemetry: { isEnabled: false } });
    expect(counted.generateText).toBe(1);
    expect(direct.error).toStrictEqual(pipeline.error);
    expect(direct.error).toMatchObject({ name: "Error", message: "cancelled by test" });
  });

  it("a provider that does not heed the signal: the call rejects with the abort when it fires, not when the provider answers", async () => {
    const controller = new AbortController();
    let answered: (() => void) | undefined;
    const model = fakeV4Model(async () => {
      await new Promise<void>((resolve) => {
        answered = resolve;
        controller.abort(new Error("cancelled by test"));
      });
      return v4Answer([{ type: "text", text: "too late" }]);
    });
    const direct = await outcomeOf({ model, signal: controller.signal }, {});
    expect(counted.generateText).toBe(0);
    expect(direct.error).toMatchObject({ name: "Error", message: "cancelled by test" });
    answered?.();
  });

  it("calls on one signal: the signal holds one abort listener however many calls it served, and an abort fails only the call in flight", async () => {
    const controller = new AbortController();
    let answered: (() => void) | undefined;
    let call = 0;
    const model = fakeV4Model(async () => {
      call += 1;
      if (call <= 3) return v4Answer([{ type: "text", text: `answer ${call}` }]);
      await new Promise<void>((resolve) => {
        answered = resolve;
        controller.abort(new Error("cancelled by test"));
      });
      return v4Answer([{ type: "text", text: "too late" }]);
    });
    for (let index = 1; index <= 3; index += 1) {
      const outcome = await outcomeOf({ model, signal: controller.signal }, {});
      expect(outcome.turn?.text).toBe(`answer ${index}`);
      expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
    }
    const aborted = await outcomeOf({ model, signal: controller.signal }, {});
    expect(aborted.error).toMatchObject({ name: "Error", message: "cancelled by test" });
    expect(counted.generateText).toBe(0);
    // The listener was added once and is gone with the abort.
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
    answered?.();
  });

  it("a tool choice the answer broke: the same ToolChoiceViolationError", async () => {
    const model = fakeV4Model(() => v4Answer([{ type: "text", text: "No tools today." }]));
    const outcome = await bothPaths({ model, settings: { toolChoice: "required" } });
    expectSame(outcome);
    expect(outcome.direct.error?.cause).toMatchObject({ name: "AI_ToolChoiceViolationError" });
    const named = await bothPaths({ model, settings: { toolChoice: { type: "tool", toolName: "lookup" } } });
    expectSame(named);
  });

  it("active tools: a call of a tool not shown is parsed as unknown", async () => {
    const model = fakeV4Model(() =>
      v4Answer([{ type: "tool-call", toolCallId: "t1", toolName: "notify", input: "{}" }], { finishReason: { unified: "tool-calls", raw: "" } }),
    );
    const outcome = await bothPaths({ model, settings: { activeTools: ["lookup"] } });
    expectSame(outcome);
    expect((outcome.direct.options[0] as LanguageModelV4CallOptions).tools?.map((tool) => tool.name)).toEqual(["lookup"]);
  });

  it("a call's overrides: model, instructions, tool choice, active tools and provider options", async () => {
    const definitionModel = fakeV4Model(() => v4Answer([{ type: "text", text: "never" }]));
    const stepModel = fakeV4Model(() =>
      v4Answer([{ type: "tool-call", toolCallId: "t1", toolName: "notify", input: '{"to":"a"}' }], { finishReason: { unified: "tool-calls", raw: "" } }),
    );
    const overrides: CallOverrides = {
      model: stepModel,
      system: "Be thorough.",
      toolChoice: { type: "tool", toolName: "notify" },
      activeTools: ["notify"],
      providerOptions: { fake: { mode: "slow" } },
    };
    const direct = await outcomeOf({ model: definitionModel, overrides, settings: richSettings }, { ...richSettings });
    const pipeline = await outcomeOf({ model: definitionModel, overrides }, { ...richSettings, telemetry: { isEnabled: false } });
    expect(counted.generateText).toBe(1);
    expect(definitionModel.calls).toHaveLength(0);
    expect(stepModel.calls).toHaveLength(2);
    expect(stepModel.calls[0]).toStrictEqual(stepModel.calls[1]);
    expect(direct.turn).toStrictEqual(pipeline.turn);
    expect((stepModel.calls[0] as LanguageModelV4CallOptions).prompt[0]).toEqual({ role: "system", content: "Be thorough." });
  });

  it("a model id resolved by the global provider", async () => {
    const model = fakeV4Model(() => v4Answer([{ type: "text", text: "by id" }]));
    globals.AI_SDK_DEFAULT_PROVIDER = {
      specificationVersion: "v4",
      languageModel: (id: string) => Object.assign(model, { modelId: id }),
    };
    const outcome = await bothPaths({ model: "shop/model-1", calls: model.calls });
    expectSame(outcome);
  });

  it("no tools and no instructions", async () => {
    const model = fakeV4Model(() => v4Answer([{ type: "text", text: "plain" }], { warnings: [] }));
    expectSame(await bothPaths({ model, tools: [], system: "" }));
  });

  it("an invalid setting: the same error at each call", async () => {
    const model = fakeV4Model(() => v4Answer([{ type: "text", text: "x" }]));
    const { direct, pipeline } = await bothPaths({ model, settings: { maxOutputTokens: 1.5 } });
    // Neither path reaches the provider; both say why.
    expect(model.calls).toHaveLength(0);
    expect(direct.error).toStrictEqual(pipeline.error);
    expect(direct.error?.cause).toMatchObject({ name: "AI_InvalidArgumentError" });
  });
});

describe("what needs generateText's pipeline keeps it", () => {
  const answer = () => fakeV4Model(() => v4Answer([{ type: "text", text: '{"ok":true}' }], { warnings: [] }));

  async function pathOf(request: Partial<ModelCallRequest>, model = answer()): Promise<"direct" | "generateText" | "streamText"> {
    counted.generateText = 0;
    counted.streamText = 0;
    await callModel(model, { messages: conversation, tools, signal: sharedSignal, ...request });
    expect(model.calls).toHaveLength(1);
    if (counted.streamText > 0) return "streamText";
    return counted.generateText > 0 ? "generateText" : "direct";
  }

  it("a definition with none of it calls directly", async () => {
    expect(await pathOf({ settings: { ...richSettings } as ModelCallRequest["settings"] })).toBe("direct");
    expect(await pathOf({ settings: { toolChoice: "auto", activeTools: ["lookup"] } })).toBe("direct");
    expect(await pathOf({ overrides: { system: "x", toolChoice: "auto", activeTools: ["lookup"], providerOptions: {} } })).toBe("direct");
  });

  it("structured output, tool-call repair, a timeout, a telemetry setting, a setting it does not know", async () => {
    const { Output, jsonSchema } = await import("ai");
    expect(await pathOf({ output: Output.object({ schema: jsonSchema({ type: "object", properties: { ok: { type: "boolean" } } }) }) })).toBe("generateText");
    const loopSettings = [
      { experimental_repairToolCall: async () => null },
      { timeout: 60_000 },
      { telemetry: { isEnabled: true } },
      { telemetry: { isEnabled: false } },
      { someLaterSetting: 1 },
    ];
    for (const settings of loopSettings) expect(await pathOf({ settings: settings as ModelCallRequest["settings"] })).toBe("generateText");
  });

  it("a telemetry integration registered, or a subscriber of the SDK's tracing channel", async () => {
    globals.AI_SDK_TELEMETRY_INTEGRATIONS = [{}];
    expect(await pathOf({})).toBe("generateText");
    delete globals.AI_SDK_TELEMETRY_INTEGRATIONS;
    const { tracingChannel } = await import("node:diagnostics_channel");
    const channel = tracingChannel("ai:telemetry");
    const subscriber = { start() {}, end() {}, asyncStart() {}, asyncEnd() {}, error() {} };
    channel.subscribe(subscriber);
    try {
      expect(await pathOf({})).toBe("generateText");
    } finally {
      channel.unsubscribe(subscriber);
    }
    expect(await pathOf({})).toBe("direct");
  });

  it("a call sending messages of its own (prepareStep's)", async () => {
    expect(await pathOf({ overrides: { messages: [{ role: "user", content: "instead" }] } })).toBe("generateText");
  });

  it("a streamed call streams, as before", async () => {
    const model = fakeV4Model(
      () => v4Answer([]),
      () => [
        { type: "text-start", id: "1" },
        { type: "text-delta", id: "1", delta: "hi" },
        { type: "text-end", id: "1" },
        { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage: v4Usage(1, 1) },
      ],
    );
    expect(await pathOf({ onTextDelta: () => undefined }, model)).toBe("streamText");
  });
});
