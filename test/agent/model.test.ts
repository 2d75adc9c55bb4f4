// callModel against hand-written provider models: the prompt it sends (v4
// shapes), the turn it assembles from v2, v3 and v4 answers, streaming,
// tool-call input parsing, and how failures and aborts come out.

import type { LanguageModelV2, LanguageModelV3, LanguageModelV4, LanguageModelV4StreamPart } from "@ai-sdk/provider";
import { describe, expect, it, vi } from "vitest";
import { InvalidInputError, ModelFailedError } from "../../host/errors.js";
import type { ConversationMessage } from "../../host/agent/messages.js";
import {
  callModel,
  conversationToPrompt,
  finishReasonOf,
  promptToConversation,
  usageToTotals,
  type LanguageModel,
  type LanguageModelObject,
} from "../../host/agent/model.js";
import type { ToolSpecification } from "../../host/agent/tools.js";
import { fakeV2Model, fakeV3Model, fakeV4Model, v4Usage } from "./fake-models.js";

const conversation: ConversationMessage[] = [
  { role: "user", content: "Where is order 42?" },
  {
    role: "assistant",
    text: "Let me look.",
    toolCalls: [{ callId: "call-0-0", toolName: "lookup", input: { orderId: 42 } }],
  },
  {
    role: "tool",
    results: [{ callId: "call-0-0", toolName: "lookup", output: { status: "shipped" }, isError: false }],
  },
  { role: "assistant", text: "", toolCalls: [{ callId: "call-1-0", toolName: "notify", input: {} }] },
  {
    role: "tool",
    results: [{ callId: "call-1-0", toolName: "notify", output: "mail server down", isError: true }],
  },
];

const lookupTool: ToolSpecification = {
  name: "lookup",
  description: "Finds an order.",
  inputJsonSchema: { type: "object", properties: { orderId: { type: "number" } }, required: ["orderId"] },
};

const hello: ConversationMessage[] = [{ role: "user", content: "go" }];

function signal(): AbortSignal {
  return new AbortController().signal;
}

describe("conversationToPrompt", () => {
  it("produces v4 prompt messages with text, tool-call and tool-result parts", () => {
    const prompt = conversationToPrompt("Be brief.", conversation);
    expect(prompt).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: [{ type: "text", text: "Where is order 42?" }] },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Let me look." },
          { type: "tool-call", toolCallId: "call-0-0", toolName: "lookup", input: { orderId: 42 } },
        ],
      },
      {
        role: "tool",
        content: [
          {
            type: "tool-result",
            toolCallId: "call-0-0",
            toolName: "lookup",
            output: { type: "json", value: { status: "shipped" } },
          },
        ],
      },
      {
        role: "assistant",
        content: [{ type: "tool-call", toolCallId: "call-1-0", toolName: "notify", input: {} }],
      },
      {
        role: "tool",
        content: [
          {
            type: "tool-result",
            toolCallId: "call-1-0",
            toolName: "notify",
            output: { type: "error-text", value: "mail server down" },
          },
        ],
      },
    ]);
  });

  it("leaves out empty assistant messages, empty tool batches and an empty system prompt", () => {
    const prompt = conversationToPrompt("", [
      { role: "system", content: "From the journal." },
      { role: "user", content: "hi" },
      { role: "assistant", text: "", toolCalls: [] },
      { role: "tool", results: [] },
    ]);
    expect(prompt).toEqual([
      { role: "system", content: "From the journal." },
      { role: "user", content: [{ type: "text", text: "hi" }] },
    ]);
  });

  it("sends failed JSON outputs as error-json and plain strings as text", () => {
    const [message] = conversationToPrompt(undefined, [
      {
        role: "tool",
        results: [
          { callId: "a", toolName: "t", output: { code: "E" }, isError: true },
          { callId: "b", toolName: "t", output: "fine", isError: false },
        ],
      },
    ]);
    expect(message).toEqual({
      role: "tool",
      content: [
        { type: "tool-result", toolCallId: "a", toolName: "t", output: { type: "error-json", value: { code: "E" } } },
        { type: "tool-result", toolCallId: "b", toolName: "t", output: { type: "text", value: "fine" } },
      ],
    });
  });

  it("round-trips through promptToConversation", () => {
    const prompt = conversationToPrompt(undefined, conversation);
    expect(promptToConversation(prompt)).toEqual(conversation);
  });
});

