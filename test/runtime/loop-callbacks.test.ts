// The `ToolLoopAgent` callbacks told around a step's work
// (docs/decisions/0071): `onStepStart` before each model call, with the
// call as `prepareStep` left it; `onToolExecutionStart`/`onToolExecutionEnd`
// around each tool call that runs, the end with its result or error. A
// throw fails the execution STREAM_CALLBACK naming the setting. Through the
// public API with the scripted model.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { tool, type StepStartEvent, type ToolExecutionEndEvent } from "../../host/index.js";
import { lookupTool, openEnvironment, scriptedModel, turnOf } from "./helpers.js";

/** Looks order 41 up on its first turn, answers "done" on its second. */
function oneLookupModel() {
  return scriptedModel(({ messages }) =>
    turnOf(messages) === 0 ? { text: "looking", toolCalls: [{ toolName: "lookup", input: { orderId: "41" } }] } : { text: "done" },
  );
}

describe("onStepStart", () => {
  it("is told before each model call, after prepareStep, with the steps so far; onStepFinish after each", async () => {
    const env = await openEnvironment();
    const told: string[] = [];
    const starts: StepStartEvent[] = [];
    const agent = env.agent({
      id: "a",
      model: oneLookupModel(),
      tools: { lookup: lookupTool() },
      instructions: "Be brief.",
      prepareStep: ({ stepNumber }) => (stepNumber === 1 ? { toolChoice: "none" } : undefined),
      onStepStart: (event) => {
        starts.push(event);
        told.push(`start ${event.stepNumber}`);
      },
      onStepFinish: (step) => void told.push(`finish ${step.stepNumber}`),
    });
    const run = agent.start("Where is order 41?");
    expect(await run.result).toMatchObject({ outcome: "completed", output: "done" });
    expect(told).toEqual(["start 0", "finish 0", "start 1", "finish 1"]);
    expect(starts.map((event) => [event.stepNumber, event.steps.length, event.toolChoice, event.instructions])).toEqual([
      [0, 0, undefined, "Be brief."],
      [1, 1, "none", "Be brief."],
    ]);
    expect(starts[0]).toMatchObject({ executionId: await run.executionId, messages: [{ role: "user" }] });
    expect(starts[1]?.messages.map((message) => message.role)).toEqual(["user", "assistant", "tool"]);
    expect(new Set(starts.map((event) => event.callId)).size).toBe(2);
  });

  it("experimental_onStepStart is the same setting; giving both is refused; a throw fails the execution STREAM_CALLBACK", async () => {
    const env = await openEnvironment();
    const steps: number[] = [];
    const older = env.agent({
      id: "a",
      model: oneLookupModel(),
      tools: { lookup: lookupTool() },
      experimental_onStepStart: (event) => void steps.push(event.stepNumber),
    });
    expect(await older.start("go").result).toMatchObject({ outcome: "completed" });
    expect(steps).toEqual([0, 1]);
    const told = () => undefined;
    expect(() => env.agent({ id: "b", model: oneLookupModel(), onStepStart: told, experimental_onStepStart: told })).toThrow(
      /give "onStepStart" or "experimental_onStepStart"/,
    );
    const model = oneLookupModel();
    const throwing = env.agent({
      id: "c",
      model,
      onStepStart: () => {
        throw new Error("broken hook");
      },
    });
    await expect(throwing.start("go").result).rejects.toMatchObject({ code: "STREAM_CALLBACK", details: { setting: "onStepStart" } });
    expect(model.turnsServed).toBe(0);
  });
});

describe("onToolExecutionStart and onToolExecutionEnd", () => {
  it("are told around each tool call that runs: the end with its result, or with its error", async () => {
    const env = await openEnvironment();
    const told: string[] = [];
    const ends: ToolExecutionEndEvent[] = [];
    const broken = tool({
      inputSchema: z.object({ orderId: z.string() }),
      execute: () => {
        told.push("execute broken");
        throw new Error("out of order");
      },
    });
    const lookup = tool({
      inputSchema: z.object({ orderId: z.string() }),
      execute: ({ orderId }) => {
        told.push("execute lookup");
        return { orderId, status: "shipped" };
      },
    });
    const model = scriptedModel(({ messages }) =>
      turnOf(messages) === 0
        ? {
            toolCalls: [
              { toolName: "lookup", input: { orderId: "41" } },
              { toolName: "broken", input: { orderId: "" } },
              { toolName: "missing", input: { orderId: "" } },
            ],
          }
        : { text: "done" },
    );
    const agent = env.agent({
      id: "a",
      model,
      tools: { lookup, broken },
      toolsContext: { lookup: { region: "eu" } },
      onToolExecutionStart: (event) => void told.push(`start ${event.toolCall.toolName}`),
      onToolExecutionEnd: (event) => {
        ends.push(event);
        told.push(`end ${event.toolCall.toolName}`);
      },
    });
    expect(await agent.start("go").result).toMatchObject({ outcome: "completed", output: "done" });
    // The unknown tool never runs: it is not told.
    expect(told.filter((entry) => entry.endsWith("lookup"))).toEqual(["start lookup", "execute lookup", "end lookup"]);
    expect(told.filter((entry) => entry.endsWith("broken"))).toEqual(["start broken", "execute broken", "end broken"]);
    expect(told).toHaveLength(6);
    const byTool = Object.fromEntries(ends.map((event) => [event.toolCall.toolName, event]));
    expect(byTool.lookup).toMatchObject({
      toolContext: { region: "eu" },
      toolOutput: { type: "tool-result", toolName: "lookup", input: { orderId: "41" }, output: { orderId: "41", status: "shipped" } },
    });
    expect(byTool.lookup?.toolExecutionMs).toBeGreaterThanOrEqual(0);
    expect(byTool.broken?.toolOutput).toMatchObject({ type: "tool-error", toolName: "broken" });
  });

  it("a callback that throws fails the execution STREAM_CALLBACK naming it; the model is not called again", async () => {
    for (const setting of ["onToolExecutionStart", "onToolExecutionEnd"] as const) {
      const env = await openEnvironment();
      const model = oneLookupModel();
      const agent = env.agent({
        id: "a",
        model,
        tools: { lookup: lookupTool() },
        [setting]: () => {
          throw new Error("broken hook");
        },
      });
      await expect(agent.start("go").result).rejects.toMatchObject({ code: "STREAM_CALLBACK", details: { setting } });
      expect(model.turnsServed).toBe(1);
    }
  });
});
