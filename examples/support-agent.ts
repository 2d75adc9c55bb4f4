// An agent module for `phronomy run` (docs/cli.md): its default export is
// the agent — here a function, so it can use the model the command line
// names (`--model openai-compatible:<model> --base-url <url>`) and fall back
// to a scripted stand-in that needs no key and no network.
//
//   phronomy run examples/support-agent.ts "Where is my order 42?"
//   phronomy run examples/support-agent.ts "Please refund order 42" # waits for approval (exit 3)
//   phronomy approve <execution-id> --agent-module examples/support-agent.ts
//   phronomy run examples/support-agent.ts "Where is order 7?" \
//     --model openai-compatible:llama3.2 --base-url http://localhost:11434/v1
//
// In this repository "phronomy" is the sources (tsconfig.json `paths`,
// which tsx applies); installed, it is the package.

// #region module
import { z } from "zod";
import { defineAgent, tool } from "phronomy"; // defineAgent only types the export
import { scriptedModel } from "phronomy/testing";

const lookupOrder = tool({
  description: "Looks an order up by its number: item, price in cents, delivery status, carrier",
  inputSchema: z.object({ orderId: z.string().describe("the order number, digits only") }),
  execute: ({ orderId }) => orders[orderId] ?? { error: `there is no order ${orderId}` },
});

const issueRefund = tool({
  description: "Refunds an order to the customer's card",
  inputSchema: z.object({ orderId: z.string(), amountCents: z.number().int().positive() }),
  // Refunds above 20 EUR wait for a person: `phronomy approve` or `reject`.
  needsApproval: ({ amountCents }) => amountCents > 2000,
  // The idempotency key is stable across retries and crash recovery: pass it
  // to the payment API so a repeated call cannot pay twice.
  execute: ({ orderId, amountCents }, { idempotencyKey }) => ({ refunded: true, orderId, amountCents, reference: idempotencyKey }),
});

export default defineAgent(({ model }) => ({
  id: "support", // required: names the agent's conversation in the store
  model: model ?? offlineModel, // the --model choice, else the module's own
  instructions: "You help customers with their orders. Look the order up before answering. Refund only when asked.",
  tools: { lookupOrder, issueRefund },
  maxTurns: 8, // any other env.agent() option: memoryWindow, tokenBudget, timeoutMs, guardrails
}));
// #endregion

const orders: Record<string, { item: string; priceCents: number; status: string; carrier: string }> = {
  "42": { item: "blue kettle", priceCents: 3990, status: "out for delivery", carrier: "PostNL" },
  "7": { item: "teapot", priceCents: 2450, status: "delivered", carrier: "DHL" },
};

/** A stand-in for a real model: it decides from the conversation. */
const offlineModel = scriptedModel(({ messages }) => {
  const lastUser = messages.map((message) => message.role).lastIndexOf("user");
  const request = messages[lastUser];
  const question = request?.role === "user" ? request.content : "";
  const orderId = /\d+/.exec(question)?.[0] ?? "42";
  const results = messages.slice(lastUser + 1).flatMap((message) => (message.role === "tool" ? message.results : []));
  const order = results.find((result) => result.toolName === "lookupOrder");
  const refund = results.find((result) => result.toolName === "issueRefund");
  if (!order) return { toolCalls: [{ toolName: "lookupOrder", input: { orderId } }] };
  const found = order.output as { item?: string; priceCents?: number; status?: string; carrier?: string; error?: string };
  if (found.error) return { text: `I could not find order ${orderId}.` };
  if (/refund|money back/i.test(question) && !refund) {
    return { toolCalls: [{ toolName: "issueRefund", input: { orderId, amountCents: found.priceCents ?? 0 } }] };
  }
  if (refund) return { text: refund.isError ? `The refund of order ${orderId} was not approved.` : `Order ${orderId} is refunded.` };
  return { text: `Your ${found.item} (order ${orderId}) is ${found.status} with ${found.carrier}.` };
});
