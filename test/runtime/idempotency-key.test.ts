// A start's idempotency key (docs/decisions/0031) on the SQLite store: the
// key names the execution, so a key started again is not run again — its
// Run follows the first one's execution to the same outcome.

import { describe, expect, it } from "vitest";
import { agentRunModel, lookupTool, openEnvironment, scriptedModel, type RecordedCall } from "./helpers.js";
import type { Guardrail } from "../../host/index.js";
import { startExecutionIdOf } from "../../host/store/start-filing.js";

describe("idempotencyKey", () => {
  it("runs a key once: a second start with it (concurrent or later) settles with the first's outcome; another key is another execution", async () => {
    const env = await openEnvironment();
    const calls: RecordedCall[] = [];
    const support = env.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool({ calls }) }, onBusy: "enqueue" });
    const conversation = support.conversation("customer-1");
    const first = conversation.start("Where is order 42?", { idempotencyKey: "request-1" });
    const second = conversation.start("Where is order 42?", { idempotencyKey: "request-1" });
    const [a, b] = await Promise.all([first.result, second.result]);
    const executionId = startExecutionIdOf("customer-1", "request-1");
    expect(a).toMatchObject({ executionId, outcome: "completed" });
    expect(b).toMatchObject({ executionId, outcome: "completed" });
    expect(calls).toHaveLength(2);
    await expect(conversation.start("Where is order 42?", { idempotencyKey: "request-1" }).result).resolves.toMatchObject({
      executionId,
      outcome: "completed",
    });
    expect(calls).toHaveLength(2);
    const other = await conversation.start("And order 43?", { idempotencyKey: "request-2" }).result;
    expect(other.executionId).not.toBe(executionId);
    expect((await env.executions({ agentId: "customer-1" })).length).toBe(2);
  });

  it("a key sent again while its first start still runs (onBusy reject) follows it instead of being refused busy", async () => {
    const env = await openEnvironment();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const calls: RecordedCall[] = [];
    const support = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool({ calls, gate }) } });
    const first = support.start("Where is order 42?", { idempotencyKey: "k" });
    const executionId = await first.executionId;
    const again = support.start("Where is order 42?", { idempotencyKey: "k" });
    const other = support.start("Something else");
    await expect(other.result).rejects.toMatchObject({ code: "AGENT_BUSY" });
    release();
    expect(await again.result).toMatchObject({ executionId, outcome: "completed" });
    expect(await first.result).toMatchObject({ executionId, outcome: "completed" });
    expect(calls).toHaveLength(2);
  });

  it("one key started twice at once (onBusy reject): the second follows the first, whose preparation it met, instead of AGENT_BUSY (issue 24, item 6)", async () => {
    const env = await openEnvironment();
    const calls: RecordedCall[] = [];
    const support = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool({ calls }) } });
    const first = support.start("Where is order 42?", { idempotencyKey: "k" });
    const second = support.start("Where is order 42?", { idempotencyKey: "k" });
    const [a, b] = await Promise.all([first.result, second.result]);
    const executionId = startExecutionIdOf("support", "k");
    expect(a).toMatchObject({ executionId, outcome: "completed" });
    expect(b).toMatchObject({ executionId, outcome: "completed" });
    expect((await env.executions({ agentId: "support" })).map((row) => row.executionId)).toEqual([executionId]);
    expect(new Set(calls.map((call) => call.idempotencyKey))).toEqual(new Set([`${executionId}:call-0-0`, `${executionId}:call-1-0`]));
  });

  it("a key whose execution failed, started again: its Run knows the execution's id and fails with the stored error (seed 4166796260)", async () => {
    const env = await openEnvironment();
    const model = scriptedModel(() => ({ text: "ok" }));
    const inputGuardrail: Guardrail = () => {
      throw new Error("guardrail bug");
    };
    const support = env.agent({ id: "support", model, inputGuardrail });
    const executionId = startExecutionIdOf("support", "k");
    await expect(support.start("hi", { idempotencyKey: "k" }).result).rejects.toMatchObject({ code: "INPUT_BLOCKED", executionId });
    const again = support.start("hi", { idempotencyKey: "k" });
    await expect(again.executionId).resolves.toBe(executionId);
    await expect(again.result).rejects.toMatchObject({ code: "INPUT_BLOCKED", executionId });
    await expect(env.wait(executionId).executionId).resolves.toBe(executionId);
    expect(model.turnsServed).toBe(0);
    await env.close();
  });

  it("refuses a key that is not a non-empty string of at most 256 characters", async () => {
    const env = await openEnvironment();
    const support = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    for (const key of ["", "x".repeat(257), 42]) {
      await expect(support.start("hi", { idempotencyKey: key as string }).result).rejects.toMatchObject({ code: "INVALID_INPUT" });
    }
  });
});