describe("callModel with a v4 model", () => {
  it("passes prompt, function tools and the abort signal, and normalizes the answer", async () => {
    const model = fakeV4Model(() => ({
      content: [
        { type: "reasoning", text: "thinking" },
        { type: "text", text: "Checking " },
        { type: "text", text: "now." },
        { type: "tool-call", toolCallId: "c1", toolName: "lookup", input: '{"orderId":42}' },
        { type: "tool-call", toolCallId: "c2", toolName: "ping", input: "" },
        { type: "tool-call", toolCallId: "p1", toolName: "web_search", input: "{}", providerExecuted: true },
      ],
      finishReason: { unified: "tool-calls", raw: "tool_use" },
      usage: v4Usage(120, 30),
      warnings: [],
    }));
    const abortSignal = signal();
    const turn = await callModel(model, {
      system: "Be brief.",
      messages: [{ role: "user", content: "Where is order 42?" }],
      tools: [lookupTool],
      signal: abortSignal,
      settings: { temperature: 0 },
    });

    expect(turn).toEqual({
      text: "Checking now.",
      reasoning: [{ text: "thinking" }],
      toolCalls: [
        { callId: "c1", toolName: "lookup", input: { orderId: 42 } },
        { callId: "c2", toolName: "ping", input: {} },
      ],
      usage: { inputTokens: 120, outputTokens: 30, totalTokens: 150 },
      finishReason: "tool-calls",
    });
    const [options] = model.calls;
    expect(options?.abortSignal).toBe(abortSignal);
    expect(options?.temperature).toBe(0);
    expect(options?.toolChoice).toEqual({ type: "auto" });
    expect(options?.tools).toEqual([
      {
        type: "function",
        name: "lookup",
        description: "Finds an order.",
        inputSchema: lookupTool.inputJsonSchema,
      },
    ]);
    expect(options?.prompt).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: [{ type: "text", text: "Where is order 42?" }] },
    ]);
  });

  it("sends no tools and no tool choice when the agent has no tools", async () => {
    const model = fakeV4Model(() => ({
      content: [{ type: "text", text: "hi" }],
      finishReason: { unified: "stop", raw: undefined },
      usage: v4Usage(undefined, undefined),
      warnings: [],
    }));
    const turn = await callModel(model, { messages: [{ role: "user", content: "hi" }], tools: [], signal: signal() });
    expect(model.calls[0]?.tools).toBeUndefined();
    expect(turn.usage).toEqual({ inputTokens: 0, outputTokens: 0, totalTokens: 0 });
  });
});

