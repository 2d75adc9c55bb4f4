// The approval resume commit and the suspension it resumes, on real files:
// a suspension stores the waiting tool batch; a matching decision moves the
// execution to active/resuming at revision+1 with the decision recorded in
// three places (request, metadata, step); every mismatch is an
// ApprovalMismatchError with a stable `details.mismatch` that writes
// nothing, on the inline path and across the worker alike; a lost
// compare-and-set is ExecutionRehydrationRequiredError.

import { describe, expect, it } from "vitest";
import { ApprovalMismatchError, ExecutionRehydrationRequiredError, InvalidInputError } from "../../host/errors.js";
import type { OffloadPolicy } from "../../host/store/offload.js";
import type { SqliteStore } from "../../host/store/sqlite-store.js";
import {
  approvalCommit,
  openTemporaryStore,
  prepare,
  providerBarrier,
  rawExec,
  refundCall,
  suspendForApproval,
  terminalCommit,
  toolBarrier,
} from "./fixtures.js";

/** e1 suspended for approval at revision 3 (prepare, provider barrier, suspension). */
async function suspendedStore(offloadPolicy: OffloadPolicy = "adaptive"): Promise<SqliteStore> {
  const store = await openTemporaryStore({ offloadPolicy });
  await store.ensureAgent("support", 1);
  await store.run(prepare("e1"));
  await store.run(providerBarrier("e1", 1));
  await store.run(suspendForApproval("e1", 2));
  return store;
}

async function snapshot(store: SqliteStore, executionId = "e1"): Promise<unknown> {
  return { row: await store.getExecution(executionId), steps: await store.listSteps(executionId) };
}

describe("suspension with a tool batch", () => {
  it("stores the batch waiting for approval as metadata.toolBatch and drops the answered model call mark", async () => {
    const store = await suspendedStore();
    const row = await store.getExecution("e1");
    expect(row).toMatchObject({ status: "suspended", phase: "suspended", outcome: "suspended", revision: 3 });
    expect(row?.metadata).toEqual({ config: { replayable: true }, turns: 1, toolBatch: [refundCall("e1")] });
    expect((await store.listSteps("e1")).slice(-2).map((step) => step.kind)).toEqual(["model_response", "approval_requested"]);
  });

  it("refuses a tool batch on any outcome but suspended, and malformed calls, synchronously", async () => {
    const store = await suspendedStore();
    expect(() => store.run(terminalCommit("e1", 3, { toolBatch: [refundCall("e1")] }))).toThrow(/toolBatch is only for outcome "suspended".*"completed"/);
    const noCallId = { ...refundCall("e1"), callId: "" };
    expect(() => store.run(suspendForApproval("e1", 3, "a", "h", { toolBatch: [noCallId] }))).toThrow(InvalidInputError);
    expect(() => store.run(suspendForApproval("e1", 3, "a", "h", { toolBatch: "refund" as never }))).toThrow(/toolBatch must be an array/);
    expect((await store.getExecution("e1"))?.revision).toBe(3);
  });
});

