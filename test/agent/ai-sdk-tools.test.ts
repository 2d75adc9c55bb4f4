// AI SDK tools as they are, on the AI SDK's own mock model (`ai/test`) and
// real SQLite stores: `tool()` with zod, `jsonSchema()` with and without a
// validator, `dynamicTool` and MCP-style tool objects, `outputSchema`,
// `toModelOutput`, `strict`, `needsApproval` (boolean and function), the
// options `execute` gets, async-iterable outputs, opted-in tool retries,
// provider-executed tools refused; and what the model answers kept whole:
// reasoning and full usage in the journal, string model ids.

import type { LanguageModelV4CallOptions, LanguageModelV4Content, LanguageModelV4GenerateResult } from "@ai-sdk/provider";
import { dynamicTool, jsonSchema, tool as aiTool, type ModelMessage } from "ai";
import { MockLanguageModelV4, MockProviderV4 } from "ai/test";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { InvalidInputError, type ExecutionEvent, type ToolExecutionContext } from "../../host/index.js";
import { openEnvironment, temporaryStorePath } from "../runtime/helpers.js";

function usage(input: number, output: number, details: { cacheRead?: number; reasoning?: number } = {}): LanguageModelV4GenerateResult["usage"] {
  return {
    inputTokens: { total: input, noCache: undefined, cacheRead: details.cacheRead, cacheWrite: undefined },
    outputTokens: { total: output, text: undefined, reasoning: details.reasoning },
  };
}

/** Calls `toolName` with `input` first; answers with text once the prompt
 * holds a tool result. */
function mockModel(toolName: string, input: unknown, extra: LanguageModelV4Content[] = []): MockLanguageModelV4 {
  return new MockLanguageModelV4({
    doGenerate: async (options: LanguageModelV4CallOptions) => {
      const answered = options.prompt.some((message) => message.role === "tool");
      const content: LanguageModelV4Content[] = answered
        ? [{ type: "text", text: "All done." }]
        : [...extra, { type: "tool-call", toolCallId: "call-1", toolName, input: JSON.stringify(input) }];
      return {
        content,
        warnings: [],
        usage: usage(10, 5),
        finishReason: { unified: answered ? "stop" : "tool-calls", raw: undefined },
      };
    },
  });
}

/** The tool message of the second model call's prompt. */
function toolResultSent(model: MockLanguageModelV4): unknown {
  const prompt = model.doGenerateCalls[1]?.prompt ?? [];
  const message = prompt.find((item) => item.role === "tool");
  return message?.role === "tool" ? message.content[0] : undefined;
}

