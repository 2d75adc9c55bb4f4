// PhronomyChatTransport (host/chat/transport.ts, docs/decisions/0072)
// under the AI SDK's own `Chat` (what `useChat` runs), against chatRoutes
// on a real HTTP server that cuts answers off mid-stream: the transport
// reconnects by itself after the last position it saw and the Chat's
// message ends complete — equal to a replay of the answer, each part once.
// Also: page-load resume (`resume: true`) through a cut, a server that is
// gone for a while (bounded reconnects with backoff, then a typed error),
// and `stop()`, which never reconnects. Seeded: CHAT_TRANSPORT_SEED replays
// a run's cut points.

import { lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage, type UIMessageChunk } from "ai";
import type { LanguageModelV4, LanguageModelV4StreamPart } from "@ai-sdk/provider";
import { afterEach, describe, expect, it } from "vitest";
import { chatRoutes, Phronomy, PhronomyError, type ChatChunk, type ChatRoutes, type Environment } from "../../host/index.js";
import { PhronomyChatTransport } from "../../host/chat/transport.js";
import { approvalRefundTool, lookupTool, openEnvironment, recordingLogger, scriptedModel, temporaryStorePath, turnOf, waitFor } from "../runtime/helpers.js";
import { serveChat, type ChatHttpServer } from "../support/chat-http.js";
import { generator, seedFrom } from "../support/seeded.js";
import { messageOf } from "../support/ui-stream.js";
import { Chat } from "../support/memory-chat.js";

const servers: ChatHttpServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

/** The model with a pause before each streamed part, as tokens arrive from a real one. */
function paced(model: LanguageModelV4, pacingMs: number): LanguageModelV4 {
  return {
    ...model,
    doGenerate: (options) => model.doGenerate(options),
    async doStream(options) {
      const result = await model.doStream(options);
      const reader = result.stream.getReader();
      const stream = new ReadableStream<LanguageModelV4StreamPart>({
        async pull(controller) {
          await new Promise((resolve) => setTimeout(resolve, pacingMs));
          const next = await reader.read();
          if (next.done) controller.close();
          else controller.enqueue(next.value);
        },
        cancel: (reason) => reader.cancel(reason),
      });
      return { ...result, stream };
    },
  };
}

/** Two tool calls, each after a streamed sentence, then the answer. */
function supportModel(): LanguageModelV4 {
  return paced(
    scriptedModel(({ messages }) => {
      const turn = turnOf(messages);
      if (turn < 2)
        return { text: `Step ${turn}: looking up order 4${turn}, one moment please.`, toolCalls: [{ toolName: "lookup", input: { orderId: `4${turn}` } }] };
      return { text: "Both orders have shipped and arrive this week, on Monday and Tuesday." };
    }),
    5,
  );
}

/** An environment, its definition's chat routes, and the HTTP server in front of them. */
async function chatServer(): Promise<{ env: Environment; server: ChatHttpServer; routes: ChatRoutes }> {
  const env = await openEnvironment();
  const routes = chatRoutes(env, env.agent({ name: "support", model: supportModel(), tools: { lookup: lookupTool() } }));
  const server = await serveChat(() => routes);
  servers.push(server);
  return { env, server, routes };
}

function transportTo(server: ChatHttpServer, options: { reconnectDelayMs?: number; reconnectAttemptsMax?: number } = {}): PhronomyChatTransport<UIMessage> {
  return new PhronomyChatTransport<UIMessage>({ api: `${server.url}/api/chat`, reconnectDelayMs: 10, ...options });
}

/** The message a full replay of the execution builds. */
async function replayOf(env: Environment, executionId: string): Promise<UIMessage> {
  const chunks: ChatChunk[] = [];
  for await (const chunk of await env.stream(executionId)) chunks.push(chunk);
  return messageOf(chunks);
}

async function settled(chat: Chat): Promise<void> {
  await waitFor(async () => (chat.status === "ready" || chat.status === "error" ? true : undefined), 30_000);
}

/** Each part of `message` once: the same text or tool call never shows twice. */
function expectNoPartTwice(message: UIMessage): void {
  const keys = message.parts.filter((part) => part.type !== "step-start").map((part) => JSON.stringify(part));
  expect(new Set(keys).size, keys.join("\n")).toBe(keys.length);
}

const runs = Number(process.env["CHAT_TRANSPORT_RUNS"] ?? 3);

