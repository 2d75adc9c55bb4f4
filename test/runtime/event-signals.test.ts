// Keyed event waits through the public API, on real SQLite files
// (docs/decisions/0077): a `waitForEvent` call suspends with its key,
// `env.signal(key, payload)` resumes it exactly once with a payload its
// schema accepts (a refused one leaves it pending); a signal sent before
// the wait is kept durably — across a restart — and taken when the wait
// commits; a second signal is refused or kept for the next wait.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Phronomy, waitForEvent, type Environment } from "../../host/index.js";
import type { ConversationMessage } from "../../host/agent/messages.js";
import { openEnvironment, recordingLogger, scriptedModel, temporaryStorePath, waitFor } from "./helpers.js";

/** Calls `awaitPayment` for the order the last message names, then answers with what it got. */
function paymentModel() {
  return scriptedModel(({ messages }) => {
    const last = messages.at(-1) as ConversationMessage | undefined;
    if (last?.role !== "tool") {
      const first = messages.findLast((message) => message.role === "user");
      const orderId = first?.role === "user" && typeof first.content === "string" ? first.content : "42";
      return { toolCalls: [{ toolName: "awaitPayment", input: { orderId } }] };
    }
    return { text: `paid: ${JSON.stringify(last.results[0]?.output)}` };
  });
}

const awaitPayment = waitForEvent({
  description: "Waits until the order is paid",
  inputSchema: z.object({ orderId: z.string() }),
  key: ({ orderId }) => `payment:${orderId}`,
  payloadSchema: z.object({ amount: z.number().positive(), currency: z.string().default("EUR") }),
  timeoutMs: 60_000,
});

const define = (env: Environment) => env.agent({ id: "checkout", model: paymentModel(), tools: { awaitPayment } });

async function pendingOf(env: Environment, executionId: string) {
  return waitFor(async () => (await env.pendingApprovals()).find((item) => item.executionId === executionId));
}