describe("callModel with v2 and v3 models", () => {
  it("reads v2 flat usage and string finish reasons", async () => {
    const model = fakeV2Model({
      content: [
        { type: "text", text: "Done." },
        { type: "tool-call", toolCallId: "x", toolName: "lookup", input: '{"orderId":7}' },
      ],
      finishReason: "tool-calls",
      usage: { inputTokens: 10, outputTokens: 5, totalTokens: 17 },
      warnings: [],
    });
    const turn = await callModel(model, { messages: [{ role: "user", content: "go" }], tools: [lookupTool], signal: signal() });
    // The AI SDK reads a v2 model's usage as input + output.
    expect(turn).toEqual({
      text: "Done.",
      toolCalls: [{ callId: "x", toolName: "lookup", input: { orderId: 7 } }],
      usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 },
      finishReason: "tool-calls",
    });
    expect(model.calls[0]?.tools).toEqual([expect.objectContaining({ type: "function", name: "lookup" })]);
  });

  it("sums v2 usage when the total is missing", async () => {
    const model = fakeV2Model({
      content: [],
      finishReason: "stop",
      warnings: [],
      usage: { inputTokens: 3, outputTokens: undefined, totalTokens: undefined },
    });
    const turn = await callModel(model, { messages: hello, tools: [], signal: signal() });
    expect(turn.usage).toEqual({ inputTokens: 3, outputTokens: 0, totalTokens: 3 });
  });

  it("reads v3 usage records and unified finish reasons", async () => {
    const model = fakeV3Model({
      content: [{ type: "text", text: "ok" }],
      finishReason: { unified: "length", raw: "max_tokens" },
      usage: {
        inputTokens: { total: 8, noCache: 8, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: undefined, text: undefined, reasoning: undefined },
      },
      warnings: [],
    });
    const turn = await callModel(model, { messages: [{ role: "user", content: "go" }], tools: [], signal: signal() });
    expect(turn).toEqual({ text: "ok", toolCalls: [], usage: { inputTokens: 8, outputTokens: 0, totalTokens: 8 }, finishReason: "length" });
  });

  it("accepts every provider version by type and rejects v1 models", async () => {
    const accept = (model: LanguageModelObject) => model.specificationVersion;
    const versions = [
      accept(
        fakeV2Model({ content: [], finishReason: "stop", usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 }, warnings: [] }) satisfies LanguageModelV2,
      ),
      accept(fakeV3Model({ content: [], finishReason: { unified: "stop", raw: undefined }, usage: v4Usage(0, 0), warnings: [] }) satisfies LanguageModelV3),
      accept(
        fakeV4Model(() => {
          throw new Error("unused");
        }) satisfies LanguageModelV4,
      ),
    ];
    expect(versions).toEqual(["v2", "v3", "v4"]);

    const legacy = { specificationVersion: "v1", provider: "old", modelId: "m", doGenerate: vi.fn(), doStream: vi.fn() };
    const call = callModel(legacy as unknown as LanguageModel, { messages: hello, tools: [], signal: signal() });
    await expect(call).rejects.toThrow(InvalidInputError);
    await expect(call).rejects.toThrow(/"v1" is not supported/);
    expect(legacy.doGenerate).not.toHaveBeenCalled();
  });

  it("normalizes odd usage and finish reasons to safe values", () => {
    expect(usageToTotals(undefined)).toEqual({ inputTokens: 0, outputTokens: 0, totalTokens: 0 });
    expect(usageToTotals({ inputTokens: Number.NaN, outputTokens: -4 })).toEqual({ inputTokens: 0, outputTokens: 0, totalTokens: 0 });
    expect(finishReasonOf(undefined)).toBe("unknown");
    expect(finishReasonOf({ unified: "stop", raw: "end_turn" })).toBe("stop");
  });
});

