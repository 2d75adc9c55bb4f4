// `stopWhen` is asked before the turn limit and after a declined approval
// (docs/decisions/0081): a definition with stop conditions is stopped by
// them as the AI SDK's loop is — `isStepCount(20)` reaches step 20 although
// `maxTurns` defaults to 16 — and a step whose calls a person declined is a
// finished step the conditions see. A stop on a definition asking for
// structured output fails saying there is none, instead of returning text
// where the schema's type is promised. Through the public API with the
// scripted model.

import { Output, hasToolCall, isStepCount } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { tool } from "../../host/index.js";
import { MAX_TURNS_UNDER_STOP_WHEN_DEFAULT } from "../../host/runtime/options.js";
import { deferred, lookupTool, openEnvironment, scriptedModel, turnOf, type RecordedCall } from "./helpers.js";

/** Calls lookup on every turn, saying which turn it is. */
function loopingModel() {
  return scriptedModel(({ messages }) => {
    const turn = turnOf(messages);
    return { text: `turn ${turn}`, toolCalls: [{ toolName: "lookup", input: { orderId: String(turn) } }] };
  });
}

describe("stopWhen before maxTurns", () => {
  it("isStepCount(20) reaches step 20 with no maxTurns set (the default 16 is not the AI SDK's limit once stopWhen is given)", async () => {
    const env = await openEnvironment();
    const model = loopingModel();
    const calls: RecordedCall[] = [];
    const agent = env.agent({ id: "a", model, tools: { lookup: lookupTool({ calls }) }, stopWhen: isStepCount(20) });
    expect(await agent.start("go").result).toMatchObject({ outcome: "completed", output: "turn 19" });
    expect(model.turnsServed).toBe(20);
    expect(calls).toHaveLength(20);
  });

  it("maxTurns set: the last step's tools run and the conditions are asked first; only a loop they did not stop fails MAX_TURNS_EXCEEDED", async () => {
    const env = await openEnvironment();
    const stopped = loopingModel();
    const atLimit = env.agent({ id: "a", model: stopped, tools: { lookup: lookupTool() }, stopWhen: isStepCount(3), maxTurns: 3 });
    expect(await atLimit.start("go").result).toMatchObject({ outcome: "completed", output: "turn 2" });
    expect(stopped.turnsServed).toBe(3);

    const going = loopingModel();
    const calls: RecordedCall[] = [];
    const past = env.agent({ id: "b", model: going, tools: { lookup: lookupTool({ calls }) }, stopWhen: isStepCount(5), maxTurns: 3 });
    await expect(past.start("go").result).rejects.toMatchObject({ code: "MAX_TURNS_EXCEEDED", details: { maxTurns: 3 } });
    expect(going.turnsServed).toBe(3);
    expect(calls.map((call) => call.orderId)).toEqual(["0", "1", "2"]);
  });

  it(`a condition that never holds ends at ${MAX_TURNS_UNDER_STOP_WHEN_DEFAULT} turns, MAX_TURNS_EXCEEDED; a start's maxTurns still wins`, async () => {
    const env = await openEnvironment();
    const model = loopingModel();
    const agent = env.agent({ id: "a", model, tools: { lookup: lookupTool() }, stopWhen: () => false });
    await expect(agent.start("go").result).rejects.toMatchObject({
      code: "MAX_TURNS_EXCEEDED",
      details: { maxTurns: MAX_TURNS_UNDER_STOP_WHEN_DEFAULT },
    });
    expect(model.turnsServed).toBe(MAX_TURNS_UNDER_STOP_WHEN_DEFAULT);
    const short = loopingModel();
    const bounded = env.agent({ id: "b", model: short, tools: { lookup: lookupTool() }, stopWhen: () => false });
    await expect(bounded.start("go", { maxTurns: 2 }).result).rejects.toMatchObject({ code: "MAX_TURNS_EXCEEDED", details: { maxTurns: 2 } });
    expect(short.turnsServed).toBe(2);
  });

  it("without stopWhen the default limit stays 16 and is checked before the tools run", async () => {
    const env = await openEnvironment();
    const model = loopingModel();
    const calls: RecordedCall[] = [];
    const agent = env.agent({ id: "a", model, tools: { lookup: lookupTool({ calls }) } });
    await expect(agent.start("go").result).rejects.toMatchObject({ code: "MAX_TURNS_EXCEEDED", details: { maxTurns: 16 } });
    expect(model.turnsServed).toBe(16);
    expect(calls).toHaveLength(15);
  });
});

describe("stopWhen after a declined approval", () => {
  const refund = () => tool({ inputSchema: z.object({ orderId: z.string() }), needsApproval: true, execute: () => "refunded" });

  /** Asks for a refund, then answers; `asked` is the approval to decide. */
  function refundModel() {
    return scriptedModel(({ messages }) =>
      turnOf(messages) === 0 ? { text: "Asking to refund.", toolCalls: [{ toolName: "refund", input: { orderId: "42" } }] } : { text: "Not refunded." },
    );
  }

  async function declined(stopWhen: ReturnType<typeof hasToolCall>) {
    const env = await openEnvironment();
    const model = refundModel();
    const told: number[] = [];
    const agent = env.agent({ id: "a", model, tools: { refund: refund() }, stopWhen, onStepFinish: (step) => void told.push(step.stepNumber) });
    const approval = deferred<string>();
    const run = agent.start("refund 42", {
      onEvent: (event) => {
        if (event.type === "approval_required") approval.resolve(event.request.approvalId);
      },
    });
    const approvalId = await approval.promise;
    const result = await agent.resume(await run.executionId, { approvalId, approved: false, reason: "not today" }).result;
    return { env, result, model, told, executionId: await run.executionId };
  }

  it("a condition that holds on the declined step stops there: the model is not called again, the step's text is the answer", async () => {
    const { env, result, model, told, executionId } = await declined(hasToolCall("refund"));
    expect(result).toMatchObject({ outcome: "completed", output: "Asking to refund." });
    expect(model.turnsServed).toBe(1);
    expect(told).toEqual([0]);
    const notes = (await env.timeline(executionId)).filter((step) => step.kind === "note").map((step) => step.payload);
    expect(notes).toContainEqual({ stoppedBy: "stopWhen", steps: 1 });
  });

  it("a condition that does not hold: the model is told the decline and answers, as before", async () => {
    const { result, model, told } = await declined(hasToolCall("other"));
    expect(result).toMatchObject({ outcome: "completed", output: "Not refunded." });
    expect(model.turnsServed).toBe(2);
    expect(told).toEqual([0, 1]);
  });
});

describe("stopWhen and structured output", () => {
  it("a stop after a step with tool calls has no structured output: MODEL_FAILED saying so, not text typed as the schema", async () => {
    const env = await openEnvironment();
    const agent = env.agent({
      id: "a",
      model: loopingModel(),
      tools: { lookup: lookupTool() },
      output: Output.object({ schema: z.object({ status: z.string() }) }),
      stopWhen: isStepCount(1),
    });
    await expect(agent.start("go").result).rejects.toMatchObject({
      code: "MODEL_FAILED",
      details: { stoppedBy: "stopWhen", reason: "no_structured_output" },
    });
  });
});
