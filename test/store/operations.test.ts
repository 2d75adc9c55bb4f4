// What the SQLite store alone is asked beyond the conformance suite that
// every store passes (test/store-conformance/suite.ts: each operation's
// rows, steps, journal and results, the compare-and-set, the agent
// lifecycle, the reads): the conversation root a preparation writes in one
// statement, and a row changed behind the store's back.

import { describe, expect, it } from "vitest";
import { StoreError } from "../../host/errors.js";
import type { SqliteStore } from "../../host/store/sqlite-store.js";
import { openTemporaryStore, prepare, rawExec } from "./fixtures.js";

async function storeWithAgent(): Promise<SqliteStore> {
  const store = await openTemporaryStore();
  await store.ensureAgent("support", 1);
  return store;
}

describe("prepareExecution", () => {
  it("writes the root of an agent that has none (docs/decisions/0024); is not established for a closed agent (AGENT_CLOSED) or a reused execution id (INVALID_INPUT)", async () => {
    const store = await storeWithAgent();
    expect(await store.getAgent("nobody")).toBeUndefined();
    expect(await store.run(prepare("e1", "nobody"))).toMatchObject({ outcome: "active" });
    expect(await store.getAgent("nobody")).toMatchObject({ lifecycle: "open" });
    await store.run(prepare("e2"));
    const reused = await store.run(prepare("e2"));
    expect(reused).toMatchObject({ outcome: "not_established", error: { code: "INVALID_INPUT" } });
    expect(reused.outcome === "not_established" && reused.error.message).toContain("e2");
    await store.closeAgent("support", 5);
    expect(await store.run(prepare("e3"))).toMatchObject({ outcome: "not_established", error: { code: "AGENT_CLOSED" } });
    expect(await store.getExecution("e1")).toMatchObject({ agentId: "nobody", status: "active" });
    expect(await store.getExecution("e3")).toBeUndefined();
    // A conversation closed before it ever ran: its root is written closed.
    await store.closeAgent("never-ran", 6);
    expect(await store.run(prepare("e4", "never-ran"))).toMatchObject({ outcome: "not_established", error: { code: "AGENT_CLOSED" } });
  });

  it("writes the root exactly as an insert, a read and an update did (issue 25: one statement now): new at revision 2, +1 per preparation, untouched when refused", async () => {
    const store = await openTemporaryStore();
    await store.run(prepare("e1", "nobody"));
    expect(await store.getAgent("nobody")).toMatchObject({ lifecycle: "open", revision: 2, createdAt: 10, updatedAt: 10 });
    await store.run({ ...prepare("e2", "nobody"), at: 20 });
    expect(await store.getAgent("nobody")).toMatchObject({ lifecycle: "open", revision: 3, createdAt: 10, updatedAt: 20 });
    // A reused execution id: refused, the root not bumped, but written if new.
    expect(await store.run({ ...prepare("e2", "nobody"), at: 30 })).toMatchObject({ outcome: "not_established", error: { code: "INVALID_INPUT" } });
    expect(await store.getAgent("nobody")).toMatchObject({ revision: 3, updatedAt: 20 });
    expect(await store.run({ ...prepare("e2", "fresh"), at: 30 })).toMatchObject({ outcome: "not_established", error: { code: "INVALID_INPUT" } });
    expect(await store.getAgent("fresh")).toMatchObject({ lifecycle: "open", revision: 1, createdAt: 30, updatedAt: 30 });
    // A closed root: refused before the reused id, and not written.
    await store.closeAgent("nobody", 40);
    const closed = await store.getAgent("nobody");
    expect(await store.run({ ...prepare("e2", "nobody"), at: 50 })).toMatchObject({ outcome: "not_established", error: { code: "AGENT_CLOSED" } });
    expect(await store.run({ ...prepare("e5", "nobody"), at: 50 })).toMatchObject({ outcome: "not_established", error: { code: "AGENT_CLOSED" } });
    expect(await store.getAgent("nobody")).toEqual(closed);
    expect(await store.getExecution("e5")).toBeUndefined();
    expect(await store.listSteps("e5")).toEqual([]);
  });
});

describe("a file changed behind the store", () => {
  it("a row changed behind the store's back surfaces as a StoreError naming the file", async () => {
    const store = await openTemporaryStore();
    await store.ensureAgent("support", 1);
    await store.run(prepare("e1"));
    rawExec(store.path, "UPDATE executions SET usage = '{not json' WHERE execution_id = 'e1'");
    await expect(store.getExecution("e1")).rejects.toBeInstanceOf(StoreError);
    await expect(store.getExecution("e1")).rejects.toThrow(store.path);
  });
});
