// `env.admin.page()`, `counts()`, `cancelMany()` and `retryMany()`
// (host/runtime/admin-pages.ts, docs/decisions/0082) through the public
// API on a real environment: pages by cursor with filters and words, counts
// over the whole store, bulk cancel and retry answering for each execution,
// and the refusals naming their field.

import { describe, expect, it } from "vitest";
import { InvalidInputError, bulkExecutionsMax } from "../../host/index.js";
import { deferred, lookupTool, openEnvironment, scriptedModel } from "../runtime/helpers.js";

/** "slow …": lookup (gated) then an answer; "fail …": fails while `failing.on`; else answers at once. */
function model(failing: { on: boolean }) {
  return scriptedModel(({ messages, turn }) => {
    const request = JSON.stringify(messages.filter((message) => message.role === "user").at(-1));
    if (request.includes("slow") && turn === 0) return { toolCalls: [{ toolName: "lookup", input: { orderId: "42" } }] };
    if (request.includes("fail") && failing.on) return { error: "the provider is down" };
    return { text: `Answered ${request.includes("parcel") ? "parcel ZX41" : "hello"}` };
  });
}

describe("env.admin pages, counts and bulk actions", () => {
  it("pages by cursor, filters, searches inputs and outputs, and counts over the whole store", async () => {
    const env = await openEnvironment();
    const failing = { on: true };
    const finished: string[] = [];
    for (let index = 0; index < 7; index++) {
      const run = env.agent({ id: `user-${index}`, model: model(failing), tools: {} }).start(index === 3 ? "where is my parcel" : `hello number ${index}`);
      await run.result;
      finished.push(await run.executionId);
    }
    const failed = env.agent({ id: "user-f", model: model(failing), tools: {} }).start("this will fail");
    await expect(failed.result).rejects.toMatchObject({ code: "MODEL_FAILED" });
    const failedId = await failed.executionId;

    // Newest first (two started in the same millisecond are ordered by id, as the listing orders them).
    const all = (await env.executions({ limit: 100 })).map((row) => row.executionId);
    expect(new Set(all)).toEqual(new Set([...finished, failedId]));
    const first = await env.admin.page({ limit: 3 });
    expect(first.rows.map((row) => row.executionId)).toEqual(all.slice(0, 3));
    expect(first.previous).toBeUndefined();
    const second = await env.admin.page({ limit: 3, cursor: first.next! });
    expect(second.rows.map((row) => row.executionId)).toEqual(all.slice(3, 6));
    const third = await env.admin.page({ limit: 3, cursor: second.next! });
    expect(third.rows.map((row) => row.executionId)).toEqual(all.slice(6));
    expect(third.next).toBeUndefined();
    const back = await env.admin.page({ limit: 3, cursor: second.previous! });
    expect(back.rows.map((row) => row.executionId)).toEqual(first.rows.map((row) => row.executionId));

    expect((await env.admin.page({ status: "failed" })).rows.map((row) => row.executionId)).toEqual([failedId]);
    expect((await env.admin.page({ status: "completed", agentId: "user-2" })).rows.map((row) => row.executionId)).toEqual([finished[2]]);
    expect((await env.admin.page({ text: "PARCEL" })).rows.map((row) => row.executionId)).toEqual([finished[3]]);
    expect(
      (await env.admin.page({ text: "zx4" })).rows.map((row) => row.executionId),
      "the output is searched",
    ).toEqual([finished[3]]);
    expect((await env.admin.page({ text: "hello number" })).rows).toHaveLength(6);

    const counts = await env.admin.counts();
    expect(counts).toMatchObject({ byStatus: { terminal: 8, completed: 7, failed: 1, queued: 0 }, scanned: 8, truncated: false });
    expect((await env.admin.counts({ agentId: "user-f" })).byStatus).toMatchObject({ terminal: 1, failed: 1 });

    await expect(env.admin.page({ cursor: "garbage!" })).rejects.toMatchObject({ code: "INVALID_INPUT", details: { field: "cursor" } });
    await expect(env.admin.page({ status: "done" as never })).rejects.toMatchObject({ details: { field: "status" } });
    await expect(env.admin.page({ status: "queued", cursor: first.next! })).rejects.toMatchObject({ details: { field: "cursor" } });
  });

  it("cancels many and retries many, each through the public path, answering for each; refusals do not stop the others", async () => {
    const env = await openEnvironment();
    const failing = { on: true };
    const gate = deferred();
    const slow: string[] = [];
    for (let index = 0; index < 3; index++) {
      const run = env.agent({ id: `slow-${index}`, model: model(failing), tools: { lookup: lookupTool({ gate: gate.promise }) } }).start("slow please");
      run.result.catch(() => undefined);
      slow.push(await run.executionId);
    }
    const done = env.agent({ id: "done", model: model(failing), tools: {} }).start("hello");
    await done.result;
    const doneId = await done.executionId;

    const cancelled = await env.admin.cancelMany({ executionIds: [...slow, doneId] }, { reason: "cleaning up" });
    expect(cancelled.filter((answer) => answer.executionId !== doneId).map((answer) => answer.status)).toEqual(
      slow.map(() => expect.stringMatching(/^(done|requested)$/)),
    );
    expect(cancelled.find((answer) => answer.executionId === doneId)).toMatchObject({ status: "refused", error: { code: "EXECUTION_ENDED" } });
    for (const executionId of slow) {
      await expect.poll(async () => (await env.execution(executionId))?.outcome, { timeout: 10_000 }).toBe("failed");
    }
    expect((await env.admin.page({ status: "failed" })).rows.map((row) => row.executionId).sort()).toEqual([...slow].sort());

    // Retry all that match the filter: the cancelled ones continue and complete.
    gate.resolve();
    failing.on = false;
    const retried = await env.admin.retryMany({ query: { status: "failed" } });
    expect(retried.map((answer) => answer.status)).toEqual(["done", "done", "done"]);
    for (const executionId of slow) {
      await expect.poll(async () => (await env.execution(executionId))?.outcome, { timeout: 10_000 }).toBe("completed");
    }
    const refusedRetry = await env.admin.retryMany({ executionIds: [doneId, "no-such-execution"] });
    expect(refusedRetry).toEqual([
      { executionId: doneId, status: "refused", error: { code: "RETRY_REFUSED", message: expect.stringContaining(doneId) } },
      { executionId: "no-such-execution", status: "refused", error: { code: "EXECUTION_NOT_FOUND", message: expect.any(String) } },
    ]);

    await expect(env.admin.cancelMany({ executionIds: [] })).rejects.toMatchObject({ details: { field: "executionIds" } });
    const tooMany = Array.from({ length: bulkExecutionsMax + 1 }, (_, index) => `e-${index}`);
    await expect(env.admin.retryMany({ executionIds: tooMany })).rejects.toBeInstanceOf(InvalidInputError);
  }, 30_000);
});
