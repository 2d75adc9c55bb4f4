// The runtime on PostgreSQL through the public API: `Phronomy.open({ store:
// "postgres://…" })` runs the agent-run workload (one run, and many agents
// at once), an approval that survives a restart, and recovery of an
// execution left mid-run by an environment that went away. Mirrors flows of
// test/runtime/flows.test.ts and test/runtime/approval.test.ts; each test
// has a fresh schema, dropped afterwards.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Phronomy, tool, type Environment } from "../../host/index.js";
import { StoreError } from "../../host/errors.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { agentRunModel, deferred, lookupTool, recordingLogger, scriptedModel, waitFor, type RecordedCall } from "../runtime/helpers.js";
import { prepare, providerBarrier, toolBarrier } from "../store/fixtures.js";
import { atEnd, freshSchemaUrl } from "./database.js";

async function openOn(url: string): Promise<Environment> {
  const environment = await Phronomy.open({ store: url, logger: recordingLogger() });
  atEnd(() => environment.close());
  return environment;
}

function refundModel() {
  return scriptedModel(({ messages }) => {
    const lastUser = messages.map((message) => message.role).lastIndexOf("user");
    const turn = messages.slice(lastUser + 1).filter((message) => message.role === "assistant").length;
    if (turn === 0) return { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] };
    return { text: "Your refund of 30 is on its way." };
  });
}

function refundTool(refunds: string[]) {
  return tool({
    description: "Refunds an order",
    inputSchema: z.object({ orderId: z.string(), amount: z.number() }),
    needsApproval: ({ amount }) => amount > 10,
    execute: ({ orderId }, { idempotencyKey }) => {
      refunds.push(idempotencyKey);
      return { refunded: orderId };
    },
  });
}