describe("callModel streaming", () => {
  const streamedParts: LanguageModelV4StreamPart[] = [
    { type: "stream-start", warnings: [] },
    { type: "text-start", id: "t" },
    { type: "text-delta", id: "t", delta: "Your order " },
    { type: "text-delta", id: "t", delta: "has " },
    { type: "text-delta", id: "t", delta: "shipped." },
    { type: "text-end", id: "t" },
    { type: "tool-input-start", id: "c1", toolName: "lookup" },
    { type: "tool-input-delta", id: "c1", delta: '{"orderId":' },
    { type: "tool-input-end", id: "c1" },
    { type: "tool-call", toolCallId: "c1", toolName: "lookup", input: '{"orderId":42}' },
    { type: "finish", usage: v4Usage(50, 9), finishReason: { unified: "tool-calls", raw: undefined } },
  ];

  it("calls onTextDelta per delta and assembles the same turn as generate", async () => {
    const model = fakeV4Model(
      () => ({
        content: [
          { type: "text", text: "Your order has shipped." },
          { type: "tool-call", toolCallId: "c1", toolName: "lookup", input: '{"orderId":42}' },
        ],
        finishReason: { unified: "tool-calls", raw: undefined },
        usage: v4Usage(50, 9),
        warnings: [],
      }),
      () => [...streamedParts],
    );
    const deltas: string[] = [];
    const request = { messages: [{ role: "user", content: "?" }] as ConversationMessage[], tools: [lookupTool], signal: signal() };
    const streamed = await callModel(model, { ...request, onTextDelta: (delta) => deltas.push(delta) });
    const generated = await callModel(model, request);

    expect(deltas).toEqual(["Your order ", "has ", "shipped."]);
    expect(streamed).toEqual(generated);
    expect(streamed.finishReason).toBe("tool-calls");
  });

  it("streams v2 models too", async () => {
    const model = fakeV2Model({ content: [], finishReason: "stop", usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 }, warnings: [] }, [
      { type: "text-start", id: "t" },
      { type: "text-delta", id: "t", delta: "a" },
      { type: "text-delta", id: "t", delta: "b" },
      { type: "finish", usage: { inputTokens: 2, outputTokens: 1, totalTokens: 3 }, finishReason: "stop" },
    ]);
    const deltas: string[] = [];
    const turn = await callModel(model, { messages: hello, tools: [], signal: signal(), onTextDelta: (delta) => deltas.push(delta) });
    expect(deltas).toEqual(["a", "b"]);
    expect(turn).toEqual({ text: "ab", toolCalls: [], usage: { inputTokens: 2, outputTokens: 1, totalTokens: 3 }, finishReason: "stop" });
  });

  it("reports a stream cut off before its finish part as the AI SDK does (other)", async () => {
    const model = fakeV4Model(
      () => {
        throw new Error("unused");
      },
      () => [
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: "par" },
      ],
    );
    const turn = await callModel(model, { messages: hello, tools: [], signal: signal(), onTextDelta: () => undefined });
    expect(turn.finishReason).toBe("other");
    expect(turn.text).toBe("par");
  });

  it("turns a streamed error part into MODEL_FAILED with the provider error as cause", async () => {
    const providerError = new Error("overloaded");
    const model = fakeV4Model(
      () => {
        throw new Error("unused");
      },
      () => [
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: "x" },
        { type: "error", error: providerError },
      ],
    );
    const failure = await callModel(model, { messages: hello, tools: [], signal: signal(), onTextDelta: () => undefined }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ModelFailedError);
    expect((failure as ModelFailedError).code).toBe("MODEL_FAILED");
    expect((failure as ModelFailedError).cause).toBe(providerError);
  });

  it("rethrows a text-delta listener's own error unchanged", async () => {
    const listenerError = new Error("listener broke");
    const model = fakeV4Model(
      () => {
        throw new Error("unused");
      },
      () => [...streamedParts],
    );
    const call = callModel(model, {
      messages: hello,
      tools: [],
      signal: signal(),
      onTextDelta: () => {
        throw listenerError;
      },
    });
    await expect(call).rejects.toBe(listenerError);
  });
});

