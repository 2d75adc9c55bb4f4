// A strict TypeScript consumer of the packed package (issue 17): compiled
// with `strict` and `skipLibCheck: false` by types.test.ts (node16 and
// bundler resolution, and from CommonJS) and, on Node 22 and 24, by
// node-versions.test.ts, which then runs it there (Node strips the types).
// It prints the run's output, "hi", then the typed structured output's
// field, 42 (its type inferred from the definition's Output.object).

export const strictConsumer = `import { jsonSchema, Output, type ChatTransport, type UIMessage } from "ai";
import { Phronomy, tool, type Agent, type Environment, type Run } from "phronomy";
import { PhronomyChatTransport } from "phronomy/chat";
import { scriptedModel } from "phronomy/testing";

// The page's transport (phronomy/chat): an AI SDK ChatTransport.
const transport: ChatTransport<UIMessage> = new PhronomyChatTransport<UIMessage>({ api: "/api/chat", reconnectAttemptsMax: 4 });
void transport;

const env: Environment = await Phronomy.open({ store: "./agents.db" });
const lookup = tool({
  description: "Looks an order up",
  inputSchema: { "~standard": { version: 1, vendor: "consumer", validate: (value: unknown) => ({ value: value as { orderId: string } }) } },
  execute: async ({ orderId }) => ({ orderId }),
});
const agent: Agent = env.agent({ id: "support", model: scriptedModel(() => ({ text: "hi" })), tools: { lookup } });
const run: Run = agent.start("Where is order 42?");
const { output } = await run.result;
console.log(output);
const totals = env.agent({
  name: "totals",
  model: scriptedModel(() => ({ text: JSON.stringify({ total: 42 }) })),
  output: Output.object({ schema: jsonSchema<{ total: number }>({ type: "object", properties: { total: { type: "number" } }, required: ["total"] }) }),
});
const typed: Run<{ total: number }> = totals.conversation("user-1").start("Sum it");
const ended = await typed.result;
if (ended.outcome === "completed") {
  const total: number = ended.output.total;
  console.log(total);
}
await env.close();
`;

/** The compiler options of a strict consumer. */
export function compilerOptions(module: string, moduleResolution: string): Record<string, unknown> {
  return { strict: true, skipLibCheck: false, module, moduleResolution, target: "es2022", noEmit: true, types: ["node"] };
}
