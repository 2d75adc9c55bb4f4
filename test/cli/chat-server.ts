// A small OpenAI-compatible chat-completions server for the CLI's real-model
// tests, on 127.0.0.1 and a random port. It speaks the protocol's two forms
// — one JSON completion, or server-sent events (`stream: true`) with the
// tool call's arguments split over several chunks and usage in a last
// chunk — and plays a support model: the first request gets a
// `lookupOrder` tool call, a request carrying the tool's result gets a text
// answer that quotes it. Every request is recorded for assertions; a
// request without the expected API key is refused with 401, as a provider
// would. A test can script what the next requests get (`script`): an HTTP
// error with its headers (a 429 with `Retry-After`, a 503), or a given
// reply (text, or a tool call); the support model answers once the script
// is used up.

import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedRequest {
  readonly path: string;
  readonly authorization: string | undefined;
  readonly body: ChatRequest;
  /** When the request arrived (Date.now()). */
  readonly at: number;
}

/** What one scripted request gets instead of the support model's answer. */
export type ScriptedResponse = { readonly status: number; readonly headers?: Record<string, string>; readonly message?: string } | { readonly reply: Reply };

interface ChatMessage {
  readonly role: string;
  readonly content?: string | null | { type: string; text?: string; image_url?: { url: string } }[];
  readonly tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  readonly tool_call_id?: string;
}

export interface ChatRequest {
  readonly [key: string]: unknown;
  readonly model: string;
  readonly messages: ChatMessage[];
  readonly tools?: { type: string; function: { name: string; description?: string; parameters: unknown } }[];
  readonly stream?: boolean;
  readonly stream_options?: { include_usage?: boolean };
}

export interface ChatServer {
  /** The base URL to pass as `--base-url` (ends in /v1). */
  readonly baseUrl: string;
  readonly requests: RecordedRequest[];
  /** Consumed one entry per request, in order. */
  readonly script: ScriptedResponse[];
  close(): Promise<void>;
}

export const TOOL_CALL_ID = "call_lookup_1";
export const API_KEY = "sk-test-phronomy";
const usage = { prompt_tokens: 40, completion_tokens: 12, total_tokens: 52 };

export async function startChatServer(): Promise<ChatServer> {
  const requests: RecordedRequest[] = [];
  const script: ScriptedResponse[] = [];
  const server = createServer((request, response) => {
    readBody(request).then(
      (text) => answer(request, response, text, requests, script),
      (error: unknown) => {
        response.writeHead(400).end(String(error));
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    script,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    request
      .setEncoding("utf8")
      .on("data", (chunk: string) => {
        text += chunk;
      })
      .on("end", () => resolve(text))
      .on("error", reject);
  });
}

function answer(request: IncomingMessage, response: ServerResponse, text: string, requests: RecordedRequest[], script: ScriptedResponse[]): void {
  const authorization = request.headers.authorization;
  if (request.method !== "POST" || request.url !== "/v1/chat/completions") {
    response.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: `no route ${request.method} ${request.url}` } }));
    return;
  }
  const body = JSON.parse(text) as ChatRequest;
  requests.push({ path: request.url, authorization, body, at: Date.now() });
  if (authorization !== `Bearer ${API_KEY}`) {
    response
      .writeHead(401, { "content-type": "application/json" })
      .end(JSON.stringify({ error: { message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" } }));
    return;
  }
  const scripted = script.shift();
  if (scripted !== undefined && "status" in scripted) {
    response
      .writeHead(scripted.status, { "content-type": "application/json", ...scripted.headers })
      .end(JSON.stringify({ error: { message: scripted.message ?? `scripted ${scripted.status}`, type: "server_error" } }));
    return;
  }
  const toolMessage = body.messages.find((message) => message.role === "tool");
  const reply: Reply =
    scripted !== undefined
      ? scripted.reply
      : toolMessage === undefined
        ? { kind: "tool", name: "lookupOrder", arguments: JSON.stringify({ orderId: "42" }) }
        : { kind: "text", text: `Order 42: ${summaryOf(typeof toolMessage.content === "string" ? toolMessage.content : "")}.` };
  if (body.stream) stream(response, body.model, reply);
  else complete(response, body.model, reply);
}

export type Reply = { kind: "tool"; name: string; arguments: string } | { kind: "text"; text: string };

/** What the tool said, in words: the item and status of its JSON. */
function summaryOf(content: string): string {
  try {
    const parsed = JSON.parse(content) as { item?: string; status?: string };
    return `the ${parsed.item ?? "?"} is ${parsed.status ?? "?"}`;
  } catch {
    return content;
  }
}

function complete(response: ServerResponse, model: string, reply: Reply): void {
  const message =
    reply.kind === "tool"
      ? { role: "assistant", content: null, tool_calls: [{ id: TOOL_CALL_ID, type: "function", function: { name: reply.name, arguments: reply.arguments } }] }
      : { role: "assistant", content: reply.text };
  response.writeHead(200, { "content-type": "application/json" }).end(
    JSON.stringify({
      id: "chatcmpl-test",
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [{ index: 0, message, finish_reason: reply.kind === "tool" ? "tool_calls" : "stop" }],
      usage,
    }),
  );
}

function stream(response: ServerResponse, model: string, reply: Reply): void {
  response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => {
    response.write(
      `data: ${JSON.stringify({ id: "chatcmpl-test", object: "chat.completion.chunk", created: Math.floor(Date.now() / 1000), model, choices, ...extra })}\n\n`,
    );
  };
  chunk([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]);
  if (reply.kind === "tool") {
    chunk([
      {
        index: 0,
        delta: { tool_calls: [{ index: 0, id: TOOL_CALL_ID, type: "function", function: { name: reply.name, arguments: "" } }] },
        finish_reason: null,
      },
    ]);
    const middle = Math.floor(reply.arguments.length / 2);
    for (const part of [reply.arguments.slice(0, middle), reply.arguments.slice(middle)]) {
      chunk([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: part } }] }, finish_reason: null }]);
    }
    chunk([{ index: 0, delta: {}, finish_reason: "tool_calls" }]);
  } else {
    for (const word of reply.text.match(/\S+\s*/g) ?? []) chunk([{ index: 0, delta: { content: word }, finish_reason: null }]);
    chunk([{ index: 0, delta: {}, finish_reason: "stop" }]);
  }
  chunk([], { usage });
  response.end("data: [DONE]\n\n");
}
