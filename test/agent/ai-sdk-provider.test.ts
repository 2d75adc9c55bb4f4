// Agents on a real AI SDK provider (@ai-sdk/openai-compatible) against the
// local OpenAI-compatible server the tests start, with real SQLite stores:
// transient errors retried under the same durable model call (429 then
// success, Retry-After honoured, 5xx exhausted into a typed error listing
// the attempts, streaming), and call settings, providerOptions, structured
// output and image input reaching the provider as sent.

import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { convertToModelMessages, Output, type UIMessage } from "ai";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ModelRetriesExhaustedError, tool, type ExecutionEvent } from "../../host/index.js";
import { API_KEY, startChatServer, TOOL_CALL_ID, type ChatServer } from "../cli/chat-server.js";
import { openEnvironment, waitFor } from "../runtime/helpers.js";

const servers: ChatServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

async function provider() {
  const server = await startChatServer();
  servers.push(server);
  const openai = createOpenAICompatible({
    name: "local",
    baseURL: server.baseUrl,
    apiKey: API_KEY,
    includeUsage: true,
    supportsStructuredOutputs: true,
  });
  return { server, model: openai.chatModel("support-model") };
}

const lookupOrder = tool({
  description: "Looks an order up",
  inputSchema: z.object({ orderId: z.string() }),
  execute: ({ orderId }) => ({ orderId, item: "blue kettle", status: "shipped" }),
});

