// Issue 12's features on conversations of a named definition
// (docs/decisions/0024 with 0025 and 0026): messages queued behind a busy
// conversation keep its core entry until the last one has run, then it is
// let go; queued messages survive a restart and are found by the
// definition's name; cancel and retry by id find the conversation by the
// execution's row, in this process and in the next one.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { CancellationError, Phronomy, tool, type Environment } from "../../host/index.js";
import {
  approvalRefundTool,
  deferred,
  echoModel,
  lookupTool,
  openEnvironment,
  type RecordedCall,
  recordingLogger,
  scriptedModel,
  temporaryStorePath,
  turnOf,
  waitFor,
} from "./helpers.js";

/** A lookup whose nth call waits for `gates[n]` (and records the order). */
function gatedLookup(gates: { promise: Promise<void> }[], order: number[]) {
  let calls = 0;
  return tool({
    description: "Looks an order up",
    inputSchema: z.object({ orderId: z.string() }),
    async execute({ orderId }) {
      const call = calls;
      calls += 1;
      order.push(call);
      await gates[call]?.promise;
      return { orderId, status: "shipped" };
    },
  });
}

/** model → lookup → model; the second model call fails while `failing.on`. */
function flakyModel(failing: { on: boolean }) {
  return scriptedModel(({ turn }) => {
    if (turn === 0) return { toolCalls: [{ toolName: "lookup", input: { orderId: "42" } }] };
    if (failing.on) return { error: "the provider is down" };
    return { text: "Order 42 has shipped." };
  });
}

function idle(env: Environment): Promise<true> {
  return waitFor(async () => (env.conversations.liveCount === 0 ? true : undefined));
}

describe("conversations with onBusy: enqueue", () => {
  it("three messages queued on a conversation of a named definition run in order, its entry kept meanwhile, then let go", async () => {
    const env = await openEnvironment();
    const gates = [deferred(), deferred(), deferred(), deferred()];
    const order: number[] = [];
    const support = env.agent({ name: "support", model: echoModel(), tools: { lookup: gatedLookup(gates, order) } });
    const chat = support.conversation("user-1");
    const first = chat.start("m0");
    const firstId = await first.executionId;
    const queued = ["m1", "m2", "m3"].map((input) => chat.start(input, { onBusy: "enqueue" }));
    const ids = await Promise.all(queued.map((run) => run.executionId));
    expect((await env.executions({ status: "queued", agentId: "user-1" })).map((row) => row.executionId).sort()).toEqual([...ids].sort());
    expect(env.conversations.liveCount).toBe(1);

    // Each message's tool waits for its gate: between two of them the
    // conversation still holds its entry.
    for (let index = 0; index < gates.length; index += 1) {
      await waitFor(async () => (order.length > index ? true : undefined));
      expect(env.conversations.liveCount, `while message m${index} runs`).toBe(1);
      gates[index]!.resolve();
    }
    const results = await Promise.all([first, ...queued].map((run) => run.result));
    expect(results.map((result) => result.output)).toEqual(["echo: m0", "echo: m1", "echo: m2", "echo: m3"]);
    expect(results.map((result) => result.executionId)).toEqual([firstId, ...ids]);
    const rows = await Promise.all([firstId, ...ids].map((id) => env.execution(id)));
    const ended = rows.map((row) => row!.updatedAt);
    expect(ended).toEqual([...ended].sort((a, b) => a - b));
    expect(await env.executions({ status: "queued" })).toEqual([]);
    await idle(env);

    // Let go, it is used again on its next start, memory intact.
    gates.push(deferred());
    gates[4]!.resolve();
    await expect(chat.start("m4").result).resolves.toMatchObject({ output: "echo: m4" });
    await idle(env);
  });

  it("queued messages of a named definition's conversation survive a restart and run once the definition is defined again", async () => {
    const path = await temporaryStorePath();
    const first = await Phronomy.open({ store: path, logger: recordingLogger() });
    const gate = deferred();
    const support = first.agent({ name: "support", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const chat = support.conversation("user-2");
    const running = chat.start("m0");
    await running.executionId;
    const queued = ["m1", "m2", "m3"].map((input) => chat.start(input));
    const ids = await Promise.all(queued.map((run) => run.executionId));
    // m0 ends while closing: m1..m3 stay queued with nothing unfinished.
    const closing = first.close();
    gate.resolve();
    await closing;
    for (const run of queued) await expect(run.result).rejects.toMatchObject({ code: "RUNTIME_SHUTDOWN" });

    const second = await Phronomy.open({ store: path, logger: recordingLogger() });
    try {
      const again = second.agent({ name: "support", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool() } });
      await again.ready;
      const done = await waitFor(async () => {
        const rows = await Promise.all(ids.map((id) => second.execution(id)));
        return rows.every((row) => row?.status === "terminal") ? rows : undefined;
      });
      expect(done.map((row) => row!.output)).toEqual(["echo: m1", "echo: m2", "echo: m3"]);
      await idle(second);
      // A new message goes after them (nothing is left queued).
      await expect(again.conversation("user-2").start("m4").result).resolves.toMatchObject({ output: "echo: m4" });
    } finally {
      await second.close();
    }
  });
});

describe("conversations with onBusy: interrupt", () => {
  it("a new message interrupts a conversation of a named definition suspended for approval (declined and cancelled), runs, and the conversation is let go", async () => {
    const env = await openEnvironment();
    const refunds: string[] = [];
    const model = scriptedModel(({ messages }) => {
      const last = [...messages].reverse().find((message) => message.role === "user") as { content: string };
      if (last.content === "refund" && turnOf(messages) === 0) return { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] };
      return { text: `done: ${last.content}` };
    });
    const support = env.agent({ name: "support", model, tools: { refund: approvalRefundTool(refunds) } });
    const first = support.conversation("user-8").start("refund");
    const executionId = await first.executionId;
    await waitFor(async () => ((await env.pendingApprovals()).length > 0 ? true : undefined));
    // A new handle on the same conversation: handles keep nothing.
    const next = support.conversation("user-8").start("never mind", { onBusy: "interrupt" });
    await expect(next.result).resolves.toMatchObject({ output: "done: never mind" });
    await expect(first.result).rejects.toBeInstanceOf(CancellationError);
    expect(await env.execution(executionId)).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "CANCELLED" } });
    expect(refunds).toEqual([]);
    await idle(env);
  });
});

