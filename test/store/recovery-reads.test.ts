// What recovery reads back, exactly as written: an execution driven through
// prepare → provider barrier → tool barrier (the model response riding on
// it) → provider barrier (the tool results riding on it) → suspension for
// approval (its tool batch) → approval → resumed tool barrier → provider
// barrier, then the store "crashes" (closed without a terminal) and is
// reopened. `listSteps` returns every step in order with its payload
// unchanged, so the conversation can be rebuilt from the `model_response`
// and `tool_results` steps, and `metadata.toolBatch` holds the batch to
// re-dispatch at each point where recovery needs one.

import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Json, StepRecord, StoredStep, ToolCallRecord } from "../../host/store/records.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import {
  approvalCommit,
  prepare,
  providerBarrier,
  refundCall,
  suspendForApproval,
  temporaryDirectory,
  terminalCommit,
  toolBarrier,
  track,
} from "./fixtures.js";

const lookupCall: ToolCallRecord = {
  callId: "call-1",
  toolName: "lookupOrder",
  input: { orderId: 42, fields: ["status", "eta"] },
  idempotencyKey: "e1:call-1",
};

/** Payloads with everything JSON can hold: nesting, unicode, escapes, floats, null, empties. */
const firstResponse: Json = {
  text: 'Let me look that up — "order 42".\nOne moment…',
  toolCalls: [{ callId: "call-1", toolName: "lookupOrder", input: { orderId: 42, fields: ["status", "eta"] } }],
  usage: { inputTokens: 12, outputTokens: 7 },
  finishReason: "tool-calls",
  providerMetadata: {},
  warnings: [],
};
const lookupResults: Json = [{ callId: "call-1", output: { status: "shipped", eta: "2024-06-01", weightKg: 1.25, gift: false, note: null, tags: [] } }];
const refundResults: Json = [{ callId: "tool-9", output: { refunded: 19.5, currency: "€", id: "r-✓-1" } }];

