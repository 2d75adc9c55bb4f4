// The store conformance suite: the behaviours every `ExecutionStore` must
// have, as one function of a backend, run against SQLite and PostgreSQL
// (`sqlite.test.ts`, `postgres.test.ts`). Ported from the backend-independent
// checks of test/store/{operations,approval,recovery-reads}.test.ts;
// SQLite-only checks (file format, worker, ownership lock) stay there.

import { describe, expect, it } from "vitest";
import { AgentBusyError, ApprovalMismatchError, ExecutionRehydrationRequiredError, InvalidInputError, StoreError } from "../../host/errors.js";
import type { ExecutionStore } from "../../host/store/store.js";
import { approvalCommit, journalEntry, prepare, providerBarrier, refundCall, suspendForApproval, terminalCommit, toolBarrier } from "../store/fixtures.js";
import type { Backend } from "./backends.js";

export function defineConformanceSuite(backend: Backend): void {
  async function storeWithAgent(): Promise<ExecutionStore> {
    const store = await backend.open();
    await store.ensureAgent("support", 1);
    return store;
  }

  /** e1 suspended for approval at revision 3. */
  async function suspendedStore(): Promise<ExecutionStore> {
    const store = await storeWithAgent();
    await store.run(prepare("e1"));
    await store.run(providerBarrier("e1", 1));
    await store.run(suspendForApproval("e1", 2));
    return store;
  }

  async function snapshot(store: ExecutionStore, executionId = "e1"): Promise<unknown> {
    return { row: await store.getExecution(executionId), steps: await store.listSteps(executionId) };
  }

  /** What a store that reports it adds to an agent's first preparation. */
  const firstOfAgent = backend.reportsFirstOfAgent ? { firstOfAgent: true } : {};

  describe(`store conformance (${backend.name}): prepareExecution`, () => {
    it("writes an active execution at revision 1 in calling_llm, its input step and journal, and bumps the root", async () => {
      const store = await storeWithAgent();
      expect(await store.run(prepare("e1"))).toEqual({ outcome: "active", revision: 1, ...firstOfAgent });
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

    it("firstOfAgent, where a store says it, marks only an agent's first preparation: its journal holds no earlier execution", async () => {
      const store = await storeWithAgent();
      expect(await store.run(prepare("e1"))).toEqual({ outcome: "active", revision: 1, ...firstOfAgent });
      await store.run(terminalCommit("e1", 1));
      // A later execution of the same agent has memory to read.
      expect(await store.run(prepare("e2"))).toEqual({ outcome: "active", revision: 1 });
      expect((await store.readJournal("support", 10)).some((record) => record.executionId === "e1")).toBe(true);
      // A blocked input wrote no journal, but a preparation came: the next is not the first.
      await store.ensureAgent("other", 1);
      await store.run(prepare("b1", "other", { blockedBy: { code: "INPUT_BLOCKED", message: "no" } }));
      expect(await store.run(prepare("b2", "other"))).toEqual({ outcome: "active", revision: 1 });
      // An agent whose root the preparation itself writes.
      expect(await store.run(prepare("n1", "never-ensured", { firstBarrier: { callId: "m" } }))).toMatchObject({ outcome: "active", ...firstOfAgent });
    });

    it("with its first provider barrier: one transaction leaves what prepare then the barrier would (revision 2, pending model call, both steps)", async () => {
      const store = await storeWithAgent();
      expect(await store.run(prepare("e1", "support", { firstBarrier: { callId: "model-1" } }))).toEqual({
        outcome: "active",
        revision: 1,
        firstBarrierRevision: 2,
        ...firstOfAgent,
      });
      const merged = await store.getExecution("e1");
      await store.run(prepare("e2"));
      await store.run(providerBarrier("e2", 1, { callId: "model-1", turns: 0, at: 10 }));
      const separate = await store.getExecution("e2");
      expect(merged).toEqual({ ...separate, executionId: "e1" });
      expect(merged).toMatchObject({
        revision: 2,
        phase: "calling_llm",
        metadata: { config: { replayable: true }, pendingModelCall: { callId: "model-1", startedAt: 10 }, turns: 0 },
      });
      expect((await store.listSteps("e1")).map(({ kind, payload }) => ({ kind, payload }))).toEqual([
        { kind: "input", payload: "Where is order 42?" },
        { kind: "provider_barrier", payload: { callId: "model-1", revision: 2 } },
      ]);
      expect(await store.readJournal("support", 10)).toEqual([
        journalEntry("e1", "user", "Where is order 42?"),
        journalEntry("e2", "user", "Where is order 42?"),
      ]);
      // The next barrier expects revision 2.
      expect(await store.run(toolBarrier("e1", 2))).toEqual({ revision: 3 });
      expect(() => store.run(prepare("e3", "support", { firstBarrier: { callId: "" } }))).toThrow(
        /prepareExecution.firstBarrier.callId must be a non-empty string/,
      );
      expect(() => store.run(prepare("e3", "support", { firstBarrier: { callId: "m" }, blockedBy: { code: "INPUT_BLOCKED", message: "no" } }))).toThrow(
        /firstBarrier cannot go with blockedBy/,
      );
    });

    it("writes a blocked input as terminal failed with the filter's error, and no journal", async () => {
      const store = await storeWithAgent();
      const blockedBy = { code: "INPUT_BLOCKED", message: "the input filter blocked the input" };
      expect(await store.run(prepare("e1", "support", { blockedBy }))).toEqual({ outcome: "terminal", revision: 1, error: blockedBy });
      expect(await store.getExecution("e1")).toMatchObject({ status: "terminal", phase: "terminal", outcome: "failed", error: blockedBy, revision: 1 });
      expect((await store.listSteps("e1")).map((step) => step.kind)).toEqual(["input", "terminal"]);
      expect(await store.readJournal("support", 10)).toEqual([]);
    });

    it("writes the root of an agent that has none (docs/decisions/0024); is not established for a closed agent or a reused execution id", async () => {
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

    it("refuses malformed operations synchronously with InvalidInputError, submitting nothing", async () => {
      const store = await storeWithAgent();
      expect(() => store.run(prepare(""))).toThrow(InvalidInputError);
      expect(() => store.run(providerBarrier("e1", 0))).toThrow(/expectedRevision must be a positive integer/);
      expect(() => store.run({ type: "dropTables" } as never)).toThrow(/unknown store operation/);
      expect(await store.listExecutions()).toEqual([]);
    });
  });

  describe(`store conformance (${backend.name}): barriers`, () => {
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

    it("a race of writers on one revision: exactly one wins, the others are ExecutionRehydrationRequiredError", async () => {
      const store = await storeWithAgent();
      await store.run(prepare("e1"));
      const racers = 8;
      const settled = await Promise.allSettled(Array.from({ length: racers }, (_, index) => store.run(providerBarrier("e1", 1, { callId: `racer-${index}` }))));
      const won = settled.filter((result) => result.status === "fulfilled");
      expect(won).toEqual([{ status: "fulfilled", value: { revision: 2 } }]);
      for (const lost of settled.filter((result) => result.status === "rejected")) {
        expect((lost as PromiseRejectedResult).reason).toBeInstanceOf(ExecutionRehydrationRequiredError);
      }
      expect((await store.listSteps("e1")).map((step) => step.kind)).toEqual(["input", "provider_barrier"]);
      expect(await backend.countRows(store, "steps", "e1")).toBe(2);
    });

    it("refuses a barrier on an unknown execution and on a suspended one", async () => {
      const store = await storeWithAgent();
      await expect(store.run(providerBarrier("ghost", 1))).rejects.toThrow(/execution ghost is not in the store/);
      await store.run(prepare("e1"));
      await store.run(terminalCommit("e1", 1, { outcome: "suspended", output: null, approvalRequest: { approvalId: "a1" } }));
      await expect(store.run(providerBarrier("e1", 2))).rejects.toThrow(/with status suspended/);
    });

    it("the running stretch's start (docs/decisions/0016): set by a recovered session's barrier and by a decision, kept by later barriers, cleared by a suspension", async () => {
      const store = await storeWithAgent();
      await store.run(prepare("e1"));
      expect((await store.getExecution("e1"))?.metadata).not.toHaveProperty("runningSince");
      await store.run(providerBarrier("e1", 1, { runningSince: 7 }));
      await store.run(toolBarrier("e1", 2, { toolBatch: [refundCall("e1")], steps: [] }));
      expect((await store.getExecution("e1"))?.metadata.runningSince).toBe(7);
      await store.run(suspendForApproval("e1", 3));
      expect((await store.getExecution("e1"))?.metadata).not.toHaveProperty("runningSince");
      await store.run(approvalCommit("e1", 4));
      expect((await store.getExecution("e1"))?.metadata.runningSince).toBe(60);
      expect(() => store.run(providerBarrier("e1", 5, { runningSince: Number.NaN }))).toThrow(/providerBarrier.runningSince must be a finite number/);
    });
  });

  describe(`store conformance (${backend.name}): terminalCommit`, () => {
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

    it("keeps a cancel asked for and the first listener failure in metadata, across a suspension (decision 0056)", async () => {
      const store = await storeWithAgent();
      await store.run(prepare("e1"));
      const first = { eventType: "tool_call_started", message: "listener bug" };
      await store.run(
        terminalCommit("e1", 1, { outcome: "suspended", output: null, approvalRequest: { approvalId: "a1" }, journal: [], callbackFailure: first }),
      );
      await store.run(terminalCommit("e1", 2, { cancelRequested: true, callbackFailure: { eventType: "done", message: "later" } }));
      expect((await store.getExecution("e1"))?.metadata).toMatchObject({ cancelRequested: true, callbackFailure: first });
      await store.run(prepare("e2"));
      await store.run(terminalCommit("e2", 1));
      expect(await store.getExecution("e2")).toMatchObject({ outcome: "completed", metadata: expect.not.objectContaining({ cancelRequested: true }) });
    });

    it("refuses a second terminal commit on a terminal execution", async () => {
      const store = await storeWithAgent();
      await store.run(prepare("e1"));
      await store.run(terminalCommit("e1", 1));
      await expect(store.run(terminalCommit("e1", 2))).rejects.toThrow(/with status terminal/);
    });
  });

  describe(`store conformance (${backend.name}): approvalCommit`, () => {
    it("suspension stores the waiting batch; approval: active, resuming, revision+1, the decision in three places", async () => {
      const store = await suspendedStore();
      expect((await store.getExecution("e1"))?.metadata).toEqual({ config: { replayable: true }, turns: 1, toolBatch: [refundCall("e1")] });
      expect(await store.run(approvalCommit("e1", 3))).toEqual({ revision: 4 });
      const row = await store.getExecution("e1");
      expect(row).toMatchObject({ status: "active", phase: "resuming", outcome: null, revision: 4, updatedAt: 60 });
      expect(row?.approvalRequest).toMatchObject({
        approvalId: "approval-1",
        argumentsHash: "hash-1",
        decision: { approved: true, reason: "refund is within policy", decidedAt: 60 },
      });
      expect(row?.metadata.approval).toEqual({ approvalId: "approval-1", approved: true, reason: "refund is within policy" });
      expect((await store.listSteps("e1")).at(-1)).toEqual({
        seq: 5,
        kind: "approval_decided",
        at: 60,
        payload: { approvalId: "approval-1", approved: true, reason: "refund is within policy", revision: 4 },
      });
      expect(await store.run(toolBarrier("e1", 4, { toolBatch: [refundCall("e1")], steps: [] }))).toEqual({ revision: 5 });
    });

    it("another approval id or other arguments is ApprovalMismatchError and writes nothing", async () => {
      const store = await suspendedStore();
      const before = await snapshot(store);
      const otherId = store.run(approvalCommit("e1", 3, { approvalId: "approval-2" }));
      await expect(otherId).rejects.toBeInstanceOf(ApprovalMismatchError);
      await expect(otherId).rejects.toMatchObject({
        code: "APPROVAL_MISMATCH",
        executionId: "e1",
        agentId: "support",
        details: { mismatch: "approval_id", approvalId: "approval-2", storedApprovalId: "approval-1" },
      });
      const otherArguments = store.run(approvalCommit("e1", 3, { argumentsHash: "hash-2" }));
      await expect(otherArguments).rejects.toMatchObject({ details: { mismatch: "arguments_hash", storedArgumentsHash: "hash-1", argumentsHash: "hash-2" } });
      expect(await snapshot(store)).toEqual(before);
      expect(await store.run(approvalCommit("e1", 3))).toEqual({ revision: 4 });
    });

    it("a mismatch among concurrent operations fails alone; the others commit", async () => {
      const store = await suspendedStore();
      await store.run(prepare("e2"));
      const [mismatch, barrier] = await Promise.allSettled([
        store.run(approvalCommit("e1", 3, { approvalId: "approval-2" })),
        store.run(providerBarrier("e2", 1)),
      ]);
      expect((mismatch as PromiseRejectedResult).reason).toBeInstanceOf(ApprovalMismatchError);
      expect(barrier).toEqual({ status: "fulfilled", value: { revision: 2 } });
      expect((await store.getExecution("e1"))?.revision).toBe(3);
    });

    it("a request already decided, or no request at all, is a mismatch", async () => {
      const store = await suspendedStore();
      await backend.markDecided(store, "e1");
      await expect(store.run(approvalCommit("e1", 3))).rejects.toMatchObject({ code: "APPROVAL_MISMATCH", details: { mismatch: "already_decided" } });
      await store.run(prepare("e2"));
      await store.run(terminalCommit("e2", 1, { outcome: "suspended", output: null, approvalRequest: null, journal: [] }));
      await expect(store.run(approvalCommit("e2", 2))).rejects.toMatchObject({ code: "APPROVAL_MISMATCH", details: { mismatch: "no_request" } });
    });

    it("a stale revision, a second decision, or an execution not suspended is ExecutionRehydrationRequiredError", async () => {
      const store = await suspendedStore();
      await expect(store.run(approvalCommit("e1", 2))).rejects.toThrow(
        /execution e1 moved on: approvalCommit expected revision 2 with status suspended, the store holds revision 3/,
      );
      await store.run(approvalCommit("e1", 3));
      await expect(store.run(approvalCommit("e1", 3))).rejects.toBeInstanceOf(ExecutionRehydrationRequiredError);
      await expect(store.run(approvalCommit("e1", 4))).rejects.toThrow(/with status suspended, the store holds revision 4 with status active/);
      await expect(store.run(approvalCommit("ghost", 1))).rejects.toThrow(/execution ghost is not in the store/);
    });
  });

  describe(`store conformance (${backend.name}): reopenExecution (env.retry, decision 0026)`, () => {
    const failed = { code: "MODEL_FAILED", message: "the provider is down" };
    const reopen = (expectedRevision: number, extra: Record<string, unknown> = {}) => ({
      type: "reopenExecution" as const,
      executionId: "e1",
      expectedRevision,
      status: "active" as const,
      phase: "calling_llm" as const,
      metadata: { config: { replayable: true }, attempt: 2, runningSince: 90 },
      step: { attempt: 2, resumeFromSeq: 2 },
      at: 90,
      ...extra,
    });

    it("reopens a terminal row: revision+1, the status and phase given, outcome, output and error cleared, the metadata given, a retried step", async () => {
      const store = await storeWithAgent();
      await store.run(prepare("e1"));
      await store.run(providerBarrier("e1", 1));
      await store.run(terminalCommit("e1", 2, { outcome: "failed", output: null, error: failed, steps: [], journal: [] }));
      expect(await store.run(reopen(3))).toEqual({ revision: 4 });
      expect(await store.getExecution("e1")).toMatchObject({
        revision: 4,
        status: "active",
        phase: "calling_llm",
        outcome: null,
        output: null,
        error: null,
        metadata: { attempt: 2, runningSince: 90 },
        updatedAt: 90,
      });
      expect((await store.listSteps("e1")).at(-1)).toMatchObject({ kind: "retried", at: 90, payload: { attempt: 2, resumeFromSeq: 2 } });
      // It runs on like any active row: the next barrier compares against revision 4.
      expect(await store.run(providerBarrier("e1", 4))).toEqual({ revision: 5 });
    });

    it("refuses a row that is not terminal, or a moved revision, writing nothing; and a state no retry reopens to", async () => {
      const store = await storeWithAgent();
      await store.run(prepare("e1"));
      const before = await snapshot(store);
      await expect(store.run(reopen(1))).rejects.toBeInstanceOf(ExecutionRehydrationRequiredError);
      await store.run(terminalCommit("e1", 1, { outcome: "failed", output: null, error: failed, steps: [], journal: [] }));
      const ended = await snapshot(store);
      await expect(store.run(reopen(1))).rejects.toBeInstanceOf(ExecutionRehydrationRequiredError);
      expect(await snapshot(store)).toEqual(ended);
      expect(before).not.toEqual(ended);
      expect(() => store.run(reopen(2, { phase: "terminal" }) as never)).toThrow(InvalidInputError);
    });
  });

  describe(`store conformance (${backend.name}): agent lifecycle`, () => {
    it("ensureAgent creates once and returns the stored root unchanged afterwards", async () => {
      const store = await backend.open();
      expect(await store.ensureAgent("support", 1)).toEqual({ agentId: "support", lifecycle: "open", revision: 1, createdAt: 1, updatedAt: 1 });
      expect(await store.ensureAgent("support", 9)).toEqual({ agentId: "support", lifecycle: "open", revision: 1, createdAt: 1, updatedAt: 1 });
    });

    it("closeAgent closes once (revision+1), is idempotent, and creates an unknown agent closed", async () => {
      const store = await backend.open();
      await store.ensureAgent("support", 1);
      expect(await store.closeAgent("support", 2)).toMatchObject({ lifecycle: "closed", revision: 2, updatedAt: 2 });
      expect(await store.closeAgent("support", 3)).toMatchObject({ lifecycle: "closed", revision: 2, updatedAt: 2 });
      expect(await store.closeAgent("stranger", 4)).toMatchObject({ lifecycle: "closed", revision: 1 });
      expect(await store.ensureAgent("stranger", 5)).toMatchObject({ lifecycle: "closed" });
    });

    it("purgeAgent refuses while an execution is unfinished, then deletes root, journal, executions and steps", async () => {
      const store = await backend.open();
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
      expect(await backend.countRows(store, "steps", "e1")).toBe(0);
      expect(await store.getExecution("b1")).toBeDefined();
      expect(await store.purgeAgent("support")).toEqual({ purged: false, executionsDeleted: 0 });
    });
  });

  describe(`store conformance (${backend.name}): reads and reopen`, () => {
    it("listExecutions filters by status and agent, newest first, with a limit", async () => {
      const store = await backend.open();
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
      expect(ids(await store.unfinishedExecutions())).toEqual(["e2", "e3"]);
      await expect(store.listExecutions({ limit: 0 })).rejects.toBeInstanceOf(InvalidInputError);
      await expect(store.listExecutions({ limit: 1_000_000 })).rejects.toThrow(/from 1 to 1000/);
    });

    it("readJournal returns the last `limit` records, oldest first", async () => {
      const store = await backend.open();
      await store.ensureAgent("support", 1);
      const journal = ["one", "two", "three", "four"].map((content, index) => journalEntry("e1", "user", content, index));
      await store.run(prepare("e1", "support", { journal }));
      expect((await store.readJournal("support", 2)).map((record) => record.content)).toEqual(["three", "four"]);
      expect((await store.readJournal("support", 10)).map((record) => record.content)).toEqual(["one", "two", "three", "four"]);
    });

    it("a row changed behind the store's back surfaces as a StoreError naming the store", async () => {
      const store = await storeWithAgent();
      await store.run(prepare("e1"));
      await backend.corruptUsage(store, "e1");
      await expect(store.getExecution("e1")).rejects.toBeInstanceOf(StoreError);
      await expect(store.getExecution("e1")).rejects.toThrow(store.path);
    });

    it("everything written reads back the same after close and reopen; a closed store refuses with StoreError", async () => {
      const store = await suspendedStore();
      await store.run(prepare("e2"));
      const payload = { text: 'Let me look — "order 42".\n…', weightKg: 1.25, gift: false, note: null, tags: [], nested: { "€": ["r-✓-1"] } };
      await store.run(toolBarrier("e2", 1, { steps: [{ kind: "model_response", at: 31, payload }] }));
      const before = {
        e1: await snapshot(store, "e1"),
        e2: await snapshot(store, "e2"),
        journal: await store.readJournal("support", 100),
        agent: await store.getAgent("support"),
      };
      await store.close();
      await store.close();
      expect(() => store.run(providerBarrier("e2", 2))).toThrow(StoreError);
      await expect(store.getExecution("e1")).rejects.toBeInstanceOf(StoreError);
      const reopened = await backend.reopen(store);
      expect({
        e1: await snapshot(reopened, "e1"),
        e2: await snapshot(reopened, "e2"),
        journal: await reopened.readJournal("support", 100),
        agent: await reopened.getAgent("support"),
      }).toEqual(before);
      expect(await reopened.run(approvalCommit("e1", 3))).toEqual({ revision: 4 });
    });

    it("close waits for the writes it accepted", async () => {
      const store = await storeWithAgent();
      const writes = Array.from({ length: 20 }, (_, index) => store.run(prepare(`c${index}`)));
      await store.close();
      expect((await Promise.all(writes)).every((result) => result.outcome === "active")).toBe(true);
      const reopened = await backend.reopen(store);
      expect(await reopened.listExecutions({ limit: 100 })).toHaveLength(20);
    });
  });
}
