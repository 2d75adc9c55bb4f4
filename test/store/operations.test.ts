// What the SQLite store alone is asked beyond the conformance suite that
// every store passes (test/store-conformance/suite.ts: each operation's
// rows, steps, journal and results, the compare-and-set, the agent
// lifecycle, the reads): the conversation root a preparation writes in one
// statement, a write's steps in one INSERT of several rows, and a row
// changed behind the store's back.

import { describe, expect, it } from "vitest";
import { StoreError } from "../../host/errors.js";
import type { SqliteStore } from "../../host/store/sqlite-store.js";
import { stepsPerInsertMax } from "../../host/store/sqlite/timeline.js";
import type { StepRecord } from "../../host/store/records.js";
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

describe("a write's steps (docs/decisions/0126: one INSERT of up to stepsPerInsertMax rows)", () => {
  it("appends any number of steps after the last, in order and numbered without a gap, across as many INSERTs as they need", async () => {
    const store = await openTemporaryStore();
    expect(await store.run(prepare("e1"))).toMatchObject({ outcome: "active", revision: 1 });
    const stepsOf = (count: number, from: number): StepRecord[] =>
      Array.from({ length: count }, (_, index) => ({ kind: "tool_results", at: 20, payload: { n: from + index, text: `step "${from + index}"\n` } }));
    // Carried steps, each write adding its own barrier step after them.
    const counts = [0, 1, stepsPerInsertMax - 1, stepsPerInsertMax, 2 * stepsPerInsertMax + 1];
    let revision = 1;
    let carried = 0;
    for (const count of counts) {
      const written = await store.run({
        type: "providerBarrier",
        executionId: "e1",
        expectedRevision: revision,
        callId: `call-${revision}`,
        steps: stepsOf(count, carried),
        usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
        turns: revision,
        at: 20,
      });
      revision = written.revision;
      carried += count;
    }
    const steps = await store.listSteps("e1");
    expect(steps.map((step) => step.seq)).toEqual(Array.from({ length: steps.length }, (_, index) => index + 1));
    expect(steps[0]).toMatchObject({ kind: "input", payload: "Where is order 42?" });
    const kinds = steps.slice(1).map((step) => step.kind);
    expect(kinds.filter((kind) => kind === "provider_barrier")).toHaveLength(counts.length);
    const payloads = steps.filter((step) => step.kind === "tool_results").map((step) => step.payload);
    expect(payloads).toEqual(stepsOf(carried, 0).map((step) => step.payload));
    // Each barrier's step right after the steps it carried.
    let at = 1;
    for (const [index, count] of counts.entries()) {
      at += count + 1;
      expect(steps[at - 1]).toMatchObject({ kind: "provider_barrier", payload: { callId: `call-${index + 1}` } });
    }
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
