// README, "A second message while the conversation is busy": onBusy
// "enqueue" and "interrupt", and a full queue. Run it
// (`npx tsx examples/busy-conversation.ts`): it prints what became of each
// message.

import { Phronomy, tool } from "phronomy";
import { scriptedModel } from "phronomy/testing";
import { z } from "zod";

const env = await Phronomy.open({ store: "./busy.db" });
const userId = "ada";
const showRetryLater = (): void => console.log("the queue is full: try again later");

// The first lookup holds until the end of the sample, so the conversation is busy throughout.
let release = (): void => undefined;
const held = new Promise<void>((resolve) => (release = resolve));
let lookups = 0;
const tools = {
  lookupOrder: tool({
    description: "Looks an order up",
    inputSchema: z.object({ orderId: z.string() }),
    execute: async ({ orderId }) => {
      if (lookups++ === 0) await held;
      return { orderId, status: "shipped" };
    },
  }),
};
const model = scriptedModel(({ messages }) => {
  const last = messages.at(-1);
  if (last?.role === "tool") return { text: `Order ${(last.results[0]!.output as { orderId: string }).orderId} has shipped.` };
  const text = last?.role === "user" ? last.content : "";
  const orderId = /\d+/.exec(text)?.[0];
  return orderId === undefined ? { text: "Your order is cancelled." } : { toolCalls: [{ toolName: "lookupOrder", input: { orderId } }] };
});

// #region readme
import { QueueFullError } from "phronomy";

const support = env.agent({ name: "support", model, tools, onBusy: "enqueue", queueLimit: 2 });
const chat = support.conversation(userId);

const first = chat.start("Where is order 42?");
const second = chat.start("And order 43?"); // queued behind the first
await second.executionId; // known once queued: list, show, cancel it by id
(await env.execution(await second.executionId))?.status; // "queued" until it runs

chat.start("Stop, cancel my order instead", { onBusy: "interrupt" }); // cancels the running one, runs next

try {
  await chat.start("one too many").result; // two are queued already: the queueLimit
} catch (error) {
  if (error instanceof QueueFullError) showRetryLater(); // QUEUE_FULL: nothing was queued
}
// #endregion

console.log("second was", (await env.execution(await second.executionId))?.status);
release();
const ended = await first.result.then(
  () => "completed",
  (error: { code?: string }) => error.code,
);
console.log("first:", ended);
console.log("second:", (await second.result).output);
const interrupting = (await env.executions({ agentId: userId })).find((row) => row.input === "Stop, cancel my order instead");
console.log("the interrupting message:", interrupting?.output);
await env.close();
