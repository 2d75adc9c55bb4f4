// README, "Waiting for an event". Run it (`npx tsx examples/waiting-for-an-event.ts`):
// a checkout agent waits for the payment of order 42; a payment provider's
// webhook (a Hono route, called here with `app.request`) signals it by key
// — once with a payload its schema refuses, then with a valid one — and a
// payment that arrives before the agent even asked is kept for its wait.

import { Hono } from "hono";
import { Phronomy, waitForEvent } from "phronomy";
import { scriptedModel } from "phronomy/testing";
import { z } from "zod";

const env = await Phronomy.open({ store: "./events.db" });
const model = scriptedModel(({ messages }) => {
  const last = messages.at(-1);
  if (last?.role === "tool") return { text: `Paid: ${JSON.stringify(last.results[0]?.output)}` };
  const asked = messages.findLast((message) => message.role === "user");
  const orderId = asked?.role === "user" && typeof asked.content === "string" ? (/\d+/.exec(asked.content)?.[0] ?? "0") : "0";
  return { toolCalls: [{ toolName: "awaitPayment", input: { orderId } }] };
});

// #region readme
// A tool whose call waits for an event: no code runs, the signal's payload is its result.
const awaitPayment = waitForEvent({
  description: "Waits until the customer has paid the order",
  inputSchema: z.object({ orderId: z.string() }),
  key: ({ orderId }) => `payment:${orderId}`, // what the webhook names
  payloadSchema: z.object({ amount: z.number().positive(), currency: z.string() }),
  timeoutMs: 3 * 24 * 60 * 60 * 1000, // stored with the wait as its due time
});
const checkout = env.agent({ id: "checkout", model, tools: { awaitPayment } });

// The payment provider's webhook: resumes the wait with that key, exactly once,
// from any process on the store (or keeps the signal for a wait not there yet).
const app = new Hono();
app.post("/webhooks/payment/:orderId", async (c) => {
  try {
    const sent = await env.signal(`payment:${c.req.param("orderId")}`, await c.req.json());
    return c.json(sent); // { status: "resumed", executionId, … } or { status: "stored", keptUntil }
  } catch (error) {
    const code = (error as { code?: string }).code; // "INVALID_INPUT": the wait is still pending
    return c.json({ code }, code === "INVALID_INPUT" || code === "SIGNAL_REFUSED" ? 400 : 500);
  }
});

const run = checkout.start("Take the payment for order 42");
// … the model calls awaitPayment({ orderId: "42" }); the execution suspends (kind "event", key "payment:42")
// #endregion

const pay = (orderId: string, body: unknown) =>
  app.request(`/webhooks/payment/${orderId}`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });
const body = async (response: Response) => (await response.json()) as { code?: string; status?: string };
const executionId = await run.executionId;
for (;;) {
  const pending = (await env.pendingApprovals()).find((item) => item.executionId === executionId);
  if (pending !== undefined) {
    console.log("waiting:", pending.kind, pending.key);
    break;
  }
  await new Promise((resolve) => setTimeout(resolve, 10));
}
const refused = await pay("42", { amount: "lots" });
console.log("refused:", refused.status, (await body(refused)).code);
const paid = await pay("42", { amount: 30, currency: "EUR" });
console.log("signal:", paid.status, (await body(paid)).status);
console.log("output:", (await run.result).output);
const early = await pay("43", { amount: 12, currency: "EUR" });
console.log("before its wait:", (await body(early)).status);
console.log("then:", (await checkout.start("Take the payment for order 43").result).output);
await env.close();
