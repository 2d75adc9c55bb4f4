// A suspended execution is a row, not an object graph (docs/decisions/0066):
// once at rest, the host lets go of its entry (the core keeps its record,
// the coordinator an index entry), and every path that finds it reads it
// back from the store — a decision (agent.resume, env.admin.decide), a
// cancel, env.wait, the listing, the resumed run's timeout, a purge
// (refused), close, a recovery and an interrupting message. A Run whose
// result was read still settles; a dropped entry is collected.

import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ApprovalRequiredError, Phronomy, timer, tool, waitForEvent, type DefinedAgent, type Environment, type ExecutionEvent } from "../../host/index.js";
import type { ScriptedTurn } from "../../host/agent/scripted-model.js";
import { openEnvironment, scriptedModel, temporaryStorePath } from "./helpers.js";

const refund = tool({ inputSchema: z.object({ amount: z.number() }), needsApproval: () => true, execute: () => "ok" });

/** Asks for a refund, then answers once the tool ran. */
function refundModel(afterTool: () => ScriptedTurn | Promise<ScriptedTurn> = () => ({ text: "refunded" })) {
  return scriptedModel(({ messages }) => (messages.at(-1)?.role === "tool" ? afterTool() : { toolCalls: [{ toolName: "refund", input: { amount: 30 } }] }));
}

/** Starts a conversation and waits until its execution is let go of: the
 * Run is returned (the caller decides whether to keep its result). */
async function suspendAndDrop(env: Environment, support: DefinedAgent, conversation: string, options: { readResult?: boolean; timeoutMs?: number } = {}) {
  const approvals: string[] = [];
  const run = support.conversation(conversation).start("refund me", {
    onEvent: (event: ExecutionEvent) => {
      if (event.type === "approval_required") approvals.push(event.request.approvalId);
    },
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
  });
  const result = options.readResult === true ? run.result : undefined;
  const executionId = await run.executionId;
  await expect.poll(() => env.coordinator.dormant.has(executionId), { timeout: 30_000 }).toBe(true);
  return { executionId, approvalId: approvals[0]!, result };
}

