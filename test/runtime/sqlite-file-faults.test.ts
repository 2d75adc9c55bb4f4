// Faults of the SQLite store's surroundings, through the public API
// (docs/decisions/0021): the store file removed while the environment runs
// — nothing is reported completed once that could be lost, and starts are
// refused with a STORE error naming the path — and the store's worker
// thread killed with 100 runs in flight — every run settles, the
// environment keeps working, `env.recover()` brings the interrupted
// executions to their end, and nothing admitted is lost.

import { rmSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { PhronomyError, tool, type Agent, type Environment } from "../../host/index.js";
import type { SqliteStore } from "../../host/store/sqlite-store.js";
import { agentRunModel, deferred, lookupTool, openEnvironment, scriptedModel, temporaryStorePath, turnOf } from "./helpers.js";

const runsInFlight = 100;

async function defineAgents(env: Environment, count: number, define: (id: string) => Agent): Promise<Agent[]> {
  const agents = Array.from({ length: count }, (_, index) => define(`agent-${index}`));
  await Promise.all(agents.map((agent) => agent.ready));
  return agents;
}

/** Resolves once `count` calls of `mark` happened. */
function countdown(count: number): { mark: () => void; reached: Promise<void> } {
  const reached = deferred();
  let left = count;
  return {
    reached: reached.promise,
    mark: () => {
      if (--left === 0) reached.resolve();
    },
  };
}

describe("the store file removed while the environment runs", () => {
  it("the next run fails with STORE naming the path, and so do the 100 after it: none is reported completed", async () => {
    const path = await temporaryStorePath();
    const env = await openEnvironment({ store: path });
    const agents = await defineAgents(env, runsInFlight, (id) => env.agent({ id, model: agentRunModel(), tools: { lookup: lookupTool() } }));
    await expect(agents[0]!.start("Where is order 42?").result).resolves.toMatchObject({ outcome: "completed" });
    rmSync(path);
    const next = await agents[1]!.start("Where is order 42?").result.catch((error: unknown) => error);
    expect(next).toMatchObject({ code: "STORE", details: { reason: "store_file_replaced" } });
    expect((next as Error).message).toContain(`${path} was removed`);
    const later = await Promise.allSettled(agents.map((agent) => agent.start("Where is order 42?").result));
    for (const outcome of later) {
      expect(outcome.status).toBe("rejected");
      expect((outcome as PromiseRejectedResult).reason).toMatchObject({ code: "STORE", message: expect.stringContaining(path) });
    }
    await expect(env.recover()).rejects.toMatchObject({ code: "STORE" });
    await env.close();
  });

  it("removed while 100 runs are in flight: every run settles with a typed error; none whose barrier came after the removal reports completed", async () => {
    const path = await temporaryStorePath();
    const env = await openEnvironment({ store: path });
    const gate = deferred();
    const waiting = countdown(runsInFlight);
    const lookup = tool({
      inputSchema: z.object({ orderId: z.string() }),
      execute: async () => {
        waiting.mark();
        await gate.promise;
        return "shipped";
      },
    });
    const agents = await defineAgents(env, runsInFlight, (id) => env.agent({ id, model: agentRunModel(), tools: { lookup } }));
    const runs = agents.map((agent) => agent.start("Where is order 42?"));
    // Every run is admitted, durable up to its first tool batch, and in
    // that tool: each has barriers (and its terminal) still to write.
    await waiting.reached;
    const executionIds = await Promise.all(runs.map((run) => run.executionId));
    rmSync(path);
    gate.resolve();
    const outcomes = await Promise.allSettled(runs.map((run) => run.result));
    for (const outcome of outcomes) {
      expect(outcome.status).toBe("rejected");
      expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(PhronomyError);
    }
    // Reads are refused too: what the open connection still sees is the
    // removed file, no longer the store.
    for (const executionId of executionIds)
      await expect(env.execution(executionId)).rejects.toMatchObject({ code: "STORE", details: { reason: "store_file_replaced" } });
    await expect(agents[0]!.start("again").result).rejects.toMatchObject({ code: "STORE", message: expect.stringContaining(path) });
    await env.close();
  });
});

/** The store's worker thread: a test hook, not public API. */
function storeWorkerThread(env: Environment): { terminate(): Promise<number> } {
  const offload = (
    env.store as SqliteStore as unknown as { offload: { workerThread?: { terminate(): Promise<number> }; statistics: { workerGroups: number } } }
  ).offload;
  if (offload.workerThread === undefined) throw new Error("the store has no worker thread");
  return offload.workerThread;
}

/** The store stops reading its worker's answers (a test hook): what it
 * sent from now on is in flight until the worker is gone. */
function ignoreWorkerAnswers(env: Environment): void {
  const offload = (env.store as SqliteStore as unknown as { offload: { worker?: { port: { removeAllListeners(event: string): void } } } }).offload;
  if (offload.worker === undefined) throw new Error("the store has no worker thread");
  offload.worker.port.removeAllListeners("message");
}

function workerGroups(env: Environment): number {
  return (env.store as SqliteStore).offloadStatistics.workerGroups;
}

/** Until the store sent a group to its worker after `groupsBefore`. */
async function groupSent(env: Environment, groupsBefore: number): Promise<void> {
  while (workerGroups(env) === groupsBefore) await new Promise((resolve) => setImmediate(resolve));
}

describe("the store worker killed with 100 runs in flight", () => {
  // Where the kill lands: on the barriers that carry the first tool results
  // (every run released from its tool at once), or on the terminal commits
  // (every run released from its last model call at once).
  for (const moment of ["barriers", "terminal commits"] as const) {
    it(`(on ${moment}) every run settles, new starts complete, env.recover() ends the interrupted ones, nothing admitted is lost`, async () => {
      const env = await openEnvironment({ offloadPolicy: "worker" });
      const gate = deferred();
      const waiting = countdown(runsInFlight);
      const gated =
        moment === "barriers"
          ? {
              model: agentRunModel(),
              tools: {
                lookup: tool({
                  inputSchema: z.object({ orderId: z.string() }),
                  execute: async () => {
                    waiting.mark();
                    await gate.promise;
                    return "shipped";
                  },
                }),
              },
            }
          : {
              model: scriptedModel(async ({ messages }) => {
                if (turnOf(messages) < 1) return { toolCalls: [{ toolName: "lookup", input: { orderId: "42" } }] };
                waiting.mark();
                await gate.promise;
                return { text: "Order 42 has shipped." };
              }),
              tools: { lookup: lookupTool() },
            };
      const agents = await defineAgents(env, runsInFlight, (id) => env.agent({ id, ...gated }));
      const runs = agents.map((agent) => agent.start("Where is order 42?"));
      await waiting.reached;
      const executionIds = await Promise.all(runs.map((run) => run.executionId));
      const groupsBefore = workerGroups(env);
      // The worker's answers are no longer read from here on: the group
      // sent after the gate is still unanswered when the worker is killed,
      // however fast the worker committed it (polling for the group once
      // let a fast worker's answer arrive first, and nothing was in flight).
      ignoreWorkerAnswers(env);
      gate.resolve();
      await groupSent(env, groupsBefore);
      await storeWorkerThread(env).terminate();

      const outcomes = await Promise.allSettled(runs.map((run) => run.result));
      const interrupted = outcomes.flatMap((outcome, index) => (outcome.status === "rejected" ? [{ index, error: outcome.reason as PhronomyError }] : []));
      console.log(`store worker killed on ${moment}: ${interrupted.length} of ${runsInFlight} runs interrupted`);
      // The kill hit operations in flight, and each run settled: completed,
      // or held for recovery with a typed error saying why.
      expect(interrupted.length).toBeGreaterThan(0);
      for (const { error } of interrupted) {
        expect(error).toBeInstanceOf(PhronomyError);
        expect(error.code).toBe("EXECUTION_REHYDRATION_REQUIRED");
      }
      // The environment keeps working: a new worker took over.
      expect((env.store as SqliteStore).offloadStatistics.workerRestarts).toBe(1);
      const fresh = env.agent({ id: "fresh", model: agentRunModel(), tools: { lookup: lookupTool() } });
      await expect(fresh.start("Where is order 42?").result).resolves.toMatchObject({ outcome: "completed" });

      // env.recover() brings every interrupted execution to its end.
      const report = await env.recover();
      expect(report.filter((item) => item.status === "needs_attention")).toEqual([]);
      for (const { index } of interrupted) {
        await expect(env.wait(executionIds[index]!).result).resolves.toMatchObject({ outcome: "completed", output: "Order 42 has shipped." });
      }
      // Nothing admitted is lost: every execution is durable and completed,
      // and every agent admits again.
      for (const executionId of executionIds) expect(await env.execution(executionId)).toMatchObject({ status: "terminal", outcome: "completed" });
      const again = await Promise.allSettled(agents.map((agent) => agent.start("And order 43?").result));
      expect(again.filter((outcome) => outcome.status === "rejected").map((outcome) => (outcome as PromiseRejectedResult).reason)).toEqual([]);
    });
  }
});

/** Kills the store's worker as soon as it is sent a group holding a
 * preparation, before it can answer: a test hook, not public API. Resolves
 * with the number of preparations that group held once the worker is dead. */
function killWorkerOnFirstPreparations(env: Environment): Promise<number> {
  type Entry = { operation: { type: string } };
  const offload = (
    env.store as SqliteStore as unknown as { offload: { sendToWorker(entries: readonly Entry[]): void; workerThread?: { terminate(): Promise<number> } } }
  ).offload;
  const send = offload.sendToWorker.bind(offload);
  return new Promise((resolve, reject) => {
    offload.sendToWorker = (entries) => {
      const thread = offload.workerThread;
      send(entries);
      const preparations = entries.filter((entry) => entry.operation.type === "prepareExecution").length;
      if (preparations === 0 || thread === undefined) return;
      offload.sendToWorker = send;
      thread.terminate().then(() => resolve(preparations), reject);
    };
  });
}

describe("the store worker killed while 100 starts are preparing", () => {
  it("every start settles (completed or a typed error), env.recover() lets every agent admit again, nothing admitted is lost", async () => {
    const env = await openEnvironment({ offloadPolicy: "worker" });
    // The model waits until the worker is dead, so no run is past its first
    // model call when the kill lands.
    const gate = deferred();
    const model = scriptedModel(async ({ messages }) => {
      await gate.promise;
      return turnOf(messages) < 1 ? { toolCalls: [{ toolName: "lookup", input: { orderId: "42" } }] } : { text: "Order 42 has shipped." };
    });
    const agents = await defineAgents(env, runsInFlight, (id) => env.agent({ id, model, tools: { lookup: lookupTool() } }));
    const killed = killWorkerOnFirstPreparations(env);
    const runs = agents.map((agent) => agent.start("Where is order 42?"));
    const preparing = await killed;
    gate.resolve();

    const outcomes = await Promise.allSettled(runs.map((run) => run.result));
    const failed = outcomes.flatMap((outcome) => (outcome.status === "rejected" ? [outcome.reason as unknown] : []));
    const codes = failed.map((error) => `${(error as PhronomyError).code}/${String((error as PhronomyError).details?.["reason"] ?? "")}`);
    console.log(`store worker killed holding ${preparing} preparations: ${failed.length} of ${runsInFlight} starts failed (${[...new Set(codes)].join(", ")})`);
    expect(preparing).toBeGreaterThan(0);
    for (const error of failed) expect(error).toBeInstanceOf(PhronomyError);
    expect((env.store as SqliteStore).offloadStatistics.workerRestarts).toBe(1);

    const report = await env.recover();
    expect(report.filter((item) => item.status === "needs_attention")).toEqual([]);
    // Nothing admitted is lost: every execution the store holds ends completed.
    for (const row of await env.executions()) {
      await expect(env.wait(row.executionId).result).resolves.toMatchObject({ outcome: "completed" });
    }
    for (const row of await env.executions()) expect(row).toMatchObject({ status: "terminal", outcome: "completed" });
    // Every agent admits again and completes a new start.
    const again = await Promise.allSettled(agents.map((agent) => agent.start("And order 43?").result));
    expect(again.filter((outcome) => outcome.status === "rejected").map((outcome) => (outcome as PromiseRejectedResult).reason)).toEqual([]);
    await env.close();
  });
});

/** Runs `before` and kills the store's worker as soon as it is sent a
 * group holding a barrier, before it can answer: a test hook, not public
 * API. Resolves with the number of barriers that group held. */
function killWorkerOnFirstBarriers(env: Environment, before: () => void): Promise<number> {
  type Entry = { operation: { type: string } };
  type Offload = { sendToWorker(entries: readonly Entry[]): void; workerThread?: { terminate(): Promise<number> } };
  const offload = (env.store as SqliteStore as unknown as { offload: Offload }).offload;
  const send = offload.sendToWorker.bind(offload);
  return new Promise((resolve, reject) => {
    offload.sendToWorker = (entries) => {
      const thread = offload.workerThread;
      const barriers = entries.filter((entry) => entry.operation.type === "toolBarrier" || entry.operation.type === "providerBarrier").length;
      if (barriers === 0 || thread === undefined) return send(entries);
      offload.sendToWorker = send;
      before();
      send(entries);
      thread.terminate().then(() => resolve(barriers), reject);
    };
  });
}

describe("the store worker killed while cancelled runs write their barriers (issue 24 item 11)", () => {
  it("every conversation admits again after one env.recover(): a cancelled session whose barrier was lost with the worker is quiescent", async () => {
    const env = await openEnvironment({ offloadPolicy: "worker" });
    const gate = deferred();
    const waiting = countdown(20);
    const lookup = tool({
      inputSchema: z.object({ orderId: z.string() }),
      execute: async () => {
        waiting.mark();
        await gate.promise;
        return "shipped";
      },
    });
    const agents = await defineAgents(env, 20, (id) => env.agent({ id, model: agentRunModel(), tools: { lookup } }));
    const controllers = agents.map(() => new AbortController());
    const runs = agents.map((agent, index) => agent.start("Where is order 42?", { signal: controllers[index]!.signal }));
    await waiting.reached;
    // The barriers after the tools go to the worker; every run is cancelled
    // while they are written, and the worker dies holding them.
    const killed = killWorkerOnFirstBarriers(env, () => {
      for (const controller of controllers) controller.abort();
    });
    gate.resolve();
    const barriers = await killed;
    const outcomes = await Promise.allSettled(runs.map((run) => run.result));
    const codes = outcomes.map((outcome) => (outcome.status === "rejected" ? (outcome.reason as PhronomyError).code : "completed"));
    console.log(`store worker killed holding ${barriers} barriers of cancelled runs: ${codes.join(", ")}`);
    expect(barriers).toBeGreaterThan(0);
    expect(codes).toContain("EXECUTION_REHYDRATION_REQUIRED");

    const report = await env.recover();
    expect(report.filter((item) => item.status === "needs_attention")).toEqual([]);
    for (const row of await env.executions()) await env.wait(row.executionId).result.catch(() => undefined);
    expect(await env.executions({ status: "active" })).toEqual([]);
    const again = await Promise.allSettled(agents.map((agent) => agent.start("And order 43?").result));
    expect(again.filter((outcome) => outcome.status === "rejected").map((outcome) => (outcome as PromiseRejectedResult).reason)).toEqual([]);
    await env.close();
  });
});