describe("transient model errors are retried under the same model call", () => {
  it("a 429 with Retry-After is waited out and the run completes; the attempt is on the timeline", async () => {
    const { server, model } = await provider();
    server.script.push({ status: 429, headers: { "retry-after-ms": "300" }, message: "Rate limit reached" });
    const env = await openEnvironment();
    const events: ExecutionEvent[] = [];
    const run = env.agent({ id: "support", model, tools: { lookupOrder } }).start("Where is order 42?", { onEvent: (event) => events.push(event) });
    const result = await run.result;
    expect(result.output).toBe("Order 42: the blue kettle is shipped.");
    expect(server.requests).toHaveLength(3);
    // Retry-After honoured: the second request came no sooner than asked.
    expect(server.requests[1]!.at - server.requests[0]!.at).toBeGreaterThanOrEqual(295);
    expect(server.requests[1]!.body).toEqual(server.requests[0]!.body);

    const retrying = events.filter((event) => event.type === "model_call_retrying");
    expect(retrying).toEqual([expect.objectContaining({ attempt: 1, delayMs: 300, statusCode: 429, message: expect.stringMatching(/Rate limit reached/) })]);
    const timeline = await env.timeline(result.executionId);
    const kinds = timeline.map((step) => step.kind);
    // One barrier for the retried call: the attempt rides on the next one.
    expect(kinds.filter((kind) => kind === "provider_barrier")).toHaveLength(2);
    const attempt = timeline.find((step) => step.kind === "model_attempt_failed");
    const firstBarrier = timeline.find((step) => step.kind === "provider_barrier");
    expect(attempt?.payload).toMatchObject({ attempt: 1, statusCode: 429, delayMs: 300, callId: (firstBarrier?.payload as { callId: string }).callId });
    expect(kinds.indexOf("model_attempt_failed")).toBeLessThan(kinds.indexOf("model_response"));
  });

  it("a streamed call is retried after a 503 and streams its text", async () => {
    const { server, model } = await provider();
    server.script.push({ status: 503, message: "overloaded" });
    const env = await openEnvironment();
    const deltas: string[] = [];
    const run = env.agent({ id: "streamer", model, tools: { lookupOrder }, retryDelay: { initialMs: 5 } }).start("Where is order 42?", {
      stream: true,
      onEvent: (event) => {
        if (event.type === "text_delta") deltas.push(event.delta);
      },
    });
    const result = await run.result;
    expect(result.output).toBe("Order 42: the blue kettle is shipped.");
    expect(deltas.join("")).toBe(result.output);
    expect(server.requests.map((request) => request.body.stream)).toEqual([true, true, true]);
  });

  it("5xx on every attempt ends the run with ModelRetriesExhaustedError listing the attempts", async () => {
    const { server, model } = await provider();
    for (let index = 0; index < 3; index += 1) server.script.push({ status: 500 + index, message: `down ${index}` });
    const env = await openEnvironment();
    const run = env.agent({ id: "unlucky", model, retryDelay: { initialMs: 5, maxMs: 20 } }).start("hello?");
    const failure = await run.result.catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ModelRetriesExhaustedError);
    const error = failure as ModelRetriesExhaustedError;
    expect(error.code).toBe("MODEL_FAILED");
    expect(error.attempts.map((attempt) => attempt.statusCode)).toEqual([500, 501, 502]);
    expect(error.attempts.map((attempt) => attempt.attempt)).toEqual([1, 2, 3]);
    expect(error.attempts[0]!.delayMs).toBeGreaterThanOrEqual(2);
    expect(error.attempts[2]!.delayMs).toBeUndefined();
    expect(server.requests).toHaveLength(3);
    const executionId = await run.executionId;
    const row = await env.execution(executionId);
    expect(row?.error).toMatchObject({ code: "MODEL_FAILED", details: { attempts: error.attempts } });
    const timeline = await env.timeline(executionId);
    expect(timeline.filter((step) => step.kind === "model_attempt_failed").map((step) => (step.payload as { statusCode: number }).statusCode)).toEqual([
      500, 501,
    ]);
  });

  it("a 400 is not retried, and maxRetries: 0 turns retries off", async () => {
    const { server, model } = await provider();
    server.script.push({ status: 400, message: "bad request" }, { status: 429, message: "slow down" });
    const env = await openEnvironment();
    await expect(env.agent({ id: "bad", model }).start("hi").result).rejects.toMatchObject({ code: "MODEL_FAILED" });
    expect(server.requests).toHaveLength(1);
    const failure = await env
      .agent({ id: "no-retries", model, maxRetries: 0 })
      .start("hi")
      .result.catch((error: unknown) => error);
    expect(failure).not.toBeInstanceOf(ModelRetriesExhaustedError);
    expect(failure).toMatchObject({ code: "MODEL_FAILED", details: { statusCode: 429 } });
    expect(server.requests).toHaveLength(2);
  });

  it("a cancel stops the wait between attempts at once", async () => {
    const { server, model } = await provider();
    server.script.push({ status: 429, headers: { "retry-after": "30" } });
    const env = await openEnvironment();
    const controller = new AbortController();
    const run = env.agent({ id: "waiting", model }).start("hi", {
      signal: controller.signal,
      onEvent: (event) => {
        if (event.type === "model_call_retrying") controller.abort();
      },
    });
    await expect(run.result).rejects.toMatchObject({ code: "CANCELLED" });
    expect(server.requests).toHaveLength(1);
  });
});

