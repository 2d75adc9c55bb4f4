// The offload behind the store: every policy runs the operations and keeps
// typed errors across the worker; group commit fails only the operation
// that failed; a full queue refuses synchronously; close finishes accepted
// work and refuses what comes after.

import { join } from "node:path";
import { MessageChannel, type MessagePort, Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import { AgentBusyError, ExecutionRehydrationRequiredError, InvalidInputError, OffloadFullError, StoreError } from "../../host/errors.js";
import { Offload, type OffloadPolicy } from "../../host/store/offload.js";
import { assertOperationData, assertPlainData } from "../../host/store/plain-data.js";
import type { OffloadOperation } from "../../host/store/offload-operation.js";
import type { StepKind } from "../../host/store/records.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import { openTemporaryStore, prepare, providerBarrier, temporaryDirectory, terminalCommit, toolBarrier, track } from "./fixtures.js";

const policies: readonly OffloadPolicy[] = ["adaptive", "worker", "inline"];

/** Until the store's worker is ready (or could not start). */
async function workerStarted(store: SqliteStore): Promise<void> {
  while (store.offloadStatistics.workerState === "starting") await new Promise((resolve) => setTimeout(resolve, 5));
}

/** Prepares `count` executions e0…e(count-1) of agent "support". */
async function preparedStore(policy: OffloadPolicy, count: number): Promise<SqliteStore> {
  const store = await openTemporaryStore({ offloadPolicy: policy });
  await store.ensureAgent("support", 1);
  await Promise.all(Array.from({ length: count }, (_, index) => store.run(prepare(`e${index}`))));
  return store;
}

describe.each(policies)("offload policy %s", (policy) => {
  it("runs a whole execution and reports where it committed", async () => {
    const store = await preparedStore(policy, 1);
    expect(store.offloadPolicy).toBe(policy);
    await store.run(providerBarrier("e0", 1));
    await store.run(toolBarrier("e0", 2));
    await store.run(providerBarrier("e0", 3));
    expect(await store.run(terminalCommit("e0", 4))).toEqual({ revision: 5 });
    expect(await store.getExecution("e0")).toMatchObject({ status: "terminal", revision: 5 });
    const statistics = store.offloadStatistics;
    expect(statistics.submitted).toBe(6);
    if (policy === "inline") expect(statistics.workerOperations).toBe(0);
    if (policy === "worker") expect(statistics.inlineOperations).toBe(0);
    if (policy === "adaptive") expect(statistics.inlineOperations).toBe(6); // every operation was alone
  });

  it("keeps typed errors: a lost compare-and-set and a refused purge", async () => {
    const store = await preparedStore(policy, 1);
    const lost = store.run(toolBarrier("e0", 7));
    await expect(lost).rejects.toBeInstanceOf(ExecutionRehydrationRequiredError);
    await expect(lost).rejects.toMatchObject({
      code: "EXECUTION_REHYDRATION_REQUIRED",
      executionId: "e0",
      message: expect.stringMatching(/expected revision 7/),
    });
    const purge = store.purgeAgent("support");
    await expect(purge).rejects.toBeInstanceOf(AgentBusyError);
    await expect(purge).rejects.toMatchObject({ code: "AGENT_BUSY", agentId: "support", details: { unfinishedExecutionIds: ["e0"] } });
  });

  it("group commit: one lost compare-and-set among concurrent operations fails alone, its group-mates commit", async () => {
    const store = await preparedStore(policy, 8);
    const groupsBefore = store.offloadStatistics;
    const results = await Promise.allSettled(Array.from({ length: 8 }, (_, index) => store.run(providerBarrier(`e${index}`, index === 5 ? 9 : 1))));
    expect(results.map((result) => result.status)).toEqual([
      "fulfilled",
      "fulfilled",
      "fulfilled",
      "fulfilled",
      "fulfilled",
      "rejected",
      "fulfilled",
      "fulfilled",
    ]);
    expect((results[5] as PromiseRejectedResult).reason).toBeInstanceOf(ExecutionRehydrationRequiredError);
    const statistics = store.offloadStatistics;
    expect(statistics.inlineGroups + statistics.workerGroups - groupsBefore.inlineGroups - groupsBefore.workerGroups).toBe(1);
    expect(statistics.largestGroup).toBe(8);
    for (let index = 0; index < 8; index += 1) {
      const row = await store.getExecution(`e${index}`);
      expect(row?.revision).toBe(index === 5 ? 1 : 2);
      expect((await store.listSteps(`e${index}`)).length).toBe(index === 5 ? 1 : 2);
    }
  });

  it("a raw SQLite failure becomes a StoreError with SQLite's message and the path, failing only its operation", async () => {
    const store = await preparedStore(policy, 3);
    const broken = providerBarrier("e1", 1, { steps: [{ kind: null as unknown as StepKind, at: 1, payload: null }] });
    const results = await Promise.allSettled([store.run(providerBarrier("e0", 1)), store.run(broken), store.run(providerBarrier("e2", 1))]);
    expect(results.map((result) => result.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    const reason = (results[1] as PromiseRejectedResult).reason as StoreError;
    expect(reason).toBeInstanceOf(StoreError);
    expect(reason.message).toContain(store.path);
    expect(reason.message).toMatch(/NOT NULL constraint failed: steps\.kind/);
    expect(reason.details).toEqual({ sqliteCode: "SQLITE_CONSTRAINT_NOTNULL" });
    expect((await store.getExecution("e1"))?.revision).toBe(1);
  });

  it("a full queue refuses the excess synchronously with OffloadFullError; every accepted operation completes", async () => {
    const path = join(await temporaryDirectory(), "tiny.db");
    const store = track(await SqliteStore.open(path, { offloadPolicy: policy, offloadCapacity: 3 }));
    const accepted: Promise<unknown>[] = [];
    const refused: unknown[] = [];
    for (let index = 0; index < 5; index += 1) {
      try {
        accepted.push(store.ensureAgent(`agent-${index}`, index));
      } catch (error) {
        refused.push(error);
      }
    }
    expect(accepted).toHaveLength(3);
    expect(refused).toHaveLength(2);
    for (const error of refused) expect(error).toBeInstanceOf(OffloadFullError);
    expect(await Promise.all(accepted)).toMatchObject([{ agentId: "agent-0" }, { agentId: "agent-1" }, { agentId: "agent-2" }]);
    expect(await store.getAgent("agent-3")).toBeUndefined();
    await expect(store.ensureAgent("agent-3", 3)).resolves.toMatchObject({ lifecycle: "open" });
  });

  it("close finishes accepted work, is harmless twice, and refuses later calls with StoreError", async () => {
    const path = join(await temporaryDirectory(), "close.db");
    const store = await SqliteStore.open(path, { offloadPolicy: policy });
    const writes = Array.from({ length: 20 }, (_, index) => store.ensureAgent(`agent-${index}`, index));
    const closing = store.close();
    expect(store.close()).toBe(closing);
    await closing;
    await expect(Promise.all(writes)).resolves.toHaveLength(20);
    expect(() => store.ensureAgent("late", 1)).toThrow(StoreError);
    expect(() => store.run(prepare("late"))).toThrow(/is closed/);
    await expect(store.getAgent("agent-0")).rejects.toBeInstanceOf(StoreError);
    await store.close();

    const reopened = track(await SqliteStore.open(path, { offloadPolicy: policy }));
    expect(await reopened.getAgent("agent-19")).toMatchObject({ lifecycle: "open" });
  });

  it("many concurrent executions, each a sequence of operations, all end consistent", async () => {
    const executions = 40;
    const store = await preparedStore(policy, executions);
    await workerStarted(store);
    await Promise.all(
      Array.from({ length: executions }, async (_, index) => {
        const id = `e${index}`;
        await store.run(providerBarrier(id, 1));
        await store.run(toolBarrier(id, 2));
        await store.run(providerBarrier(id, 3));
        await store.run(terminalCommit(id, 4));
      }),
    );
    const rows = await store.listExecutions({ limit: executions });
    expect(rows).toHaveLength(executions);
    for (const row of rows) expect(row).toMatchObject({ status: "terminal", revision: 5 });
    const statistics = store.offloadStatistics;
    expect(statistics.largestGroup).toBeGreaterThan(1);
    expect(statistics.inlineGroups + statistics.workerGroups).toBeLessThan(statistics.submitted);
    if (policy === "adaptive") expect(statistics.workerOperations).toBeGreaterThan(0);
  });
});

describe("the adaptive offload's worker starts in the background", () => {
  it("open does not wait for it; until it is ready every group commits inline, then groups go to it", async () => {
    const store = await openTemporaryStore({ offloadPolicy: "adaptive" });
    expect(store.offloadStatistics.workerState).toBe("starting");
    await store.ensureAgent("support", 1);
    await Promise.all(Array.from({ length: 20 }, (_, index) => store.run(prepare(`e${index}`))));
    expect(store.offloadStatistics).toMatchObject({ workerGroups: 0, inlineOperations: 21 });
    await workerStarted(store);
    expect(store.offloadStatistics.workerState).toBe("ready");
    await Promise.all(Array.from({ length: 20 }, (_, index) => store.run(providerBarrier(`e${index}`, 1))));
    expect(store.offloadStatistics.workerOperations).toBe(20);
  });

  it("a close while it starts lets it start, then closes it; the store opens again", async () => {
    const directory = await temporaryDirectory();
    const store = await SqliteStore.open(join(directory, "agents.db"));
    expect(store.offloadStatistics.workerState).toBe("starting");
    await store.close();
    const reopened = track(await SqliteStore.open(join(directory, "agents.db")));
    await reopened.ensureAgent("support", 1);
    expect(await reopened.getAgent("support")).toMatchObject({ lifecycle: "open" });
  });

  it("a worker that cannot start leaves it committing inline for good, with the reason", async () => {
    const committed: string[] = [];
    const offload = await Offload.start({
      policy: "adaptive",
      capacity: 100,
      path: "/nowhere/agents.db",
      commitInline: (operations: readonly OffloadOperation[]) =>
        operations.map((operation) => {
          committed.push(operation.type);
          return { ok: true, value: operation.type };
        }),
      startWorker: () => ({ thread: new Worker("throw new Error('no SQLite here')", { eval: true }), port: new MessageChannel().port1 }),
    });
    await offload.workerStarted;
    expect(offload.statistics).toMatchObject({ workerState: "unavailable", workerFailure: expect.stringMatching(/no SQLite here/) });
    const results = await Promise.all(Array.from({ length: 40 }, (_, index) => offload.submit({ type: "ensureAgent", agentId: `agent-${index}`, at: 1 })));
    expect(results).toHaveLength(40);
    expect(offload.statistics).toMatchObject({ inlineOperations: 40, workerOperations: 0 });
    await offload.close();
  });
});

/** A worker that speaks the store worker's protocol without SQLite: every
 * operation is answered `worker:<type>`; it counts in `started`. */
function protocolWorker(started: { count: number }): () => { thread: Worker; port: MessagePort } {
  return () => {
    started.count += 1;
    const { port1, port2 } = new MessageChannel();
    const source = `
      const { workerData } = require("node:worker_threads");
      const port = workerData.port;
      port.postMessage({ type: "ready" });
      port.on("message", (request) => {
        if (request.type === "commit") {
          const settlements = JSON.parse(request.operations).map((operation) => ({ ok: true, value: "worker:" + operation.type }));
          port.postMessage({ type: "settled", group: request.group, groups: 1, settlements: JSON.stringify(settlements) });
        } else if (request.type === "sweep") port.postMessage({ type: "swept", group: request.group, more: false });
        else if (request.type === "checkpoint") port.postMessage({ type: "checkpointed", frames: 0, copied: 0 });
        else if (request.type === "close") {
          port.postMessage({ type: "closed" });
          port.close();
        }
      });`;
    return { thread: new Worker(source, { eval: true, workerData: { port: port2 }, transferList: [port2] }), port: port1 };
  };
}

async function until(condition: () => boolean): Promise<void> {
  const began = Date.now();
  while (!condition()) {
    if (Date.now() - began > 5_000) throw new Error("the condition did not hold within 5 s");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe("the adaptive offload's worker rests when idle (decision 0121)", () => {
  const inline = (operations: readonly OffloadOperation[]) => operations.map((operation) => ({ ok: true as const, value: `inline:${operation.type}` }));
  const burst = (offload: Offload, count: number) =>
    Promise.all(Array.from({ length: count }, (_, index) => offload.submit({ type: "ensureAgent", agentId: `agent-${index}`, at: 1 })));
  /** An offload on the protocol worker (`started` counts its workers) that rests after `restMs`. */
  const startResting = (started: { count: number }, policy: "adaptive" | "worker", restMs: number) =>
    Offload.start({ policy, capacity: 100, path: "/test/agents.db", commitInline: inline, startWorker: protocolWorker(started), restMs });

  it("stops its worker after restMs idle, commits lone operations inline meanwhile, and starts a new one for a group", async () => {
    const started = { count: 0 };
    const offload = await startResting(started, "adaptive", 50);
    await offload.workerStarted;
    expect(await burst(offload, 20)).toContain("worker:ensureAgent");
    await until(() => offload.statistics.workerState === "resting");
    expect(offload.statistics).toMatchObject({ workerRests: 1, workerRestarts: 0 });
    expect(offload.workerThread).toBeUndefined();
    // A lone operation while it rests: inline, no worker started.
    expect(await offload.submit({ type: "ensureAgent", agentId: "lone", at: 1 })).toBe("inline:ensureAgent");
    expect(started.count).toBe(1);
    // A group wakes it: inline until the new worker is ready, then to it.
    expect(await burst(offload, 20)).toEqual(Array.from({ length: 20 }, () => "inline:ensureAgent"));
    expect(offload.statistics.workerState).toBe("starting");
    await offload.workerStarted;
    expect(offload.statistics.workerState).toBe("ready");
    expect(started.count).toBe(2);
    expect(await burst(offload, 20)).toEqual(Array.from({ length: 20 }, () => "worker:ensureAgent"));
    expect(offload.statistics).toMatchObject({ workerRests: 1, workerRestarts: 0 });
    await offload.close();
  });

  it("a close while it rests or while it wakes finishes; the worker policy never rests", async () => {
    const started = { count: 0 };
    const resting = await startResting(started, "adaptive", 20);
    await until(() => resting.statistics.workerState === "resting");
    await resting.close();
    const waking = await startResting(started, "adaptive", 20);
    await until(() => waking.statistics.workerState === "resting");
    const woken = burst(waking, 5);
    await waking.close();
    expect(await woken).toHaveLength(5);
    const always = await startResting(started, "worker", 20);
    await burst(always, 5);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(always.statistics).toMatchObject({ workerState: "ready", workerRests: 0 });
    await always.close();
  });
});

/** A worker that holds the commit requests it gets until `hold` have
 * arrived, then answers them in one message, as the store worker answers
 * the groups it merged into one transaction (decision 0141), each
 * settlement naming its group and how many were answered with it; `shift`
 * numbers the answer that many groups off, as a worker that lost track. */
function mergingWorker(hold: number, shift = 0): () => { thread: Worker; port: MessagePort } {
  return () => {
    const { port1, port2 } = new MessageChannel();
    const source = `
      const { workerData } = require("node:worker_threads");
      const port = workerData.port;
      const held = [];
      port.postMessage({ type: "ready" });
      const answer = () => {
        const settlements = held.flatMap((group) => JSON.parse(group.operations).map((operation) => ({ ok: true, value: group.group + ":" + operation.agentId + ":" + held.length })));
        port.postMessage({ type: "settled", group: held[0].group + ${shift}, groups: held.length, settlements: JSON.stringify(settlements) });
        held.length = 0;
      };
      port.on("message", (request) => {
        if (request.type === "commit") {
          held.push(request);
          if (held.length >= ${hold}) answer();
        } else if (request.type === "sweep") {
          // A sweep ends a merge: the groups before it are answered first.
          if (held.length > 0) answer();
          port.postMessage({ type: "swept", group: request.group, more: false });
        }
        else if (request.type === "close") {
          port.postMessage({ type: "closed" });
          port.close();
        }
      });`;
    return { thread: new Worker(source, { eval: true, workerData: { port: port2 }, transferList: [port2] }), port: port1 };
  };
}

describe("the worker answers a transaction's groups in one message (decision 0141)", () => {
  const inline = (operations: readonly OffloadOperation[]) => operations.map((operation) => ({ ok: true as const, value: `inline:${operation.type}` }));
  const submitGroups = (offload: Offload, groups: number, size: number) =>
    Array.from({ length: groups * size }, (_, index) => offload.submit({ type: "ensureAgent", agentId: `agent-${index}`, at: 1 }));

  it("settles each operation of each group with its own settlement, in order", async () => {
    const offload = await Offload.start({ policy: "worker", capacity: 1_000, path: "/test/agents.db", commitInline: inline, startWorker: mergingWorker(3) });
    await offload.workerStarted;
    // Three eager groups of 16, answered together (the first sweep, a
    // numbered request too, may come before or after them).
    const results = await Promise.all(submitGroups(offload, 3, 16));
    const answered: number[] = [];
    const groups = results.map((result, index) => {
      const [group, agentId, together] = String(result).split(":");
      expect(agentId).toBe(`agent-${index}`);
      answered.push(Number(together));
      return Number(group);
    });
    expect(Math.max(...answered)).toBeGreaterThan(1);
    // Each group of 16 settled with its own group's settlements, the groups in order.
    groups.forEach((group, index) => expect(group).toBe(index % 16 === 0 ? group : groups[index - 1]));
    const firsts = [groups[0]!, groups[16]!, groups[32]!];
    expect(firsts).toEqual([...firsts].sort((a, b) => a - b));
    expect(new Set(firsts).size).toBe(3);
    expect(offload.statistics).toMatchObject({ workerGroups: 3, workerOperations: 48 });
    expect(offload.pending).toBe(0);
    await offload.close();
  });

  it("an answer for groups that are not the oldest in flight fails them all and breaks the offload", async () => {
    const offload = await Offload.start({ policy: "worker", capacity: 1_000, path: "/test/agents.db", commitInline: inline, startWorker: mergingWorker(2, 1) });
    await offload.workerStarted;
    const results = await Promise.allSettled(submitGroups(offload, 2, 16));
    expect(results.every((result) => result.status === "rejected" && result.reason instanceof StoreError)).toBe(true);
    expect(offload.failure?.message).toMatch(/not the oldest group in flight/);
    await offload.close();
  });
});

describe("a SQLite store's worker rests and wakes (decision 0121)", () => {
  it("its connection closes, writes go on inline, a group starts a new worker, and every write is there after a reopen", async () => {
    const directory = await temporaryDirectory();
    const path = join(directory, "agents.db");
    const store = await SqliteStore.open(path);
    // The store's own offload, its rest shortened (read when the timer is armed, once the worker is ready).
    Object.assign((store as unknown as { offload: { settings: object } }).offload.settings, { restMs: 50 });
    await store.ensureAgent("support", 1);
    await workerStarted(store);
    await Promise.all(Array.from({ length: 10 }, (_, index) => store.run(prepare(`e${index}`))));
    expect(store.offloadStatistics.workerOperations).toBe(10);
    await until(() => store.offloadStatistics.workerState === "resting");
    await store.run(providerBarrier("e0", 1));
    expect(store.offloadStatistics).toMatchObject({ workerState: "resting", workerRests: 1 });
    await Promise.all(Array.from({ length: 9 }, (_, index) => store.run(providerBarrier(`e${index + 1}`, 1))));
    await workerStarted(store);
    await Promise.all(Array.from({ length: 10 }, (_, index) => store.run(toolBarrier(`e${index}`, 2))));
    expect(store.offloadStatistics).toMatchObject({ workerState: "ready", workerRestarts: 0, workerOperations: 20 });
    await store.close();
    const reopened = track(await SqliteStore.open(path, { offloadPolicy: "inline" }));
    for (let index = 0; index < 10; index += 1) expect(await reopened.getExecution(`e${index}`)).toMatchObject({ revision: 3 });
  });
});

describe("offload failures", () => {
  // More in test/store/store-faults.test.ts (a worker replaced, store files removed).
  it("a worker that dies fails what it held with StoreError (outcome unknown) and is replaced; close still works", async () => {
    const store = await preparedStore("worker", 2);
    const worker = (store as unknown as { offload: { workerThread: { terminate(): Promise<number> } } }).offload.workerThread;
    const inFlight = Promise.allSettled([store.run(providerBarrier("e0", 1)), store.run(providerBarrier("e1", 1))]);
    await worker.terminate();
    for (const result of await inFlight) {
      if (result.status === "rejected") expect(result.reason).toMatchObject({ code: "STORE", details: { reason: "store_worker_lost", outcome: "unknown" } });
    }
    expect(store.offloadStatistics.workerRestarts).toBe(1);
    await store.close();
  });
});

describe("offload input checks", () => {
  it("an operation that cannot cross to the worker fails alone with InvalidInputError", async () => {
    const store = await preparedStore("worker", 2);
    const uncloneable = providerBarrier("e0", 1, { steps: [{ kind: "note", at: 1, payload: { callback: () => 1 } as never }] });
    const results = await Promise.allSettled([store.run(uncloneable), store.run(providerBarrier("e1", 1))]);
    expect(results[0]).toMatchObject({ status: "rejected", reason: expect.any(InvalidInputError) });
    expect(results[1]).toEqual({ status: "fulfilled", value: { revision: 2 } });
    expect((await store.getExecution("e0"))?.revision).toBe(1);
  });

  it("a symbol, a function in an array or under a toJSON's result is refused too; what JSON writes as given passes", async () => {
    const store = await preparedStore("worker", 4);
    const payloads = [{ list: [1, () => 2] }, { tag: Symbol("tag") }, { wrapped: { toJSON: () => ({ inner: () => 1 }) } }];
    const refused = payloads.map((payload, index) =>
      store.run(providerBarrier(`e${index}`, 1, { steps: [{ kind: "note", at: 1, payload: payload as never }] })),
    );
    for (const result of await Promise.allSettled(refused)) expect(result).toMatchObject({ status: "rejected", reason: expect.any(InvalidInputError) });
    // A toJSON method is not data: JSON writes its result (a date as text).
    const written = { at: new Date(0), own: { toJSON: () => "own" }, skipped: undefined };
    await expect(store.run(providerBarrier("e3", 1, { steps: [{ kind: "note", at: 1, payload: written as never }] }))).resolves.toEqual({ revision: 2 });
    expect((await store.listSteps("e3")).find((step) => step.kind === "note")?.payload).toEqual({ at: "1970-01-01T00:00:00.000Z", own: "own" });
  });

  it("assertPlainData visits what JSON.stringify writes: own keys, items, a toJSON's result once", () => {
    const inherited = Object.create({ callback: () => 1 }) as object;
    expect(() => assertPlainData({ inherited, nested: [{ deep: [null, 1, "two", true] }] })).not.toThrow();
    const selfReturning = {
      value: 1,
      toJSON() {
        return this;
      },
    };
    // JSON would write {"value":1}, dropping the method it called once.
    expect(() => assertPlainData(selfReturning)).toThrow(/a function is not plain data/);
    // toJSON is given the key it is written under.
    expect(() => assertPlainData({ keyed: { toJSON: (key: string) => (key === "keyed" ? "fine" : () => 1) } })).not.toThrow();
    expect(() => assertPlainData([{ toJSON: (key: string) => (key === "0" ? "fine" : () => 1) }])).not.toThrow();
  });

  it("a run's operations are walked in each value user code gave, under the key JSON writes it with; other operations whole", () => {
    const fn = () => 1;
    const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
    const step = (payload: unknown) => ({ kind: "note", at: 1, payload });
    const journal = (content: unknown) => ({ executionId: "e", role: "user", content, at: 1 });
    const call = (fields: object) => ({ callId: "c", toolName: "t", input: {}, idempotencyKey: "e:c", ...fields });
    const prepare = (fields: object) => ({
      type: "prepareExecution",
      executionId: "e",
      agentId: "a",
      mode: "invoke",
      input: "hi",
      config: {},
      journal: [],
      at: 1,
      ...fields,
    });
    const barrier = (fields: object) => ({
      type: "toolBarrier",
      executionId: "e",
      expectedRevision: 1,
      toolBatch: [],
      steps: [],
      usage,
      turns: 1,
      at: 1,
      ...fields,
    });
    const terminal = (fields: object) => ({
      type: "terminalCommit",
      executionId: "e",
      expectedRevision: 1,
      outcome: "completed",
      output: null,
      error: null,
      usage,
      approvalRequest: null,
      handoff: null,
      steps: [],
      journal: [],
      at: 1,
      ...fields,
    });
    const refused = [
      prepare({ input: { deep: [fn] } }),
      prepare({ config: { budget: fn } }),
      prepare({ blockedBy: { code: "X", message: "m", details: { fn } } }),
      prepare({ journal: [journal({ parts: [Symbol("s")] })] }),
      { type: "providerBarrier", executionId: "e", expectedRevision: 1, callId: "c", steps: [step({ fn })], usage, turns: 1, at: 1 },
      barrier({ toolBatch: [call({ input: { fn } })] }),
      barrier({ toolBatch: [call({ response: [fn] })] }),
      barrier({ toolBatch: [call({ failed: { code: "X", message: "m", details: fn } })] }),
      barrier({ steps: [step({ toJSON: (key: string) => (key === "" ? fn : "fine") })] }),
      terminal({ output: { fn } }),
      terminal({ error: { code: "X", message: "m", details: { fn } } }),
      terminal({ approvalRequest: { fn } }),
      terminal({ handoff: { fn } }),
      terminal({ steps: [step([fn])] }),
      terminal({ journal: [journal(fn)] }),
      terminal({ outcome: "suspended", toolBatch: [call({ input: { fn } })] }),
      { type: "approvalCommit", executionId: "e", expectedRevision: 1, approvalId: "p", approved: true, reason: fn, argumentsHash: "h", at: 1 },
      { type: "ensureAgent", agentId: fn, at: 1 },
    ];
    for (const operation of refused) expect(() => assertOperationData(operation as never), JSON.stringify(operation)).toThrow(/is not plain data/);
    // A toJSON is called with the key JSON writes the value under.
    const keyed = (expected: string) => ({ toJSON: (key: string) => (key === expected ? "fine" : fn) });
    expect(() =>
      assertOperationData(
        terminal({
          output: keyed("output"),
          steps: [step(keyed(""))], // a payload is written as a value of its own (0129)
          journal: [journal(keyed("content"))],
          outcome: "suspended",
          toolBatch: [call({ input: keyed("input") })],
        }) as never,
      ),
    ).not.toThrow();
    expect(() => assertOperationData(prepare({ input: keyed("input"), config: keyed("config") }) as never)).not.toThrow();
  });

  it("refuses a malformed operation synchronously with InvalidInputError, before queueing", async () => {
    const store = await openTemporaryStore();
    expect(() => store.run(providerBarrier("", 1))).toThrow(InvalidInputError);
    expect(() => store.run(providerBarrier("e1", 0))).toThrow(/expectedRevision must be a positive integer/);
    expect(() => store.run({ type: "dropTables" } as never)).toThrow(/unknown store operation "dropTables"/);
    expect(store.offloadStatistics.submitted).toBe(0);
  });
});

describe("the offload under a chain of inline commits", () => {
  for (const policy of ["inline", "adaptive"] as OffloadPolicy[]) {
    it(`(${policy}) yields to the event loop between groups: a timer fires while 20 chains of operations run`, async () => {
      const store = await openTemporaryStore({ offloadPolicy: policy, synchronous: "NORMAL" });
      const chainsCount = 20;
      const steps = 100;
      let completed = 0;
      let completedWhenTimerFired = -1;
      const timer = new Promise<void>((resolve) =>
        setTimeout(() => {
          completedWhenTimerFired = completed;
          resolve();
        }, 1),
      );
      // Each completion submits the next operation at once, as the runtime
      // does: a flush that never yields would starve the timer until every
      // operation is done (each event-loop round commits one group of at
      // most one operation per chain, so yielding means ≥ steps rounds).
      const chains = Array.from({ length: chainsCount }, async (_, index) => {
        for (let step = 0; step < steps; step += 1) {
          await store.run({ type: "ensureAgent", agentId: `agent-${index}-${step}`, at: step } as never);
          completed += 1;
        }
      });
      await Promise.all(chains);
      await timer;
      expect(completedWhenTimerFired).toBeLessThan(chainsCount * steps);
    });
  }
});
