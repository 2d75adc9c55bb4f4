// README, "Coming from the AI SDK": AI SDK tools and settings as they are,
// a durable loop. Run it (`npx tsx examples/from-the-ai-sdk.ts`): it prints
// the run's structured output. The model is scripted (no key, no network);
// put `openai("gpt-5-mini")` (from `@ai-sdk/openai`) or any AI SDK model in
// its place.

import { scriptedModel } from "phronomy/testing";
import { z } from "zod";

const model = scriptedModel(({ messages }) =>
  messages.at(-1)?.role === "tool"
    ? { text: JSON.stringify({ orderId: "42", status: "out for delivery" }) }
    : { toolCalls: [{ toolName: "lookupOrder", input: { orderId: "42" } }] },
);
const lookupOrder = tool({
  description: "Looks an order up",
  inputSchema: z.object({ orderId: z.string() }),
  execute: async ({ orderId }) => ({ orderId, status: "out for delivery" }),
});
const refund = tool({
  description: "Refunds an order",
  inputSchema: z.object({ orderId: z.string(), amountCents: z.number() }),
  needsApproval: true,
  execute: async ({ orderId }) => ({ orderId, refunded: true }),
});
const orderStatus = z.object({ orderId: z.string(), status: z.string() });
const steps: string[] = [];

// #region readme
import { isStepCount, Output, tool } from "ai"; // your AI SDK tools, unchanged
import { Phronomy } from "phronomy";

// before: const agent = new ToolLoopAgent({ model, instructions, tools, temperature, output });
//         const { text } = await agent.generate({ prompt: "Where is order 42?" });
const env = await Phronomy.open({ store: "./agents.db" });
const agent = env.agent({
  id: "support",
  model,
  instructions: "You help customers.", // model: openai("gpt-5-mini"), any AI SDK model
  tools: { lookupOrder, refund }, // tool(), dynamicTool(), MCP tools; needsApproval works
  temperature: 0.2,
  providerOptions: { openai: { reasoningEffort: "low" } },
  output: Output.object({ schema: orderStatus }), // run.result.output has the schema's type
  stopWhen: isStepCount(10), // decided at each durable step, the same after a restart
  onStepFinish: (step) => void steps.push(step.finishReason), // prepareStep, toolChoice, … too
});
const { output } = await agent.start("Where is order 42?", { providerOptions: { openai: { user: "u-7" } } }).result;
// #endregion

console.log(JSON.stringify(output), model.lastCallOptions?.temperature, steps.join(","));
await env.close();
