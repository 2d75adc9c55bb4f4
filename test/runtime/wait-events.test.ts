// Every Run's `run.events` ends with exactly one terminal event (README
// "Events"), `env.wait`'s included: one settled from the stored row (an
// execution that already ended, failed or is suspended), one held for
// recovery, and one the environment refuses (closed). Through the public
// API on real SQLite files.

import { describe, expect, it } from "vitest";
import { Phronomy, type Environment, type ExecutionEvent, type Run } from "../../host/index.js";
import { agentRunModel, approvalRefundTool, lookupTool, openEnvironment, recordingLogger, scriptedModel, temporaryStorePath, turnOf } from "./helpers.js";
import { faultyStore } from "./faulty-store.js";

const terminalTypes = new Set(["done", "error", "timeout", "cancelled", "handoff", "approval_required"]);

/** Reads the whole stream and the result; checks the stream ends with
 * exactly one terminal event, and that an error event carries the error
 * the result was rejected with. */
async function terminalOf(run: Run): Promise<{ event: ExecutionEvent; settled: PromiseSettledResult<unknown> }> {
  const seen: ExecutionEvent[] = [];
  for await (const event of run.events) seen.push(event);
  const [settled] = await Promise.allSettled([run.result]);
  const terminals = seen.filter((event) => terminalTypes.has(event.type));
  expect(
    terminals.map((event) => event.type),
    "exactly one terminal event",
  ).toHaveLength(1);
  expect(seen.at(-1), "the terminal event is the last").toBe(terminals[0]);
  const event = terminals[0]!;
  if (settled!.status === "rejected" && "error" in event) expect(event.error).toBe(settled!.reason);
  return { event, settled: settled! };
}

/** Runs `prepare` in one environment on a new store file, closes it, and
 * opens another on the same file: its executions are only rows there. */
async function reopened(prepare: (env: Environment) => Promise<string>): Promise<{ env: Environment; executionId: string }> {
  const store = await temporaryStorePath();
  const first = await openEnvironment({ store });
  const executionId = await prepare(first);
  await first.close();
  return { env: await openEnvironment({ store }), executionId };
}

describe("env.wait's events end with exactly one terminal event", () => {
  it("an execution that ended: done, built from the row", async () => {
    const { env, executionId } = await reopened(async (first) => {
      const run = first.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool() } }).start("Where is order 42?");
      await run.result;
      return run.executionId;
    });
    const { event, settled } = await terminalOf(env.wait(executionId));
    expect(event).toMatchObject({ type: "done", executionId, output: "Order 42 has shipped." });
    expect(settled).toMatchObject({ status: "fulfilled", value: { outcome: "completed" } });
  });

  it("an execution that failed: error, carrying the stored error", async () => {
    const { env, executionId } = await reopened(async (first) => {
      const model = scriptedModel(() => {
        throw new Error("the model is down");
      });
      const run = first.agent({ id: "support", model }).start("Where is order 42?");
      await run.result.catch(() => undefined);
      return run.executionId;
    });
    const { event, settled } = await terminalOf(env.wait(executionId));
    expect(event).toMatchObject({ type: "error", executionId });
    expect(settled.status).toBe("rejected");
  });

  it("an execution suspended for approval: approval_required, then ApprovalRequiredError", async () => {
    const { env, executionId } = await reopened(async (first) => {
      const model = scriptedModel(({ messages }) =>
        turnOf(messages) > 0 ? { text: "Refunded." } : { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] },
      );
      const run = first.agent({ id: "support", model, tools: { refund: approvalRefundTool([]) } }).start("Refund order 42");
      const id = await run.executionId;
      for (let i = 0; (await first.execution(id))?.status !== "suspended"; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      return id;
    });
    const { event, settled } = await terminalOf(env.wait(executionId));
    expect(event).toMatchObject({ type: "approval_required", executionId });
    expect(settled).toMatchObject({ status: "rejected", reason: { code: "APPROVAL_REQUIRED" } });
  });

  it("an execution held for recovery: error with EXECUTION_REHYDRATION_REQUIRED", async () => {
    const store = await faultyStore(await temporaryStorePath(), { operation: "terminalCommit", occurrence: 1, fault: "store_failed" });
    const env = await openEnvironment({ store });
    const run = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool() } }).start("Where is order 42?");
    await run.result.catch(() => undefined);
    const { event, settled } = await terminalOf(env.wait(await run.executionId));
    expect(event).toMatchObject({ type: "error", error: { code: "EXECUTION_REHYDRATION_REQUIRED" } });
    expect(settled.status).toBe("rejected");
  });

  it("refused by a closed environment: error with RUNTIME_SHUTDOWN", async () => {
    const env = await Phronomy.open({ store: await temporaryStorePath(), logger: recordingLogger() });
    const run = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool() } }).start("Where is order 42?");
    await run.result;
    await env.close();
    const { event, settled } = await terminalOf(env.wait(await run.executionId));
    expect(event).toMatchObject({ type: "error", error: { code: "RUNTIME_SHUTDOWN" } });
    expect(settled.status).toBe("rejected");
  });
});
