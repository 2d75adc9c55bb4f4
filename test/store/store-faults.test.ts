// The SQLite store under two faults of its surroundings (docs/decisions/0021):
// its files removed or replaced while it runs — no write is acknowledged
// once that is seen, and every later write is refused with a StoreError
// naming the path — and its worker thread dying — what the worker held
// fails with its outcome unknown (each operation committed whole or not at
// all), a new worker takes over, and after `workerRestartsMax` deaths the
// store refuses every write.

import { renameSync, rmSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { StoreError } from "../../host/errors.js";
import { workerRestartsMax, type OffloadPolicy } from "../../host/store/offload.js";
import type { SqliteStore } from "../../host/store/sqlite-store.js";
import { openTemporaryStore, prepare, providerBarrier, rawValue, toolBarrier } from "./fixtures.js";

const policies: readonly OffloadPolicy[] = ["adaptive", "worker", "inline"];

async function workerReady(store: SqliteStore): Promise<void> {
  while (store.offloadStatistics.workerState === "starting") await new Promise((resolve) => setTimeout(resolve, 5));
}

function workerThread(store: SqliteStore): { terminate(): Promise<number> } {
  const thread = (store as unknown as { offload: { workerThread?: { terminate(): Promise<number> } } }).offload.workerThread;
  if (thread === undefined) throw new Error("the store has no worker");
  return thread;
}

/** A store of `count` prepared executions e0… (revision 1), worker ready. */
async function preparedStore(policy: OffloadPolicy, count: number): Promise<SqliteStore> {
  const store = await openTemporaryStore({ offloadPolicy: policy });
  await workerReady(store);
  await store.ensureAgent("support", 1);
  await Promise.all(Array.from({ length: count }, (_, index) => store.run(prepare(`e${index}`))));
  return store;
}

const changes = {
  "the database file removed": (path: string) => rmSync(path),
  "the database file replaced by another": (path: string) => {
    writeFileSync(`${path}.other`, "");
    renameSync(`${path}.other`, path);
  },
  "the write-ahead log removed": (path: string) => rmSync(`${path}-wal`),
} as const;

describe.each(policies)("store files changed while open (offload %s)", (policy) => {
  for (const [name, change] of Object.entries(changes)) {
    it(`${name}: the next write fails with StoreError naming the path, and every write after it is refused`, async () => {
      const store = await preparedStore(policy, 20);
      change(store.path);
      // A group of twenty, committed (into files no longer at the path),
      // then checked: none of them is acknowledged.
      const outcomes = await Promise.allSettled(Array.from({ length: 20 }, (_, index) => store.run(providerBarrier(`e${index}`, 1))));
      for (const outcome of outcomes) {
        expect(outcome.status).toBe("rejected");
        const reason = (outcome as PromiseRejectedResult).reason as StoreError;
        expect(reason).toBeInstanceOf(StoreError);
        expect(reason).toMatchObject({ code: "STORE", details: { reason: "store_file_replaced", storePath: store.path } });
        expect(reason.message).toContain(store.path);
        expect(reason.message).toMatch(/was (removed|replaced by another file)/);
      }
      expect(store.failure).toMatchObject({ details: { reason: "store_file_replaced" } });
      expect(() => store.run(toolBarrier("e0", 2))).toThrow(store.failure!.message);
      expect(() => store.ensureAgent("other", 1)).toThrow(StoreError);
      await store.close();
    });
  }

  it("a removed file is noticed without any write, by the periodic look", async () => {
    const store = await preparedStore(policy, 1);
    rmSync(store.path);
    while (store.failure === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(() => store.run(providerBarrier("e0", 1))).toThrow(/was removed/);
    await store.close();
  });
});

describe("the store worker dies", () => {
  for (const policy of ["worker", "adaptive"] as const) {
    it(`(${policy}) what it held fails with its outcome unknown, each operation whole or not at all; a new worker commits the rest`, async () => {
      const store = await preparedStore(policy, 60);
      const held = Array.from({ length: 60 }, (_, index) => store.run(providerBarrier(`e${index}`, 1)));
      // Sent to the worker in eager groups: kill it while it holds them.
      expect(store.offloadStatistics.workerOperations).toBeGreaterThan(0);
      await workerThread(store).terminate();
      const outcomes = await Promise.allSettled(held);
      const lost = outcomes.filter((outcome) => outcome.status === "rejected");
      expect(lost.length).toBeGreaterThan(0);
      for (const outcome of lost) {
        expect((outcome as PromiseRejectedResult).reason).toMatchObject({ code: "STORE", details: { reason: "store_worker_lost", outcome: "unknown" } });
      }
      // Whole or nothing: a barrier is durable with its step, or neither is.
      for (let index = 0; index < 60; index += 1) {
        const revision = rawValue(store.path, "SELECT revision FROM executions WHERE execution_id = ?", `e${index}`);
        const steps = rawValue(
          store.path,
          "SELECT count(*) FROM steps JOIN executions ON executions.rowid = steps.execution_rowid WHERE execution_id = ? AND kind = 'provider_barrier'",
          `e${index}`,
        );
        expect([revision, steps]).toEqual(revision === 1 ? [1, 0] : [2, 1]);
        if (outcomes[index]!.status === "fulfilled") expect(revision).toBe(2);
      }
      expect(store.offloadStatistics.workerRestarts).toBe(1);
      await workerReady(store);
      expect(store.offloadStatistics.workerState).toBe("ready");
      const before = store.offloadStatistics.workerOperations;
      // Every execution goes on from its durable revision, through the new worker.
      await Promise.all(
        Array.from({ length: 60 }, async (_, index) => {
          const revision = Number(rawValue(store.path, "SELECT revision FROM executions WHERE execution_id = ?", `e${index}`));
          return store.run(toolBarrier(`e${index}`, revision));
        }),
      );
      expect(store.offloadStatistics.workerOperations).toBeGreaterThan(before);
      expect(store.failure).toBeUndefined();
      await store.close();
    });
  }

  it(`after ${workerRestartsMax} replacements, the next death leaves the store refusing every write, saying why`, async () => {
    const store = await preparedStore("worker", 1);
    for (let death = 0; death < workerRestartsMax; death += 1) {
      await workerThread(store).terminate();
      await workerReady(store);
      expect(store.offloadStatistics).toMatchObject({ workerState: "ready", workerRestarts: death + 1 });
    }
    await workerThread(store).terminate();
    // The exit is reported on a later turn.
    while (store.failure === undefined) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(store.failure.message).toMatch(new RegExp(`stopped ${workerRestartsMax + 1} times`));
    expect(() => store.run(providerBarrier("e0", 1))).toThrow(StoreError);
    await store.close();
  });
});
