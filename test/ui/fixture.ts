// The dashboard's test fixture: a real SQLite store in a temporary
// directory, owned by an environment with scripted agents, and the
// dashboard handler on it. Each scenario defines its own agent (an agent
// runs one execution at a time, and a suspended one holds it).
//
// What an agent's scripted model does depends on the request:
//   "refund #n"      asks to call `refund` (needs approval) with the
//                    arguments given to `start` (kept out of the request,
//                    so a test can see where a value is rendered), then
//                    answers "Refunded." or, when declined, "Not refunded."
//   "slow"           calls `lookup`, which waits until `releaseLookups()`,
//                    then answers "Order 42 has shipped."
//   "cite"           answers with reasoning, a cited source and a file
//                    (their names hostile markup, to check escaping)
//   anything else    answers "Hello."

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { Phronomy, tool, type Environment, type Json } from "../../host/index.js";
import { scriptedModel, type ScriptedTurn } from "../../host/testing.js";
import { createDashboard, type Dashboard, type DashboardOptions } from "../../host/ui/index.js";

export interface Fixture {
  readonly environment: Environment;
  readonly dashboard: Dashboard;
  readonly refunds: Json[];
  /** Starts an execution of a fresh agent; resolves with its id. With
   * `refundArguments`, the request is "refund #n" (see above). */
  start(request: string, refundArguments?: Json): Promise<string>;
  /** Lets every `lookup` waiting so far (and later ones) return. */
  releaseLookups(): void;
  /** Polls until the execution's row satisfies `done`. */
  until(executionId: string, done: (status: string, outcome: string | null) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function openFixture(options: DashboardOptions = {}): Promise<Fixture> {
  const directory = await mkdtemp(join(tmpdir(), "phronomy-ui-"));
  const environment = await Phronomy.open({ store: join(directory, "store.db"), logger: { warn: () => undefined } });
  const refunds: Json[] = [];
  let released = false;
  const waiting: (() => void)[] = [];
  const tools = {
    refund: tool({
      description: "Refunds an order",
      inputSchema: z.record(z.string(), z.unknown()),
      needsApproval: () => true,
      execute: (input, { idempotencyKey }) => {
        refunds.push({ input: input as Json, idempotencyKey });
        return { refunded: true };
      },
    }),
    lookup: tool({
      description: "Looks an order up",
      inputSchema: z.object({ orderId: z.string() }),
      execute: async ({ orderId }) => {
        if (!released) await new Promise<void>((resolve) => waiting.push(resolve));
        return { orderId, status: "shipped" };
      },
    }),
  };
  const model = scriptedModel(({ messages }) => {
    const lastUser = messages.map((message) => message.role).lastIndexOf("user");
    const request = (messages[lastUser] as { content: string }).content;
    const since = messages.slice(lastUser + 1);
    const turn = since.filter((message) => message.role === "assistant").length;
    if (request.startsWith("refund #")) {
      if (turn === 0) return { toolCalls: [{ toolName: "refund", input: refundArgumentsOf.get(request)! }] } satisfies ScriptedTurn;
      const declined = JSON.stringify(since).includes("declined") || JSON.stringify(since).includes("rejected");
      return { text: declined ? "Not refunded." : "Refunded." };
    }
    if (request === "slow") return turn === 0 ? { toolCalls: [{ toolName: "lookup", input: { orderId: "42" } }] } : { text: "Order 42 has shipped." };
    if (request === "cite") {
      return {
        reasoning: "Check the <b>manual</b>.",
        text: "Kettles boil water.",
        sources: [{ url: "https://example.com/kettles", title: "<i>Kettles</i>" }],
        files: [{ mediaType: "image/png", base64: "iVBORw==" }],
        usage: { inputTokens: 40, outputTokens: 12, reasoningTokens: 5 },
      } satisfies ScriptedTurn;
    }
    return { text: "Hello." };
  });
  let agents = 0;
  const refundArgumentsOf = new Map<string, Json>();
  const dashboard = createDashboard(environment, { pollMs: 250, ...options });
  const releaseLookups = () => {
    released = true;
    for (const resolve of waiting.splice(0)) resolve();
  };
  return {
    environment,
    dashboard,
    refunds,
    releaseLookups,
    async start(given, refundArguments) {
      agents += 1;
      const request = refundArguments === undefined ? given : `refund #${agents}`;
      if (refundArguments !== undefined) refundArgumentsOf.set(request, refundArguments);
      const run = environment.agent({ id: `agent-${agents}`, model, tools }).start(request);
      run.result.catch(() => undefined);
      return run.executionId;
    },
    async until(executionId, done, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const row = await environment.execution(executionId);
        if (row !== undefined && done(row.status, row.outcome)) return;
        if (Date.now() > deadline)
          throw new Error(`execution ${executionId} did not get there in ${timeoutMs} ms (it is ${row?.status ?? "missing"} ${row?.outcome ?? ""})`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    async close() {
      releaseLookups();
      await environment.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

export const suspended = (status: string) => status === "suspended";
export const ended = (status: string) => status === "terminal";