describe("AI SDK tools as they are", () => {
  it("tool() from ai: execute gets the AI SDK's options and Phronomy's, the old names as aliases", async () => {
    const seen: ToolExecutionContext[] = [];
    const lookup = aiTool({
      description: "Looks an order up",
      inputSchema: z.object({ orderId: z.string() }),
      outputSchema: z.object({ status: z.string() }),
      execute: async ({ orderId }, options) => {
        seen.push(options as unknown as ToolExecutionContext);
        return { status: `order ${orderId} shipped` };
      },
    });
    const model = mockModel("lookup", { orderId: "42" });
    const env = await openEnvironment();
    const context = { tenant: "acme" };
    const result = await env
      .agent({ id: "sdk-tool", model, tools: { lookup }, experimental_context: context, toolsContext: { lookup: "for lookup" } })
      .start("Where is 42?").result;
    expect(result.output).toBe("All done.");
    const [options] = seen;
    expect(options).toMatchObject({
      toolCallId: "call-1",
      callId: "call-1",
      executionId: result.executionId,
      idempotencyKey: `${result.executionId}:call-1`,
      experimental_context: context,
      context: "for lookup",
      attempt: 1,
    });
    expect(options!.abortSignal).toBeInstanceOf(AbortSignal);
    expect(options!.signal).toBe(options!.abortSignal);
    expect(options!.messages).toEqual([
      { role: "user", content: "Where is 42?" },
      { role: "assistant", content: [{ type: "tool-call", toolCallId: "call-1", toolName: "lookup", input: { orderId: "42" } }] },
    ] satisfies ModelMessage[]);
    expect(model.doGenerateCalls[0]?.tools).toEqual([
      expect.objectContaining({
        type: "function",
        name: "lookup",
        description: "Looks an order up",
        inputSchema: expect.objectContaining({ properties: { orderId: { type: "string" } } }),
      }),
    ]);
  });

  it("jsonSchema() input: its validator runs, and a refused input is an error result the model sees", async () => {
    const calls: unknown[] = [];
    const validated = aiTool({
      inputSchema: jsonSchema<{ n: number }>(
        { type: "object", properties: { n: { type: "number" } }, required: ["n"] },
        {
          validate: (value) =>
            typeof (value as { n?: unknown }).n === "number"
              ? { success: true, value: value as { n: number } }
              : { success: false, error: new Error("n must be a number") },
        },
      ),
      execute: (input) => {
        calls.push(input);
        return "ran";
      },
    });
    const model = mockModel("validated", { n: "seven" });
    const env = await openEnvironment();
    await env.agent({ id: "json-schema", model, tools: { validated } }).start("go").result;
    expect(calls).toEqual([]);
    expect(toolResultSent(model)).toMatchObject({
      type: "tool-result",
      output: { type: "error-json", value: { code: "INVALID_INPUT", message: expect.stringMatching(/n must be a number/) } },
    });
  });

  it("dynamicTool and an MCP-style tool object (jsonSchema input, no validator) run with their input as sent", async () => {
    const dynamic = dynamicTool({
      description: "Anything goes",
      inputSchema: jsonSchema({ type: "object", properties: { q: { type: "string" } } }),
      execute: async (input) => ({ echoed: input }),
    });
    // What the AI SDK's MCP client returns for a server's tool.
    const mcp = {
      type: "dynamic" as const,
      description: "Searches the docs (MCP)",
      inputSchema: jsonSchema({ type: "object", properties: { query: { type: "string" } }, required: ["query"], additionalProperties: false }),
      execute: async (input: unknown) => ({ content: [{ type: "text", text: `found ${(input as { query: string }).query}` }], isError: false }),
    };
    const env = await openEnvironment();
    const first = mockModel("dynamic", { q: "x" });
    await env.agent({ id: "dynamic", model: first, tools: { dynamic } }).start("go").result;
    expect(toolResultSent(first)).toMatchObject({ output: { type: "json", value: { echoed: { q: "x" } } } });
    const second = mockModel("search_docs", { query: "retries" });
    await env.agent({ id: "mcp", model: second, tools: { search_docs: mcp } }).start("go").result;
    expect(toolResultSent(second)).toMatchObject({ output: { type: "json", value: { content: [{ type: "text", text: "found retries" }] } } });
    expect(second.doGenerateCalls[0]?.tools?.[0]).toMatchObject({ name: "search_docs", inputSchema: { required: ["query"] } });
  });

  it("toModelOutput decides what the model sees; the journal keeps the real output; strict reaches the provider", async () => {
    const weather = aiTool({
      inputSchema: z.object({ city: z.string() }),
      strict: true,
      execute: ({ city }) => ({ city, celsius: 21, raw: "x".repeat(50) }),
      toModelOutput: ({ output }) => ({ type: "text", value: `${output.city}: ${output.celsius} °C` }),
    });
    const model = mockModel("weather", { city: "Lyon" });
    const env = await openEnvironment();
    const result = await env.agent({ id: "to-model-output", model, tools: { weather } }).start("Weather?").result;
    expect(toolResultSent(model)).toMatchObject({ output: { type: "text", value: "Lyon: 21 °C" } });
    expect(model.doGenerateCalls[0]?.tools?.[0]).toMatchObject({ name: "weather", strict: true });
    const results = (await env.timeline(result.executionId)).find((step) => step.kind === "tool_results");
    expect(results?.payload).toMatchObject({ results: [{ output: { city: "Lyon", celsius: 21 }, modelOutput: { type: "text", value: "Lyon: 21 °C" } }] });
  });

  it("needsApproval as a boolean and as a function of the input and the AI SDK's options", async () => {
    const asked: unknown[] = [];
    const refund = aiTool({
      inputSchema: z.object({ amount: z.number() }),
      needsApproval: async ({ amount }, options) => {
        asked.push({ amount, toolCallId: options.toolCallId, context: options.context, messages: options.messages.length });
        return amount > 100;
      },
      execute: ({ amount }) => `refunded ${amount}`,
    });
    const env = await openEnvironment();
    const small = await env
      .agent({ id: "small-refund", model: mockModel("refund", { amount: 5 }), tools: { refund }, toolsContext: { refund: "ctx" } })
      .start("refund").result;
    expect(small.outcome).toBe("completed");
    expect(asked).toEqual([{ amount: 5, toolCallId: "call-1", context: "ctx", messages: 2 }]);
    const suspended = (run: { readonly executionId: Promise<string> }, events: ExecutionEvent[]) =>
      new Promise<ExecutionEvent>((resolve) => {
        const check = setInterval(() => {
          const found = events.find((event) => event.type === "approval_required");
          if (found) {
            clearInterval(check);
            resolve(found);
          }
        }, 5);
      });
    const bigEvents: ExecutionEvent[] = [];
    const big = env
      .agent({ id: "big-refund", model: mockModel("refund", { amount: 500 }), tools: { refund } })
      .start("refund", { onEvent: (event) => bigEvents.push(event) });
    expect(await suspended(big, bigEvents)).toMatchObject({ request: { toolCalls: [{ toolName: "refund", input: { amount: 500 } }] } });
    const always = aiTool({ inputSchema: z.object({ note: z.string().optional() }), needsApproval: true, execute: () => "done" });
    const gatedEvents: ExecutionEvent[] = [];
    const gated = env.agent({ id: "always", model: mockModel("always", {}), tools: { always } }).start("go", { onEvent: (event) => gatedEvents.push(event) });
    expect(await suspended(gated, gatedEvents)).toMatchObject({ request: { toolCalls: [{ toolName: "always" }] } });
  });

  it("an execute returning an async iterable (preliminary results) counts by its last value", async () => {
    const progress = aiTool({
      inputSchema: z.object({ step: z.number().optional() }),
      async *execute() {
        yield { status: "working" };
        yield { status: "done", items: 3 };
      },
    });
    const model = mockModel("progress", {});
    const env = await openEnvironment();
    await env.agent({ id: "iterable", model, tools: { progress } }).start("go").result;
    expect(toolResultSent(model)).toMatchObject({ output: { type: "json", value: { status: "done", items: 3 } } });
  });

  it("provider-executed tools are refused when the agent is defined, naming the tool", async () => {
    const env = await openEnvironment();
    const webSearch = { type: "provider" as const, id: "openai.web_search" as const, args: {}, inputSchema: z.object({}) };
    expect(() => env.agent({ id: "provider-tool", model: mockModel("x", {}), tools: { web_search: webSearch as never } })).toThrow(InvalidInputError);
    expect(() => env.agent({ id: "provider-tool", model: mockModel("x", {}), tools: { web_search: webSearch as never } })).toThrow(
      /tool "web_search" is a provider-executed tool \("openai\.web_search"\)/,
    );
  });
});

