// env.recover() reads the unfinished executions once (its scan), then
// recovers each conversation in turn. A conversation whose suspended
// execution is decided, completes and is let go while that pass runs is
// used again by the pass from the scan's rows, which still show it
// suspended: those rows are read again first, so the completed execution
// is not installed a second time (host fuzz seed 2532863915: a later
// env.wait answered APPROVAL_REQUIRED for a completed execution, and the
// conversation stayed held by it).

import { describe, expect, it } from "vitest";
import type { Environment } from "../../host/index.js";
import type { ExecutionRow } from "../../host/store/records.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import type { ExecutionStore } from "../../host/store/store.js";
import { approvalRefundTool, deferred, openEnvironment, scriptedModel, temporaryStorePath, turnOf, waitFor } from "./helpers.js";

/** A SQLite store whose next scan of unfinished executions, once `hold()`
 * is called, reads the rows at once and answers them only on `release()`. */
async function heldScanStore() {
  const store = await SqliteStore.open(await temporaryStorePath());
  let held: { read: ReturnType<typeof deferred<void>>; answer: ReturnType<typeof deferred<void>> } | undefined;
  const unfinishedExecutions = async (): Promise<ExecutionRow[]> => {
    const scan = held;
    held = undefined;
    const rows = await store.unfinishedExecutions();
    if (scan === undefined) return rows;
    scan.read.resolve();
    await scan.answer.promise;
    return rows;
  };
  const wrapped = new Proxy(store, {
    get(target, property, receiver) {
      if (property === "unfinishedExecutions") return unfinishedExecutions;
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as unknown as ExecutionStore;
  const hold = () => {
    const scan = { read: deferred(), answer: deferred() };
    held = scan;
    return { read: scan.read.promise, release: () => scan.answer.resolve() };
  };
  return { store: wrapped, hold };
}

/** Asks for the refund (approval needed), then answers. */
function refundModel() {
  return scriptedModel(({ messages }) =>
    turnOf(messages) === 0 ? { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] } : { text: "done" },
  );
}

async function suspendedOn(env: Environment, agentId: string) {
  const agent = env.agent({ id: agentId, model: refundModel(), tools: { refund: approvalRefundTool([]) } });
  const executionId = await agent.start("Refund order 42").executionId;
  const pending = await waitFor(async () => (await env.pendingApprovals()).find((approval) => approval.executionId === executionId));
  return { agent, executionId, approvalId: pending.request.approvalId };
}

describe("env.recover() and a conversation let go while it runs", () => {
  it("does not install again an execution that completed after the scan was read", async () => {
    const { store, hold } = await heldScanStore();
    const env = await openEnvironment({ store });
    // "first" is recovered first: its pass waits on the held scan.
    const first = await suspendedOn(env, "first");
    const second = await suspendedOn(env, "second");
    const scan = hold();
    const recovering = env.recover();
    await scan.read;
    // Read suspended; now decided, completed, and the conversation let go.
    const result = await second.agent.resume(second.executionId, { approvalId: second.approvalId, approved: false }).result;
    expect(result).toMatchObject({ executionId: second.executionId, outcome: "completed" });
    await second.agent.release();
    scan.release();
    const report = await recovering;
    expect(report.filter((item) => item.executionId === second.executionId)).toEqual([]);
    expect((await store.getExecution(second.executionId))?.status).toBe("terminal");
    // Its outcome is the completed one, and the conversation admits a new start.
    await expect(env.wait(second.executionId).result).resolves.toMatchObject({ outcome: "completed" });
    const next = await second.agent.start("Refund order 43").executionId;
    expect(next).not.toBe(second.executionId);
    await waitFor(async () => (await env.pendingApprovals()).find((approval) => approval.executionId === next));
    expect((await env.pendingApprovals()).map((approval) => approval.executionId).sort()).toEqual([first.executionId, next].sort());
  });
});
