// The chat server of the browser test (test/chat/use-chat.slow.test.ts),
// run as a child process so the test can kill -9 it: Hono with README's
// "Chat UIs" routes as printed (the region below; the test checks it equals
// README's block), the chat's history as `support.conversation(id).messages()`,
// and the page bundled by vite, all from one origin.
//
//   CHAT_STORE=<sqlite file> CHAT_PAGE=<vite's outDir> CHAT_WORK=<dir> node --import tsx test/chat/browser/server.ts
//
// The model (paced-model.ts) streams word by word, CHAT_PACING_MS apart
// (default 100), and writes its prompts and gates under CHAT_WORK.

import { existsSync, readFileSync } from "node:fs";
import type { Server } from "node:http";
import { extname, join } from "node:path";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { humanInput, Phronomy, tool } from "phronomy";
import { z } from "zod";
import { pacedModel } from "./paced-model.js";

const store = process.env["CHAT_STORE"] ?? "./chat.db";
const pageDirectory = process.env["CHAT_PAGE"] ?? "";
const workDirectory = process.env["CHAT_WORK"] ?? ".";
const env = await Phronomy.open({ store });
const issueRefund = tool({
  description: "Refunds an order to the customer's card",
  inputSchema: z.object({ orderId: z.string(), amountCents: z.number().int().positive() }),
  needsApproval: true,
  execute: ({ orderId, amountCents }) => ({ refunded: true, orderId, amountCents }),
});
// A typed wait: the page shows a form for its data-wait part and answers with addToolOutput.
const askDeliveryDate = humanInput({
  description: "Asks the customer for a delivery date",
  inputSchema: z.object({ question: z.string() }),
  responseSchema: z.object({ date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "a date as YYYY-MM-DD") }),
});
const support = env.agent({
  name: "support",
  model: pacedModel({ pacingMs: Number(process.env["CHAT_PACING_MS"] ?? 100), workDirectory }),
  tools: { issueRefund, askDeliveryDate },
});
const app = new Hono();

// #region readme
import { chatRoutes } from "phronomy";

// Each chat is a conversation of `support`; a message sent while an answer runs is answered after it.
const chat = chatRoutes(env, support);
app.post("/api/chat", (c) => chat.post(c.req.raw)); // useChat's DefaultChatTransport: a message, or an approval response
app.get("/api/chat/:id/stream", (c) => chat.resume(c.req.raw, c.req.param("id"))); // useChat({ resume: true }); 204 when idle
app.post("/api/chat/:id/stop", (c) => chat.stop(c.req.raw, c.req.param("id"))); // a stop button: stop(), then POST here
// #endregion

// README: `useChat({ id, messages: await support.conversation(id).messages() })`, over HTTP.
app.get("/api/chat/:id/messages", async (c) => c.json(await support.conversation(c.req.param("id")).messages()));
app.get("/*", (c) => servePage(c.req.path));

const server = serve({ fetch: app.fetch, port: Number(process.env["PORT"] ?? 0), hostname: "127.0.0.1" }) as Server;
await new Promise((resolve) => server.once("listening", resolve));
const address = server.address();
console.log(JSON.stringify({ listening: `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}` }));

// -- the page -----------------------------------------------------------------------

const contentTypes: Record<string, string> = { ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".css": "text/css" };

/** index.html at `/`, the bundle's assets by name. */
function servePage(path: string): Response {
  const name = path === "/" ? "index.html" : path.slice(1);
  const file = join(pageDirectory, name);
  if (name.includes("..") || !existsSync(file)) return new Response("not found", { status: 404 });
  return new Response(readFileSync(file), { headers: { "content-type": contentTypes[extname(file)] ?? "application/octet-stream" } });
}

const stop = (): void => void server.close(() => void env.close().then(() => process.exit(0)));
process.on("SIGTERM", stop);