describe("tools that opt in to retries", () => {
  it("are run again after a failure with the same idempotency key; each failed attempt is on the timeline", async () => {
    const attempts: { key: string; attempt: number }[] = [];
    const flaky = aiTool({
      inputSchema: z.object({}),
      execute: (_input, options) => {
        const { idempotencyKey, attempt } = options as unknown as ToolExecutionContext;
        attempts.push({ key: idempotencyKey, attempt });
        if (attempt < 3) throw new Error(`flaky ${attempt}`);
        return "finally";
      },
    });
    const events: ExecutionEvent[] = [];
    const env = await openEnvironment();
    const result = await env
      .agent({ id: "flaky", model: mockModel("flaky", {}), tools: { flaky: { ...flaky, maxRetries: 2 } }, retryDelay: { initialMs: 1 } })
      .start("go", { onEvent: (event) => events.push(event) }).result;
    expect(attempts.map((item) => item.attempt)).toEqual([1, 2, 3]);
    expect(new Set(attempts.map((item) => item.key))).toEqual(new Set([`${result.executionId}:call-1`]));
    expect(events.filter((event) => event.type === "tool_call_retrying").map((event) => (event as { message: string }).message)).toEqual([
      "flaky 1",
      "flaky 2",
    ]);
    const timeline = await env.timeline(result.executionId);
    expect(timeline.filter((step) => step.kind === "tool_attempt_failed").map((step) => step.payload)).toEqual([
      expect.objectContaining({ attempt: 1, toolName: "flaky", callId: "call-1" }),
      expect.objectContaining({ attempt: 2 }),
    ]);
  });

  it("run once when they did not opt in; exhausted retries are an error result listing the attempts", async () => {
    let runs = 0;
    const failing = aiTool({
      inputSchema: z.object({}),
      execute: (): string => {
        runs += 1;
        throw new Error("broken");
      },
    });
    const env = await openEnvironment();
    const once = mockModel("failing", {});
    await env.agent({ id: "once", model: once, tools: { failing } }).start("go").result;
    expect(runs).toBe(1);
    const twice = mockModel("failing", {});
    await env.agent({ id: "twice", model: twice, tools: { failing: { ...failing, maxRetries: 1 } }, retryDelay: { initialMs: 1 } }).start("go").result;
    expect(runs).toBe(3);
    expect(toolResultSent(twice)).toMatchObject({
      output: {
        type: "error-json",
        value: {
          code: "TOOL_FAILED",
          message: expect.stringMatching(/failed on all 2 attempts: broken/),
          details: { attempts: [{ attempt: 1 }, { attempt: 2 }] },
        },
      },
    });
    expect(() => env.agent({ id: "bad-retries", model: once, tools: { failing: { ...failing, maxRetries: -1 } } })).toThrow(
      /"maxRetries" must be an integer from 0 to 10/,
    );
  });
});

