// The AI SDK settings a start gives beside its agent's (issue 27 item 5,
// docs/decisions/0071): `providerOptions`, `model` as a model id and
// `experimental_context` go to this execution's model calls and tools,
// and are kept with it — a resume after an approval and a queued message
// run with them. What cannot be kept (a model object, a function) is
// refused INVALID_INPUT, saying why.

import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { tool, type ExecutionEvent } from "../../host/index.js";
import { deferred, openEnvironment, scriptedModel, turnOf } from "./helpers.js";

const globals = globalThis as { AI_SDK_DEFAULT_PROVIDER?: unknown };
afterEach(() => {
  delete globals.AI_SDK_DEFAULT_PROVIDER;
});

/** A tool that records the context it was handed; it needs approval when asked to. */
function contextTool(seen: unknown[], needsApproval = false) {
  return tool({
    inputSchema: z.object({}),
    needsApproval,
    execute: (_input, { experimental_context }) => {
      seen.push(experimental_context);
      return "ok";
    },
  });
}

function callingModel() {
  return scriptedModel(({ messages }) => (turnOf(messages) === 0 ? { toolCalls: [{ toolName: "whoami", input: {} }] } : { text: "done" }));
}

describe("per-start AI SDK settings", () => {
  it("providerOptions go to the model calls, merged over the agent's by provider, and are stored", async () => {
    const env = await openEnvironment();
    const model = scriptedModel(() => ({ text: "ok" }));
    const agent = env.agent({ id: "a", model, providerOptions: { openai: { user: "agent", store: false }, other: { x: 1 } } });
    const run = agent.start("hi", { providerOptions: { openai: { user: "u-7" } } });
    await run.result;
    expect(model.lastCallOptions?.providerOptions).toEqual({ openai: { user: "u-7", store: false }, other: { x: 1 } });
    expect((await env.execution(await run.executionId))?.metadata.config?.["providerOptions"]).toEqual({ openai: { user: "u-7" } });
  });

  it("a model id is resolved as the agent's would be and used for this execution only", async () => {
    const resolved: string[] = [];
    const other = scriptedModel(() => ({ text: "from the other model" }));
    globals.AI_SDK_DEFAULT_PROVIDER = {
      specificationVersion: "v4",
      languageModel: (id: string) => {
        resolved.push(id);
        return other;
      },
    };
    const env = await openEnvironment();
    const agent = env.agent({ id: "a", model: scriptedModel(() => ({ text: "from the agent's model" })) });
    expect(await agent.start("hi", { model: "other/model" }).result).toMatchObject({ output: "from the other model" });
    expect(await agent.start("hi").result).toMatchObject({ output: "from the agent's model" });
    expect(resolved).toEqual(["other/model"]);
  });

  it("a model object, a function as context, or options that are not JSON are refused, saying why", async () => {
    const env = await openEnvironment();
    const agent = env.agent({ id: "a", model: scriptedModel([]) });
    await expect(agent.start("hi", { model: scriptedModel([]) as never }).result).rejects.toMatchObject({
      code: "INVALID_INPUT",
      message: /model id string per start.*recovery after a restart.*cannot be stored/,
    });
    await expect(agent.start("hi", { experimental_context: (() => 1) as never }).result).rejects.toMatchObject({
      code: "INVALID_INPUT",
      message: /experimental_context" must be JSON per start.*definition's experimental_context/,
    });
    await expect(agent.start("hi", { providerOptions: { openai: { at: new Date() } } as never }).result).rejects.toMatchObject({ code: "INVALID_INPUT" });
  });

  it("experimental_context goes to the tools instead of the agent's, after an approval too", async () => {
    const env = await openEnvironment();
    const seen: unknown[] = [];
    const agent = env.agent({ id: "a", model: callingModel(), tools: { whoami: contextTool(seen, true) }, experimental_context: { user: "agent" } });
    const approval = deferred<string>();
    const run = agent.start("who am I?", {
      experimental_context: { user: "u-7" },
      onEvent: (event: ExecutionEvent) => {
        if (event.type === "approval_required") approval.resolve(event.request.approvalId);
      },
    });
    const executionId = await run.executionId;
    const approvalId = await approval.promise;
    expect(await agent.resume(executionId, { approvalId, approved: true }).result).toMatchObject({ outcome: "completed" });
    expect(seen).toEqual([{ user: "u-7" }]);
  });

  it("a queued message runs with the settings its start gave", async () => {
    const env = await openEnvironment();
    const seen: unknown[] = [];
    const gate = deferred();
    const model = scriptedModel(async ({ messages }) => {
      if (messages.some((message) => message.role === "user" && message.content === "first")) await gate.promise;
      return turnOf(messages) === 0 ? { toolCalls: [{ toolName: "whoami", input: {} }] } : { text: "done" };
    });
    const agent = env.agent({ id: "a", model, tools: { whoami: contextTool(seen) }, onBusy: "enqueue", memoryWindow: 1 });
    const first = agent.start("first", { experimental_context: "first" });
    await first.executionId;
    const second = agent.start("second", { experimental_context: "second" });
    gate.resolve();
    await first.result;
    await second.result;
    expect(seen).toEqual(["first", "second"]);
  });
});
