// The loop settings that decide at barriers decide the same after a
// restart (docs/decisions/0071): `stopWhen` on the steps rebuilt from the
// execution's records, `onStepFinish` told the steps the first process had
// told but no barrier recorded as told (at least once, never a step
// recorded as told), and `prepareCall` given the start's options kept
// with the execution; `onStepStart` and `onToolExecutionStart` told again
// for the work done again. The "crash" is a barrier whose compare-and-set the
// store reports lost: the first environment lets the execution go without
// writing anything more (as a killed process would), is closed, and a
// second one opened on the same SQLite file recovers it.

import { isStepCount } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Phronomy, type AgentSettings, type Environment } from "../../host/index.js";
import { faultyStore, type FaultPlan } from "./faulty-store.js";
import { lookupTool, recordingLogger, scriptedModel, temporaryStorePath, turnOf } from "./helpers.js";

/** Runs `definition` on a store whose `fault` fails the run; closes that
 * environment and opens another on the file, defines the agent again
 * (`again`) and waits for the recovered execution. */
async function acrossRestart(
  fault: FaultPlan,
  first: AgentSettings,
  again: AgentSettings,
  options: { readonly options?: Json } = {},
): Promise<{ result: unknown; env: Environment; executionId: string }> {
  const path = await temporaryStorePath();
  const crashed = await Phronomy.open({ store: await faultyStore(path, fault), logger: recordingLogger() });
  const run = crashed.agent({ id: "support", ...first }).start("Where is order 42?", options);
  const executionId = await run.executionId;
  await expect(run.result).rejects.toMatchObject({ code: "EXECUTION_REHYDRATION_REQUIRED" });
  await crashed.close();
  const env = await Phronomy.open({ store: path, logger: recordingLogger() });
  const agent = env.agent({ id: "support", ...again });
  await agent.ready;
  const result = await env.wait(executionId).result;
  return { result, env, executionId };
}

type Json = import("../../host/index.js").Json;

/** Calls lookup on every turn, saying which turn it is. */
function loopingModel() {
  return scriptedModel(({ messages }) => {
    const turn = turnOf(messages);
    return { text: `turn ${turn}`, toolCalls: [{ toolName: "lookup", input: { orderId: String(40 + turn) } }] };
  });
}

describe("loop settings across a restart", () => {
  it("stopWhen counts the steps recorded before the restart: isStepCount(2) stops after the one step made after it", async () => {
    // The barrier before the second step's tools fails: step 0 is recorded
    // whole, step 1's model call is made again after the restart.
    const second = loopingModel();
    const { result, env } = await acrossRestart(
      { operation: "toolBarrier", occurrence: 2, fault: "lost_race" },
      { model: loopingModel(), tools: { lookup: lookupTool() }, stopWhen: isStepCount(2) },
      { model: second, tools: { lookup: lookupTool() }, stopWhen: isStepCount(2) },
    );
    expect(result).toMatchObject({ outcome: "completed", output: "turn 1" });
    expect(second.turnsServed).toBe(1);
    await env.close();
  });

  it("onStepFinish after a restart is told the steps no barrier recorded as told, and never one that was", async () => {
    // The barrier after the second step's tools fails: step 1's results
    // and the note that it was told are lost; step 0's note is recorded.
    const model = () =>
      scriptedModel(({ messages }) => (turnOf(messages) < 2 ? { toolCalls: [{ toolName: "lookup", input: { orderId: "42" } }] } : { text: "shipped" }));
    const before: number[] = [];
    const after: number[] = [];
    const finished: number[] = [];
    const { result, env } = await acrossRestart(
      { operation: "providerBarrier", occurrence: 2, fault: "lost_race" },
      { model: model(), tools: { lookup: lookupTool() }, onStepFinish: (step) => void before.push(step.stepNumber) },
      {
        model: model(),
        tools: { lookup: lookupTool() },
        onStepFinish: (step) => void after.push(step.stepNumber),
        onFinish: ({ steps }) => void finished.push(steps.length),
      },
    );
    expect(result).toMatchObject({ outcome: "completed", output: "shipped" });
    expect(before).toEqual([0, 1]);
    expect(after).toEqual([1, 2]);
    expect(finished).toEqual([3]);
    await env.close();
  });

  it("onStepStart and onToolExecutionStart are told again for the work a restart does again (at least once)", async () => {
    // The barrier after step 0's tools fails: the batch's results are lost,
    // so the recovered process runs the batch again, then makes step 1.
    const model = () =>
      scriptedModel(({ messages }) => (turnOf(messages) === 0 ? { toolCalls: [{ toolName: "lookup", input: { orderId: "42" } }] } : { text: "shipped" }));
    const told = (log: string[]): AgentSettings => ({
      model: model(),
      tools: { lookup: lookupTool() },
      onStepStart: ({ stepNumber }) => void log.push(`step ${stepNumber}`),
      onToolExecutionStart: ({ callId }) => void log.push(`tool ${callId}`),
    });
    const before: string[] = [];
    const after: string[] = [];
    const { result, env } = await acrossRestart({ operation: "providerBarrier", occurrence: 1, fault: "lost_race" }, told(before), told(after));
    expect(result).toMatchObject({ outcome: "completed", output: "shipped" });
    expect(before).toEqual(["step 0", expect.stringMatching(/^tool /)]);
    expect(after).toEqual([before[1], "step 1"]);
    await env.close();
  });

  it("prepareCall after a restart is given the start's options kept with the execution", async () => {
    const schema = z.object({ userName: z.string() });
    const seen: Json[] = [];
    const settings = (): AgentSettings => ({
      model: loopingModel(),
      tools: { lookup: lookupTool() },
      stopWhen: isStepCount(2),
      callOptionsSchema: schema,
      prepareCall: ({ options, ...rest }) => {
        seen.push(options as Json);
        return rest;
      },
    });
    const { result, env } = await acrossRestart({ operation: "toolBarrier", occurrence: 2, fault: "lost_race" }, settings(), settings(), {
      options: { userName: "Ada" },
    });
    expect(result).toMatchObject({ outcome: "completed" });
    expect(seen).toEqual([{ userName: "Ada" }, { userName: "Ada" }]);
    await env.close();
  });
});
