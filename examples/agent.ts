// agent.ts (or agent.mjs without the types)
import { Phronomy, tool } from "phronomy";
import { scriptedModel } from "phronomy/testing";
import { z } from "zod"; // any Standard Schema library

const env = await Phronomy.open({ store: "./data/agents.db" });

const lookupOrder = tool({
  description: "Looks an order up",
  inputSchema: z.object({ orderId: z.string() }),
  execute: ({ orderId }) => ({ orderId, status: "out for delivery" }),
});

const model = scriptedModel(({ messages }) =>
  messages.at(-1)?.role === "user" ? { toolCalls: [{ toolName: "lookupOrder", input: { orderId: "42" } }] } : { text: "Order 42 is out for delivery." },
);

const support = env.agent({ id: "support", model, tools: { lookupOrder } });
const result = await support.start("Where is order 42?").result;
console.log(result.outcome, result.output);
await env.close();
