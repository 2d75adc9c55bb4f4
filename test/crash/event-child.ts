// The wait crash child: `node --import tsx test/crash/event-child.ts
// <json-config>` (docs/decisions/0075, 0077). Mode `wait` starts a checkout
// whose model calls a `waitForEvent` tool (or, with `wait: "input"`, a
// `humanInput` tool asking for a delivery date), prints `waiting` once the wait is
// durable and then idles until it is killed; mode `serve` opens the same
// store after the kill, recovers the suspended execution, prints
// `recovered`, waits for its end (a signal from another process resumes
// it) and prints `done` with its output.

import { writeSync } from "node:fs";
import { z } from "zod";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { humanInput, Phronomy, waitForEvent, type Environment, type ToolSet } from "../../host/index.js";

export interface EventChildConfig {
  readonly store: string;
  readonly mode: "wait" | "serve";
  readonly executionId?: string;
  /** What the checkout waits for: an event (default) or a person's typed answer. */
  readonly wait?: "event" | "input";
}

export type EventChildLine =
  | { readonly type: "waiting"; readonly executionId: string; readonly key: string | undefined; readonly waitId: string }
  | { readonly type: "recovered"; readonly statuses: readonly string[] }
  | { readonly type: "done"; readonly output: unknown };

const config = JSON.parse(process.argv[2] ?? "{}") as EventChildConfig;

function print(line: EventChildLine): void {
  writeSync(1, `${JSON.stringify(line)}\n`);
}

const awaitPayment = waitForEvent({
  inputSchema: z.object({ orderId: z.string() }),
  key: ({ orderId }) => `payment:${orderId}`,
  payloadSchema: z.object({ amount: z.number().positive() }),
});

const askDeliveryDate = humanInput({
  inputSchema: z.object({ question: z.string() }),
  responseSchema: z.object({ date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/) }),
});

const typed = config.wait === "input";
const tools: ToolSet = typed ? { askDeliveryDate } : { awaitPayment };

const model = scriptedModel(({ messages }) => {
  const last = messages.at(-1);
  if (last?.role !== "tool") {
    return typed
      ? { toolCalls: [{ toolName: "askDeliveryDate", input: { question: "When?" } }] }
      : { toolCalls: [{ toolName: "awaitPayment", input: { orderId: "42" } }] };
  }
  return { text: `${typed ? "delivering" : "paid"} ${JSON.stringify(last.results[0]?.output)}` };
});

async function waitMode(env: Environment): Promise<void> {
  const executionId = await env.agent({ id: "checkout", model, tools }).start("pay order 42").executionId;
  for (;;) {
    const pending = (await env.pendingApprovals()).find((item) => item.executionId === executionId);
    if (pending !== undefined) {
      print({ type: "waiting", executionId, key: pending.key, waitId: pending.request.approvalId });
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  // Idle until the test kills this process with SIGKILL.
  setInterval(() => undefined, 1_000);
}

async function serveMode(env: Environment): Promise<void> {
  env.agent({ id: "checkout", model, tools });
  const report = await env.recovery("checkout");
  print({ type: "recovered", statuses: report.map((item) => item.status) });
  // Suspended, env.wait refuses at once (APPROVAL_REQUIRED): asked again
  // until the signal resumed it, then it waits for the end.
  for (;;) {
    try {
      const result = await env.wait(config.executionId ?? "").result;
      print({ type: "done", output: result.output });
      break;
    } catch (error) {
      if ((error as { code?: unknown }).code !== "APPROVAL_REQUIRED") throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  await env.close();
}

const env = await Phronomy.open({ store: config.store, logger: { warn: (message) => writeSync(2, `${message}\n`) } });
await (config.mode === "wait" ? waitMode(env) : serveMode(env));
