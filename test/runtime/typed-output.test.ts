// A run's result is typed from its definition (issue 27): the schema's
// type with `output: Output.object({ schema })`, the model's text without
// it, nothing on a handoff. The type assertions are checked by
// `npm run typecheck` (tsc over test/), the values by the runs.

import { Output } from "ai";
import { afterEach, describe, expect, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { handoff, type Environment, type HandoffRequest, type Run, type RunResult } from "../../host/index.js";
import { openEnvironment } from "./helpers.js";

let env: Environment | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

const order = z.object({ status: z.enum(["shipped", "pending"]), etaDays: z.number() });
type Order = z.infer<typeof order>;

describe("typed results", () => {
  it("Output.object: a conversation's result is the schema's type", async () => {
    env = await openEnvironment();
    const model = scriptedModel(() => ({ text: JSON.stringify({ status: "shipped", etaDays: 2 }) }));
    const support = env.agent({ name: "support", model, output: Output.object({ schema: order }) });
    const run = support.conversation("user-1").start("Where is order 42?");
    expectTypeOf(run).toEqualTypeOf<Run<Order>>();
    const result = await run.result;
    if (result.outcome !== "completed") throw new Error(`expected completed, got ${result.outcome}`);
    expectTypeOf(result.output).toEqualTypeOf<Order>();
    const etaDays: number = result.output.etaDays;
    expect(etaDays).toBe(2);
    expect(result.output.status).toBe("shipped");
  });

  it("no output setting: a single agent's result is the model's text", async () => {
    env = await openEnvironment();
    const agent = env.agent({ id: "plain", model: scriptedModel(() => ({ text: "hello" })) });
    const result = await agent.start("hi").result;
    expectTypeOf(result).toEqualTypeOf<RunResult<string>>();
    if (result.outcome !== "completed") throw new Error(`expected completed, got ${result.outcome}`);
    expectTypeOf(result.output).toEqualTypeOf<string>();
    expect(result.output.toUpperCase()).toBe("HELLO");
  });

  it("a handoff has no output but its request", async () => {
    env = await openEnvironment();
    const model = scriptedModel(() => ({ toolCalls: [{ toolName: "toBilling", input: { reason: "a refund question" } }] }));
    const triage = env.agent({ id: "triage", model, tools: { toBilling: handoff({ to: "billing" }) }, output: Output.object({ schema: order }) });
    const result = await triage.start("I want a refund").result;
    expect(result.outcome).toBe("handed_off");
    if (result.outcome !== "handed_off") return;
    expectTypeOf(result.output).toEqualTypeOf<null>();
    expectTypeOf(result.handoff).toEqualTypeOf<HandoffRequest | undefined>();
    expect(result.output).toBeNull();
    expect(result.handoff?.targetAgentId).toBe("billing");
  });

  it("a result that may have handed off cannot be read as output unnarrowed", async () => {
    env = await openEnvironment();
    const model = scriptedModel(() => ({ text: JSON.stringify({ status: "pending", etaDays: 5 }) }));
    const result = await env.agent({ id: "typed", model, output: Output.object({ schema: order }) }).start("?").result;
    // @ts-expect-error a handed-off result's output is null: narrow on `outcome` first
    const unnarrowed: number = result.output.etaDays;
    expect(unnarrowed).toBe(5);
  });
});
