// A suspended conversation at rest keeps no record (docs/decisions/0092):
// once its execution was let go of (decision 0066) and the core says the
// conversation is at rest (ready, unused, nothing queued), the host keeps
// only its id and definition by agent slot. Every path that names it again
// rebuilds the record — one test per way back in, each with the
// conversation let go of first: a new message (queued, refused busy, an
// interrupt), a cancel, the wait's resume (an approval, a timer fired now,
// a signal), the listing, recovery at open, close, and a child agent's end
// told to its parent. (A lost lease on PostgreSQL: test/postgres.) And
// the time an execution of it was last released here, kept in its arena
// record while it is at rest (docs/decisions/0100).

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { agentTool, Phronomy, timer, tool, waitForEvent, type DefinedAgent, type Environment, type ExecutionEvent } from "../../host/index.js";
import { openEnvironment, scriptedModel, temporaryStorePath } from "./helpers.js";

const refund = tool({ inputSchema: z.object({ amount: z.number() }), needsApproval: () => true, execute: () => "ok" });

/** Asks for a refund on "refund me"; answers anything else, and the tool's result. */
const refundModel = () =>
  scriptedModel(({ messages }) => {
    const last = messages.at(-1) as { role: string; content?: unknown };
    if (last.role === "tool") return { text: "refunded" };
    return last.role === "user" && last.content === "refund me" ? { toolCalls: [{ toolName: "refund", input: { amount: 30 } }] } : { text: "ok" };
  });

/** Starts "refund me" on the conversation and waits until the conversation
 * is at rest (its record let go of); the Run's result is read at once. */
async function suspendAndRest(env: Environment, agent: DefinedAgent, conversation: string, input = "refund me") {
  const approvals: string[] = [];
  const run = agent.conversation(conversation).start(input, {
    onEvent: (event: ExecutionEvent) => {
      if (event.type === "approval_required") approvals.push(event.request.approvalId);
    },
  });
  const result = run.result;
  result.catch(() => undefined);
  const executionId = await run.executionId;
  await atRest(env, conversation);
  return { executionId, approvalId: approvals[0]!, result };
}

async function atRest(env: Environment, conversation: string): Promise<void> {
  await expect.poll(() => env.conversations.isResting(conversation), { timeout: 30_000 }).toBe(true);
  expect(env.coordinator.agentEntries().some((entry) => entry.id === conversation)).toBe(false);
}