describe("the runtime on PostgreSQL", () => {
  it("opens a PostgresStore for a postgres:// URL and completes model → tool → model → tool → model, durable at every step", async () => {
    const env = await openOn(freshSchemaUrl());
    expect(env.store).toBeInstanceOf(PostgresStore);
    const calls: RecordedCall[] = [];
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool({ calls }) } });
    const run = agent.start("Where is order 42?");
    const result = await run.result;
    const executionId = await run.executionId;
    expect(result).toMatchObject({ executionId, outcome: "completed", output: "Order 42 has shipped." });
    expect(calls.map((call) => call.idempotencyKey)).toEqual([`${executionId}:call-0-0`, `${executionId}:call-1-0`]);
    expect((await env.timeline(executionId)).map((step) => step.kind)).toEqual([
      "input",
      "provider_barrier",
      "model_response",
      "tool_barrier",
      "tool_results",
      "provider_barrier",
      "model_response",
      "tool_barrier",
      "tool_results",
      "provider_barrier",
      "model_response",
      "terminal",
    ]);
    expect(await env.execution(executionId)).toMatchObject({ status: "terminal", outcome: "completed", revision: 7 });
  });

  it("tells the store which conversations have an execution running (their partitions are given up last when balancing), not those suspended or ended", async () => {
    const env = await openOn(freshSchemaUrl());
    const store = env.store as PostgresStore;
    const running = () => [...store.listening.runningAgents()];
    const gate = deferred();
    const calls: RecordedCall[] = [];
    const lookups = env.agent({ id: "lookups", model: agentRunModel(), tools: { lookup: lookupTool({ calls, gate: gate.promise }) } });
    const refunds = env.agent({ id: "refunds", model: refundModel(), tools: { refund: refundTool([]) } });
    const looking = lookups.start("Where is order 42?");
    await waitFor(async () => calls.length === 1 || undefined);
    const refunding = refunds.start("Refund order 42");
    await refunding.executionId;
    await waitFor(async () => running().length === 1 || undefined);
    expect(running()).toEqual(["lookups"]);
    gate.resolve();
    await looking.result;
    expect(running()).toEqual([]);
  });

  it("a preparation whose outcome could not be read back holds its conversation; the partition's owner heals it by itself once the database answers, no env.recover() needed", async () => {
    const store = await PostgresStore.open(freshSchemaUrl());
    // The database "unreachable": the preparation fails with its outcome
    // unknown, and every read that could tell fails too.
    let unreachable = true;
    const down = (what: string) => Promise.reject(new StoreError(`injected: the database is unreachable (${what})`));
    const run = store.run.bind(store);
    store.run = ((operation: Parameters<typeof store.run>[0]) =>
      unreachable && operation.type === "prepareExecution" ? down("prepare") : run(operation)) as typeof store.run;
    const getExecution = store.getExecution.bind(store);
    store.getExecution = (executionId) => (unreachable ? down("getExecution") : getExecution(executionId));
    const unfinishedOf = store.unfinishedExecutionsOf.bind(store);
    store.unfinishedExecutionsOf = (agentId) => (unreachable ? down("unfinishedExecutionsOf") : unfinishedOf(agentId));
    const env = await Phronomy.open({ store, logger: recordingLogger() });
    atEnd(() => env.close());
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    await expect(agent.start("Where is order 42?").result).rejects.toMatchObject({ code: "STORE" });
    await expect(agent.start("Where is order 42?").result).rejects.toMatchObject({ code: "AGENT_BUSY", details: { reason: "recovery_required" } });

    unreachable = false;
    const deadline = Date.now() + 30_000;
    for (;;) {
      const outcome = await agent.start("Where is order 42?").result.then(
        (result) => result.outcome,
        (error: { code?: string }) => error.code,
      );
      if (outcome === "completed") break;
      expect(outcome).toBe("AGENT_BUSY");
      if (Date.now() > deadline) throw new Error("the held conversation was never healed");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await env.executions({ status: "recovery_required" })).toEqual([]);
  });

  it("runs 20 agents × 5 runs each, 20 in flight, every one completed with its memory", async () => {
    const env = await openOn(freshSchemaUrl());
    const agents = Array.from({ length: 20 }, (_, index) => env.agent({ id: `agent-${index}`, model: agentRunModel(), tools: { lookup: lookupTool() } }));
    for (let round = 0; round < 5; round += 1) {
      const results = await Promise.all(agents.map((agent) => agent.start(`round ${round}`).result));
      expect(results.every((result) => result.outcome === "completed")).toBe(true);
    }
    expect(await env.executions({ status: "terminal", limit: 1000 })).toHaveLength(100);
    expect(await env.store.readJournal("agent-7", 100)).toHaveLength(10);
  });

  it("an approval survives a restart: a new environment on the same database recovers the suspension and resumes it", async () => {
    const url = freshSchemaUrl();
    const refunds: string[] = [];
    const first = await Phronomy.open({ store: url, logger: recordingLogger() });
    const agentA = first.agent({ id: "support", model: refundModel(), tools: { refund: refundTool(refunds) } });
    const original = agentA.start("Refund order 42");
    const executionId = await original.executionId;
    const pending = await waitFor(async () => (await first.pendingApprovals()).find((item) => item.executionId === executionId), 10_000);
    await first.close();
    await expect(original.result).rejects.toMatchObject({ code: "RUNTIME_SHUTDOWN" });
    expect(refunds).toEqual([]);

    const second = await openOn(url);
    const agentB = second.agent({ id: "support", model: refundModel(), tools: { refund: refundTool(refunds) } });
    expect(await second.recovery("support")).toEqual([expect.objectContaining({ executionId, status: "suspended" })]);
    const result = await agentB.resume(executionId, { approvalId: pending.request.approvalId, approved: true }).result;
    expect(result).toMatchObject({ outcome: "completed", output: "Your refund of 30 is on its way." });
    expect(refunds).toEqual([`${executionId}:call-0-0`]);
  });

  it("recovers an execution a dead process left mid-run (tool batch dispatched) in a new environment", async () => {
    const url = freshSchemaUrl();
    // What a process that died right after its tool barrier leaves behind.
    const crashed = await PostgresStore.open(url);
    await crashed.ensureAgent("support", 1);
    await crashed.run({
      type: "prepareExecution",
      executionId: "e1",
      agentId: "support",
      mode: "invoke",
      input: "Where is order 42?",
      config: { replayable: true },
      journal: [{ executionId: "e1", role: "user", content: "Where is order 42?", at: 1 }],
      at: 1,
    });
    await crashed.run({
      type: "providerBarrier",
      executionId: "e1",
      expectedRevision: 1,
      callId: "m1",
      steps: [],
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
      turns: 0,
      at: 2,
    });
    await crashed.close();

    const env = await openOn(url);
    env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const recovered = await env.recovery("support");
    expect(recovered.map((item) => item.executionId)).toEqual(["e1"]);
    const row = await waitFor(async () => {
      const found = await env.execution("e1");
      return found?.status === "terminal" ? found : undefined;
    }, 10_000);
    expect(row).toMatchObject({ status: "terminal" });
    expect(row?.revision).toBeGreaterThan(2);
  });

  it("recovers an execution left inside its tool batch when the batch's results come back before its history is read: the results follow the calls they answer", async () => {
    const url = freshSchemaUrl();
    // What a process that died inside its tool call leaves behind.
    const crashed = await PostgresStore.open(url);
    await crashed.ensureAgent("support", 1);
    await crashed.run(prepare("e1"));
    await crashed.run(providerBarrier("e1", 1));
    const call = { callId: "call-0-0", toolName: "lookup", input: { orderId: "42" } };
    await crashed.run(
      toolBarrier("e1", 2, {
        toolBatch: [{ ...call, idempotencyKey: "e1:call-0-0" }],
        steps: [{ kind: "model_response", at: 3, payload: { callId: "model-1", text: "", toolCalls: [call] } }],
      }),
    );
    await crashed.close();

    // The new environment's reads of the timeline answer late (a loaded
    // machine): the re-dispatched lookup answers first.
    const store = await PostgresStore.open(url);
    const listSteps = store.listSteps.bind(store);
    store.listSteps = async (executionId) => {
      const steps = await listSteps(executionId);
      await new Promise((resolve) => setTimeout(resolve, 300));
      return steps;
    };
    const env = await Phronomy.open({ store, logger: recordingLogger() });
    atEnd(() => env.close());
    const calls: RecordedCall[] = [];
    env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool({ calls }) } });
    expect((await env.recovery("support")).map((item) => item.status)).toEqual(["continued"]);
    const row = await waitFor(async () => {
      const found = await env.execution("e1");
      return found?.status === "terminal" ? found : undefined;
    }, 20_000);
    expect(row, JSON.stringify(row?.error)).toMatchObject({ outcome: "completed" });
    expect(calls[0]?.idempotencyKey).toBe("e1:call-0-0");
  });
});
