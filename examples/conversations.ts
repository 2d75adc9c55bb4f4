// README, "Conversations": one definition, a conversation per end user,
// behind a Hono route. Run it (`npx tsx examples/conversations.ts`): it
// answers two users through the route, in process (`app.request`), and
// prints what each got.

import { Hono } from "hono";
import { Phronomy, tool } from "phronomy";
import { scriptedModel } from "phronomy/testing";
import { z } from "zod";

const env = await Phronomy.open({ store: "./conversations.db" });
const lookupOrder = tool({
  description: "Looks an order up",
  inputSchema: z.object({ orderId: z.string() }),
  execute: ({ orderId }) => ({ orderId, status: orderId === "42" ? "shipped" : "packed" }),
});
// Scripted (no key, no network): looks up the order the user names, then says its status.
const model = scriptedModel(({ messages }) => {
  const last = messages.at(-1);
  if (last?.role === "tool") {
    const { orderId, status } = last.results[0]!.output as { orderId: string; status: string };
    return { text: `Order ${orderId} is ${status}.` };
  }
  const orderId = /\d+/.exec(last?.role === "user" ? last.content : "")?.[0] ?? "42";
  return { toolCalls: [{ toolName: "lookupOrder", input: { orderId } }] };
});

// #region readme
const support = env.agent({ name: "support", model, instructions: "You help customers with their orders.", tools: { lookupOrder } });

const app = new Hono();
app.post("/chat/:userId", async (c) => {
  const chat = support.conversation(c.req.param("userId")); // the agent id is the user id
  const { output } = await chat.start((await c.req.json<{ message: string }>()).message).result;
  return c.json({ output });
});
// #endregion

for (const [userId, message] of [
  ["ada", "Where is order 42?"],
  ["grace", "Where is order 7?"],
] as const) {
  const response = await app.request(`/chat/${userId}`, { method: "POST", body: JSON.stringify({ message }), headers: { "content-type": "application/json" } });
  console.log(userId, response.status, JSON.stringify(await response.json()));
}
console.log(
  (await env.executions())
    .map((row) => row.agentId)
    .sort()
    .join(" "),
);
await env.close();