describe("what the model answers is kept whole", () => {
  it("reasoning parts and full usage (cache, reasoning tokens) are in the journal; reasoning goes back to the model", async () => {
    let call = 0;
    const model = new MockLanguageModelV4({
      doGenerate: async () => {
        call += 1;
        const content: LanguageModelV4Content[] =
          call === 1
            ? [
                { type: "reasoning", text: "The user wants order 42.", providerMetadata: { anthropic: { signature: "sig-1" } } },
                { type: "tool-call", toolCallId: "c1", toolName: "noop", input: "{}" },
              ]
            : [{ type: "text", text: "Done." }];
        return {
          content,
          warnings: [],
          usage: usage(100, 40, { cacheRead: 60, reasoning: 25 }),
          finishReason: { unified: call === 1 ? "tool-calls" : "stop", raw: undefined },
        };
      },
    });
    const env = await openEnvironment();
    const noop = aiTool({ inputSchema: z.object({}), execute: () => "ok" });
    const result = await env.agent({ id: "thinker", model, tools: { noop } }).start("Where is 42?").result;
    const response = (await env.timeline(result.executionId)).find((step) => step.kind === "model_response");
    expect(response?.payload).toMatchObject({
      reasoning: [{ text: "The user wants order 42.", providerOptions: { anthropic: { signature: "sig-1" } } }],
      usage: { inputTokens: 100, outputTokens: 40, totalTokens: 140, cacheReadTokens: 60, reasoningTokens: 25 },
    });
    expect(result.usage).toMatchObject({ inputTokens: 200, outputTokens: 80, totalTokens: 280 });
    const assistant = model.doGenerateCalls[1]?.prompt.find((message) => message.role === "assistant");
    expect(assistant?.content[0]).toMatchObject({
      type: "reasoning",
      text: "The user wants order 42.",
      providerOptions: { anthropic: { signature: "sig-1" } },
    });
  });
});

