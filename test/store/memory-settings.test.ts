// What the SQLite store keeps in memory (docs/decisions/0028-memory-of-
// idle-and-suspended.md): each of its connections a page cache of SQLite's
// default size (better-sqlite3 builds SQLite with 16,000 KiB), and its
// worker a small young generation.

import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { pageCacheKib, openStoreConnection } from "../../host/store/sqlite/schema.js";
import { workerYoungGenerationMb } from "../../host/store/sqlite/start-worker.js";
import type { SqliteStore } from "../../host/store/sqlite-store.js";
import { openTemporaryStore, prepare, temporaryDirectory } from "./fixtures.js";

/** Until the store's worker is ready (or could not start). */
async function workerStarted(store: SqliteStore): Promise<void> {
  while (store.offloadStatistics.workerState === "starting") await new Promise((resolve) => setTimeout(resolve, 5));
}

describe("store memory settings", () => {
  it("opens every store connection with a page cache of 2,000 KiB", async () => {
    expect(pageCacheKib).toBe(2_000);
    const connection = openStoreConnection(join(await temporaryDirectory(), "cache.db"), { synchronous: "FULL" });
    try {
      expect(connection.prepare("PRAGMA cache_size").get()).toEqual({ cache_size: -pageCacheKib });
    } finally {
      connection.close();
    }
  });

  it("starts the worker with a young generation of 2 MB, and it commits groups", async () => {
    const store = await openTemporaryStore({ offloadPolicy: "worker" });
    await workerStarted(store);
    const thread = store["offload"].workerThread!;
    expect(thread.resourceLimits?.maxYoungGenerationSizeMb).toBe(workerYoungGenerationMb);
    await store.ensureAgent("support", 1);
    await Promise.all(Array.from({ length: 500 }, (_, index) => store.run(prepare(`e${index}`))));
    expect(store.offloadStatistics.workerOperations).toBeGreaterThanOrEqual(500);
  });
});
