// Which entry the SQLite store's worker starts from when the host runs from
// its `.ts` sources on Node: the tests' bundle of it (test/support/
// store-worker-bundle.ts, named in PHRONOMY_TEST_STORE_WORKER), or without
// one, the bootstrap that registers tsx in the worker, as `tsx` scripts and
// the CLI run from the sources. Every other store test uses the bundle, so
// the bootstrap is started here.

import { afterEach, describe, expect, it } from "vitest";
import { StoreError } from "../../host/errors.js";
import type { SqliteStore } from "../../host/store/sqlite-store.js";
import { openTemporaryStore, prepare } from "./fixtures.js";

const bundleVariable = "PHRONOMY_TEST_STORE_WORKER";
const bundlePath = process.env[bundleVariable];

afterEach(() => {
  if (bundlePath === undefined) delete process.env[bundleVariable];
  else process.env[bundleVariable] = bundlePath;
});

/** Until the store's worker is ready (or could not start). */
async function workerStarted(store: SqliteStore): Promise<void> {
  while (store.offloadStatistics.workerState === "starting") await new Promise((resolve) => setTimeout(resolve, 5));
}

async function commitsThroughItsWorker(store: SqliteStore): Promise<void> {
  await workerStarted(store);
  expect(store.offloadStatistics.workerState).toBe("ready");
  await store.ensureAgent("support", 1);
  await Promise.all(Array.from({ length: 50 }, (_, index) => store.run(prepare(`e${index}`))));
  expect(store.offloadStatistics.workerOperations).toBeGreaterThanOrEqual(50);
}

describe("the SQLite store's worker entry from the sources", () => {
  it("is the tests' plain-JavaScript bundle during a test run", async () => {
    expect(bundlePath).toMatch(/build\/test-store-worker\/worker\.mjs$/);
    await commitsThroughItsWorker(await openTemporaryStore({ offloadPolicy: "worker" }));
  });

  it("is the file the variable names", async () => {
    process.env[bundleVariable] = `${bundlePath}.missing`;
    const opening = openTemporaryStore({ offloadPolicy: "worker" });
    await expect(opening).rejects.toThrow(StoreError);
    await expect(opening).rejects.toThrow(/worker .* failed to start: Cannot find module '.*worker\.mjs\.missing'/);
  });

  it("is worker.ts under tsx, registered in the worker, without the bundle", async () => {
    delete process.env[bundleVariable];
    await commitsThroughItsWorker(await openTemporaryStore({ offloadPolicy: "worker" }));
  });
});