describe("recovery reads", () => {
  it("listSteps returns the whole timeline in order with the payloads as written, across a reopen; metadata.toolBatch at each point", async () => {
    const path = join(await temporaryDirectory(), "agents.db");
    const store = track(await SqliteStore.open(path));
    await store.ensureAgent("support", 1);
    await store.ensureAgent("billing", 1);
    const written: StepRecord[] = [];
    const toolBatchAt: (readonly ToolCallRecord[] | undefined)[] = [];
    const note = async (): Promise<void> => {
      toolBatchAt.push((await store.getExecution("e1"))?.metadata.toolBatch);
    };

    const input = prepare("e1");
    await Promise.all([store.run(input), store.run(prepare("b1", "billing", { at: 11 }))]);
    written.push({ kind: "input", at: input.at, payload: input.input });

    // An unrelated execution written in the same groups must not interleave with e1's timeline.
    await Promise.all([store.run(providerBarrier("e1", 1)), store.run(providerBarrier("b1", 1))]);
    written.push({ kind: "provider_barrier", at: 21, payload: { callId: "model-1", revision: 2 } });

    const modelResponse: StepRecord = { kind: "model_response", at: 25, payload: firstResponse };
    await Promise.all([store.run(toolBarrier("e1", 2, { toolBatch: [lookupCall], steps: [modelResponse] })), store.run(toolBarrier("b1", 2))]);
    written.push(modelResponse, { kind: "tool_barrier", at: 32, payload: { calls: [lookupCall] as unknown as Json, revision: 3 } });
    await note(); // dispatching_tools: the lookup batch

    const lookupStep: StepRecord = { kind: "tool_results", at: 33, payload: lookupResults };
    await store.run(providerBarrier("e1", 3, { steps: [lookupStep] }));
    written.push(lookupStep, { kind: "provider_barrier", at: 23, payload: { callId: "model-3", revision: 4 } });
    await note(); // calling_llm: no batch

    const suspension = suspendForApproval("e1", 4);
    await store.run(suspension);
    written.push(...suspension.steps, { kind: "approval_requested", at: 50, payload: { revision: 5, approvalRequest: suspension.approvalRequest } });
    await note(); // suspended: the refund batch waiting for approval

    await store.run(approvalCommit("e1", 5));
    written.push({ kind: "approval_decided", at: 60, payload: { approvalId: "approval-1", approved: true, reason: "refund is within policy", revision: 6 } });
    await note(); // resuming: the same refund batch

    await store.run(toolBarrier("e1", 6, { toolBatch: [refundCall("e1")], steps: [] }));
    written.push({ kind: "tool_barrier", at: 36, payload: { calls: [refundCall("e1")] as unknown as Json, revision: 7 } });
    const refundStep: StepRecord = { kind: "tool_results", at: 37, payload: refundResults };
    await store.run(providerBarrier("e1", 7, { steps: [refundStep] }));
    written.push(refundStep, { kind: "provider_barrier", at: 27, payload: { callId: "model-7", revision: 8 } });

    expect(toolBatchAt).toEqual([[lookupCall], undefined, [refundCall("e1")], [refundCall("e1")]]);
    const expected: StoredStep[] = written.map((step, index) => ({ seq: index + 1, ...step }));
    expect(await store.listSteps("e1")).toEqual(expected);
    await store.close(); // the "crash": no terminal commit

    const reopened = track(await SqliteStore.open(path));
    const steps = await reopened.listSteps("e1");
    expect(steps).toEqual(expected);
    expect(steps.map((step) => step.seq)).toEqual(expected.map((_, index) => index + 1)); // numeric order past 9
    expect(steps.filter((step) => step.kind === "model_response" || step.kind === "tool_results").map((step) => step.payload)).toEqual([
      firstResponse,
      lookupResults,
      suspension.steps[0]!.payload,
      refundResults,
    ]);
    expect((await reopened.listSteps("b1")).map((step) => step.kind)).toEqual(["input", "provider_barrier", "model_response", "tool_barrier"]);

    const unfinished = await reopened.unfinishedExecutions();
    expect(unfinished.map((row) => [row.executionId, row.status, row.phase, row.revision])).toEqual([
      ["e1", "active", "calling_llm", 8],
      ["b1", "active", "dispatching_tools", 3],
    ]);
    expect(unfinished[0]?.metadata).toEqual({
      config: { replayable: true },
      turns: 7,
      pendingModelCall: { callId: "model-7", startedAt: 27 },
      approval: { approvalId: "approval-1", approved: true, reason: "refund is within policy" },
      runningSince: 60,
    });
    expect(await reopened.run(terminalCommit("e1", 8))).toEqual({ revision: 9 });
    expect((await reopened.listSteps("e1")).slice(expected.length).map((step) => step.kind)).toEqual(["model_response", "terminal"]);
  });

  it("a second suspension replaces the batch and clears the earlier decision", async () => {
    const store = track(await SqliteStore.open(join(await temporaryDirectory(), "agents.db")));
    await store.ensureAgent("support", 1);
    await store.run(prepare("e1"));
    await store.run(providerBarrier("e1", 1));
    await store.run(suspendForApproval("e1", 2));
    await store.run(approvalCommit("e1", 3));
    await store.run(providerBarrier("e1", 4));
    const second = refundCall("e1", "tool-10");
    await store.run(suspendForApproval("e1", 5, "approval-2", "hash-2", { toolBatch: [second] }));
    const row = await store.getExecution("e1");
    expect(row?.metadata).toEqual({ config: { replayable: true }, turns: 4, toolBatch: [second] });
    expect(row?.approvalRequest).toMatchObject({ approvalId: "approval-2", argumentsHash: "hash-2" });
    expect(row?.approvalRequest).not.toHaveProperty("decision");
    expect(await store.run(approvalCommit("e1", 6, { approvalId: "approval-2", argumentsHash: "hash-2", approved: false, reason: "no" }))).toEqual({
      revision: 7,
    });
  });
});
