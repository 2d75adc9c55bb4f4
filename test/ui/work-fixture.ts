// A store to work in from the dashboard (decision 0083): an environment
// owning a SQLite store with one named definition, "support", whose
// scripted model answers by the last user message:
//   "Refund …"     thinks aloud, says it will refund, and calls `refund`
//                  (needs approval) with { orderId: "42", amount: 80 }
//   "When …"       calls `askDeliveryDate` (a typed wait: { date, note?, rush })
//   anything else  answers "You said: <message>."
// After a tool result it answers "Done: <the result as JSON>".

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { humanInput, Phronomy, tool, type Environment } from "../../host/index.js";
import { scriptedModel } from "../../host/testing.js";
import { createDashboard, type Dashboard, type DashboardOptions } from "../../host/ui/index.js";

export interface WorkFixture {
  readonly environment: Environment;
  readonly dashboard: Dashboard;
  /** Polls until the execution's row satisfies `done`. */
  until(executionId: string, done: (status: string) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export const supportScript = (({ messages }) => {
  const last = messages.at(-1);
  if (last?.role === "tool") return { text: `Done: ${JSON.stringify(last.results[0]?.output)}` };
  const asked = messages.findLast((message) => message.role === "user");
  const text = asked?.role === "user" && typeof asked.content === "string" ? asked.content : "";
  if (text.startsWith("Refund"))
    return {
      reasoning: "The parcel arrived damaged; a refund is fair.",
      text: "I will refund order 42.",
      toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 80 } }],
    };
  if (text.startsWith("When")) return { toolCalls: [{ toolName: "askDeliveryDate", input: { question: "Which day suits you?" } }] };
  return { text: `You said: ${text}.` };
}) satisfies Parameters<typeof scriptedModel>[0];

export const supportTools = {
  refund: tool({
    description: "Refunds an order",
    inputSchema: z.object({ orderId: z.string(), amount: z.number().max(100) }),
    needsApproval: true,
    execute: ({ orderId, amount }) => ({ orderId, refunded: amount }),
  }),
  askDeliveryDate: humanInput({
    description: "Asks the customer for a delivery date",
    inputSchema: z.object({ question: z.string() }),
    responseSchema: z.object({
      date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "a date as YYYY-MM-DD"),
      note: z.string().optional(),
      rush: z.boolean(),
      slot: z.enum(["morning", "afternoon"]),
      floor: z.number().int(),
    }),
  }),
};

/** `latencyMs`: each model call takes this long (to watch a page update). */
export async function openWorkFixture(options: DashboardOptions = {}, { latencyMs = 0 }: { readonly latencyMs?: number } = {}): Promise<WorkFixture> {
  const directory = await mkdtemp(join(tmpdir(), "phronomy-ui-work-"));
  const environment = await Phronomy.open({ store: join(directory, "store.db"), logger: { warn: () => undefined } });
  const model = scriptedModel(supportScript, { latencyMs, modelId: "scripted-support-1" });
  environment.agent({ name: "support", model, instructions: "You help customers with their orders.", temperature: 0.2, tools: supportTools });
  const dashboard = createDashboard(environment, { pollMs: 250, ...options });
  return {
    environment,
    dashboard,
    async until(executionId, done, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const row = await environment.execution(executionId);
        if (row !== undefined && done(row.status)) return;
        if (Date.now() > deadline) throw new Error(`execution ${executionId} did not get there in ${timeoutMs} ms (it is ${row?.status ?? "missing"})`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    async close() {
      await environment.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
