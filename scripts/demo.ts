// `npm run demo`: a support agent, run durably on the embedded SQLite store.
// The model is scripted (no key, no network): it looks an order up, checks
// the carrier, and answers. Every step is written to the store before it
// runs; the demo prints the live events, the result, and the execution's
// durable timeline as it was written. (The CLI, approval and crash-recovery
// demo arrive with their issues.)

import { mkdir, rm } from "node:fs/promises";
import { z } from "zod";
import { scriptedModel } from "../host/agent/scripted-model.js";
import { Phronomy, tool, type ExecutionEvent } from "../host/index.js";

const STORE = ".phronomy/demo.db";

const orders: Record<string, { item: string; carrier: string; tracking: string }> = {
  "42": { item: "a blue kettle", carrier: "PostNL", tracking: "3SABC0042" },
};

const lookupOrder = tool({
  description: "Looks an order up by its number",
  inputSchema: z.object({ orderId: z.string() }),
  execute: ({ orderId }) => orders[orderId] ?? { error: `no order ${orderId}` },
});

const trackParcel = tool({
  description: "Asks the carrier where a parcel is",
  inputSchema: z.object({ carrier: z.string(), tracking: z.string() }),
  execute: ({ tracking }, { idempotencyKey }) => ({ tracking, status: "out for delivery", checkedWith: idempotencyKey }),
});

/** Decides from the conversation, like a real model would. */
const model = scriptedModel(({ messages }) => {
  const last = messages.at(-1);
  if (last?.role === "user") return { toolCalls: [{ toolName: "lookupOrder", input: { orderId: "42" } }] };
  const results = messages.filter((message) => message.role === "tool");
  if (results.length === 1) return { toolCalls: [{ toolName: "trackParcel", input: { carrier: "PostNL", tracking: "3SABC0042" } }] };
  return { text: "Your order 42 (a blue kettle) is out for delivery with PostNL, tracking 3SABC0042." };
});

function describe(event: ExecutionEvent): string {
  switch (event.type) {
    case "model_call_started": return `model call #${event.turn}`;
    case "model_call_finished": return `model answered (${event.toolCalls} tool call${event.toolCalls === 1 ? "" : "s"}, ${event.usage.totalTokens} tokens)`;
    case "tool_call_started": return `tool ${event.toolName} (idempotency key ${event.idempotencyKey})`;
    case "tool_call_finished": return `tool ${event.toolName} ${event.isError ? "failed" : "done"}`;
    default: return event.type;
  }
}

await rm(".phronomy", { recursive: true, force: true });
await mkdir(".phronomy", { recursive: true });
const env = await Phronomy.open({ store: STORE });
const support = env.agent({ id: "support", model, tools: { lookupOrder, trackParcel }, instructions: "You help customers with their orders." });

console.log(`Phronomy demo — store ${STORE}\n`);
const started = performance.now();
const run = support.start("Where is my order 42?", { onEvent: (event) => console.log(`  · ${describe(event)}`) });
const result = await run.result;
console.log(`\n${result.outcome} in ${(performance.now() - started).toFixed(0)} ms: "${String(result.output)}"`);

console.log(`\nDurable timeline of execution ${result.executionId}:`);
for (const step of await env.timeline(result.executionId)) {
  console.log(`  ${String(step.seq).padStart(2)}. ${step.kind}`);
}

const busy = support.start("And my other order?");
const second = support.start("Hello?");
await second.result.catch((error: { code: string; message: string }) => console.log(`\nA second start while the agent is busy: ${error.code} — ${error.message}`));
await busy.result;

const controller = new AbortController();
const cancelled = support.start("Where is my order 42?", { signal: controller.signal, onEvent: (event) => { if (event.type === "tool_call_started") controller.abort(); } });
await cancelled.result.catch((error: { code: string }) => console.log(`A run cancelled while its tool ran ends ${error.code}; its terminal was committed after the tool settled.`));

const rows = await env.executions({ agentId: "support" });
console.log(`\nThe store now holds ${rows.length} executions of "support": ${rows.map((row) => row.outcome).join(", ")}.`);
await env.close();
