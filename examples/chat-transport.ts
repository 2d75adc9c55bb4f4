// README, "Chat UIs": the page's side — `PhronomyChatTransport` from
// `phronomy/chat`, the AI SDK's chat transport for `chatRoutes` that
// reconnects by itself. Run it (`npx tsx examples/chat-transport.ts`): it
// serves the chat routes on a free port (Hono on @hono/node-server), then
// asks one question through the transport over a network that cuts the
// answer's connection off after its fourth event. The transport asks for
// the same answer again after the last event it saw, and the message
// arrives whole, each part once.

import type { Server } from "node:http";
import { serve } from "@hono/node-server";
import { readUIMessageStream, type UIMessage } from "ai";
import { Hono } from "hono";
import { Phronomy, chatRoutes } from "phronomy";
import { scriptedModel } from "phronomy/testing";

const env = await Phronomy.open({ store: "./chat.db" });
const support = env.agent({ name: "support", model: scriptedModel(() => ({ text: "Order 42 is out for delivery and arrives on Monday." })) });
const chat = chatRoutes(env, support);
const app = new Hono();
app.post("/api/chat", (c) => chat.post(c.req.raw));
app.get("/api/chat/:id/stream", (c) => chat.resume(c.req.raw, c.req.param("id")));
const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }) as Server;
await new Promise((resolve) => server.once("listening", resolve));
const address = server.address();
const origin = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`;

// What a page on the server's origin does: relative URLs go to the server.
// And the network here cuts the first answer off after its fourth event.
const requests: string[] = [];
const network = globalThis.fetch;
let cut = false;
globalThis.fetch = async (input: string | URL | Request, init?: RequestInit) => {
  const url = new URL(String(input), origin);
  requests.push(`${init?.method ?? "GET"} ${url.pathname}${url.search}`);
  const response = await network(url, init);
  if (cut || response.body === null) return response;
  cut = true;
  return new Response(afterEvents(response.body, 4), { status: response.status, headers: response.headers });
};

// #region readme
import { PhronomyChatTransport } from "phronomy/chat";

// On the page: useChat({ id, resume: true, transport, sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses })
const transport = new PhronomyChatTransport({ api: "/api/chat" });
// #endregion

const question: UIMessage = { id: "m1", role: "user", parts: [{ type: "text", text: "Where is order 42?" }] };
const stream = await transport.sendMessages({
  chatId: "chat-1",
  messages: [question],
  trigger: "submit-message",
  messageId: undefined,
  abortSignal: undefined,
});
let message: UIMessage | undefined;
for await (const state of readUIMessageStream({ stream })) message = state;

console.log(`cut off after 4 events, then ${requests[1]}`);
console.log(message?.parts.map((part) => (part.type === "text" ? `text: ${part.text}` : part.type)).join(", "));

server.closeAllConnections();
server.close();
await env.close();

/** `body` until `count` server-sent events went through, then a dropped connection. */
function afterEvents(body: ReadableStream<Uint8Array>, count: number): ReadableStream<Uint8Array> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const encoder = new TextEncoder();
  let buffered = "";
  let events = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (events === count) {
        await reader.cancel();
        return controller.error(new TypeError("network error: the connection was reset"));
      }
      let end = buffered.indexOf("\n\n");
      while (end === -1) {
        const next = await reader.read();
        if (next.done) return controller.close();
        buffered += next.value;
        end = buffered.indexOf("\n\n");
      }
      controller.enqueue(encoder.encode(buffered.slice(0, end + 2)));
      buffered = buffered.slice(end + 2);
      events += 1;
    },
    cancel: (reason) => reader.cancel(reason),
  });
}