describe("a suspended execution let go of", () => {
  it("is resumed by agent.resume from its row, and a result read before it suspended settles", async () => {
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: refundModel(), tools: { refund }, memoryWindow: 1 });
    const { executionId, approvalId, result } = await suspendAndDrop(env, support, "user-1", { readResult: true });
    expect(env.coordinator.liveEntries).toBe(1);
    const resumed = support.conversation("user-1").resume(executionId, { approvalId, approved: true });
    await expect(resumed.result).resolves.toMatchObject({ executionId, outcome: "completed", output: "refunded" });
    await expect(result).resolves.toMatchObject({ executionId, outcome: "completed", output: "refunded" });
    expect(env.coordinator.dormant.has(executionId)).toBe(false);
    await expect.poll(() => env.coordinator.liveEntries).toBe(0);
  });

  it("refuses a decision on another approval with the pending one read back", async () => {
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: refundModel(), tools: { refund }, memoryWindow: 1 });
    const { executionId, approvalId } = await suspendAndDrop(env, support, "user-1");
    const wrong = support.conversation("user-1").resume(executionId, { approvalId: "approval-not-pending", approved: true });
    await expect(wrong.result).rejects.toMatchObject({ code: "APPROVAL_MISMATCH", message: expect.stringContaining(`that is ${approvalId}`) });
    // Still suspended, and let go of again once the refusal is told.
    await expect.poll(() => env.coordinator.dormant.has(executionId), { timeout: 30_000 }).toBe(true);
    const resumed = support.conversation("user-1").resume(executionId, { approvalId, approved: false, reason: "no" });
    await expect(resumed.result).resolves.toMatchObject({ outcome: "completed" });
  });

  it("is listed, and decided by env.admin.decide", async () => {
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: refundModel(), tools: { refund }, memoryWindow: 1 });
    const { executionId, approvalId } = await suspendAndDrop(env, support, "user-1");
    const pending = await env.pendingApprovals();
    expect(pending).toEqual([expect.objectContaining({ executionId, agentId: "user-1", request: expect.objectContaining({ approvalId }) })]);
    const run = await env.admin.decide(executionId, { approvalId, approved: true });
    await expect(run.result).resolves.toMatchObject({ executionId, outcome: "completed", output: "refunded" });
  });

  it("is cancelled by env.cancel, and a kept result is rejected CANCELLED", async () => {
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: refundModel(), tools: { refund }, memoryWindow: 1 });
    const { executionId, result } = await suspendAndDrop(env, support, "user-1", { readResult: true });
    await expect(env.cancel(executionId, { reason: "changed my mind" })).resolves.toMatchObject({ executionId, outcome: "cancelled" });
    await expect(result).rejects.toMatchObject({ code: "CANCELLED" });
    expect((await env.execution(executionId))?.status).toBe("terminal");
    await expect.poll(() => env.coordinator.liveEntries).toBe(0);
  });

  it("rejects env.wait with ApprovalRequiredError naming the pending approval, and is let go of again", async () => {
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: refundModel(), tools: { refund }, memoryWindow: 1 });
    const { executionId, approvalId } = await suspendAndDrop(env, support, "user-1");
    const waited = env.wait(executionId).result;
    await expect(waited).rejects.toBeInstanceOf(ApprovalRequiredError);
    await expect(waited).rejects.toMatchObject({ approvalId });
    await expect.poll(() => env.coordinator.dormant.has(executionId), { timeout: 30_000 }).toBe(true);
  });

  it("resumes on the start's timeout read back from its row: the resumed run times out", async () => {
    const env = await openEnvironment();
    // The approved tool never returns until aborted: only the timeout ends it.
    const hanging = tool({
      inputSchema: z.object({ amount: z.number() }),
      needsApproval: () => true,
      execute: (_input, { signal }) => new Promise<string>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
    });
    const support = env.agent({ name: "support", model: refundModel(), tools: { refund: hanging }, memoryWindow: 1 });
    const { executionId, approvalId } = await suspendAndDrop(env, support, "user-1", { timeoutMs: 300 });
    const resumed = support.conversation("user-1").resume(executionId, { approvalId, approved: true });
    await expect(resumed.result).rejects.toMatchObject({ code: "TIMEOUT" });
    expect(await env.execution(executionId)).toMatchObject({ outcome: "failed", error: { code: "TIMEOUT" } });
  });

  it("refuses a purge of its conversation, and env.retry, while it is suspended", async () => {
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: refundModel(), tools: { refund }, memoryWindow: 1 });
    const { executionId } = await suspendAndDrop(env, support, "user-1");
    await expect(env.purgeAgent("user-1")).rejects.toMatchObject({ code: "AGENT_BUSY" });
    await expect(env.retry(executionId).result).rejects.toMatchObject({ code: "RETRY_REFUSED" });
    expect(env.coordinator.dormant.has(executionId)).toBe(true);
  });

  it("tells a kept result the environment closed", async () => {
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: refundModel(), tools: { refund }, memoryWindow: 1 });
    const { result } = await suspendAndDrop(env, support, "user-1", { readResult: true });
    await env.close();
    await expect(result).rejects.toMatchObject({ code: "RUNTIME_SHUTDOWN" });
  });

  it("is let go of when recovered suspended, and resumed from its row after the restart", async () => {
    const store = await temporaryStorePath();
    const first = await Phronomy.open({ store });
    const model = refundModel();
    const before = first.agent({ name: "support", model, tools: { refund }, memoryWindow: 1 });
    const { executionId, approvalId } = await suspendAndDrop(first, before, "user-1");
    await first.close();
    const env = await Phronomy.open({ store });
    try {
      const support = env.agent({ name: "support", model, tools: { refund }, memoryWindow: 1 });
      expect((await support.recovery()).map((item) => [item.executionId, item.status])).toEqual([[executionId, "suspended"]]);
      await expect.poll(() => env.coordinator.dormant.has(executionId), { timeout: 30_000 }).toBe(true);
      const resumed = support.conversation("user-1").resume(executionId, { approvalId, approved: true });
      await expect(resumed.result).resolves.toMatchObject({ executionId, outcome: "completed", output: "refunded" });
    } finally {
      await env.close();
    }
  });

  it("is declined and cancelled by an interrupting message, its approval read back", async () => {
    const env = await openEnvironment();
    // Asks for the refund on "refund me" only; answers anything else.
    const model = scriptedModel(({ messages }) => {
      const last = messages.at(-1) as { role: string; content?: unknown };
      return last.role === "user" && last.content === "refund me" ? { toolCalls: [{ toolName: "refund", input: { amount: 30 } }] } : { text: "ok" };
    });
    const support = env.agent({ name: "support", model, tools: { refund }, memoryWindow: 1, onBusy: "interrupt" });
    const { executionId, result } = await suspendAndDrop(env, support, "user-1", { readResult: true });
    const next = support.conversation("user-1").start("actually, never mind");
    await expect(result).rejects.toMatchObject({ code: "CANCELLED" });
    expect(await env.execution(executionId)).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "CANCELLED" } });
    await expect(next.result).resolves.toMatchObject({ outcome: "completed" });
  });

  it("keeps a Run whose result was read only after it suspended: that result still settles", async () => {
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: refundModel(), tools: { refund }, memoryWindow: 1 });
    const approvals: string[] = [];
    const run = support.conversation("user-1").start("refund me", {
      onEvent: (event) => {
        if (event.type === "approval_required") approvals.push(event.request.approvalId);
      },
    });
    const executionId = await run.executionId;
    await expect.poll(() => env.coordinator.dormant.has(executionId), { timeout: 30_000 }).toBe(true);
    // Read now, once only the weak tail of its Run is kept.
    const result = run.result;
    const resumed = support.conversation("user-1").resume(executionId, { approvalId: approvals[0]!, approved: true });
    await expect(resumed.result).resolves.toMatchObject({ outcome: "completed" });
    await expect(result).resolves.toMatchObject({ executionId, outcome: "completed", output: "refunded" });
  });

  it("keeps its entry while its start holds what only this process has (an approval listener)", async () => {
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: refundModel(), tools: { refund }, memoryWindow: 1 });
    const approvals: string[] = [];
    const run = support.conversation("user-1").start("refund me", { approvalListener: (request) => void approvals.push(request.approvalId) });
    const executionId = await run.executionId;
    await expect.poll(() => approvals.length, { timeout: 30_000 }).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(env.coordinator.dormant.has(executionId)).toBe(false);
    expect(env.coordinator.entryById(executionId)?.suspended).toBe(true);
  });

  it("lets go of the entry itself: a WeakRef to it is cleared by a GC", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: refundModel(), tools: { refund }, memoryWindow: 1 });
    const { entry, executionId } = await (async () => {
      const run = support.conversation("user-1").start("refund me");
      const id = await run.executionId;
      // Held weakly from the moment it is installed, before it suspends.
      const live = new WeakRef(env.coordinator.entryById(id)!);
      return { entry: live, executionId: id };
    })();
    await expect.poll(() => env.coordinator.dormant.has(executionId), { timeout: 30_000 }).toBe(true);
    await expect
      .poll(
        () => {
          gc();
          return entry.deref();
        },
        { timeout: 30_000 },
      )
      .toBeUndefined();
  });

  it("a timer wait and a keyed event wait are let go of too, found by their ids' compact index, listed, fired and signalled (0084)", async () => {
    const env = await openEnvironment();
    const day = 24 * 60 * 60 * 1000;
    const later = timer({ inputSchema: z.object({ amount: z.number() }), until: () => day });
    const paid = waitForEvent({
      inputSchema: z.object({ amount: z.number() }),
      key: ({ amount }) => `paid:${amount}`,
      payloadSchema: z.object({ ok: z.boolean() }),
      timeoutMs: day,
    });
    const callOf = (toolName: string, amount: number) =>
      scriptedModel(({ messages }) => (messages.at(-1)?.role === "tool" ? { text: "back" } : { toolCalls: [{ toolName, input: { amount } }] }));
    const sleeper = env.agent({ name: "sleeper", model: callOf("later", 1), tools: { later }, memoryWindow: 1 });
    const payer = env.agent({ name: "payer", model: callOf("paid", 7), tools: { paid }, memoryWindow: 1 });
    const sleeping = sleeper.conversation("user-timer").start("check back tomorrow");
    const paying = payer.conversation("user-event").start("take the payment");
    const [timerId, eventId] = [await sleeping.executionId, await paying.executionId];
    await expect.poll(() => env.coordinator.dormant.has(timerId) && env.coordinator.dormant.has(eventId), { timeout: 30_000 }).toBe(true);
    // The execution ids are held as bytes: read back equal, by slot and by id.
    const timerSlot = env.coordinator.dormant.slotOf(timerId)!;
    expect(env.coordinator.dormant.idAt(timerSlot)).toBe(timerId);
    expect(env.coordinator.liveEntries).toBe(2);
    const pending = await env.pendingApprovals();
    expect(pending.map((wait) => [wait.executionId, wait.kind]).sort()).toEqual(
      [
        [timerId, "timer"],
        [eventId, "event"],
      ].sort(),
    );
    const timerWait = pending.find((wait) => wait.kind === "timer")!;
    await expect(sleeper.conversation("user-timer").resume(timerId, { waitId: timerWait.request.approvalId, fire: true }).result).resolves.toMatchObject({
      executionId: timerId,
      outcome: "completed",
      output: "back",
    });
    await expect(env.signal("paid:7", { ok: true })).resolves.toMatchObject({ status: "resumed", executionId: eventId });
    await expect(env.wait(eventId).result).resolves.toMatchObject({ executionId: eventId, outcome: "completed", output: "back" });
    expect(env.coordinator.dormant.size).toBe(0);
  });
});