describe("a suspended conversation at rest", () => {
  it("keeps no record: its execution let go of, only its id by slot; the core keeps its entry", async () => {
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: refundModel(), tools: { refund }, memoryWindow: 1 });
    const { executionId } = await suspendAndRest(env, support, "user-1");
    expect(env.coordinator.dormant.has(executionId)).toBe(true);
    expect(env.conversations.restingCount).toBe(1);
    expect(env.conversations.liveCount).toBe(1);
    expect(env.conversations.liveIds()).toEqual(["user-1"]);
    expect(env.core.snapshot().agents.filter((agent) => agent.lifecycle !== 0)).toHaveLength(1);
    await env.close();
  });

  it("keeps when an execution of it was last released here in its arena record, and its rebuilt record has it back", async () => {
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: refundModel(), tools: { refund }, memoryWindow: 1, onBusy: "enqueue" });
    // "hi" holds the registration while "refund me" waits behind it: the
    // conversation at rest is the registration that released "hi".
    const before = performance.now();
    const hi = support.conversation("user-1").start("hi").result;
    const rested = suspendAndRest(env, support, "user-1");
    await expect(hi).resolves.toMatchObject({ outcome: "completed", output: "ok" });
    await rested;
    const after = performance.now();
    await suspendAndRest(env, support, "user-2");
    const kept = env.conversations.restingReleasedAt("user-1");
    expect(kept).toBeGreaterThanOrEqual(before);
    expect(kept).toBeLessThanOrEqual(after);
    expect(env.conversations.restingReleasedAt("user-2")).toBeUndefined();
    // Rebuilt (the inbox's way back in): rows read before the release are
    // stale, rows read after it are not; the one never released, neither.
    const rebuilt = env.conversations.entryNow("user-1")!;
    expect(env.conversations.isResting("user-1")).toBe(false);
    expect(env.coordinator.releasedSince(rebuilt, before)).toBe(true);
    expect(env.coordinator.releasedSince(rebuilt, after + 1)).toBe(false);
    expect(env.coordinator.releasedSince(env.conversations.entryNow("user-2")!, 0)).toBe(false);
    await env.close();
  });

  it("a new message queued behind it: rebuilt, queued, and run once the approval is decided", async () => {
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: refundModel(), tools: { refund }, memoryWindow: 1, onBusy: "enqueue" });
    const { executionId, approvalId, result } = await suspendAndRest(env, support, "user-1");
    const next = support.conversation("user-1").start("and thanks");
    await expect.poll(() => env.core.conversation(env.conversations.entryNow("user-1")!.slot).queued).toBe(1);
    expect(env.conversations.isResting("user-1")).toBe(false);
    await support.conversation("user-1").resume(executionId, { approvalId, approved: true }).result;
    await expect(result).resolves.toMatchObject({ outcome: "completed", output: "refunded" });
    await expect(next.result).resolves.toMatchObject({ outcome: "completed", output: "ok" });
    await env.close();
  });

  it("a new message refused busy: rebuilt, and refused AGENT_BUSY while it stays suspended", async () => {
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: refundModel(), tools: { refund }, memoryWindow: 1 });
    const { executionId } = await suspendAndRest(env, support, "user-1");
    await expect(support.conversation("user-1").start("hello?").result).rejects.toMatchObject({ code: "AGENT_BUSY" });
    expect((await env.execution(executionId))?.status).toBe("suspended");
    // Let go of again once the refusal is over.
    await atRest(env, "user-1");
    await env.close();
  });

  it("an interrupting message: rebuilt, the suspended one declined and cancelled, the new one run", async () => {
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: refundModel(), tools: { refund }, memoryWindow: 1, onBusy: "interrupt" });
    const { executionId, result } = await suspendAndRest(env, support, "user-1");
    const next = support.conversation("user-1").start("never mind");
    await expect(result).rejects.toMatchObject({ code: "CANCELLED" });
    expect(await env.execution(executionId)).toMatchObject({ status: "terminal", outcome: "failed" });
    await expect(next.result).resolves.toMatchObject({ outcome: "completed", output: "ok" });
    await env.close();
  });

  it("env.cancel: rebuilt and cancelled; the conversation is let go of afterwards", async () => {
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: refundModel(), tools: { refund }, memoryWindow: 1 });
    const { executionId, result } = await suspendAndRest(env, support, "user-1");
    await expect(env.cancel(executionId, { reason: "changed my mind" })).resolves.toMatchObject({ executionId, outcome: "cancelled" });
    await expect(result).rejects.toMatchObject({ code: "CANCELLED" });
    await expect.poll(() => env.conversations.liveCount).toBe(0);
    expect(env.conversations.restingCount).toBe(0);
    await env.close();
  });

  it("agent.resume of its approval: rebuilt, resumed to completion, and a later start works", async () => {
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: refundModel(), tools: { refund }, memoryWindow: 1 });
    const { executionId, approvalId, result } = await suspendAndRest(env, support, "user-1");
    const resumed = support.conversation("user-1").resume(executionId, { approvalId, approved: true });
    await expect(resumed.result).resolves.toMatchObject({ executionId, outcome: "completed", output: "refunded" });
    await expect(result).resolves.toMatchObject({ outcome: "completed" });
    await expect(support.conversation("user-1").start("hi").result).resolves.toMatchObject({ outcome: "completed", output: "ok" });
    await expect.poll(() => env.conversations.liveCount).toBe(0);
    await env.close();
  });

  it("a timer fired now and a keyed event signalled: both rebuilt and run to completion", async () => {
    const env = await openEnvironment();
    const day = new Date(Date.now() + 86_400_000);
    const later = timer({ inputSchema: z.object({}), until: () => day });
    const paid = waitForEvent({ inputSchema: z.object({}), payloadSchema: z.object({ ok: z.boolean() }), key: () => "paid:7", timeoutMs: 86_400_000 });
    const waitModel = (toolName: string) =>
      scriptedModel(({ messages }) => (messages.at(-1)?.role === "tool" ? { text: "back" } : { toolCalls: [{ toolName, input: {} }] }));
    const sleeper = env.agent({ name: "sleeper", model: waitModel("later"), tools: { later }, memoryWindow: 1 });
    const payer = env.agent({ name: "payer", model: waitModel("paid"), tools: { paid }, memoryWindow: 1 });
    const sleeping = await suspendAndRest(env, sleeper, "user-timer", "wait");
    const paying = await suspendAndRest(env, payer, "user-event", "wait");
    const waits = await env.pendingApprovals();
    const timerWait = waits.find((wait) => wait.kind === "timer")!;
    expect(env.conversations.isResting("user-timer")).toBe(true);
    await expect(
      sleeper.conversation("user-timer").resume(sleeping.executionId, { waitId: timerWait.request.approvalId, fire: true }).result,
    ).resolves.toMatchObject({ outcome: "completed", output: "back" });
    expect(env.conversations.isResting("user-event")).toBe(true);
    await expect(env.signal("paid:7", { ok: true })).resolves.toMatchObject({ status: "resumed", executionId: paying.executionId });
    await expect(paying.result).resolves.toMatchObject({ outcome: "completed", output: "back" });
    await env.close();
  });

  it("listed by env.executions and env.pendingApprovals without a rebuild, and decided by env.admin.decide", async () => {
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: refundModel(), tools: { refund }, memoryWindow: 1 });
    const { executionId, approvalId, result } = await suspendAndRest(env, support, "user-1");
    expect(await env.executions({ status: "suspended" })).toEqual([expect.objectContaining({ executionId, agentId: "user-1" })]);
    expect(await env.pendingApprovals()).toEqual([expect.objectContaining({ executionId, agentId: "user-1" })]);
    expect(env.conversations.isResting("user-1")).toBe(true);
    const run = await env.admin.decide(executionId, { approvalId, approved: true });
    await expect(run.result).resolves.toMatchObject({ executionId, outcome: "completed", output: "refunded" });
    await expect(result).resolves.toMatchObject({ outcome: "completed" });
    await env.close();
  });

  it("recovered at open: let go of at rest again, then resumed from its row", async () => {
    const store = await temporaryStorePath();
    const first = await Phronomy.open({ store });
    const model = refundModel();
    const before = first.agent({ name: "support", model, tools: { refund }, memoryWindow: 1 });
    const { executionId, approvalId } = await suspendAndRest(first, before, "user-1");
    await first.close();
    const env = await Phronomy.open({ store });
    try {
      const support = env.agent({ name: "support", model, tools: { refund }, memoryWindow: 1 });
      expect((await support.recovery()).map((item) => [item.executionId, item.status])).toEqual([[executionId, "suspended"]]);
      await atRest(env, "user-1");
      const resumed = support.conversation("user-1").resume(executionId, { approvalId, approved: true });
      await expect(resumed.result).resolves.toMatchObject({ executionId, outcome: "completed", output: "refunded" });
    } finally {
      await env.close();
    }
  });

  it("close: a kept result is told the environment closed, and the row stays suspended", async () => {
    const store = await temporaryStorePath();
    const env = await Phronomy.open({ store });
    const support = env.agent({ name: "support", model: refundModel(), tools: { refund }, memoryWindow: 1 });
    const { executionId, result } = await suspendAndRest(env, support, "user-1");
    await env.close();
    await expect(result).rejects.toMatchObject({ code: "RUNTIME_SHUTDOWN" });
    const reopened = await Phronomy.open({ store });
    expect((await reopened.execution(executionId))?.status).toBe("suspended");
    await reopened.close();
  });

  it("a child agent's end is told to its parent at rest: the parent rebuilt and completed with the child's output", async () => {
    const env = await openEnvironment({ store: await temporaryStorePath() });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const researcher = env.agent({
      name: "researcher",
      model: scriptedModel(async () => {
        await gate;
        return { text: "found kettles" };
      }),
    });
    const research = agentTool(researcher, { description: "Researches a topic" });
    const support = env.agent({
      name: "support",
      model: scriptedModel(({ messages }) =>
        messages.at(-1)?.role === "tool" ? { text: "parent done" } : { toolCalls: [{ toolName: "research", input: { input: "kettles" } }] },
      ),
      tools: { research },
    });
    const { result } = await suspendAndRest(env, support, "ana", "find me a kettle");
    release();
    await expect(result).resolves.toMatchObject({ outcome: "completed", output: "parent done" });
    await env.close();
  });
});