describe("string model ids", () => {
  const saved = {
    provider: (globalThis as { AI_SDK_DEFAULT_PROVIDER?: unknown }).AI_SDK_DEFAULT_PROVIDER,
    key: process.env.AI_GATEWAY_API_KEY,
    oidc: process.env.VERCEL_OIDC_TOKEN,
  };
  afterEach(() => {
    (globalThis as { AI_SDK_DEFAULT_PROVIDER?: unknown }).AI_SDK_DEFAULT_PROVIDER = saved.provider;
    if (saved.key === undefined) delete process.env.AI_GATEWAY_API_KEY;
    else process.env.AI_GATEWAY_API_KEY = saved.key;
    if (saved.oidc === undefined) delete process.env.VERCEL_OIDC_TOKEN;
    else process.env.VERCEL_OIDC_TOKEN = saved.oidc;
  });

  it("resolve through the global provider, as the AI SDK resolves them", async () => {
    const model = new MockLanguageModelV4({
      modelId: "mock-1",
      doGenerate: {
        content: [{ type: "text", text: "from the global provider" }],
        warnings: [],
        usage: usage(1, 1),
        finishReason: { unified: "stop", raw: undefined },
      },
    });
    (globalThis as { AI_SDK_DEFAULT_PROVIDER?: unknown }).AI_SDK_DEFAULT_PROVIDER = new MockProviderV4({ languageModels: { "mock-1": model } });
    const env = await openEnvironment();
    const result = await env.agent({ id: "by-id", model: "mock-1" }).start("hi").result;
    expect(result.output).toBe("from the global provider");
    expect(model.doGenerateCalls).toHaveLength(1);
  });

  it("are refused with a clear error when no provider can resolve them", async () => {
    delete (globalThis as { AI_SDK_DEFAULT_PROVIDER?: unknown }).AI_SDK_DEFAULT_PROVIDER;
    delete process.env.AI_GATEWAY_API_KEY;
    delete process.env.VERCEL_OIDC_TOKEN;
    const env = await openEnvironment();
    expect(() => env.agent({ id: "unresolved", model: "openai/gpt-5" })).toThrow(
      /model "openai\/gpt-5" is a model id, but no provider is configured to resolve it/,
    );
  });
});

describe("message input across a restart", () => {
  it("an image input suspended for approval is sent again, parts and all, by the process that resumes it", async () => {
    const path = await temporaryStorePath();
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 5, 6, 7]);
    const definition = () => ({
      id: "vision-refund",
      model: mockModel("refund", { amount: 500 }),
      tools: {
        refund: aiTool({
          inputSchema: z.object({ amount: z.number() }),
          needsApproval: true,
          execute: ({ amount }: { amount: number }) => `refunded ${amount}`,
        }),
      },
    });
    const first = await openEnvironment({ store: path });
    const run = first.agent(definition()).start([
      {
        role: "user",
        content: [
          { type: "text", text: "Refund this:" },
          { type: "file", data: png, mediaType: "image/png" },
        ],
      },
    ]);
    const executionId = await run.executionId;
    let pending = await first.pendingApprovals();
    for (let tries = 0; pending.length === 0 && tries < 500; tries += 1) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      pending = await first.pendingApprovals();
    }
    run.result.catch(() => undefined);
    await first.close();

    const second = await openEnvironment({ store: path });
    const again = definition();
    const agent = second.agent(again);
    const approvalId = pending[0]!.request.approvalId;
    const result = await agent.resume(executionId, { approvalId, approved: true }).result;
    expect(result).toMatchObject({ outcome: "completed", output: "All done." });
    const user = again.model.doGenerateCalls[0]?.prompt.find((message) => message.role === "user");
    expect(user?.content).toEqual([{ type: "text", text: "Refund this:" }, expect.objectContaining({ type: "file", mediaType: "image/png" })]);
    expect(JSON.stringify(user)).toContain(Buffer.from(png).toString("base64"));
  });
});
