// Pruning keeps up with executions finishing (issue 24 item 12,
// docs/decisions/0059). Each prune batch waits for its turn at the store —
// under load, a group commit behind the hot path's barriers — and
// executions finish meanwhile. Here that wait is made explicit: the store
// finishes `FINISHED_PER_BATCH` runs before it takes each batch, so the
// test counts in batches, not milliseconds. With a fixed batch of 32
// every pass met a backlog larger than the last (the store grows without
// bound); with batches that grow while they come back full, each pass
// removes what finished during the previous one and the backlog stays
// bounded.

import { describe, expect, it } from "vitest";
import { SqliteStore, type Agent, type Environment } from "../../host/index.js";
import type { PruneCounts, PruneExecutionsOperation } from "../../host/store/prune.js";
import { openEnvironment, scriptedModel, temporaryStorePath } from "./helpers.js";

/** Runs that finish while one prune batch waits for the store. */
const FINISHED_PER_BATCH = 50;
/** Finished before the first pass: the backlog it starts from. */
const BACKLOG_AT_START = 320;
const PASSES = 4;

async function finish(agents: readonly Agent[], count: number): Promise<void> {
  for (let done = 0; done < count; done += agents.length) {
    const results = await Promise.all(agents.slice(0, Math.min(agents.length, count - done)).map((agent) => agent.start("hello").result));
    for (const result of results) expect(result.outcome).toBe("completed");
  }
}

interface Pass {
  readonly removed: number;
  readonly batches: number[];
}

describe("the pruner keeps up with executions finishing (issue 24 item 12)", () => {
  it(`with ${FINISHED_PER_BATCH} runs finishing per batch, no pass meets a larger backlog than the first`, async () => {
    const store = await SqliteStore.open(await temporaryStorePath());
    let agents: Agent[] = [];
    let current: number[] = [];
    const prune = store.pruneExecutions.bind(store);
    store.pruneExecutions = async (operation: PruneExecutionsOperation): Promise<PruneCounts> => {
      // The batch's wait for the store: executions finish meanwhile.
      await finish(agents, FINISHED_PER_BATCH);
      const counts = await prune(operation);
      current.push(counts.executions);
      return counts;
    };
    const env: Environment = await openEnvironment({ store, retention: { finishedMs: "forever" } });
    const model = scriptedModel(() => ({ text: "hi" }));
    agents = Array.from({ length: FINISHED_PER_BATCH }, (_, index) => env.agent({ id: `conversation-${index}`, model }));
    await finish(agents, BACKLOG_AT_START);
    const passes: Pass[] = [];
    for (let index = 0; index < PASSES; index += 1) {
      current = [];
      // A pass: everything finished before it is old enough.
      const report = await env.prune({ olderThanMs: 0 });
      passes.push({ removed: report.executions, batches: current });
    }
    console.log(`passes (executions removed: per batch): ${passes.map((pass) => `${pass.removed}: ${pass.batches.join(" ")}`).join("; ")}`);
    expect(passes[0]!.removed).toBeGreaterThanOrEqual(BACKLOG_AT_START);
    for (const [index, pass] of passes.entries()) {
      expect(pass.removed, `pass ${index + 1} met a larger backlog than the first: pruning fell behind`).toBeLessThanOrEqual(passes[0]!.removed);
    }
    // Per batch, at least as many removed as finished while it waited.
    const removed = passes.slice(1).reduce((sum, pass) => sum + pass.removed, 0);
    const batches = passes.slice(1).reduce((sum, pass) => sum + pass.batches.length, 0);
    expect(removed / batches).toBeGreaterThanOrEqual(FINISHED_PER_BATCH * 0.9);
  }, 120_000);
});
