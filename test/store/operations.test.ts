// Every store operation against a real file: what each writes (rows, steps,
// journal, metadata), the results exactly as records.ts types them, the
// compare-and-set refusing a stale revision with nothing written, the agent
// lifecycle, and the reads.

import { describe, expect, it } from "vitest";
import { AgentBusyError, ExecutionRehydrationRequiredError, InvalidInputError, StoreError } from "../../host/errors.js";
import type { SqliteStore } from "../../host/store/sqlite-store.js";
import { journalEntry, openTemporaryStore, prepare, providerBarrier, rawExec, rawValue, terminalCommit, toolBarrier } from "./fixtures.js";

async function storeWithAgent(): Promise<SqliteStore> {
  const store = await openTemporaryStore();
  await store.ensureAgent("support", 1);
  return store;
}

describe("prepareExecution", () => {
  it("writes an active execution at revision 1 in calling_llm, its input step and journal, and bumps the root", async () => {
    const store = await storeWithAgent();
    expect(await store.run(prepare("e1"))).toEqual({ outcome: "active", revision: 1, firstOfAgent: true });
    expect(await store.getExecution("e1")).toEqual({
      executionId: "e1",
      agentId: "support",
      revision: 1,
      status: "active",
      phase: "calling_llm",
      mode: "run",
      input: "Where is order 42?",
      metadata: { config: { replayable: true } },
      outcome: null,
      output: null,
      error: null,
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
      approvalRequest: null,
      createdAt: 10,
      updatedAt: 10,
    });
    expect(await store.listSteps("e1")).toEqual([{ seq: 1, kind: "input", at: 10, payload: "Where is order 42?" }]);
    expect(await store.readJournal("support", 10)).toEqual([journalEntry("e1", "user", "Where is order 42?")]);
    expect(await store.getAgent("support")).toMatchObject({ lifecycle: "open", revision: 2, updatedAt: 10 });
  });

  it("writes a blocked input as terminal failed with the filter's error, and no journal", async () => {
    const store = await storeWithAgent();
    const blockedBy = { code: "INPUT_BLOCKED", message: "the input filter blocked the input" };
    expect(await store.run(prepare("e1", "support", { blockedBy }))).toEqual({ outcome: "terminal", revision: 1, error: blockedBy });
    expect(await store.getExecution("e1")).toMatchObject({ status: "terminal", phase: "terminal", outcome: "failed", error: blockedBy, revision: 1 });
    expect((await store.listSteps("e1")).map((step) => step.kind)).toEqual(["input", "terminal"]);
    expect(await store.readJournal("support", 10)).toEqual([]);
  });

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

describe("barriers", () => {
  it("provider barrier: revision+1, phase calling_llm, pending model call, results since the last barrier, barrier step", async () => {
    const store = await storeWithAgent();
    await store.run(prepare("e1"));
    const results = [{ kind: "tool_results" as const, at: 21, payload: [{ callId: "tool-0", output: "ok" }] }];
    expect(await store.run(providerBarrier("e1", 1, { steps: results, turns: 1, at: 22 }))).toEqual({ revision: 2 });
    const row = await store.getExecution("e1");
    expect(row).toMatchObject({ revision: 2, phase: "calling_llm", status: "active", updatedAt: 22 });
    expect(row?.metadata).toEqual({ config: { replayable: true }, pendingModelCall: { callId: "model-1", startedAt: 22 }, turns: 1 });
    expect((await store.listSteps("e1")).slice(1)).toEqual([
      { seq: 2, kind: "tool_results", at: 21, payload: [{ callId: "tool-0", output: "ok" }] },
      { seq: 3, kind: "provider_barrier", at: 22, payload: { callId: "model-1", revision: 2 } },
    ]);
  });

  it("tool barrier: revision+1, phase dispatching_tools, the batch with idempotency keys, usage, the model response", async () => {
    const store = await storeWithAgent();
    await store.run(prepare("e1"));
    await store.run(providerBarrier("e1", 1));
    const operation = toolBarrier("e1", 2);
    expect(await store.run(operation)).toEqual({ revision: 3 });
    const row = await store.getExecution("e1");
    expect(row).toMatchObject({ revision: 3, phase: "dispatching_tools", usage: operation.usage });
    expect(row?.metadata.toolBatch).toEqual(operation.toolBatch);
    expect(row?.metadata.toolBatch?.[0]?.idempotencyKey).toBe("e1:tool-1");
    expect(row?.metadata.pendingModelCall).toBeUndefined();
    expect((await store.listSteps("e1")).map((step) => step.kind)).toEqual(["input", "provider_barrier", "model_response", "tool_barrier"]);
  });

  it("a lost compare-and-set throws ExecutionRehydrationRequiredError naming the execution and revision, and writes nothing", async () => {
    const store = await storeWithAgent();
    await store.run(prepare("e1"));
    await store.run(providerBarrier("e1", 1));
    const rowBefore = await store.getExecution("e1");
    const stepsBefore = await store.listSteps("e1");
    const stale = store.run(toolBarrier("e1", 1, { steps: [{ kind: "model_response", at: 99, payload: "late" }] }));
    await expect(stale).rejects.toBeInstanceOf(ExecutionRehydrationRequiredError);
    await expect(stale).rejects.toThrow(/execution e1 moved on: toolBarrier expected revision 1 .* holds revision 2/);
    await expect(stale).rejects.toMatchObject({ code: "EXECUTION_REHYDRATION_REQUIRED", executionId: "e1" });
    expect(await store.getExecution("e1")).toEqual(rowBefore);
    expect(await store.listSteps("e1")).toEqual(stepsBefore);
  });

  it("refuses a barrier on an unknown execution and on a suspended one", async () => {
    const store = await storeWithAgent();
    await expect(store.run(providerBarrier("ghost", 1))).rejects.toThrow(/execution ghost is not in the store/);
    await store.run(prepare("e1"));
    await store.run(terminalCommit("e1", 1, { outcome: "suspended", output: null, approvalRequest: { approvalId: "a1" } }));
    await expect(store.run(providerBarrier("e1", 2))).rejects.toThrow(/with status suspended/);
  });
});

describe("terminalCommit", () => {
  it("completed: terminal, outcome, output, usage, steps and journal, revision+1", async () => {
    const store = await storeWithAgent();
    await store.run(prepare("e1"));
    await store.run(providerBarrier("e1", 1));
    expect(await store.run(terminalCommit("e1", 2))).toEqual({ revision: 3 });
    expect(await store.getExecution("e1")).toMatchObject({
      status: "terminal",
      phase: "terminal",
      outcome: "completed",
      output: "Order 42 ships today.",
      error: null,
      usage: { inputTokens: 20, outputTokens: 9, totalTokens: 29 },
      revision: 3,
    });
    expect((await store.listSteps("e1")).map((step) => step.kind)).toEqual(["input", "provider_barrier", "model_response", "terminal"]);
    expect((await store.readJournal("support", 10)).map((record) => record.role)).toEqual(["user", "assistant"]);
  });

  it("failed: records the error; handed_off: records the handoff in metadata", async () => {
    const store = await storeWithAgent();
    await store.run(prepare("e1"));
    const error = { code: "TIMEOUT", message: "execution e1 timed out after 5 ms", details: { timeoutMs: 5 } };
    await store.run(terminalCommit("e1", 1, { outcome: "failed", output: null, error, journal: [] }));
    expect(await store.getExecution("e1")).toMatchObject({ outcome: "failed", error });
    await store.run(prepare("e2"));
    await store.run(terminalCommit("e2", 1, { outcome: "handed_off", handoff: { to: "billing" } }));
    expect((await store.getExecution("e2"))?.metadata.handoff).toEqual({ to: "billing" });
  });

  it("suspended: status and phase suspended with the approval request; a later terminal commit ends it", async () => {
    const store = await storeWithAgent();
    await store.run(prepare("e1"));
    const approvalRequest = { approvalId: "a1", toolName: "refund", input: { orderId: 42 } };
    await store.run(terminalCommit("e1", 1, { outcome: "suspended", output: null, approvalRequest, journal: [] }));
    expect(await store.getExecution("e1")).toMatchObject({ status: "suspended", phase: "suspended", outcome: "suspended", approvalRequest, revision: 2 });
    expect((await store.listSteps("e1")).at(-1)).toMatchObject({ kind: "approval_requested", payload: { revision: 2, approvalRequest } });
    expect((await store.unfinishedExecutions()).map((row) => row.executionId)).toEqual(["e1"]);
    await store.run(terminalCommit("e1", 2, { outcome: "failed", output: null, error: { code: "CANCELLED", message: "cancelled" } }));
    expect(await store.unfinishedExecutions()).toEqual([]);
  });

  it("refuses a second terminal commit on a terminal execution", async () => {
    const store = await storeWithAgent();
    await store.run(prepare("e1"));
    await store.run(terminalCommit("e1", 1));
    await expect(store.run(terminalCommit("e1", 2))).rejects.toThrow(/with status terminal/);
  });
});

describe("agent lifecycle", () => {
  it("ensureAgent creates once and returns the stored root unchanged afterwards", async () => {
    const store = await openTemporaryStore();
    expect(await store.ensureAgent("support", 1)).toEqual({ agentId: "support", lifecycle: "open", revision: 1, createdAt: 1, updatedAt: 1 });
    expect(await store.ensureAgent("support", 9)).toEqual({ agentId: "support", lifecycle: "open", revision: 1, createdAt: 1, updatedAt: 1 });
  });

  it("closeAgent closes once (revision+1), is idempotent, and creates an unknown agent closed", async () => {
    const store = await openTemporaryStore();
    await store.ensureAgent("support", 1);
    expect(await store.closeAgent("support", 2)).toMatchObject({ lifecycle: "closed", revision: 2, updatedAt: 2 });
    expect(await store.closeAgent("support", 3)).toMatchObject({ lifecycle: "closed", revision: 2, updatedAt: 2 });
    expect(await store.closeAgent("stranger", 4)).toMatchObject({ lifecycle: "closed", revision: 1 });
    expect(await store.ensureAgent("stranger", 5)).toMatchObject({ lifecycle: "closed" });
  });

  it("purgeAgent refuses while an execution is unfinished, then deletes root, journal, executions and steps", async () => {
    const store = await openTemporaryStore();
    await store.ensureAgent("support", 1);
    await store.ensureAgent("billing", 1);
    await store.run(prepare("e1"));
    await store.run(prepare("b1", "billing"));
    const refused = store.purgeAgent("support");
    await expect(refused).rejects.toBeInstanceOf(AgentBusyError);
    await expect(refused).rejects.toThrow(/agent "support" cannot be purged: it has unfinished executions \(e1\)/);
    expect(await store.getExecution("e1")).toBeDefined();

    await store.run(terminalCommit("e1", 1));
    expect(await store.purgeAgent("support")).toEqual({ purged: true, executionsDeleted: 1 });
    expect(await store.getAgent("support")).toBeUndefined();
    expect(await store.getExecution("e1")).toBeUndefined();
    expect(await store.listSteps("e1")).toEqual([]);
    expect(await store.readJournal("support", 10)).toEqual([]);
    expect(rawValue(store.path, "SELECT count(*) FROM steps WHERE execution_id = 'e1'")).toBe(0);
    expect(await store.getExecution("b1")).toBeDefined();
    expect(await store.purgeAgent("support")).toEqual({ purged: false, executionsDeleted: 0 });
  });
});

describe("reads", () => {
  it("listExecutions filters by status and agent, newest first, with a limit", async () => {
    const store = await openTemporaryStore();
    await store.ensureAgent("support", 1);
    await store.ensureAgent("billing", 1);
    await store.run(prepare("e1", "support", { at: 10 }));
    await store.run(prepare("e2", "billing", { at: 20 }));
    await store.run(prepare("e3", "support", { at: 30 }));
    await store.run(terminalCommit("e1", 1));
    const ids = (rows: { executionId: string }[]): string[] => rows.map((row) => row.executionId);
    expect(ids(await store.listExecutions())).toEqual(["e3", "e2", "e1"]);
    expect(ids(await store.listExecutions({ status: "active" }))).toEqual(["e3", "e2"]);
    expect(ids(await store.listExecutions({ agentId: "support" }))).toEqual(["e3", "e1"]);
    expect(ids(await store.listExecutions({ agentId: "support", status: "terminal" }))).toEqual(["e1"]);
    expect(ids(await store.listExecutions({ limit: 1 }))).toEqual(["e3"]);
    await expect(store.listExecutions({ limit: 0 })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(store.listExecutions({ limit: 1_000_000 })).rejects.toThrow(/from 1 to 1000/);
  });

  it("readJournal returns the last `limit` records, oldest first", async () => {
    const store = await openTemporaryStore();
    await store.ensureAgent("support", 1);
    const journal = ["one", "two", "three", "four"].map((content, index) => journalEntry("e1", "user", content, index));
    await store.run(prepare("e1", "support", { journal }));
    expect((await store.readJournal("support", 2)).map((record) => record.content)).toEqual(["three", "four"]);
    expect((await store.readJournal("support", 10)).map((record) => record.content)).toEqual(["one", "two", "three", "four"]);
  });

  it("a row changed behind the store's back surfaces as a StoreError naming the file", async () => {
    const store = await openTemporaryStore();
    await store.ensureAgent("support", 1);
    await store.run(prepare("e1"));
    rawExec(store.path, "UPDATE executions SET metadata = '{not json' WHERE execution_id = 'e1'");
    await expect(store.getExecution("e1")).rejects.toBeInstanceOf(StoreError);
    await expect(store.getExecution("e1")).rejects.toThrow(store.path);
  });
});
