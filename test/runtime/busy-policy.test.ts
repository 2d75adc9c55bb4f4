// A second message to a busy conversation (docs/decisions/0025): onBusy
// "reject" (AGENT_BUSY), "enqueue" (a durable FIFO per conversation,
// bounded, visible as `queued`, cancellable while queued) and "interrupt"
// (the running execution is cancelled, the new message runs next), on real
// SQLite stores.

import { MessageKind as M, RecoveryCause } from "../../assembly/abi.js";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AgentBusyError, CancellationError, InvalidInputError, Phronomy, QueueFullError, tool } from "../../host/index.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import type { StoreOperation } from "../../host/store/records.js";
import {
  agentRunModel,
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

/** A store whose first preparation that `holds` picks waits at the
 * store's door until `release` (its execution admitted, no session yet). */
function storeHoldingAPreparation(store: SqliteStore, holds: (operation: StoreOperation & { type: "prepareExecution" }) => Promise<boolean> | boolean) {
  const preparing = deferred<string>();
  const gate = deferred();
  let held = false;
  const proxy = new Proxy(store, {
    get(target, property, receiver) {
      if (property === "run") {
        return async (operation: StoreOperation) => {
          if (operation.type === "prepareExecution" && !held && (await holds(operation))) {
            held = true;
            preparing.resolve(operation.executionId);
            await gate.promise;
          }
          return target.run(operation);
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { store: proxy, preparing: preparing.promise, release: () => gate.resolve() };
}

describe("onBusy validation", () => {
  it("refuses an unknown policy or queue limit with InvalidInputError naming it", async () => {
    const env = await openEnvironment();
    expect(() => env.agent({ id: "a", model: agentRunModel(), onBusy: "queue" as never })).toThrow(
      /"onBusy" must be "reject", "enqueue" or "interrupt", got "queue"/,
    );
    expect(() => env.agent({ id: "b", model: agentRunModel(), queueLimit: 0 })).toThrow(/"queueLimit" must be an integer from 1 to 10000/);
    const agent = env.agent({ id: "c", model: agentRunModel() });
    const run = agent.start("hi", { onBusy: "later" as never });
    await expect(run.result).rejects.toBeInstanceOf(InvalidInputError);
    await expect(run.result).rejects.toThrow(/"onBusy" must be "reject", "enqueue" or "interrupt", got "later"/);
  });
});

describe("onBusy: enqueue", () => {
  it("runs queued messages in order, each exactly once, visible as queued until they run", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const calls: RecordedCall[] = [];
    const agent = env.agent({
      id: "chat",
      model: echoModel(),
      onBusy: "enqueue",
      tools: { lookup: lookupTool({ calls, gate: gate.promise }) },
    });
    const first = agent.start("m0");
    await first.executionId;
    const runs = Array.from({ length: 12 }, (_, index) => agent.start(`m${index + 1}`));
    const ids = await Promise.all(runs.map((run) => run.executionId));
    expect(new Set(ids).size).toBe(12);
    const queued = await env.executions({ status: "queued", agentId: "chat" });
    expect(queued.map((row) => row.executionId).sort()).toEqual([...ids].sort());
    expect(queued.every((row) => row.status === "queued" && row.phase === "queued")).toBe(true);
    // The core counts them (docs/decisions/0062).
    expect(env.queues.countDrift()).toEqual([]);
    expect(env.conversations.useDrift()).toEqual([]);
    expect(env.core.conversation(0).queued).toBe(12);
    expect(await env.execution(ids[0]!)).toMatchObject({ status: "queued", input: "m1" });
    expect((await env.timeline(ids[0]!)).map((step) => step.kind)).toEqual(["queued"]);
    gate.resolve();
    const results = await Promise.all([first, ...runs].map((run) => run.result));
    expect(results.map((result) => result.output)).toEqual(Array.from({ length: 13 }, (_, index) => `echo: m${index}`));
    // Each ran once, in order, under the id it was given when queued.
    expect(results.slice(1).map((result) => result.executionId)).toEqual(ids);
    expect(calls).toHaveLength(13);
    expect(new Set(calls.map((call) => call.idempotencyKey)).size).toBe(13);
    const rows = await Promise.all(ids.map((id) => env.execution(id)));
    expect(rows.map((row) => row?.createdAt)).toEqual([...rows.map((row) => row!.createdAt)].sort((a, b) => a - b));
    expect(await env.executions({ status: "queued" })).toEqual([]);
    const timeline = (await env.timeline(ids[3]!)).map((step) => step.kind);
    expect(timeline.slice(0, 3)).toEqual(["queued", "input", "provider_barrier"]);
    expect(timeline.at(-1)).toBe("terminal");
    expect(env.queues.countDrift()).toEqual([]);
  });

  it("refuses a message beyond queueLimit with QueueFullError and writes nothing", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const agent = env.agent({ id: "bounded", model: agentRunModel(), onBusy: "enqueue", queueLimit: 2, tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const first = agent.start("first");
    await first.executionId;
    const a = agent.start("a");
    const b = agent.start("b");
    await Promise.all([a.executionId, b.executionId]);
    const c = agent.start("c");
    await expect(c.result).rejects.toBeInstanceOf(QueueFullError);
    await expect(c.result).rejects.toMatchObject({ code: "QUEUE_FULL", agentId: "bounded", details: { limit: 2 } });
    await expect(c.executionId).rejects.toBeInstanceOf(QueueFullError);
    const all = await env.executions({ agentId: "bounded" });
    expect(all.map((row) => row.input).sort()).toEqual(["a", "b", "first"]);
    gate.resolve();
    await expect(Promise.all([first.result, a.result, b.result])).resolves.toHaveLength(3);
  });

  it("cancels a queued message by id and through its start's signal; the others still run in order", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const agent = env.agent({ id: "cancels", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const first = agent.start("m0");
    await first.executionId;
    const controller = new AbortController();
    const byId = agent.start("m1");
    const bySignal = agent.start("m2", { signal: controller.signal });
    const kept = agent.start("m3");
    const [idOne, idTwo, idThree] = await Promise.all([byId.executionId, bySignal.executionId, kept.executionId]);
    expect(await env.queues.cancelQueued(idOne!, "the user took it back")).toBe(true);
    controller.abort();
    await expect(byId.result).rejects.toBeInstanceOf(CancellationError);
    await expect(byId.result).rejects.toMatchObject({ code: "CANCELLED", details: { whileQueued: true, reason: "the user took it back" } });
    await expect(bySignal.result).rejects.toBeInstanceOf(CancellationError);
    // Cancelled while queued: terminal failed CANCELLED, never prepared.
    const row = await waitFor(async () => {
      const found = await env.execution(idTwo!);
      return found?.status === "terminal" ? found : undefined;
    });
    expect(row).toMatchObject({ outcome: "failed", error: { code: "CANCELLED" } });
    expect((await env.timeline(idOne!)).map((step) => step.kind)).toEqual(["queued", "terminal"]);
    expect(await env.queues.cancelQueued(idOne!)).toBe(false);
    expect(env.queues.countDrift()).toEqual([]);
    gate.resolve();
    await expect(kept.result).resolves.toMatchObject({ executionId: idThree, output: "echo: m3" });
    await expect(first.result).resolves.toMatchObject({ output: "echo: m0" });
    expect(env.queues.countDrift()).toEqual([]);
  });

  it("cancels by id a message taken from the queue whose preparation has not committed: CANCELLED, nothing runs, the next one does", async () => {
    const store = await SqliteStore.open(await temporaryStorePath());
    // Holds the first preparation of a queued message (one whose queued step exists).
    const slow = storeHoldingAPreparation(store, async (operation) => (await store.listSteps(operation.executionId)).length > 0);
    const env = await Phronomy.open({ store: slow.store, logger: recordingLogger() });
    try {
      const gate = deferred();
      const agent = env.agent({ id: "window", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
      const first = agent.start("m0");
      await first.executionId;
      const second = agent.start("m1");
      const third = agent.start("m2");
      const secondId = await second.executionId;
      await third.executionId;
      gate.resolve();
      expect(await slow.preparing).toBe(secondId);
      expect(await env.queues.cancelQueued(secondId, "too late?")).toBe(true);
      slow.release();
      await expect(second.result).rejects.toMatchObject({ code: "CANCELLED", details: { whileQueued: true } });
      await expect(third.result).resolves.toMatchObject({ output: "echo: m2" });
      expect(await env.execution(secondId)).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "CANCELLED" } });
      const journal = await env.store.readJournal("window", 100);
      expect(journal.filter((record) => record.role === "user").map((record) => record.content)).toEqual(["m0", "m2"]);
    } finally {
      await env.close();
    }
  });

  it("holds the queue while the conversation waits for approval, and runs it once decided", async () => {
    const env = await openEnvironment();
    const refunds: string[] = [];
    const model = scriptedModel(({ messages }) => {
      const last = [...messages].reverse().find((message) => message.role === "user") as { content: string };
      if (last.content === "refund" && turnOf(messages) === 0) return { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] };
      return { text: `done: ${last.content}` };
    });
    const agent = env.agent({ id: "approvals", model, onBusy: "enqueue", tools: { refund: approvalRefundTool(refunds) } });
    const first = agent.start("refund");
    const executionId = await first.executionId;
    const [pending] = await waitFor(async () => {
      const found = await env.pendingApprovals();
      return found.length > 0 ? found : undefined;
    });
    const later = agent.start("thanks");
    const laterId = await later.executionId;
    // Still queued behind the suspension.
    expect(await env.execution(laterId)).toMatchObject({ status: "queued" });
    expect(await env.execution(executionId)).toMatchObject({ status: "suspended" });
    const resumed = agent.resume(executionId, { approvalId: pending!.request.approvalId, approved: true });
    await expect(resumed.result).resolves.toMatchObject({ outcome: "completed" });
    await expect(later.result).resolves.toMatchObject({ executionId: laterId, output: "done: thanks" });
    expect(refunds).toHaveLength(1);
  });

  it("keeps rejecting by default, and a reject start behind a queue is refused AGENT_BUSY", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const agent = env.agent({ id: "default", model: agentRunModel(), tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const first = agent.start("first");
    await first.executionId;
    await expect(agent.start("second").result).rejects.toBeInstanceOf(AgentBusyError);
    const queued = agent.start("queued", { onBusy: "enqueue" });
    await queued.executionId;
    await expect(agent.start("third").result).rejects.toMatchObject({ code: "AGENT_BUSY", details: { queued: 1 } });
    gate.resolve();
    await expect(queued.result).resolves.toMatchObject({ outcome: "completed" });
  });

  it("a start to a closed agent with messages queued is refused AGENT_CLOSED at once, whatever its policy (the core's Admit checks closed first)", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const agent = env.agent({ id: "closed-queue", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const first = agent.start("m0");
    await first.executionId;
    const queued = agent.start("m1");
    await queued.executionId;
    await agent.close();
    await expect(agent.start("late").result).rejects.toMatchObject({ code: "AGENT_CLOSED" });
    await expect(agent.start("late", { onBusy: "reject" }).result).rejects.toMatchObject({ code: "AGENT_CLOSED" });
    await expect(agent.start("late", { onBusy: "interrupt" }).result).rejects.toMatchObject({ code: "AGENT_CLOSED" });
    expect((await env.executions({ agentId: "closed-queue" })).map((row) => row.input).sort()).toEqual(["m0", "m1"]);
    expect(env.queues.countDrift()).toEqual([]);
    gate.resolve();
    await expect(first.result).resolves.toMatchObject({ output: "echo: m0" });
    await expect(queued.result).rejects.toMatchObject({ code: "AGENT_CLOSED" });
    expect(env.queues.countDrift()).toEqual([]);
  });

  it("a closed agent fails its queued messages with AGENT_CLOSED once the running one ended, writing each terminal", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const agent = env.agent({ id: "closing", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const first = agent.start("m0");
    await first.executionId;
    const queued = [agent.start("m1"), agent.start("m2")];
    const ids = await Promise.all(queued.map((run) => run.executionId));
    const closed = agent.close();
    gate.resolve();
    await closed;
    await expect(first.result).resolves.toMatchObject({ output: "echo: m0" });
    for (const run of queued) await expect(run.result).rejects.toMatchObject({ code: "AGENT_CLOSED" });
    const rows = await waitFor(async () => {
      const found = await Promise.all(ids.map((id) => env.execution(id)));
      return found.every((row) => row?.status === "terminal") ? found : undefined;
    });
    expect(rows.map((row) => row?.error?.code)).toEqual(["AGENT_CLOSED", "AGENT_CLOSED"]);
    expect(await env.executions({ status: "queued" })).toEqual([]);
  });

  it("survives a restart: queued messages run, in order, in the next environment", async () => {
    const path = await temporaryStorePath();
    const first = await Phronomy.open({ store: path, logger: recordingLogger() });
    const gate = deferred();
    const agent = first.agent({ id: "restart", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const running = agent.start("m0");
    await running.executionId;
    const queued = ["m1", "m2", "m3"].map((input) => agent.start(input));
    const ids = await Promise.all(queued.map((run) => run.executionId));
    // Close while m0 is held: it finishes; m1..m3 stay queued, their Runs here are told.
    const closing = first.close();
    gate.resolve();
    await closing;
    for (const run of queued) await expect(run.result).rejects.toMatchObject({ code: "RUNTIME_SHUTDOWN" });
    expect((await running.result).output).toBe("echo: m0");
    const second = await Phronomy.open({ store: path, logger: recordingLogger() });
    try {
      second.agent({ id: "restart", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool() } });
      await second.recovery("restart");
      const done = await waitFor(async () => {
        const rows = await Promise.all(ids.map((id) => second.execution(id)));
        return rows.every((row) => row?.status === "terminal") ? rows : undefined;
      });
      expect(done.map((row) => row!.output)).toEqual(["echo: m1", "echo: m2", "echo: m3"]);
      expect(done.map((row) => row!.createdAt)).toEqual([...done.map((row) => row!.createdAt)].sort((a, b) => a - b));
    } finally {
      await second.close();
    }
  });

  it("after a restart, a first use's recovery joined by a trigger with new facts reads again, then its queued messages run", async () => {
    const path = await temporaryStorePath();
    const first = await Phronomy.open({ store: path, logger: recordingLogger() });
    const gate = deferred();
    const agent = first.agent({ id: "joined", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const running = agent.start("m0");
    await running.executionId;
    const queued = agent.start("m1");
    const id = await queued.executionId;
    const closing = first.close();
    gate.resolve();
    await closing;
    await running.result;
    await queued.result.catch(() => undefined);
    const second = await Phronomy.open({ store: path, logger: recordingLogger() });
    try {
      // The first use reads the queue (it was queued at the open); as its
      // pass ends, a trigger with new facts (a retake) joins it, so the core
      // answers RecoveryFinished with a new epoch to read (RecoverAgain).
      const core = second.coordinator.settings.core;
      const apply = core.apply.bind(core);
      const epochs: number[] = [];
      core.apply = (kind: number, ...args: number[]): number => {
        if (kind === M.RecoveryFinished) {
          epochs.push(args[2]!);
          if (epochs.length === 1) apply(M.RecoveryRequested, args[0]!, args[1]!, RecoveryCause.Retake, 0);
        }
        return apply(kind, ...args);
      };
      second.agent({ id: "joined", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool() } });
      await second.recovery("joined");
      const row = await waitFor(async () => {
        const found = await second.execution(id);
        return found?.status === "terminal" ? found : undefined;
      });
      expect(row.output).toBe("echo: m1");
      // Read again under the next epoch, by the one pipeline.
      expect(epochs).toEqual([1, 2]);
    } finally {
      await second.close();
    }
  });

  it("after a restart, a first use reads the queue only when the core's ReadRows says so (nothing queued at the open: not read)", async () => {
    const path = await temporaryStorePath();
    const refundModel = () =>
      scriptedModel(({ messages }) =>
        turnOf(messages) === 0 ? { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] } : { text: "refunded" },
      );
    const first = await Phronomy.open({ store: path, logger: recordingLogger() });
    const run = first.agent({ id: "parked", model: refundModel(), tools: { refund: approvalRefundTool([]) } }).start("Refund order 42");
    const executionId = await run.executionId;
    await waitFor(async () => ((await first.execution(executionId))?.status === "suspended" ? true : undefined));
    await first.close();
    await run.result.catch(() => undefined);
    const store = await SqliteStore.open(path);
    let queueReads = 0;
    const queuedMessages = store.queuedMessages.bind(store);
    store.queuedMessages = (agentId: string) => {
      queueReads += 1;
      return queuedMessages(agentId);
    };
    const second = await Phronomy.open({ store, logger: recordingLogger() });
    try {
      second.agent({ id: "parked", model: refundModel(), tools: { refund: approvalRefundTool([]) } });
      // The suspended execution is recovered from the open scan; the queue,
      // empty at the open and written by no other process, is not read.
      expect(await second.recovery("parked")).toMatchObject([{ executionId, status: "suspended" }]);
      expect(queueReads).toBe(0);
    } finally {
      await second.close();
    }
  });

  it("env.recover() lists the messages still queued, in queue order, saying whether they can run here", async () => {
    const path = await temporaryStorePath();
    const first = await Phronomy.open({ store: path, logger: recordingLogger() });
    const gate = deferred();
    const agent = first.agent({ id: "listed", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const running = agent.start("m0");
    await running.executionId;
    const queued = ["m1", "m2"].map((input) => agent.start(input));
    const ids = await Promise.all(queued.map((run) => run.executionId));
    const closing = first.close();
    gate.resolve();
    await closing;
    for (const run of queued) await run.result.catch(() => undefined);
    const second = await Phronomy.open({ store: path, recover: false, logger: recordingLogger() });
    try {
      // Not defined here: listed as queued, waiting for the agent.
      const report = await second.recover();
      expect(report).toEqual(
        ids.map((executionId, index) => ({
          executionId,
          agentId: "listed",
          phase: "queued",
          status: "queued",
          reason: `queued (position ${index + 1}); define its agent in this environment to run it`,
        })),
      );
    } finally {
      await second.close();
    }
  });
});

describe("onBusy: interrupt", () => {
  it("cancels the running execution while its tool runs (the tool finishes), then runs the new message", async () => {
    const env = await openEnvironment();
    const toolStarted = deferred();
    const toolRelease = deferred();
    const finished: string[] = [];
    // Ignores its abort signal: the interrupt must wait for it to settle.
    const slowLookup = tool({
      description: "Looks an order up, slowly",
      inputSchema: z.object({ orderId: z.string() }),
      async execute({ orderId }, { idempotencyKey }) {
        toolStarted.resolve();
        await toolRelease.promise;
        finished.push(idempotencyKey);
        return { orderId, status: "shipped" };
      },
    });
    const agent = env.agent({ id: "interrupts", model: echoModel(), tools: { lookup: slowLookup } });
    const first = agent.start("m0");
    const firstId = await first.executionId;
    await toolStarted.promise;
    const second = agent.start("m1", { onBusy: "interrupt" });
    const secondId = await second.executionId;
    expect(await env.execution(secondId)).toMatchObject({ status: "queued" });
    // Cancelled, but its tool is still in flight: the terminal waits for it.
    expect(await env.execution(firstId)).toMatchObject({ status: "active" });
    toolRelease.resolve();
    await expect(first.result).rejects.toBeInstanceOf(CancellationError);
    expect(finished[0]).toContain(firstId);
    expect(await env.execution(firstId)).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "CANCELLED" } });
    await expect(second.result).resolves.toMatchObject({ executionId: secondId, output: "echo: m1" });
    expect((await env.timeline(secondId)).map((step) => step.kind)[0]).toBe("queued");
  });

  it("cancels a running execution whose preparation has not committed yet: it ends CANCELLED before calling the model, then the new message runs", async () => {
    const store = await SqliteStore.open(await temporaryStorePath());
    const slow = storeHoldingAPreparation(store, () => true);
    const env = await Phronomy.open({ store: slow.store, logger: recordingLogger() });
    try {
      const calls: RecordedCall[] = [];
      const agent = env.agent({ id: "early", model: echoModel(), tools: { lookup: lookupTool({ calls }) } });
      const first = agent.start("m0");
      const firstId = await slow.preparing;
      const second = agent.start("m1", { onBusy: "interrupt" });
      const secondId = await second.executionId;
      slow.release();
      await expect(first.result).rejects.toBeInstanceOf(CancellationError);
      await expect(first.result).rejects.toThrow(/interrupted by a newer message/);
      expect(await env.execution(firstId)).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "CANCELLED" } });
      await expect(second.result).resolves.toMatchObject({ executionId: secondId, output: "echo: m1" });
      expect(calls, "only the new message's lookup ran").toHaveLength(1);
    } finally {
      await env.close();
    }
  });

  it("puts the interrupting message ahead of the ones already queued", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const agent = env.agent({ id: "jumps", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const first = agent.start("m0");
    await first.executionId;
    const queued = [agent.start("m1"), agent.start("m2")];
    await Promise.all(queued.map((run) => run.executionId));
    const urgent = agent.start("stop", { onBusy: "interrupt" });
    const urgentId = await urgent.executionId;
    expect((await env.timeline(urgentId))[0]).toMatchObject({ kind: "queued", payload: { position: 1, interrupt: true } });
    expect(env.queues.countDrift()).toEqual([]);
    await expect(first.result).rejects.toBeInstanceOf(CancellationError);
    gate.resolve();
    await Promise.all([urgent.result, ...queued.map((run) => run.result)]);
    const journal = await env.store.readJournal("jumps", 100);
    expect(journal.filter((record) => record.role === "user").map((record) => record.content)).toEqual(["m0", "stop", "m1", "m2"]);
  });

  it("cancels a suspended execution (declined and cancelled in one decision) and runs the new message", async () => {
    const env = await openEnvironment();
    const refunds: string[] = [];
    const model = scriptedModel(({ messages }) => {
      const last = [...messages].reverse().find((message) => message.role === "user") as { content: string };
      if (last.content === "refund" && turnOf(messages) === 0) return { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] };
      return { text: `done: ${last.content}` };
    });
    const agent = env.agent({ id: "interrupt-approval", model, onBusy: "interrupt", tools: { refund: approvalRefundTool(refunds) } });
    const first = agent.start("refund");
    const executionId = await first.executionId;
    await waitFor(async () => {
      const found = await env.pendingApprovals();
      return found.length > 0 ? found : undefined;
    });
    const next = agent.start("never mind");
    await expect(next.result).resolves.toMatchObject({ output: "done: never mind" });
    const row = await env.execution(executionId);
    expect(row).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "CANCELLED" } });
    const kinds = (await env.timeline(executionId)).map((step) => step.kind);
    expect(kinds).toContain("approval_decided");
    expect(refunds).toEqual([]);
  });
});