describe("PhronomyChatTransport under the AI SDK's Chat, against a server that cuts answers off", () => {
  for (let round = 0; round < runs; round += 1) {
    it(`round ${round}: cut off at random events, several times, the message ends complete and equal to a replay`, async () => {
      const seed = seedFrom("CHAT_TRANSPORT_SEED") + round;
      console.log(`[chat transport] seed ${seed} (CHAT_TRANSPORT_SEED=${seed} replays it)`);
      const random = generator(seed);
      const { env, server } = await chatServer();
      const cuts = Array.from({ length: 3 }, () => 2 + Math.floor(random() * 8));
      server.dropAfter(...cuts);
      const chat = new Chat({ id: "chat-1", transport: transportTo(server) });
      await chat.sendMessage({ text: "Where are orders 40 and 41?" });
      await settled(chat);
      const context = `seed ${seed}, cuts ${cuts.join(",")}: ${server.requests.join(" | ")}`;
      expect(chat.error, context).toBeUndefined();
      expect(server.drops, context).toBe(3);
      expect(server.requests.filter((request) => request.startsWith("GET")).length, context).toBeGreaterThanOrEqual(3);
      const message = chat.messages.at(-1)!;
      expect(message.role).toBe("assistant");
      expect(message.metadata, context).toMatchObject({ outcome: "completed" });
      const executionId = (message.metadata as { executionId: string }).executionId;
      expect(structuredClone(message), context).toEqual(await replayOf(env, executionId));
      expectNoPartTwice(message);
      expect(message.parts.filter((part) => part.type === "text").map((part) => (part as { text: string }).text)).toEqual([
        "Step 0: looking up order 40, one moment please.",
        "Step 1: looking up order 41, one moment please.",
        "Both orders have shipped and arrive this week, on Monday and Tuesday.",
      ]);
    });
  }

  it("the reconnects ask for the same answer after the last position seen, and the chunks read carry no position twice", async () => {
    const { env, server } = await chatServer();
    server.dropAfter(4, 3);
    const transport = transportTo(server);
    const stream = await transport.sendMessages({
      chatId: "chat-2",
      messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "Where are orders 40 and 41?" }] }],
      trigger: "submit-message",
      messageId: undefined,
      abortSignal: undefined,
    });
    const chunks: UIMessageChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const gets = server.requests.filter((request) => request.startsWith("GET"));
    expect(gets).toHaveLength(2);
    for (const get of gets) expect(get).toMatch(/^GET \/api\/chat\/chat-2\/stream\?executionId=[0-9a-f-]+&resumeAt=\d+(\.t?\d+)?$/);
    expect(chunks.filter((chunk) => chunk.type === "start")).toHaveLength(1);
    expect(chunks.filter((chunk) => chunk.type === "finish")).toHaveLength(1);
    expect(chunks.at(-1)).toMatchObject({ type: "finish", finishReason: "stop" });
    const executionId = (chunks[0] as { messageId: string }).messageId;
    expect(await messageOf(chunks)).toEqual(await replayOf(env, executionId));
  });

  it("resume on page load (resume: true): the running answer replayed from its start, through a cut, to its end; null once nothing runs", async () => {
    const { env, server } = await chatServer();
    const first = new Chat({ id: "chat-3", transport: transportTo(server) });
    const sent = first.sendMessage({ text: "Where are orders 40 and 41?" });
    await waitFor(async () => ((await env.executions({ agentId: "chat-3", status: "active" })).length === 1 ? true : undefined));
    // A reloaded page: a new Chat with the history so far, resuming.
    server.dropAfter(3);
    const reloaded = new Chat({ id: "chat-3", transport: transportTo(server), messages: [first.messages[0]!] });
    await reloaded.resumeStream();
    await Promise.all([sent, settled(first), settled(reloaded)]);
    expect(reloaded.error).toBeUndefined();
    expect(reloaded.messages).toHaveLength(2);
    expect(structuredClone(reloaded.messages[1])).toEqual(structuredClone(first.messages[1]));
    expectNoPartTwice(reloaded.messages[1]!);
    expect(await transportTo(server).reconnectToStream({ chatId: "chat-3" }), "nothing runs").toBeNull();
  });

  it("a server gone for good: a bounded number of reconnects with backoff, then the Chat's error is RUNTIME_SHUTDOWN (connection_lost)", async () => {
    const { server } = await chatServer();
    server.dropAfter(3);
    server.refuse((method) => method === "GET", 503);
    const chat = new Chat({ id: "chat-4", transport: transportTo(server, { reconnectAttemptsMax: 4, reconnectDelayMs: 1 }) });
    await chat.sendMessage({ text: "Where are orders 40 and 41?" });
    await settled(chat);
    expect(chat.status).toBe("error");
    expect(chat.error).toBeInstanceOf(PhronomyError);
    expect(chat.error).toMatchObject({ code: "RUNTIME_SHUTDOWN", details: { reason: "connection_lost", chatId: "chat-4", attempts: 4 } });
    expect(server.requests.filter((request) => request.startsWith("GET"))).toHaveLength(4);
  });

  it("a reconnect the server refuses (404) is not retried: the Chat's error is the server's", async () => {
    const { server } = await chatServer();
    server.dropAfter(3);
    server.refuse((method) => method === "GET", 404);
    const chat = new Chat({ id: "chat-5", transport: transportTo(server) });
    await chat.sendMessage({ text: "Where are orders 40 and 41?" });
    await settled(chat);
    expect(chat.error).toMatchObject({ code: "RUNTIME_SHUTDOWN", message: "the server is restarting", details: { status: 404 } });
    expect(server.requests.filter((request) => request.startsWith("GET"))).toHaveLength(1);
  });

  it("a server restarted mid-answer (environment closed and opened again on its store, on the same port): reconnects bridge the gap, the answer completes once", async () => {
    const store = await temporaryStorePath();
    const define = (env: Environment): ChatRoutes => chatRoutes(env, env.agent({ name: "support", model: supportModel(), tools: { lookup: lookupTool() } }));
    const first = await Phronomy.open({ store, logger: recordingLogger() });
    let routes = define(first);
    const before = await serveChat(() => routes);
    const chat = new Chat({ id: "chat-7", transport: transportTo(before, { reconnectDelayMs: 20, reconnectAttemptsMax: 20 }) });
    const sent = chat.sendMessage({ text: "Where are orders 40 and 41?" });
    await waitFor(async () => (chat.messages.at(-1)?.parts.some((part) => part.type === "tool-lookup") ? true : undefined));
    await before.close();
    await first.close();
    const second = await Phronomy.open({ store, logger: recordingLogger() });
    try {
      routes = define(second);
      const after = await serveChat(() => routes, before.port);
      servers.push(after);
      await sent;
      await settled(chat);
      expect(chat.error).toBeUndefined();
      const message = chat.messages.at(-1)!;
      expect(message.metadata).toMatchObject({ outcome: "completed" });
      expect(structuredClone(message)).toEqual(await replayOf(second, (message.metadata as { executionId: string }).executionId));
      expectNoPartTwice(message);
      expect(after.requests.every((request) => request.startsWith("GET /api/chat/chat-7/stream?executionId="))).toBe(true);
    } finally {
      await second.close();
    }
  });

  it("an approval pressed, its continuation cut off: the transport resumes it after the suspension and the same message completes", async () => {
    const env = await openEnvironment();
    const refunds: string[] = [];
    const model = paced(
      scriptedModel(({ messages }) =>
        messages.at(-1)?.role === "tool"
          ? { text: "Order 42 is refunded; the money is back on your card within three days." }
          : { text: "I will refund order 42.", toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] },
      ),
      5,
    );
    const routes = chatRoutes(env, env.agent({ name: "support", model, tools: { refund: approvalRefundTool(refunds) } }));
    const server = await serveChat(() => routes);
    servers.push(server);
    const chat = new Chat({ id: "chat-8", transport: transportTo(server), sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses });
    await chat.sendMessage({ text: "Please refund order 42" });
    await settled(chat);
    const refund = chat.messages.at(-1)!.parts.find((part) => part.type === "tool-refund") as { state: string; approval: { id: string } };
    expect(refund.state).toBe("approval-requested");
    server.dropAfter(3);
    await chat.addToolApprovalResponse({ id: refund.approval.id, approved: true });
    await waitFor(async () => ((chat.messages.at(-1)?.metadata as { outcome?: string } | undefined)?.outcome === "completed" ? true : undefined), 30_000);
    await settled(chat);
    expect(chat.error).toBeUndefined();
    expect(server.drops).toBe(1);
    expect(server.requests.filter((request) => request.startsWith("GET"))).toEqual([expect.stringMatching(/^GET \/api\/chat\/chat-8\/stream\?executionId=/)]);
    expect(chat.messages.map((message) => message.role)).toEqual(["user", "assistant"]);
    const message = chat.messages[1]!;
    expectNoPartTwice(message);
    expect(message.parts.filter((part) => part.type !== "step-start")).toEqual([
      expect.objectContaining({ type: "text", text: "I will refund order 42." }),
      expect.objectContaining({ type: "tool-refund", state: "output-available", approval: expect.objectContaining({ approved: true }) }),
      expect.objectContaining({ type: "text", text: "Order 42 is refunded; the money is back on your card within three days." }),
    ]);
    expect(refunds).toHaveLength(1);
  });

  it("stop() mid-answer ends the request and never reconnects", async () => {
    const { env, server } = await chatServer();
    const chat = new Chat({ id: "chat-6", transport: transportTo(server) });
    const sent = chat.sendMessage({ text: "Where are orders 40 and 41?" });
    await waitFor(async () => (chat.status === "streaming" ? true : undefined));
    await chat.stop();
    await sent;
    expect(chat.status).toBe("ready");
    expect(chat.error).toBeUndefined();
    const [row] = await env.executions({ agentId: "chat-6", limit: 1 });
    await env.wait(row!.executionId).result;
    expect(server.requests.filter((request) => request.startsWith("GET"))).toEqual([]);
  });

  it("refuses bounds that make no sense, by name", () => {
    expect(() => new PhronomyChatTransport({ reconnectAttemptsMax: -1 })).toThrow(/"reconnectAttemptsMax" must be an integer from 0 to 1000, got -1/);
    expect(() => new PhronomyChatTransport({ reconnectDelayMs: 1.5 })).toThrow(/"reconnectDelayMs"/);
  });
});
