// `env.retry` from a visitor of a SQLite store, beside its live owner
// (docs/decisions/0015, 0026): the visitor files the retry in the inbox,
// the owner retries the execution as its own `env.retry` would (the tool
// that completed is not run again), and the visitor's Run settles with the
// new attempt's outcome. Refusals happen at filing, nothing written.

import { describe, expect, it } from "vitest";
import { ExecutionNotFoundError, Phronomy, RetryRefusedError, type Environment } from "../../host/index.js";
import Database from "better-sqlite3";
import { approvalRefundTool, lookupTool, openEnvironment, recordingLogger, scriptedModel, waitFor, type RecordedCall } from "./helpers.js";

async function visitorOf(owner: Environment): Promise<Environment> {
  return Phronomy.open({ store: owner.store.path, visitor: true, logger: recordingLogger() });
}

/** model → lookup → model; the second model call fails while `failing.on`. */
function flakyModel(failing: { on: boolean }) {
  return scriptedModel(({ turn }) => {
    if (turn === 0) return { toolCalls: [{ toolName: "lookup", input: { orderId: "42" } }] };
    if (failing.on) return { error: "the provider is down" };
    return { text: "Order 42 has shipped." };
  });
}

/** The store's inbox rows of an execution, read beside the owner. */
async function inboxRows(owner: Environment, executionId: string): Promise<{ kind: string; state: string }[]> {
  const database = new Database(owner.store.path, { readonly: true });
  try {
    return database.prepare("SELECT kind, state FROM approval_inbox WHERE execution_id = ? ORDER BY filed_at").all(executionId) as {
      kind: string;
      state: string;
    }[];
  } finally {
    database.close();
  }
}

describe("env.retry from a SQLite visitor beside the owner", () => {
  it("retries a MODEL_FAILED execution in the owner: the tool is not run twice, the visitor gets the new attempt's outcome", async () => {
    const owner = await openEnvironment();
    const calls: RecordedCall[] = [];
    const failing = { on: true };
    const run = owner.agent({ id: "support", model: flakyModel(failing), tools: { lookup: lookupTool({ calls }) } }).start("Where is order 42?");
    const executionId = await run.executionId;
    await expect(run.result).rejects.toMatchObject({ code: "MODEL_FAILED" });
    failing.on = false;
    const visitor = await visitorOf(owner);
    try {
      const retried = visitor.retry(executionId);
      expect(await retried.executionId).toBe(executionId);
      await expect(retried.result).resolves.toMatchObject({ executionId, outcome: "completed", output: "Order 42 has shipped." });
      expect(calls, "the lookup that completed before the failure was not run again").toHaveLength(1);
      expect(await visitor.execution(executionId)).toMatchObject({ status: "terminal", outcome: "completed", metadata: { attempt: 2 } });
      expect(await inboxRows(owner, executionId)).toEqual([{ kind: "retry", state: "applied" }]);
      // A completed execution is refused at filing, nothing filed.
      const completed = await visitor.retry(executionId).result.catch((error: unknown) => error);
      expect(completed).toBeInstanceOf(RetryRefusedError);
      expect(completed).toMatchObject({ details: { reason: "completed" } });
      await expect(visitor.retry("no-such-execution").result).rejects.toBeInstanceOf(ExecutionNotFoundError);
      expect(await inboxRows(owner, executionId)).toHaveLength(1);
    } finally {
      await visitor.close();
    }
  });

  it("a retry the owner refuses (its conversation busy) settles the visitor's Run with the owner's refusal", async () => {
    const owner = await openEnvironment();
    const failing = { on: true };
    const calls: RecordedCall[] = [];
    const refunds: string[] = [];
    const agent = owner.agent({
      id: "support",
      model: scriptedModel(({ turn, messages }) => {
        const input = JSON.stringify(messages.filter((message) => message.role === "user").at(-1) ?? "");
        if (input.includes("Refund")) return turn === 0 ? { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] } : { text: "refunded" };
        if (turn === 0) return { toolCalls: [{ toolName: "lookup", input: { orderId: "42" } }] };
        return failing.on ? { error: "the provider is down" } : { text: "Order 42 has shipped." };
      }),
      tools: { lookup: lookupTool({ calls }), refund: approvalRefundTool(refunds) },
    });
    const failed = agent.start("Where is order 42?");
    const failedId = await failed.executionId;
    await expect(failed.result).rejects.toMatchObject({ code: "MODEL_FAILED" });
    failing.on = false;
    // The conversation is busy: another execution waits for approval.
    const waiting = agent.start("Refund order 42");
    await waitFor(async () => ((await owner.pendingApprovals()).length > 0 ? true : undefined));
    const visitor = await visitorOf(owner);
    try {
      await expect(visitor.retry(failedId).result).rejects.toMatchObject({ code: "AGENT_BUSY" });
      expect(await inboxRows(owner, failedId)).toEqual([{ kind: "retry", state: "refused" }]);
      const unchanged = await owner.execution(failedId);
      expect(unchanged).toMatchObject({ status: "terminal", outcome: "failed" });
      expect(unchanged?.metadata.attempt ?? 1, "not reopened").toBe(1);
      await owner.cancel(await waiting.executionId);
      await expect(visitor.retry(failedId).result).resolves.toMatchObject({ outcome: "completed" });
      expect(calls).toHaveLength(1);
    } finally {
      await visitor.close();
    }
  });
});
