// README, "Cancel and retry by id". Run it (`npx tsx examples/cancel-retry.ts`):
// it cancels a run while its tool works, then retries it to completion.

import { Phronomy, tool } from "phronomy";
import { scriptedModel } from "phronomy/testing";
import { z } from "zod";

const env = await Phronomy.open({ store: "./agents.db" });
const lookupOrder = tool({
  description: "Looks an order up",
  inputSchema: z.object({ orderId: z.string() }),
  // The first attempt's call hangs until it is cancelled, as a slow API can; the retry's answers.
  execute: async ({ orderId }, { executionId, abortSignal }) => {
    const retried = (await env.timeline(executionId)).some((step) => step.kind === "retried");
    if (!retried) {
      await new Promise((_, reject) => {
        if (abortSignal.aborted) reject(abortSignal.reason);
        abortSignal.addEventListener("abort", () => reject(abortSignal.reason));
      });
    }
    return { orderId, status: "shipped" };
  },
});
const model = scriptedModel(({ messages }) =>
  messages.at(-1)?.role === "tool" ? { text: "Order 42 has shipped." } : { toolCalls: [{ toolName: "lookupOrder", input: { orderId: "42" } }] },
);
const support = env.agent({ id: "support", model, tools: { lookupOrder } });

// #region readme
const run = support.start("Where is order 42?");
const executionId = await run.executionId;

// Anywhere: this process, a SQLite visitor, any PostgreSQL process.
const cancelled = await env.cancel(executionId, { reason: "the customer hung up" });
cancelled.outcome; // "cancelled" — or how it ended if it finished first

// In the process that owns the agent: attempt 2 of the same execution.
const retried = env.retry(executionId);
await retried.result; // { outcome: "completed", … }
(await env.timeline(executionId)).map((step) => step.kind); // …, "terminal", "retried", …, "terminal"
// #endregion

await run.result.catch((error: { code?: string }) => console.log("the first run:", error.code));
console.log("cancelled:", cancelled.outcome);
const { outcome, output } = await retried.result;
console.log("retried:", outcome, output);
const kinds = (await env.timeline(executionId)).map((step) => step.kind);
console.log("timeline from the retry on:", kinds.slice(kinds.indexOf("retried")).join(" "));
await env.close();
