// The request table's lookup of a pending resume by execution id
// (host/runtime/requests.ts): indexed, since every resume asks it, and
// answering as the scan did — the first pending resume of that execution
// added, other than `except`, gone once taken or when all are taken.

import { describe, expect, it } from "vitest";
import { type PendingRequest, RequestTable, type ResumeRequest } from "../../host/runtime/requests.js";
import type { Waiter } from "../../host/runtime/run.js";

const waiter = {} as Waiter;

function resume(executionId: string, approvalId: string): ResumeRequest {
  const waits = { recoverFirst: () => undefined, askAgain: () => undefined };
  return { type: "resume", waiter, executionId, approvalId, approved: true, reason: null, signal: undefined, afterRecovery: false, waits };
}

describe("RequestTable.resumeOf", () => {
  it("answers the first pending resume of the execution, other than except, until taken", () => {
    const table = new RequestTable();
    const first = resume("x", "a1");
    const second = resume("x", "a2");
    const other = resume("y", "a3");
    const firstHandle = table.add(first);
    table.add({ type: "cancel", waiter, executionId: "x", reason: undefined } as PendingRequest);
    const secondHandle = table.add(second);
    table.add(other);
    expect(table.resumeOf("x")).toBe(first);
    expect(table.resumeOf("x", firstHandle)).toBe(second);
    expect(table.resumeOf("y")).toBe(other);
    expect(table.resumeOf("z")).toBeUndefined();
    expect(table.take(firstHandle)).toBe(first);
    expect(table.resumeOf("x")).toBe(second);
    expect(table.resumeOf("x", secondHandle)).toBeUndefined();
    table.take(secondHandle);
    expect(table.resumeOf("x")).toBeUndefined();
    expect(table.resumeOf("y")).toBe(other);
    table.takeAll();
    expect(table.resumeOf("y")).toBeUndefined();
  });

  it("finds each of 20,000 pending resumes by its execution id", () => {
    const table = new RequestTable();
    const requests = Array.from({ length: 20_000 }, (_, index) => resume(`execution-${index}`, `approval-${index}`));
    for (const request of requests) table.add(request);
    for (const request of requests) expect(table.resumeOf(request.executionId)).toBe(request);
  });
});
