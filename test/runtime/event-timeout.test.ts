// A keyed event wait's timeout (docs/decisions/0076 and 0077): the due
// sweep that fires timers answers an event wait given `timeoutMs` once it
// is due — the call's result is `{ timedOut: true, key, waitedMs }` and the
// execution goes on — and a signal after that finds no wait (it is kept
// for the next one), while a signal before the timeout wins and the clock
// finds nothing to answer.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { waitForEvent, type Environment } from "../../host/index.js";
import type { ConversationMessage } from "../../host/agent/messages.js";
import { openEnvironment, scriptedModel, waitFor } from "./helpers.js";

/** Calls `awaitPayment` for order 42, then answers with what it was told. */
function paymentModel() {
  return scriptedModel(({ messages }) => {
    const last = messages.at(-1) as ConversationMessage | undefined;
    if (last?.role !== "tool") return { toolCalls: [{ toolName: "awaitPayment", input: { orderId: "42" } }] };
    return { text: JSON.stringify(last.results[0]?.output) };
  });
}

const awaitPayment = waitForEvent({
  description: "Waits until the order is paid",
  inputSchema: z.object({ orderId: z.string() }),
  key: ({ orderId }) => `payment:${orderId}`,
  payloadSchema: z.object({ amount: z.number() }),
  timeoutMs: 300,
});

const define = (env: Environment) => env.agent({ id: "checkout", model: paymentModel(), tools: { awaitPayment } });

describe("an event wait's timeout", () => {
  it("ends the wait with { timedOut, key, waitedMs } as the call's result; a later signal is kept for the next wait", async () => {
    const env = await openEnvironment();
    const run = define(env).start("pay");
    const executionId = await run.executionId;
    const pending = await waitFor(async () => (await env.pendingApprovals()).find((item) => item.executionId === executionId));
    expect(pending).toMatchObject({ kind: "event", key: "payment:42", dueAt: pending.request.requestedAt + 300 });
    const told = JSON.parse((await run.result).output as string) as { timedOut: boolean; key: string; waitedMs: number };
    expect(told).toMatchObject({ timedOut: true, key: "payment:42" });
    expect(told.waitedMs).toBeGreaterThanOrEqual(300);
    const decided = (await env.timeline(executionId)).filter((step) => step.kind === "approval_decided");
    expect(decided).toHaveLength(1);
    expect(decided[0]?.payload).toMatchObject({ action: { kind: "fire" } });
    expect(await env.signal("payment:42", { amount: 30 })).toMatchObject({ status: "stored" });
    await env.close();
  });

  it("a signal before the timeout wins; the clock finds nothing to answer after it", async () => {
    const env = await openEnvironment();
    const run = define(env).start("pay");
    const executionId = await run.executionId;
    await waitFor(async () => (await env.pendingApprovals()).find((item) => item.executionId === executionId));
    expect(await env.signal("payment:42", { amount: 30 })).toMatchObject({ status: "resumed", executionId });
    expect((await run.result).output).toBe('{"amount":30}');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await env.timeline(executionId)).filter((step) => step.kind === "approval_decided")).toHaveLength(1);
    await env.close();
  });
});