describe("what the provider is sent", () => {
  it("call settings, headers and providerOptions reach the request body as given", async () => {
    const { server, model } = await provider();
    server.script.push({ reply: { kind: "text", text: "ok" } });
    const env = await openEnvironment();
    await env
      .agent({
        id: "tuned",
        model,
        temperature: 0.3,
        topP: 0.9,
        maxOutputTokens: 256,
        seed: 7,
        stopSequences: ["END"],
        presencePenalty: 0.1,
        frequencyPenalty: 0.2,
        headers: { "x-trace": "t-1" },
        providerOptions: { local: { user: "user-7", reasoningEffort: "low" } },
      })
      .start("hi").result;
    expect(server.requests[0]!.body).toMatchObject({
      model: "support-model",
      temperature: 0.3,
      top_p: 0.9,
      max_tokens: 256,
      seed: 7,
      stop: ["END"],
      presence_penalty: 0.1,
      frequency_penalty: 0.2,
      user: "user-7",
      reasoning_effort: "low",
    });
  });

  it("structured output: the schema goes as response_format and the parsed object is the run's result", async () => {
    const { server, model } = await provider();
    server.script.push({ reply: { kind: "text", text: JSON.stringify({ status: "shipped", etaDays: 2 }) } });
    const env = await openEnvironment();
    const output = Output.object({ schema: z.object({ status: z.enum(["shipped", "pending"]), etaDays: z.number() }) });
    const result = await env.agent({ id: "typed", model, output }).start("Status of order 42?").result;
    expect(result.output).toEqual({ status: "shipped", etaDays: 2 });
    expect(server.requests[0]!.body.response_format).toMatchObject({
      type: "json_schema",
      json_schema: { schema: expect.objectContaining({ properties: expect.objectContaining({ etaDays: { type: "number" } }) }) },
    });
    const timeline = await env.timeline(result.executionId);
    expect(timeline.find((step) => step.kind === "model_response")?.payload).toMatchObject({ output: { status: "shipped", etaDays: 2 } });
  });

  it("structured output the model gets wrong fails the run with MODEL_FAILED", async () => {
    const { server, model } = await provider();
    server.script.push({ reply: { kind: "text", text: JSON.stringify({ status: "lost" }) } });
    const env = await openEnvironment();
    const output = Output.object({ schema: z.object({ status: z.enum(["shipped", "pending"]) }) });
    await expect(env.agent({ id: "typed-bad", model, output }).start("?").result).rejects.toMatchObject({
      code: "MODEL_FAILED",
      message: expect.stringMatching(/did not produce the structured output asked for: No object generated/),
    });
  });

  it("message input with an image reaches the provider as image parts and is stored JSON-safe", async () => {
    const { server, model } = await provider();
    server.script.push({ reply: { kind: "text", text: "A kettle." } });
    const env = await openEnvironment();
    const agent = env.agent({ id: "vision", model, instructions: "Describe images." });
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
    const result = await agent.start([
      {
        role: "user",
        content: [
          { type: "text", text: "What is in this picture?" },
          { type: "image", image: png, mediaType: "image/png" },
        ],
      },
    ]).result;
    expect(result.output).toBe("A kettle.");
    const sent = server.requests[0]!.body.messages;
    expect(sent[0]).toEqual({ role: "system", content: "Describe images." });
    expect(sent[1]).toEqual({
      role: "user",
      content: [
        { type: "text", text: "What is in this picture?" },
        { type: "image_url", image_url: { url: `data:image/png;base64,${Buffer.from(png).toString("base64")}` } },
      ],
    });
    const row = await env.execution(result.executionId);
    expect(row?.input).toEqual({
      messages: [
        {
          role: "user",
          content: "What is in this picture?",
          parts: [
            { type: "text", text: "What is in this picture?" },
            { type: "image", image: Buffer.from(png).toString("base64"), mediaType: "image/png" },
          ],
        },
      ],
    });
  });

  it("useChat's messages with an attachment, converted by the AI SDK (tagged file data), reach the provider and are stored tagged", async () => {
    const { server, model } = await provider();
    server.script.push({ reply: { kind: "text", text: "A kettle." } });
    const env = await openEnvironment();
    const agent = env.agent({ id: "chat-attachment", model });
    const dataUrl = `data:image/png;base64,${Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]).toString("base64")}`;
    const chat: UIMessage[] = [
      {
        id: "m1",
        role: "user",
        parts: [
          { type: "text", text: "What is in this picture?" },
          { type: "file", mediaType: "image/png", filename: "kettle.png", url: dataUrl },
        ],
      },
    ];
    const result = await agent.start(await convertToModelMessages(chat)).result;
    expect(result.output).toBe("A kettle.");
    expect(server.requests[0]!.body.messages[0]).toEqual({
      role: "user",
      content: [
        { type: "text", text: "What is in this picture?" },
        { type: "image_url", image_url: { url: dataUrl } },
      ],
    });
    const row = await env.execution(result.executionId);
    expect(row?.input).toEqual({
      messages: [
        {
          role: "user",
          content: "What is in this picture?",
          parts: [
            { type: "text", text: "What is in this picture?" },
            { type: "file", data: { type: "url", url: dataUrl }, mediaType: "image/png", filename: "kettle.png" },
          ],
        },
      ],
    });
  });

  it("tagged data, text and reference file data are kept tagged; a UIMessage given as input is refused with the conversion to use", async () => {
    const { model } = await provider();
    const env = await openEnvironment();
    const agent = env.agent({ id: "tagged", model });
    const refused = agent.start([{ id: "m1", role: "user", parts: [{ type: "text", text: "hi" }] }] as never).result;
    await expect(refused).rejects.toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining("convertToModelMessages") });
    const unknownTag = agent.start([{ role: "user", content: [{ type: "file", mediaType: "text/plain", data: { type: "blob", blob: "x" } }] }] as never).result;
    await expect(unknownTag).rejects.toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining('tagged file data of type "blob"') });
    const { inputMessagesOf } = await import("../../host/agent/model-messages.js");
    const parts = inputMessagesOf(
      [
        {
          role: "user",
          content: [
            { type: "text", text: "read these", providerOptions: { anthropic: { cacheControl: { type: "ephemeral" } } } },
            { type: "file", mediaType: "text/plain", data: { type: "data", data: new Uint8Array([104, 105]) } },
            { type: "file", mediaType: "text/plain", data: { type: "text", text: "inline" } },
            { type: "file", mediaType: "application/pdf", data: { type: "reference", reference: { openai: "file-1" } } },
            { type: "image", image: { openai: "file-2" } },
          ],
        },
      ],
      "start",
    );
    expect(parts[0]).toEqual({
      role: "user",
      content: "read these",
      parts: [
        { type: "text", text: "read these", providerOptions: { anthropic: { cacheControl: { type: "ephemeral" } } } },
        { type: "file", mediaType: "text/plain", data: { type: "data", data: "aGk=" } },
        { type: "file", mediaType: "text/plain", data: { type: "text", text: "inline" } },
        { type: "file", mediaType: "application/pdf", data: { type: "reference", reference: { openai: "file-1" } } },
        { type: "file", mediaType: "image", data: { type: "reference", reference: { openai: "file-2" } } },
      ],
    });
  });

  it("a declined approval reaches the provider as the AI SDK's execution-denied result, with the reviewer's reason", async () => {
    const { server, model } = await provider();
    server.script.push({ reply: { kind: "tool", name: "refund", arguments: JSON.stringify({ orderId: "42" }) } });
    server.script.push({ reply: { kind: "text", text: "The refund was not made." } });
    const env = await openEnvironment();
    const refund = tool({ inputSchema: z.object({ orderId: z.string() }), needsApproval: () => true, execute: () => "refunded" });
    const agent = env.agent({ id: "refunds", model, tools: { refund } });
    let approvalId = "";
    const started = agent.start("Refund order 42", {
      onEvent: (event: ExecutionEvent) => {
        if (event.type === "approval_required") approvalId = event.request.approvalId;
      },
    });
    const executionId = await started.executionId;
    await waitFor(async () => (approvalId !== "" ? true : undefined));
    const result = await agent.resume(executionId, { approvalId, approved: false, reason: "over the limit" }).result;
    expect(result.output).toBe("The refund was not made.");
    const toolMessage = server.requests[1]!.body.messages.find((message) => message.role === "tool");
    expect(toolMessage).toMatchObject({ role: "tool", tool_call_id: TOOL_CALL_ID, content: "over the limit" });
  });

  it("refuses message input it cannot take with InvalidInputError", async () => {
    const { model } = await provider();
    const env = await openEnvironment();
    const agent = env.agent({ id: "strict-input", model });
    await expect(agent.start([]).result).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(agent.start([{ role: "assistant", content: "hi" }]).result).rejects.toThrow(/last input message must be a user message/);
    await expect(agent.start([{ role: "tool", content: [] }]).result).rejects.toThrow(/role "tool" is not accepted/);
    await expect(agent.start([{ role: "user", content: [{ type: "image", image: 42 as never }] }]).result).rejects.toThrow(/image" must be a URL/);
  });
});
