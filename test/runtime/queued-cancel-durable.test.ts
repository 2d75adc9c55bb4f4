// A queued message cancelled through its start's signal (issue 24, item
// 5; docs/decisions/0057): its Run is told CANCELLED only once the store
// holds the cancel, as `env.cancel(id)` answers — a process killed before
// that would otherwise run a message its caller was told is cancelled.
// The store's cancel write is held at its door here, so the window is
// seen without a clock.

import { describe, expect, it } from "vitest";
import { StoreError } from "../../host/index.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import type { ExecutionStore } from "../../host/store/store.js";
import { startExecutionIdOf } from "../../host/store/start-filing.js";
import { deferred, echoModel, lookupTool, openEnvironment, temporaryStorePath } from "./helpers.js";

/** A SQLite store whose queue writes (`enqueueMessage`, `cancelQueued`)
 * wait at its door while held; `committed` says whether the first cancel
 * has committed. */
async function heldQueueStore(path: string) {
  const store = await SqliteStore.open(path);
  const state = {
    cancelCommitted: false,
    cancelReached: deferred(),
    cancelGate: deferred(),
    enqueueGate: undefined as Promise<void> | undefined,
    enqueueAnswerGate: undefined as Promise<void> | undefined,
    enqueueReached: deferred(),
  };
  const proxy = new Proxy(store, {
    get(target, property, receiver) {
      if (property === "cancelQueued") {
        return async (...args: Parameters<SqliteStore["cancelQueued"]>) => {
          state.cancelReached.resolve();
          await state.cancelGate.promise;
          const result = await target.cancelQueued(...args);
          state.cancelCommitted = true;
          return result;
        };
      }
      if (property === "enqueueMessage") {
        return async (...args: Parameters<SqliteStore["enqueueMessage"]>) => {
          const gate = state.enqueueGate;
          if (gate !== undefined) {
            state.enqueueReached.resolve();
            await gate;
          }
          const result = await target.enqueueMessage(...args);
          const answerGate = state.enqueueAnswerGate;
          if (answerGate !== undefined) {
            state.enqueueReached.resolve();
            await answerGate;
          }
          return result;
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as unknown as ExecutionStore;
  return { store: proxy, state, sqlite: store };
}

/** Lets every queued callback and I/O completion run a few rounds. */
async function settleRounds(): Promise<void> {
  for (let round = 0; round < 20; round += 1) await new Promise((resolve) => setImmediate(resolve));
}

/** A SQLite store whose first `failures` `cancelQueued` calls fail
 * (nothing written); `attemptsAt` records when each call came. */
async function failingCancelStore(path: string, failures = 1) {
  const store = await SqliteStore.open(path);
  const state = { cancelFailures: 0, cancelCommitted: false, attemptsAt: [] as number[] };
  const proxy = new Proxy(store, {
    get(target, property, receiver) {
      if (property === "cancelQueued") {
        return async (...args: Parameters<SqliteStore["cancelQueued"]>) => {
          state.attemptsAt.push(performance.now());
          if (state.cancelFailures < failures) {
            state.cancelFailures += 1;
            throw new StoreError("injected: database or disk is full (SQLITE_FULL) during cancelQueued");
          }
          const result = await target.cancelQueued(...args);
          state.cancelCommitted = true;
          return result;
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as unknown as ExecutionStore;
  return { store: proxy, state };
}

describe("a queued message cancelled through its start's signal", () => {
  it("its cancel write failing: it stays queued and is never started, the cancel is written again, and only then is its Run told", async () => {
    const failing = await failingCancelStore(await temporaryStorePath());
    const env = await openEnvironment({ store: failing.store });
    const gate = deferred();
    const agent = env.agent({ id: "failing", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const first = agent.start("m0");
    await first.executionId;
    const controller = new AbortController();
    const cancelled = agent.start("m1", { signal: controller.signal });
    const kept = agent.start("m2");
    const [cancelledId] = await Promise.all([cancelled.executionId, kept.executionId]);
    let committedWhenRejected: boolean | undefined;
    const rejected = cancelled.result.then(
      () => undefined,
      (error: unknown) => {
        committedWhenRejected = failing.state.cancelCommitted;
        return error;
      },
    );
    controller.abort();
    // The first execution ends while the cancel is not written: the aborted
    // message must not be started, and the one behind it runs after it.
    gate.resolve();
    await expect(first.result).resolves.toMatchObject({ output: "echo: m0" });
    await expect(rejected).resolves.toMatchObject({ code: "CANCELLED", executionId: cancelledId });
    expect(failing.state.cancelFailures).toBe(1);
    expect(committedWhenRejected).toBe(true);
    expect(await env.execution(cancelledId!)).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "CANCELLED" } });
    expect((await env.timeline(cancelledId!)).map((step) => step.kind)).toEqual(["queued", "terminal"]);
    await expect(kept.result).resolves.toMatchObject({ output: "echo: m2" });
    await env.close();
  });

  it("its cancel write failing again and again: written again after 250 ms, doubling (not every 250 ms)", async () => {
    const failing = await failingCancelStore(await temporaryStorePath(), 4);
    const env = await openEnvironment({ store: failing.store });
    const gate = deferred();
    const agent = env.agent({ id: "failing-often", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const first = agent.start("m0");
    await first.executionId;
    const controller = new AbortController();
    const cancelled = agent.start("m1", { signal: controller.signal });
    await cancelled.executionId;
    controller.abort();
    await expect(cancelled.result).rejects.toMatchObject({ code: "CANCELLED" });
    const at = failing.state.attemptsAt;
    expect(at).toHaveLength(5);
    const intervals = at.slice(1).map((time, index) => time - at[index]!);
    console.log(`intervals between cancel attempts (ms): ${intervals.map((ms) => Math.round(ms)).join(", ")}`);
    // Timers never fire early: each wait is at least its doubled delay
    // (250, 500, 1000, 2000 ms; a few ms of timer slack allowed).
    expect(intervals[2]).toBeGreaterThanOrEqual(990);
    expect(intervals[3]).toBeGreaterThanOrEqual(1990);
    gate.resolve();
    await expect(first.result).resolves.toMatchObject({ output: "echo: m0" });
    await env.close();
  }, 30_000);

  it("rejects CANCELLED only after the store holds the cancel; until then it is still queued there and the Run waits", async () => {
    const held = await heldQueueStore(await temporaryStorePath());
    const env = await openEnvironment({ store: held.store });
    const gate = deferred();
    const agent = env.agent({ id: "signals", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const first = agent.start("m0");
    await first.executionId;
    const controller = new AbortController();
    const cancelled = agent.start("m1", { signal: controller.signal });
    const kept = agent.start("m2");
    const [cancelledId] = await Promise.all([cancelled.executionId, kept.executionId]);
    let committedWhenRejected: boolean | undefined;
    const rejected = cancelled.result.then(
      () => undefined,
      (error: unknown) => {
        committedWhenRejected = held.state.cancelCommitted;
        return error;
      },
    );
    controller.abort();
    await held.state.cancelReached.promise;
    await settleRounds();
    expect(committedWhenRejected).toBeUndefined();
    expect((await env.execution(cancelledId!))?.status).toBe("queued");
    held.state.cancelGate.resolve();
    await expect(rejected).resolves.toMatchObject({ code: "CANCELLED", executionId: cancelledId });
    expect(committedWhenRejected).toBe(true);
    expect(await env.execution(cancelledId!)).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "CANCELLED" } });
    gate.resolve();
    await expect(kept.result).resolves.toMatchObject({ output: "echo: m2" });
    await expect(first.result).resolves.toMatchObject({ output: "echo: m0" });
    await env.close();
  });

  it("cancelled by id while its committed enqueue's answer is on its way, then the environment closes before the cancel's write answers: env.cancel settles RUNTIME_SHUTDOWN", async () => {
    const held = await heldQueueStore(await temporaryStorePath());
    const env = await openEnvironment({ store: held.store });
    const gate = deferred();
    const agent = env.agent({ id: "closing", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const first = agent.start("m0");
    await first.executionId;
    // The enqueue commits; its answer is held.
    const answerGate = deferred();
    held.state.enqueueAnswerGate = answerGate.promise;
    const queued = agent.start("m1", { idempotencyKey: "k-closing" });
    void queued.result.catch(() => undefined);
    await held.state.enqueueReached.promise;
    const executionId = startExecutionIdOf("closing", "k-closing");
    const cancel = env.cancel(executionId);
    void cancel.catch(() => undefined);
    await settleRounds();
    // The answer comes while the environment drains; the cancel's write
    // that follows it is held (never answered) until after the close.
    const closed = env.close();
    gate.resolve();
    answerGate.resolve();
    await held.state.cancelReached.promise;
    await closed;
    await expect(cancel).rejects.toMatchObject({ code: "RUNTIME_SHUTDOWN", executionId });
  }, 10_000);

  it("cancelled by id while its committed enqueue's answer is on its way, the answer coming only after the environment closed: env.cancel settles RUNTIME_SHUTDOWN", async () => {
    const held = await heldQueueStore(await temporaryStorePath());
    held.state.cancelGate.resolve();
    const env = await openEnvironment({ store: held.store });
    const gate = deferred();
    const agent = env.agent({ id: "closing", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const first = agent.start("m0");
    await first.executionId;
    const answerGate = deferred();
    held.state.enqueueAnswerGate = answerGate.promise;
    const queued = agent.start("m1", { idempotencyKey: "k-late" });
    void queued.result.catch(() => undefined);
    await held.state.enqueueReached.promise;
    const executionId = startExecutionIdOf("closing", "k-late");
    const cancel = env.cancel(executionId);
    void cancel.catch(() => undefined);
    await settleRounds();
    const closed = env.close();
    gate.resolve();
    await closed;
    // Posted to the closed loop: never applied.
    answerGate.resolve();
    await settleRounds();
    await expect(cancel).rejects.toMatchObject({ code: "RUNTIME_SHUTDOWN", executionId });
    expect(held.state.cancelCommitted).toBe(false);
  }, 10_000);

  it("aborted while its enqueue is still being written: told CANCELLED once the cancel after that write committed", async () => {
    const held = await heldQueueStore(await temporaryStorePath());
    const env = await openEnvironment({ store: held.store });
    const gate = deferred();
    const agent = env.agent({ id: "writing", model: echoModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const first = agent.start("m0");
    await first.executionId;
    const enqueueGate = deferred();
    held.state.enqueueGate = enqueueGate.promise;
    const controller = new AbortController();
    const cancelled = agent.start("m1", { signal: controller.signal });
    let committedWhenRejected: boolean | undefined;
    const rejected = cancelled.result.then(
      () => undefined,
      (error: unknown) => {
        committedWhenRejected = held.state.cancelCommitted;
        return error;
      },
    );
    await held.state.enqueueReached.promise;
    controller.abort();
    await settleRounds();
    expect(committedWhenRejected).toBeUndefined();
    enqueueGate.resolve();
    await held.state.cancelReached.promise;
    await settleRounds();
    expect(committedWhenRejected).toBeUndefined();
    held.state.cancelGate.resolve();
    await expect(rejected).resolves.toMatchObject({ code: "CANCELLED" });
    expect(committedWhenRejected).toBe(true);
    const id = await cancelled.executionId;
    expect(await env.execution(id!)).toMatchObject({ status: "terminal", error: { code: "CANCELLED" } });
    gate.resolve();
    await expect(first.result).resolves.toMatchObject({ output: "echo: m0" });
    await env.close();
  });
});
