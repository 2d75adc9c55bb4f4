// README, "Retention": how long finished executions stay, per environment
// and per agent, and pruning now. Run it (`npx tsx examples/retention.ts`):
// it prints what each prune removed.

import { Phronomy, tool } from "phronomy";
import { scriptedModel } from "phronomy/testing";
import { z } from "zod";

const model = scriptedModel(({ messages }) =>
  messages.at(-1)?.role === "tool" ? { text: "Refunded." } : { toolCalls: [{ toolName: "refund", input: { orderId: "42" } }] },
);
const tools = {
  refund: tool({ description: "Refunds an order", inputSchema: z.object({ orderId: z.string() }), execute: ({ orderId }) => ({ orderId, refunded: true }) }),
};

// #region readme
const env = await Phronomy.open({ store: "./agents.db", retention: { finishedMs: 24 * 60 * 60 * 1000 } }); // a day
const audit = env.agent({ id: "refunds", model, tools, retention: { finishedMs: "forever" } });
const report = await env.prune({ olderThanMs: 60 * 60 * 1000 }); // now: { executions, steps, journal, approvals }
// #endregion

console.log("nothing finished an hour ago:", JSON.stringify(report));
await audit.start("Refund order 42").result;
const chat = env.agent({ id: "chat", model, tools });
await chat.start("Refund order 42").result;
console.log("chat's, finished now, pruned:", JSON.stringify(await env.prune({ olderThanMs: 0, agentId: "chat" })));
console.log("left:", (await env.executions()).map((row) => row.agentId).join(" "));
await env.close();
