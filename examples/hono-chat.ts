// README, "Chat UIs": the two routes `useChat` needs (`chatRoutes`), in Hono, served by
// @hono/node-server (the same `app.fetch` runs on Bun.serve, Deno.serve and
// edge runtimes). Run it (`npx tsx examples/hono-chat.ts`): it serves on a
// free port, asks one question over HTTP as useChat would, prints the UI
// message stream's chunk types, then resumes the answer after its third
// chunk and prints what came (the rest, read from the store).
// examples/chat-server.ts is the complete server (approvals, resume after
// a restart) on node:http.

import type { Server } from "node:http";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { Phronomy, tool } from "phronomy";
import { scriptedModel } from "phronomy/testing";
import { z } from "zod";

const env = await Phronomy.open({ store: "./chat.db" });
const lookupOrder = tool({
  description: "Looks an order up",
  inputSchema: z.object({ orderId: z.string() }),
  execute: ({ orderId }) => ({ orderId, status: "out for delivery" }),
});
const model = scriptedModel(({ messages }) =>
  messages.at(-1)?.role === "tool" ? { text: "Order 42 is out for delivery." } : { toolCalls: [{ toolName: "lookupOrder", input: { orderId: "42" } }] },
);
const support = env.agent({ name: "support", model, tools: { lookupOrder } });
const app = new Hono();

// #region readme
import { chatRoutes } from "phronomy";

// Each chat is a conversation of `support`; a message sent while an answer runs is answered after it.
const chat = chatRoutes(env, support);
app.post("/api/chat", (c) => chat.post(c.req.raw)); // useChat's DefaultChatTransport: a message, or an approval response
app.get("/api/chat/:id/stream", (c) => chat.resume(c.req.raw, c.req.param("id"))); // useChat({ resume: true }); 204 when idle
app.post("/api/chat/:id/stop", (c) => chat.stop(c.req.raw, c.req.param("id"))); // a stop button: stop(), then POST here
// #endregion

/** The SSE events of a response: each chunk's id (its position) and type (the last event is `data: [DONE]`). */
async function events(response: Response): Promise<{ id: string; type: string }[]> {
  return (await response.text())
    .split("\n\n")
    .filter((event) => event.includes("data: {"))
    .map((event) => ({
      id: /^id: (.*)$/m.exec(event)?.[1] ?? "",
      type: (JSON.parse(/^data: (.*)$/m.exec(event)![1]!) as { type: string }).type,
    }));
}

const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }) as Server;
await new Promise((resolve) => server.once("listening", resolve));
const address = server.address();
const url = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`;

const asked = await fetch(`${url}/api/chat`, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ id: "chat-1", messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "Where is order 42?" }] }] }),
});
const executionId = asked.headers.get("x-phronomy-execution-id") ?? "";
const answer = await events(asked);
console.log(asked.status, asked.headers.get("content-type"), answer.map((event) => event.type).join(" "));

const resumed = await events(await fetch(`${url}/api/chat/chat-1/stream?executionId=${executionId}`, { headers: { "last-event-id": answer[2]!.id } }));
console.log("resumed after the third chunk:", resumed.map((event) => event.type).join(" "));

server.closeAllConnections();
server.close();
await env.close();
