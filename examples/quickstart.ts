import { Phronomy, tool } from "phronomy";
import { scriptedModel } from "phronomy/testing";
import { z } from "zod";

const orders = { "42": { item: "a kettle", status: "shipped" } } as Record<string, { item: string; status: string }>;
// Any AI SDK language model (v2, v3, v4), or a model id; this one is scripted: no key, no network.
const model = scriptedModel(({ messages }) =>
  messages.at(-1)?.role === "tool" ? { text: "Order 42 has shipped." } : { toolCalls: [{ toolName: "lookupOrder", input: { orderId: "42" } }] },
);

const env = await Phronomy.open({ store: "./agents.db" });

const lookupOrder = tool({
  description: "Looks an order up",
  inputSchema: z.object({ orderId: z.string() }), // any Standard Schema
  execute: async ({ orderId }, { idempotencyKey, abortSignal }) => orders[orderId] ?? { error: "no such order" },
});

const support = env.agent({
  id: "support",
  model,
  instructions: "You help customers with their orders.",
  tools: { lookupOrder },
});

const run = support.start("Where is order 42?", { timeoutMs: 30_000 });
for await (const event of run.events) console.log(event.type);
const { output, usage, executionId } = await run.result;
console.log(output, usage.totalTokens, executionId);

await env.close(); // drains: refuses new starts, finishes in-flight work
