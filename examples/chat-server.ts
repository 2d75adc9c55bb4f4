// A chat server for the AI SDK's `useChat` (node:http, no framework): each
// chat is a Phronomy conversation, each answer a durable execution streamed
// as the AI SDK's UI message stream, and a client that lost its connection
// — or whose server restarted — resumes the stream where it left it
// (docs/decisions/0036).
//
//   PHRONOMY_STORE=./chat.db PORT=3000 node --import tsx examples/chat-server.ts
//
//   POST /api/chat               { id, messages } as useChat's DefaultChatTransport sends them:
//                                starts the answer to the last user message and streams it; when the
//                                last message is the assistant's with approval responses
//                                (addToolApprovalResponse), decides the approval and streams the rest
//   GET  /api/chat/:id/stream    resumes the chat's latest answer: from `?resumeAt=` or the
//                                `Last-Event-ID` header (each SSE event's id is its chunk's position),
//                                else the whole answer while it runs (204 once it ended, as useChat's
//                                `resume: true` expects); `?executionId=` picks another answer
//
// On the client: `useChat({ id, resume: true, transport: new DefaultChatTransport({ api: "/api/chat" }),
// sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses })`.
//
// The model here is scripted and paced (no key, no network); any AI SDK
// language model goes in its place. The order lookup is slow on purpose,
// as a real API can be: kill the server while it runs, start it again, and
// the answer finishes and the client's stream resumes.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { pathToFileURL } from "node:url";
import type { LanguageModelV4, LanguageModelV4StreamPart } from "@ai-sdk/provider";
import { z } from "zod";
import {
  Phronomy,
  PhronomyError,
  approvalIdOf,
  executionIdHeader,
  tool,
  toUIMessageStreamResponse,
  type ChatMessageMetadata,
  type Environment,
} from "phronomy";
import { scriptedModel } from "phronomy/testing";

export interface ChatServerOptions {
  /** The SQLite store (or a `postgres://` URL). */
  readonly store: string;
  /** 0 picks a free port. */
  readonly port?: number;
  /** Milliseconds between the model's streamed parts (default 250). */
  readonly pacingMs?: number;
  /** How long an order lookup takes (default 1000). */
  readonly lookupMs?: number;
}

export interface ChatServer {
  readonly url: string;
  readonly env: Environment;
  close(): Promise<void>;
}

