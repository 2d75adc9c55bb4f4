// Every function an application hands the library, failing (issue 24,
// "every failure ends the run and frees the conversation"; decision 0056),
// through the public API on real SQLite files. A function whose failure
// fails the run (the model, a tool's needsApproval) settles the Run with a
// typed PhronomyError, writes the terminal row, lets the conversation admit
// the next start and env.close() resolve. A tool call that fails (execute,
// toModelOutput, a result that is not JSON, a validator that throws) is an
// answer the model is told, and the run completes. An approval listener
// that fails is reported. Guardrails and listeners: failure-paths.test.ts;
// a tracer: effect-failure.test.ts. (The tests run with
// --unhandled-rejections=strict: a rejection left unhandled fails them.)

import { beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { PhronomyError, tool, type Environment, type StartOptions, type ToolSet } from "../../host/index.js";
import { openEnvironment, recordingLogger, scriptedModel } from "./helpers.js";

/** Calls `probe` once, then answers the plain model from then on. */
function callsToolOnce() {
  return scriptedModel(({ turn }) => (turn === 0 ? { toolCalls: [{ toolName: "probe", input: {} }] } : { text: "ok" }));
}

type Model = ReturnType<typeof callsToolOnce>;

interface Case {
  readonly model: Model | object;
  readonly tools?: ToolSet;
  readonly start?: StartOptions;
}

/** Starts the failing case, checks the four promises, returns the error. */
async function failsAndFrees(env: Environment, id: string, failing: Case): Promise<PhronomyError> {
  const agent = env.agent({ id, model: failing.model as Model, ...(failing.tools ? { tools: failing.tools } : {}) });
  const failure = await agent.start("go", failing.start).result.catch((error: unknown) => error);
  expect(failure).toBeInstanceOf(PhronomyError);
  const rows = await env.executions({ agentId: id });
  expect(rows).toHaveLength(1);
  expect(rows[0]).toMatchObject({ status: "terminal", outcome: "failed" });
  healed.broken = false;
  await expect(agent.start("again").result).resolves.toMatchObject({ outcome: "completed" });
  await env.close();
  return failure as PhronomyError;
}

function probeTool(options: Partial<Parameters<typeof tool>[0]>): ToolSet {
  return { probe: tool({ inputSchema: z.object({}), execute: () => "fine", ...options } as Parameters<typeof tool>[0]) };
}

/** The failing functions fail while this says so; the next start heals. */
const healed = { broken: true };
beforeEach(() => {
  healed.broken = true;
});

const sync =
  (message: string, healthy: unknown = "fine") =>
  (): unknown => {
    if (healed.broken) throw new Error(message);
    return healthy;
  };
const rejecting =
  (message: string, healthy: unknown = "fine") =>
  async (): Promise<unknown> => {
    if (healed.broken) throw new Error(message);
    return healthy;
  };
function circular(): object {
  const value: { self?: unknown } = {};
  value.self = value;
  return value;
}

/** Answers `value` while broken, else "fine". */
const answering = (value: unknown) => (): unknown => (healed.broken ? value : "fine");

describe("a tool's functions that fail end the run", () => {
  for (const [how, execute] of [
    ["throws", sync("execute bug")],
    ["rejects", rejecting("execute bug")],
  ] as const) {
    it(`execute ${how}: the model is told, the run completes (a tool error is an answer, as in the AI SDK)`, async () => {
      const env = await openEnvironment();
      const agent = env.agent({ id: `execute-${how}`, model: callsToolOnce(), tools: probeTool({ execute }) });
      await expect(agent.start("go").result).resolves.toMatchObject({ outcome: "completed" });
      await env.close();
    });
  }

  for (const [how, needsApproval] of [
    ["throws", sync("approval predicate bug", false)],
    ["rejects", rejecting("approval predicate bug", false)],
  ] as const) {
    it(`needsApproval ${how}`, async () => {
      const env = await openEnvironment();
      const failure = await failsAndFrees(env, `needs-${how}`, { model: callsToolOnce(), tools: probeTool({ needsApproval: needsApproval as never }) });
      expect(failure.message).toMatch(/needsApproval.*approval predicate bug/);
    });
  }

  // A tool's result the library cannot keep (not JSON), a projection or a
  // validator that throws: that call failed, and the model is told so, as
  // for a tool that threw. The run completes and the conversation is free.
  const throwingSchema = { "~standard": { version: 1, vendor: "probe", validate: sync("schema bug", { value: {} }) } };
  const toolCallFailures: [string, ToolSet, RegExp][] = [
    ["toModelOutput throws", probeTool({ toModelOutput: sync("projection bug", { type: "text", value: "fine" }) }), /projection bug/],
    ["execute returns a BigInt", probeTool({ execute: answering(10n) }), /probe/],
    ["execute returns a circular object", probeTool({ execute: answering(circular()) }), /probe/],
    ["the input schema's validate throws", probeTool({ inputSchema: throwingSchema } as never), /schema bug/],
  ];
  for (const [name, tools, toldPattern] of toolCallFailures) {
    it(`${name}: the model is told the call failed, the run completes`, async () => {
      const env = await openEnvironment();
      const told: string[] = [];
      const model = scriptedModel(({ turn, messages }) => {
        if (turn === 0) return { toolCalls: [{ toolName: "probe", input: {} }] };
        told.push(JSON.stringify(messages.at(-1)));
        return { text: "ok" };
      });
      const agent = env.agent({ id: "tool-result", model, tools });
      await expect(agent.start("go").result).resolves.toMatchObject({ outcome: "completed" });
      expect(told.join("")).toMatch(toldPattern);
      expect(told.join("")).toMatch(/error/i);
      healed.broken = false;
      await expect(agent.start("again").result).resolves.toMatchObject({ outcome: "completed" });
      await env.close();
    });
  }
});

describe("a model that fails ends the run", () => {
  for (const [how, failing] of [
    ["throws synchronously", sync("provider bug")],
    ["rejects", rejecting("provider bug")],
  ] as const) {
    it(`doGenerate ${how}`, async () => {
      const env = await openEnvironment();
      const base = scriptedModel(() => ({ text: "fine" }));
      const doGenerate = (options: never) => (healed.broken ? failing() : base.doGenerate(options));
      const { specificationVersion, provider, modelId, supportedUrls } = base;
      const model = { specificationVersion, provider, modelId, supportedUrls, doGenerate, doStream: base.doStream };
      const failure = await failsAndFrees(env, `model-${how.split(" ")[0]}`, { model, start: {} });
      expect(failure.code).toBe("MODEL_FAILED");
    });
  }
});

describe("an approval listener that fails is reported", () => {
  for (const [how, approvalListener] of [
    ["throws", sync("notify bug")],
    ["rejects", rejecting("notify bug")],
  ] as const) {
    it(`approvalListener ${how}: the run suspends as asked`, async () => {
      const logger = recordingLogger();
      const env = await openEnvironment({ logger });
      const agent = env.agent({ id: `listener-${how}`, model: callsToolOnce(), tools: probeTool({ needsApproval: true }) });
      const run = agent.start("go", { approvalListener: approvalListener as never });
      for await (const event of run.events) if (event.type === "approval_required") break;
      await env.close();
      expect(logger.warnings.some((warning) => warning.includes("notify bug"))).toBe(true);
    });
  }
});

describe("start data the library cannot keep is refused", () => {
  it("metadata with a BigInt or a cycle: INVALID_INPUT, nothing written, the conversation free", async () => {
    const env = await openEnvironment();
    const agent = env.agent({ id: "metadata", model: scriptedModel(() => ({ text: "ok" })) });
    const cyclic: Record<string, unknown> = {};
    cyclic["self"] = cyclic;
    for (const metadata of [{ amount: 10n }, cyclic]) {
      await expect(agent.start("go", { metadata } as never).result).rejects.toMatchObject({ code: "INVALID_INPUT" });
    }
    expect(await env.executions({ agentId: "metadata" })).toEqual([]);
    await expect(agent.start("again").result).resolves.toMatchObject({ outcome: "completed" });
    await env.close();
  });
});