describe("callModel tool-call inputs", () => {
  function modelCalling(input: unknown) {
    return fakeV4Model(() => ({
      content: [{ type: "tool-call", toolCallId: "call-9", toolName: "lookup", input: input as string }],
      finishReason: { unified: "tool-calls", raw: undefined },
      usage: v4Usage(1, 1),
      warnings: [],
    }));
  }

  it("fails with MODEL_FAILED naming the call and tool when the input is not JSON", async () => {
    const failure = await callModel(modelCalling("{orderId: 42"), { messages: hello, tools: [lookupTool], signal: signal() }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ModelFailedError);
    const error = failure as ModelFailedError;
    expect(error.code).toBe("MODEL_FAILED");
    expect(error.message).toMatch(/tool call "call-9" to tool "lookup"/);
    expect(error.details).toMatchObject({ callId: "call-9", toolName: "lookup" });
    // The AI SDK parsed the input: its InvalidToolInputError is the cause.
    expect((error.cause as Error).name).toBe("AI_InvalidToolInputError");
  });

  it("accepts an already-parsed JSON input", async () => {
    const turn = await callModel(modelCalling({ orderId: 1 }), { messages: hello, tools: [], signal: signal() });
    expect(turn.toolCalls).toEqual([{ callId: "call-9", toolName: "lookup", input: { orderId: 1 } }]);
  });

  it("rejects two tool calls with one call id", async () => {
    const model = fakeV4Model(() => ({
      content: [
        { type: "tool-call", toolCallId: "same", toolName: "a", input: "{}" },
        { type: "tool-call", toolCallId: "same", toolName: "b", input: "{}" },
      ],
      finishReason: { unified: "tool-calls", raw: undefined },
      usage: v4Usage(1, 1),
      warnings: [],
    }));
    await expect(callModel(model, { messages: hello, tools: [], signal: signal() })).rejects.toThrow(/two tool calls with call id "same"/);
  });
});

describe("callModel failures and aborts", () => {
  it("wraps a provider's error in MODEL_FAILED and keeps it as cause", async () => {
    const providerError = Object.assign(new Error("401 unauthorized"), { statusCode: 401 });
    const model = fakeV4Model(() => {
      throw providerError;
    });
    const failure = await callModel(model, { messages: hello, tools: [], signal: signal() }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ModelFailedError);
    expect((failure as ModelFailedError).message).toMatch(/model "fake\/fake-v4" failed: 401 unauthorized/);
    expect((failure as ModelFailedError).cause).toBe(providerError);
  });

  it("names the agent and execution when the loop passes them", async () => {
    const model = fakeV4Model(() => {
      throw new Error("503");
    });
    const failure = await callModel(model, { messages: hello, tools: [], signal: signal(), agentId: "support", executionId: "e9" }).catch(
      (error: unknown) => error,
    );
    expect(failure).toMatchObject({ code: "MODEL_FAILED", agentId: "support", executionId: "e9", details: { provider: "fake", modelId: "fake-v4" } });
    expect((failure as Error).message).toMatch(/^execution e9: model "fake\/fake-v4" failed: 503/);
  });

  it("rethrows an abort as it is", async () => {
    const controller = new AbortController();
    const reason = new Error("cancelled by the coordinator");
    const model = fakeV4Model(
      (options) =>
        new Promise((_resolve, reject) => {
          options.abortSignal?.addEventListener("abort", () => reject(options.abortSignal?.reason));
        }),
    );
    const call = callModel(model, { messages: hello, tools: [], signal: controller.signal });
    controller.abort(reason);
    await expect(call).rejects.toBe(reason);
  });

  it("does not call the model when the signal already fired", async () => {
    const controller = new AbortController();
    controller.abort("stop");
    const answer = vi.fn();
    const model = fakeV4Model(answer);
    await expect(callModel(model, { messages: hello, tools: [], signal: controller.signal })).rejects.toBe("stop");
    expect(answer).not.toHaveBeenCalled();
  });

  it("never yields a turn after an abort, even from a model that ignores the signal", async () => {
    const controller = new AbortController();
    const model = fakeV4Model(async () => {
      controller.abort("timeout");
      return { content: [{ type: "text", text: "late" }], finishReason: { unified: "stop", raw: undefined }, usage: v4Usage(1, 1), warnings: [] };
    });
    await expect(callModel(model, { messages: hello, tools: [], signal: controller.signal })).rejects.toBe("timeout");
  });

  it("reports a result without content as MODEL_FAILED", async () => {
    const model = fakeV4Model(() => ({}) as never);
    await expect(callModel(model, { messages: hello, tools: [], signal: signal() })).rejects.toBeInstanceOf(ModelFailedError);
  });
});