describe("keyed event waits (SQLite)", () => {
  it("suspends with kind event and its key, lists it, and env.signal resumes it with the payload as the call's result", async () => {
    const env = await openEnvironment();
    const run = define(env).start("42");
    const executionId = await run.executionId;
    const pending = await pendingOf(env, executionId);
    expect(pending).toMatchObject({ kind: "event", key: "payment:42", request: { kind: "event", key: "payment:42", timeoutMs: 60_000 } });
    expect(pending.request.dueAt).toBe(pending.request.requestedAt + 60_000);
    const sent = await env.signal("payment:42", { amount: 30 });
    expect(sent).toEqual({ status: "resumed", key: "payment:42", executionId, agentId: "checkout", waitId: pending.request.approvalId });
    expect((await env.wait(executionId).result).output).toBe('paid: {"amount":30,"currency":"EUR"}');
    const decided = (await env.timeline(executionId)).find((step) => step.kind === "approval_decided");
    expect(decided?.payload).toMatchObject({ approved: true, action: { kind: "signal", value: { amount: 30, currency: "EUR" } } });
  });

  it("refuses a payload its schema refuses with INVALID_INPUT (the wait stays pending), then takes a valid one after a reopen", async () => {
    const path = await temporaryStorePath();
    const first = await Phronomy.open({ store: path, logger: recordingLogger() });
    const executionId = await define(first).start("7").executionId;
    await pendingOf(first, executionId);
    await expect(first.signal("payment:7", { amount: -1 })).rejects.toMatchObject({ code: "INVALID_INPUT", details: { paths: [["amount"]] } });
    expect((await first.pendingApprovals()).map((item) => item.key)).toEqual(["payment:7"]);
    await first.close();
    const second = await openEnvironment({ store: path });
    define(second);
    expect(await second.signal("payment:7", { amount: 5, currency: "USD" })).toMatchObject({ status: "resumed", executionId });
    expect((await second.wait(executionId).result).output).toBe('paid: {"amount":5,"currency":"USD"}');
  });

  it("keeps a signal sent before its wait, across a restart, and the wait takes it when it commits", async () => {
    const path = await temporaryStorePath();
    const first = await Phronomy.open({ store: path, logger: recordingLogger() });
    const stored = await first.signal("payment:9", { amount: 12 });
    expect(stored).toMatchObject({ status: "stored", key: "payment:9" });
    expect((stored as { keptUntil: number }).keptUntil).toBeGreaterThan(Date.now());
    await first.close();
    const second = await openEnvironment({ store: path });
    const agent = define(second);
    const run = agent.start("9");
    expect((await run.result).output).toBe('paid: {"amount":12,"currency":"EUR"}');
    const executionId = await run.executionId;
    const steps = (await second.timeline(executionId)).map((step) => step.kind);
    expect(steps).toContain("approval_requested");
    expect(steps).toContain("approval_decided");
    // Taken once: the next wait with the key waits.
    const next = agent.start("9");
    const nextId = await next.executionId;
    expect(await pendingOf(second, nextId)).toMatchObject({ key: "payment:9" });
  });

  it("refuses a second signal while one is kept for the key, and refuses with ifWaiting when nobody waits", async () => {
    const env = await openEnvironment();
    await expect(env.signal("payment:1", { amount: 1 }, { ifWaiting: true })).rejects.toMatchObject({
      code: "SIGNAL_REFUSED",
      details: { reason: "not_waiting", key: "payment:1" },
    });
    await env.signal("payment:1", { amount: 1 });
    await expect(env.signal("payment:1", { amount: 2 })).rejects.toMatchObject({ code: "SIGNAL_REFUSED", details: { reason: "already_stored" } });
  });

  it("a signal after the wait was resumed is kept for the next wait with the key, not given to the resumed one", async () => {
    const env = await openEnvironment();
    const agent = define(env);
    const executionId = await agent.start("5").executionId;
    await pendingOf(env, executionId);
    await env.signal("payment:5", { amount: 3 });
    expect(await env.signal("payment:5", { amount: 4 })).toMatchObject({ status: "stored" });
    expect((await env.wait(executionId).result).output).toBe('paid: {"amount":3,"currency":"EUR"}');
    const next = agent.start("5");
    expect((await next.result).output).toBe('paid: {"amount":4,"currency":"EUR"}');
  });

  it("refuses a signal for a wait resumed by a concurrent one with another payload (SIGNAL_REFUSED already_signalled)", async () => {
    const env = await openEnvironment();
    const executionId = await define(env).start("8").executionId;
    await pendingOf(env, executionId);
    const outcomes = await Promise.allSettled([env.signal("payment:8", { amount: 1 }), env.signal("payment:8", { amount: 2 })]);
    const resumed = outcomes.filter((outcome) => outcome.status === "fulfilled" && outcome.value.status === "resumed");
    expect(resumed).toHaveLength(1);
    const other = outcomes.find((outcome) => outcome !== resumed[0]);
    // The other found the same wait and was refused, or came after it and was kept.
    if (other?.status === "rejected") expect(other.reason).toMatchObject({ code: "SIGNAL_REFUSED", details: { reason: "already_signalled" } });
    else expect(other).toMatchObject({ status: "fulfilled", value: { status: "stored" } });
    const output = (await env.wait(executionId).result).output as string;
    expect(['paid: {"amount":1,"currency":"EUR"}', 'paid: {"amount":2,"currency":"EUR"}']).toContain(output);
  });

  it("refuses a bad key, payload or option with INVALID_INPUT, and a bad waitForEvent definition at once", async () => {
    const env = await openEnvironment();
    await expect(env.signal("", {})).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(env.signal("k".repeat(257), {})).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(env.signal("payment:1", () => 1)).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(env.signal("payment:1", {}, { keepForMs: -5 })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(env.signal("payment:1", {}, { later: true } as never)).rejects.toMatchObject({ code: "INVALID_INPUT" });
    const schema = z.object({});
    expect(() => waitForEvent({ inputSchema: schema, payloadSchema: schema, key: "payment" as never })).toThrow(/"key" must be a function/);
    expect(() => waitForEvent({ inputSchema: schema, payloadSchema: schema, key: () => "k", timeoutMs: 0 })).toThrow(/timeoutMs/);
  });
});

describe("keyed event waits signalled from a SQLite visitor", () => {
  it("a visitor's signal is filed for the owner, which resumes the wait; one sent before the wait is kept and taken by the owner's wait", async () => {
    const owner = await openEnvironment();
    const agent = define(owner);
    const visitor = await Phronomy.open({ store: owner.store.path, visitor: true, logger: recordingLogger() });
    try {
      const executionId = await agent.start("11").executionId;
      await pendingOf(visitor, executionId);
      await expect(visitor.signal("payment:11", { amount: 0 })).rejects.toMatchObject({ code: "INVALID_INPUT" });
      expect(await visitor.signal("payment:11", { amount: 2 })).toMatchObject({ status: "resumed", executionId, agentId: "checkout" });
      expect((await owner.wait(executionId).result).output).toBe('paid: {"amount":2,"currency":"EUR"}');
      expect(await visitor.signal("payment:12", { amount: 6 })).toMatchObject({ status: "stored" });
      expect((await agent.start("12").result).output).toBe('paid: {"amount":6,"currency":"EUR"}');
    } finally {
      await visitor.close();
    }
  });
});
