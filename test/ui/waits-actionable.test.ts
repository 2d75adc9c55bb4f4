// Every kind of wait is shown and actionable in the dashboard (issue 28
// item 5): an event wait shows its key and sends the event from the page
// (`env.signal`), a timer is fired now, a wait with a timeout is ended now
// (the clock's answer, decision 0076) — each through the public API.

import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { timer, waitForEvent, type Environment } from "../../host/index.js";
import type { ConversationMessage } from "../../host/agent/messages.js";
import { createDashboard, type Dashboard } from "../../host/ui/index.js";
import { openEnvironment, scriptedModel, waitFor } from "../runtime/helpers.js";

const origin = "http://127.0.0.1:4100";
let environment: Environment | undefined;
afterEach(async () => {
  await environment?.close();
  environment = undefined;
});

/** Calls `toolName` with `input`, then answers with what it was told. */
function callingModel(toolName: string, input: Record<string, string>) {
  return scriptedModel(({ messages }) => {
    const last = messages.at(-1) as ConversationMessage | undefined;
    if (last?.role !== "tool") return { toolCalls: [{ toolName, input }] };
    return { text: JSON.stringify(last.results[0]?.output) };
  });
}

async function page(dashboard: Dashboard, path: string): Promise<string> {
  const url = new URL(path, origin);
  url.searchParams.set("token", dashboard.token);
  return (await dashboard.handle(new Request(url))).text();
}

async function post(dashboard: Dashboard, action: string, fields: Record<string, string>): Promise<URL> {
  const response = await dashboard.handle(
    new Request(new URL(`/actions/${action}`, origin), {
      method: "POST",
      headers: { origin, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: dashboard.token, ...fields }).toString(),
    }),
  );
  expect(response.status).toBe(303);
  return new URL(response.headers.get("location")!, origin);
}

describe("waits of every kind in the dashboard", () => {
  it("an event wait shows its key and the page sends the event; a wait with a timeout can be ended now", async () => {
    environment = await openEnvironment();
    const awaitPayment = waitForEvent({
      inputSchema: z.object({ orderId: z.string() }),
      key: ({ orderId }) => `payment:${orderId}`,
      payloadSchema: z.object({ amount: z.number() }),
      timeoutMs: 60_000,
    });
    const agent = environment.agent({ id: "checkout", model: callingModel("awaitPayment", { orderId: "42" }), tools: { awaitPayment } });
    const dashboard = createDashboard(environment);
    const first = agent.start("pay");
    const firstId = await first.executionId;
    await waitFor(async () => (await environment!.pendingApprovals()).find((item) => item.executionId === firstId));
    const shown = await page(dashboard, `/executions/${firstId}`);
    expect(shown).toContain("waits for the event payment:42");
    expect(shown).toContain("Send the event");
    expect(shown).toContain("End it now (timed out)");
    const sent = await post(dashboard, "signal", { key: "payment:42", payload: '{"amount":30}' });
    expect(sent.searchParams.get("notice")).toMatch(/sent the event payment:42: execution .* goes on/);
    expect((await first.result).output).toBe('{"amount":30}');

    const second = agent.start("pay again");
    const secondId = await second.executionId;
    const pending = await waitFor(async () => (await environment!.pendingApprovals()).find((item) => item.executionId === secondId));
    const bad = await post(dashboard, "signal", { key: "payment:42", payload: "{not json" });
    expect(bad.searchParams.get("error")).toMatch(/the event's payload is not JSON/);
    const ended = await post(dashboard, "decide", { executionId: secondId, approvalId: pending.request.approvalId, decision: "fire" });
    expect(ended.searchParams.get("notice")).toMatch(/fired the wait of execution/);
    expect(JSON.parse((await second.result).output as string)).toMatchObject({ timedOut: true, key: "payment:42" });
  });

  it("a timer shows its due time and is fired now from the page", async () => {
    environment = await openEnvironment();
    const later = timer({ inputSchema: z.object({ note: z.string() }), until: () => 24 * 60 * 60 * 1000 });
    const agent = environment.agent({ id: "reminder", model: callingModel("later", { note: "check back" }), tools: { later } });
    const dashboard = createDashboard(environment);
    const run = agent.start("remind me");
    const executionId = await run.executionId;
    const pending = await waitFor(async () => (await environment!.pendingApprovals()).find((item) => item.executionId === executionId));
    expect(pending.kind).toBe("timer");
    const shown = await page(dashboard, "/");
    expect(shown).toContain("a timer due");
    expect(shown).toContain("Fire now");
    expect(shown).not.toContain(`name="decision" value="approve"`);
    await post(dashboard, "decide", { executionId, approvalId: pending.request.approvalId, decision: "fire" });
    expect(JSON.parse((await run.result).output as string)).toHaveProperty("firedAt");
  });
});