export async function startChatServer(options: ChatServerOptions): Promise<ChatServer> {
  const env = await Phronomy.open({ store: options.store });
  // Defined at once: recovery continues this definition's unfinished answers after a restart.
  const support = env.agent({
    name: "support",
    model: supportModel(options.pacingMs ?? 250),
    tools: supportTools(options.lookupMs ?? 1000),
    instructions: "You help customers with their orders.",
  });

  const server = createServer((request, response) => {
    route(env, support, request, response).catch((error: unknown) => sendError(response, error));
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`;
  return { url, env, close: () => closeServer(server, env) };
}

type Support = ReturnType<Environment["agent"]>;

async function route(env: Environment, support: Support, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const url = new URL(request.url ?? "/", "http://localhost");
  const resumePath = /^\/api\/chat\/([^/]+)\/stream$/.exec(url.pathname);
  if (request.method === "POST" && url.pathname === "/api/chat") return postChat(env, support, await readJson(request), response);
  if (request.method === "GET" && resumePath) {
    const resumeAt = url.searchParams.get("resumeAt") ?? header(request, "last-event-id");
    return resumeChat(env, decodeURIComponent(resumePath[1]!), url.searchParams.get("executionId"), resumeAt, response);
  }
  response.writeHead(404).end();
}

/** Starts the answer to the last user message, or decides the approval the
 * last assistant message answered, and streams it. */
async function postChat(env: Environment, support: Support, body: ChatRequest, response: ServerResponse): Promise<void> {
  const chat = support.conversation(String(body.id));
  const last = body.messages?.at(-1);
  if (last?.role === "assistant") {
    const metadata = last.metadata as ChatMessageMetadata | undefined;
    const responses = (last.parts ?? []).filter((part) => part.state === "approval-responded" && part.approval !== undefined);
    if (metadata?.executionId === undefined || responses.length === 0)
      return sendJson(response, 400, { message: "the last message is the assistant's without approval responses" });
    const run = chat.resume(metadata.executionId, {
      approvalId: approvalIdOf(responses[0]!.approval!.id),
      approved: responses.every((part) => part.approval!.approved === true),
    });
    // The client holds the message up to the suspension: continue after it.
    return send(
      response,
      toUIMessageStreamResponse(await env.stream(run, metadata.resumeAt === undefined ? {} : { resumeAt: metadata.resumeAt }), {
        executionId: metadata.executionId,
      }),
    );
  }
  const text = (last?.parts ?? [])
    .filter((part) => part.type === "text")
    .map((part) => part.text ?? "")
    .join("");
  const run = chat.start(text, { stream: true });
  const stream = await env.stream(run);
  return send(response, toUIMessageStreamResponse(stream, { executionId: await run.executionId }));
}

/** The chat's latest answer (or `executionId`), from `resumeAt` on. */
async function resumeChat(
  env: Environment,
  chatId: string,
  executionId: string | null,
  resumeAt: string | undefined | null,
  response: ServerResponse,
): Promise<void> {
  const id = executionId ?? (await env.executions({ agentId: chatId, limit: 1 }))[0]?.executionId;
  if (id === undefined) return void response.writeHead(204).end();
  const row = await env.execution(id);
  // An answer of another chat is not this chat's to stream.
  if (row !== undefined && row.agentId !== chatId)
    return sendJson(response, 404, { code: "EXECUTION_NOT_FOUND", message: `chat ${chatId} has no answer ${id}` });
  // useChat's `resume: true` asks on every page load: nothing to resume once the answer ended.
  if (resumeAt == null && (row === undefined || row.status === "terminal" || row.status === "suspended")) return void response.writeHead(204).end();
  return send(response, toUIMessageStreamResponse(await env.stream(id, resumeAt == null ? {} : { resumeAt }), { executionId: id }));
}

// -- the agent --------------------------------------------------------------------

const orders: Record<string, { item: string; priceCents: number; status: string; carrier: string }> = {
  "42": { item: "blue kettle", priceCents: 3990, status: "out for delivery", carrier: "PostNL" },
  "7": { item: "teapot", priceCents: 2450, status: "delivered", carrier: "DHL" },
};

function supportTools(lookupMs: number) {
  return {
    lookupOrder: tool({
      description: "Looks an order up by its number",
      inputSchema: z.object({ orderId: z.string() }),
      execute: async ({ orderId }, { signal }) => {
        await new Promise((resolve, reject) => {
          const timer = setTimeout(resolve, lookupMs);
          signal.addEventListener("abort", () => {
            clearTimeout(timer);
            reject(signal.reason);
          });
        });
        return orders[orderId] ?? { error: `there is no order ${orderId}` };
      },
    }),
    issueRefund: tool({
      description: "Refunds an order to the customer's card",
      inputSchema: z.object({ orderId: z.string(), amountCents: z.number().int().positive() }),
      needsApproval: ({ amountCents }) => amountCents > 2000,
      execute: ({ orderId, amountCents }, { idempotencyKey }) => ({ refunded: true, orderId, amountCents, reference: idempotencyKey }),
    }),
  };
}

/** A stand-in for a real model: it decides from the conversation. */
function supportModel(pacingMs: number): LanguageModelV4 {
  const model = scriptedModel(({ messages }) => {
    const lastUser = messages.map((message) => message.role).lastIndexOf("user");
    const request = messages[lastUser];
    const question = request?.role === "user" ? request.content : "";
    const orderId = /\d+/.exec(question)?.[0] ?? "42";
    const results = messages.slice(lastUser + 1).flatMap((message) => (message.role === "tool" ? message.results : []));
    const order = results.find((result) => result.toolName === "lookupOrder")?.output as
      | { item?: string; priceCents?: number; status?: string; carrier?: string; error?: string }
      | undefined;
    const refund = results.find((result) => result.toolName === "issueRefund");
    if (!order) return { text: `Let me look up order ${orderId} for you.`, toolCalls: [{ toolName: "lookupOrder", input: { orderId } }] };
    if (order.error) return { text: `I could not find order ${orderId}.` };
    if (/refund/i.test(question) && !refund) return { toolCalls: [{ toolName: "issueRefund", input: { orderId, amountCents: order.priceCents ?? 0 } }] };
    if (refund) return { text: refund.isError ? `The refund of order ${orderId} was not made.` : `Order ${orderId} is refunded.` };
    return { text: `Your ${order.item} (order ${orderId}) is ${order.status} with ${order.carrier}.` };
  }) as LanguageModelV4;
  return paced(model, pacingMs);
}

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

// -- HTTP ---------------------------------------------------------------------------

interface ChatRequest {
  readonly id?: unknown;
  readonly messages?: readonly {
    readonly role: string;
    readonly metadata?: unknown;
    readonly parts?: readonly {
      readonly type: string;
      readonly text?: string;
      readonly state?: string;
      readonly approval?: { readonly id: string; readonly approved?: boolean };
    }[];
  }[];
}

/** Sends a web Response on a node:http response; a client that leaves cancels its stream. */
async function send(response: ServerResponse, web: Response): Promise<void> {
  response.writeHead(web.status, Object.fromEntries(web.headers));
  if (web.body === null) return void response.end();
  const reader = web.body.getReader();
  response.on("close", () => void reader.cancel().catch(() => undefined));
  for (;;) {
    const next = await reader.read().catch(() => ({ done: true as const, value: undefined }));
    if (next.done) break;
    response.write(next.value);
  }
  response.end();
}

const statusByCode: Record<string, number> = {
  INVALID_INPUT: 400,
  EXECUTION_NOT_FOUND: 404,
  AGENT_BUSY: 409,
  APPROVAL_MISMATCH: 409,
  QUEUE_FULL: 429,
  RUNTIME_SHUTDOWN: 503,
};

function sendError(response: ServerResponse, error: unknown): void {
  const code = error instanceof PhronomyError ? error.code : "INTERNAL";
  const message = error instanceof Error ? error.message : String(error);
  if (response.headersSent) return void response.destroy();
  sendJson(response, statusByCode[code] ?? 500, { code, message });
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

async function readJson(request: IncomingMessage): Promise<ChatRequest> {
  let text = "";
  for await (const piece of request) text += String(piece);
  try {
    return JSON.parse(text) as ChatRequest;
  } catch {
    throw new PhronomyError("INVALID_INPUT", "the request body is not JSON");
  }
}

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

async function closeServer(server: Server, env: Environment): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await env.close();
}

export { executionIdHeader };

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const server = await startChatServer({
    store: process.env["PHRONOMY_STORE"] ?? "./chat.db",
    port: Number(process.env["PORT"] ?? 3000),
    ...(process.env["CHAT_PACING_MS"] ? { pacingMs: Number(process.env["CHAT_PACING_MS"]) } : {}),
  });
  console.log(JSON.stringify({ listening: server.url }));
  const stop = (): void => void server.close().then(() => process.exit(0));
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}
