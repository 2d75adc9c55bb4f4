// README, "Several processes on PostgreSQL": the store's URL with its
// options, or the options apart. Run it beside a PostgreSQL server
// (`DATABASE_URL=postgres://… PHRONOMY_SCHEMA=… npx tsx examples/postgres.ts`):
// it opens the store both ways and answers one conversation. Needs `pg` (`npm install pg`).

import process from "node:process";
import { Phronomy, tool } from "phronomy";
import { scriptedModel } from "phronomy/testing";
import { z } from "zod";

const databaseUrl = process.env["DATABASE_URL"] ?? "postgres://app@db:5432/agents";
const schema = process.env["PHRONOMY_SCHEMA"] ?? "phronomy";
const tools = {
  lookupOrder: tool({
    description: "Looks an order up",
    inputSchema: z.object({ orderId: z.string() }),
    execute: ({ orderId }) => ({ orderId, status: "shipped" }),
  }),
};
const model = scriptedModel(({ messages }) =>
  messages.at(-1)?.role === "tool" ? { text: "Order 42 has shipped." } : { toolCalls: [{ toolName: "lookupOrder", input: { orderId: "42" } }] },
);

// #region readme
const env = await Phronomy.open({ store: `${databaseUrl}?schema=${schema}&lease_ms=5000` });
const support = env.agent({ name: "support", model, tools }); // conversations: support.conversation(userId)
// or, as options (each named once: in the URL or here; unknown keys refused):
const worker = await Phronomy.open({ store: databaseUrl, postgres: { schema, leaseMs: 5000, poolSize: 10, instanceId: "worker-1" } });
// #endregion

await worker.close(); // its partitions are free again at once
const [userId, text, requestId] = ["ada", "Where is order 42?", "request-1"];
// #region any-process
// behind a load balancer: any process, any conversation
const run = support.conversation(userId).start(text, { idempotencyKey: requestId });
// #endregion
const { output } = await run.result;
console.log(output);
// The same key sent again follows the execution it started: it runs once.
const again = support.conversation(userId).start(text, { idempotencyKey: requestId });
console.log(`sent twice, ran once: ${(await again.executionId) === (await run.executionId)}`);
await env.close();