describe("approvalCommit", () => {
  it("approved: active, resuming, revision+1, outcome cleared, the decision on the request, in metadata and as a step", async () => {
    const store = await suspendedStore();
    expect(await store.run(approvalCommit("e1", 3))).toEqual({ revision: 4 });
    const row = await store.getExecution("e1");
    expect(row).toMatchObject({ status: "active", phase: "resuming", outcome: null, revision: 4, updatedAt: 60 });
    expect(row?.approvalRequest).toMatchObject({
      approvalId: "approval-1",
      argumentsHash: "hash-1",
      decision: { approved: true, reason: "refund is within policy", decidedAt: 60 },
    });
    expect(row?.metadata).toEqual({
      config: { replayable: true },
      turns: 1,
      toolBatch: [refundCall("e1")],
      approval: { approvalId: "approval-1", approved: true, reason: "refund is within policy" },
      runningSince: 60,
    });
    expect((await store.listSteps("e1")).at(-1)).toEqual({
      seq: 5,
      kind: "approval_decided",
      at: 60,
      payload: { approvalId: "approval-1", approved: true, reason: "refund is within policy", revision: 4 },
    });
    expect((await store.unfinishedExecutions()).map((unfinished) => unfinished.phase)).toEqual(["resuming"]);
    // The resumed execution goes on through the ordinary barriers.
    expect(await store.run(toolBarrier("e1", 4, { toolBatch: [refundCall("e1")], steps: [] }))).toEqual({ revision: 5 });
  });

  it("rejected with a null reason: recorded as not approved", async () => {
    const store = await suspendedStore();
    await store.run(approvalCommit("e1", 3, { approved: false, reason: null }));
    const row = await store.getExecution("e1");
    expect(row?.metadata.approval).toEqual({ approvalId: "approval-1", approved: false, reason: null });
    expect(row?.approvalRequest).toMatchObject({ decision: { approved: false, reason: null, decidedAt: 60 } });
  });

  for (const policy of ["inline", "worker"] as const) {
    it(`a decision for another approval id or other arguments is ApprovalMismatchError and writes nothing (${policy})`, async () => {
      const store = await suspendedStore(policy);
      const before = await snapshot(store);
      const otherId = store.run(approvalCommit("e1", 3, { approvalId: "approval-2" }));
      await expect(otherId).rejects.toBeInstanceOf(ApprovalMismatchError);
      await expect(otherId).rejects.toMatchObject({
        code: "APPROVAL_MISMATCH",
        executionId: "e1",
        agentId: "support",
        details: { mismatch: "approval_id", approvalId: "approval-2", storedApprovalId: "approval-1" },
      });
      await expect(otherId).rejects.toThrow(/approval approval-2 does not match execution e1: its pending approval is "approval-1"; nothing was written/);
      const otherArguments = store.run(approvalCommit("e1", 3, { argumentsHash: "hash-2" }));
      await expect(otherArguments).rejects.toBeInstanceOf(ApprovalMismatchError);
      await expect(otherArguments).rejects.toMatchObject({ details: { mismatch: "arguments_hash", storedArgumentsHash: "hash-1", argumentsHash: "hash-2" } });
      await expect(otherArguments).rejects.toThrow(/execution e1: the tool arguments differ .*"hash-1".*"hash-2"/);
      expect(await snapshot(store)).toEqual(before);
      expect(await store.run(approvalCommit("e1", 3))).toEqual({ revision: 4 });
    });
  }

  it("a mismatch in a group commit fails alone; its group-mates commit", async () => {
    const store = await suspendedStore("worker");
    await store.run(prepare("e2"));
    const [mismatch, barrier] = await Promise.allSettled([
      store.run(approvalCommit("e1", 3, { approvalId: "approval-2" })),
      store.run(providerBarrier("e2", 1)),
    ]);
    expect(mismatch).toMatchObject({ status: "rejected", reason: { code: "APPROVAL_MISMATCH" } });
    expect((mismatch as PromiseRejectedResult).reason).toBeInstanceOf(ApprovalMismatchError);
    expect(barrier).toEqual({ status: "fulfilled", value: { revision: 2 } });
    expect((await store.getExecution("e1"))?.revision).toBe(3);
  });

  it("a request already decided, or no request at all, is a mismatch", async () => {
    const store = await suspendedStore();
    rawExec(
      store.path,
      `UPDATE executions SET approval_request = json_set(approval_request, '$.decision', json('{"approved":false,"reason":null,"decidedAt":1}')) WHERE execution_id = 'e1'`,
    );
    await expect(store.run(approvalCommit("e1", 3))).rejects.toMatchObject({ code: "APPROVAL_MISMATCH", details: { mismatch: "already_decided" } });
    await store.run(prepare("e2"));
    await store.run(terminalCommit("e2", 1, { outcome: "suspended", output: null, approvalRequest: null, journal: [] }));
    const none = store.run(approvalCommit("e2", 2));
    await expect(none).rejects.toMatchObject({ code: "APPROVAL_MISMATCH", details: { mismatch: "no_request" } });
    await expect(none).rejects.toThrow(/execution e2: the execution holds no approval request/);
  });

  it("a stale revision, a second decision, or an execution not suspended is ExecutionRehydrationRequiredError", async () => {
    const store = await suspendedStore();
    const stale = store.run(approvalCommit("e1", 2));
    await expect(stale).rejects.toBeInstanceOf(ExecutionRehydrationRequiredError);
    await expect(stale).rejects.toThrow(/execution e1 moved on: approvalCommit expected revision 2 with status suspended, the store holds revision 3/);
    await store.run(approvalCommit("e1", 3));
    await expect(store.run(approvalCommit("e1", 3))).rejects.toBeInstanceOf(ExecutionRehydrationRequiredError);
    await expect(store.run(approvalCommit("e1", 4))).rejects.toThrow(/with status suspended, the store holds revision 4 with status active/);
    await expect(store.run(approvalCommit("ghost", 1))).rejects.toThrow(/execution ghost is not in the store/);
  });

  it("refuses malformed decisions synchronously with InvalidInputError", async () => {
    const store = await suspendedStore();
    expect(() => store.run(approvalCommit("e1", 3, { approvalId: "" }))).toThrow(/approvalCommit.approvalId must be a non-empty string/);
    expect(() => store.run(approvalCommit("e1", 3, { approved: "yes" as never }))).toThrow(/approvalCommit.approved must be true or false/);
    expect(() => store.run(approvalCommit("e1", 3, { reason: 7 as never }))).toThrow(/approvalCommit.reason must be a string or null/);
    expect(() => store.run(approvalCommit("e1", 3, { argumentsHash: undefined as never }))).toThrow(/approvalCommit.argumentsHash/);
    expect(() => store.run(approvalCommit("e1", 0))).toThrow(/approvalCommit.expectedRevision must be a positive integer/);
    expect((await store.getExecution("e1"))?.revision).toBe(3);
  });
});
