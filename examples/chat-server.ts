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
import { Readable } from "node:stream";
import { Phronomy, chatRoutes, executionIdHeader, tool, type Environment } from "phronomy";
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
  // The two routes useChat needs, as fetch handlers (host/chat/routes.ts).
  const chat = chatRoutes(env, support);

  const server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://localhost");
    const routed =
      request.method === "POST" && url.pathname === "/api/chat"
        ? chat.post(toRequest(request, url))
        : request.method === "GET" && /^\/api\/chat\/[^/]+\/stream$/.test(url.pathname)
          ? chat.resume(toRequest(request, url))
          : Promise.resolve(new Response(null, { status: 404 }));
    routed.then((web) => send(response, web)).catch(() => response.destroy());
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`;
  return { url, env, close: () => closeServer(server, env) };
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

/** A node:http request as a fetch Request. */
function toRequest(request: IncomingMessage, url: URL): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) if (typeof value === "string") headers.set(name, value);
  const body = request.method === "POST" ? (Readable.toWeb(request) as ReadableStream<Uint8Array>) : null;
  return new Request(url, { method: request.method ?? "GET", headers, body, ...(body ? { duplex: "half" } : {}) } as RequestInit);
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