describe("retention of a named definition", () => {
  it("its conversations keep the environment's retention: a retention of its own is refused, a memory window past the kept journal too", async () => {
    const env = await openEnvironment({ retention: { journalRecordsKept: 50 } });
    expect(() => env.agent({ name: "support", model: echoModel(), retention: { finishedMs: 60_000 } })).toThrow(
      /the definition named "support": "retention" applies to an agent defined by its id/,
    );
    expect(() => env.agent({ name: "support", model: echoModel(), memoryWindow: 51 })).toThrow(
      /the definition named "support": its memoryWindow \(51\) is more than the 50 journal records/,
    );
    const support = env.agent({ name: "support", model: echoModel(), tools: { lookup: lookupTool() } });
    await support.conversation("user-6").start("m0").result;
    // "Finished more than 0 ms ago": not in the same millisecond as the prune.
    await new Promise((resolve) => setTimeout(resolve, 5));
    await expect(env.prune({ olderThanMs: 0, agentId: "user-6" })).resolves.toMatchObject({ executions: 1 });
  });
});

describe("cancel and retry by id on conversations of a named definition", () => {
  it("retries a failed execution of a conversation let go, here and after a restart; the tool is not run twice", async () => {
    const path = await temporaryStorePath();
    const env = await Phronomy.open({ store: path, logger: recordingLogger() });
    const calls: RecordedCall[] = [];
    const failing = { on: true };
    const support = env.agent({ name: "support", model: flakyModel(failing), tools: { lookup: lookupTool({ calls }) } });
    const failedHere = support.conversation("user-3").start("Where is order 42?");
    const hereId = await failedHere.executionId;
    await expect(failedHere.result).rejects.toMatchObject({ code: "MODEL_FAILED" });
    const failedLater = support.conversation("user-4").start("Where is order 42?");
    const laterId = await failedLater.executionId;
    await expect(failedLater.result).rejects.toMatchObject({ code: "MODEL_FAILED" });
    await idle(env);

    failing.on = false;
    const retried = env.retry(hereId);
    expect(await retried.executionId).toBe(hereId);
    await expect(retried.result).resolves.toMatchObject({ executionId: hereId, agentId: "user-3", outcome: "completed", output: "Order 42 has shipped." });
    expect(calls).toHaveLength(2);
    expect((await env.execution(hereId))?.metadata.attempt).toBe(2);
    await idle(env);
    await env.close();

    // The next process never used "user-4": the row names its definition.
    const next = await Phronomy.open({ store: path, logger: recordingLogger() });
    try {
      await expect(next.retry(laterId).result).rejects.toMatchObject({
        code: "RETRY_REFUSED",
        details: { reason: "agent_not_defined" },
        message: expect.stringContaining(`definition "support"`),
      });
      next.agent({ name: "support", model: flakyModel(failing), tools: { lookup: lookupTool({ calls }) } });
      await expect(next.retry(laterId).result).resolves.toMatchObject({ executionId: laterId, agentId: "user-4", outcome: "completed" });
      expect(calls, "each lookup ran once").toHaveLength(2);
      const timeline = await next.timeline(laterId);
      expect(timeline.filter((step) => step.kind === "terminal").map((step) => step.attempt)).toEqual([1, 2]);
      await idle(next);
    } finally {
      await next.close();
    }
  });

  it("cancels a running execution and a queued message by id; the conversation is let go afterwards", async () => {
    const env = await openEnvironment();
    const gates = [deferred(), deferred()];
    const order: number[] = [];
    const support = env.agent({ name: "support", model: echoModel(), tools: { lookup: gatedLookup(gates, order) } });
    const chat = support.conversation("user-5");
    const running = chat.start("m0");
    const runningId = await running.executionId;
    const queued = chat.start("m1", { onBusy: "enqueue" });
    const queuedId = await queued.executionId;
    const kept = chat.start("m2", { onBusy: "enqueue" });
    await kept.executionId;

    await expect(env.cancel(queuedId, { reason: "the user took it back" })).resolves.toMatchObject({
      executionId: queuedId,
      agentId: "user-5",
      outcome: "cancelled",
    });
    await expect(queued.result).rejects.toBeInstanceOf(CancellationError);
    await waitFor(async () => (order.length > 0 ? true : undefined));
    const cancelling = env.cancel(runningId);
    gates[0]!.resolve();
    await expect(cancelling).resolves.toMatchObject({ executionId: runningId, outcome: "cancelled" });
    await expect(running.result).rejects.toBeInstanceOf(CancellationError);
    // m2 runs next (the cancelled m1 never does).
    gates[1]!.resolve();
    await expect(kept.result).resolves.toMatchObject({ output: "echo: m2" });
    expect(order).toEqual([0, 1]);
    await idle(env);
  });
});
