// A definition's `toolApproval` (AI SDK 7's approval configuration,
// docs/decisions/0071): per tool name a status or a function of the input,
// or one function of every call. "user-approval" waits for a person as a
// tool's needsApproval does; "denied" declines the call without asking
// (the model is told `execution-denied` with the reason); "approved" and
// "not-applicable" run it without asking, over the tool's needsApproval,
// as in the AI SDK. The verdict is taken once per call before the tool
// barrier and written with it: a resume, even in another process with
// another setting, does not decide again. Also the `repairToolCall` alias,
// `toolOrder`, and the settings still refused, each saying why.

import type { LanguageModelV4, LanguageModelV4CallOptions } from "@ai-sdk/provider";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Phronomy, tool, type ApprovalRequest, type ToolApproval } from "../../host/index.js";
import type { ScriptedModel } from "../../host/testing.js";
import { deferred, openEnvironment, recordingLogger, scriptedModel, temporaryStorePath, turnOf, recordCalls } from "./helpers.js";

type Scripted = ScriptedModel<LanguageModelV4>;

/** The tool results the model was sent in a call, by call id. */
function toolOutputsOf(call: LanguageModelV4CallOptions | undefined): Record<string, unknown> {
  const outputs: Record<string, unknown> = {};
  for (const message of call?.prompt ?? []) {
    if (message.role !== "tool") continue;
    for (const part of message.content) if (part.type === "tool-result") outputs[part.toolCallId] = part.output;
  }
  return outputs;
}

/** On its first turn calls `refund` for order 1 and `lookup` for order 2;
 * then answers "done". */
function twoCallModel(): Scripted {
  return scriptedModel(({ messages }) =>
    turnOf(messages) === 0
      ? {
          toolCalls: [
            { toolName: "refund", input: { orderId: "1" } },
            { toolName: "lookup", input: { orderId: "2" } },
          ],
        }
      : { text: "done" },
  );
}

/** `refund` (needsApproval unless told) and `lookup`, recording what ran. */
function toolsRecording(ran: string[], refundNeedsApproval = false) {
  const refund = tool({
    inputSchema: z.object({ orderId: z.string() }),
    needsApproval: refundNeedsApproval,
    execute: ({ orderId }) => {
      ran.push(`refund ${orderId}`);
      return "refunded";
    },
  });
  const lookup = tool({
    inputSchema: z.object({ orderId: z.string() }),
    execute: ({ orderId }) => {
      ran.push(`lookup ${orderId}`);
      return "shipped";
    },
  });
  return { refund, lookup };
}

/** Starts the agent's run and gives the approval request it waits on. */
function startAsking(agent: { start: (input: string, options: { onEvent: (event: { type: string; request?: ApprovalRequest }) => void }) => unknown }) {
  const asked = deferred<ApprovalRequest>();
  const run = agent.start("go", {
    onEvent: (event) => {
      if (event.type === "approval_required" && event.request !== undefined) asked.resolve(event.request);
    },
  }) as { executionId: Promise<string>; result: Promise<unknown> };
  return { run, asked: asked.promise };
}

describe("toolApproval per tool", () => {
  it('"user-approval" waits for a person on a tool without needsApproval; approved, it runs', async () => {
    const env = await openEnvironment();
    const ran: string[] = [];
    const agent = env.agent({ id: "a", model: twoCallModel(), tools: toolsRecording(ran), toolApproval: { refund: "user-approval" } });
    const { run, asked } = startAsking(agent);
    const request = await asked;
    expect(request.toolCalls.map((call) => call.toolName)).toEqual(["refund"]);
    expect(ran).toEqual([]);
    const resumed = await agent.resume(await run.executionId, { approvalId: request.approvalId, approved: true }).result;
    expect(resumed).toMatchObject({ outcome: "completed", output: "done" });
    expect(ran.sort()).toEqual(["lookup 2", "refund 1"]);
  });

  it('"denied" declines the call without asking: it does not run, the model is told execution-denied with the reason', async () => {
    const env = await openEnvironment();
    const ran: string[] = [];
    const model = twoCallModel();
    const calls = recordCalls(model);
    const agent = env.agent({
      id: "a",
      model,
      tools: toolsRecording(ran, true),
      toolApproval: { refund: { type: "denied", reason: "refunds are closed today" } },
    });
    const asked: unknown[] = [];
    const result = await agent.start("go", { onEvent: (event) => void (event.type === "approval_required" && asked.push(event)) }).result;
    expect(result).toMatchObject({ outcome: "completed", output: "done" });
    expect(asked).toEqual([]);
    expect(ran).toEqual(["lookup 2"]);
    const outputs = Object.values(toolOutputsOf(calls[1]));
    expect(outputs).toContainEqual({ type: "execution-denied", reason: "refunds are closed today" });
    expect(outputs).toHaveLength(2);
  });

  it('"approved" and "not-applicable" run without asking over the tool\'s needsApproval; a tool not named keeps its needsApproval', async () => {
    for (const status of ["approved", "not-applicable", { type: "approved", reason: "trusted" }] as const) {
      const env = await openEnvironment();
      const ran: string[] = [];
      const agent = env.agent({ id: "a", model: twoCallModel(), tools: toolsRecording(ran, true), toolApproval: { refund: status } });
      expect(await agent.start("go").result).toMatchObject({ outcome: "completed", output: "done" });
      expect(ran.sort()).toEqual(["lookup 2", "refund 1"]);
    }
    const env = await openEnvironment();
    const agent = env.agent({ id: "a", model: twoCallModel(), tools: toolsRecording([], true), toolApproval: { lookup: "approved" } });
    const { asked } = startAsking(agent);
    expect((await asked).toolCalls.map((call) => call.toolName)).toEqual(["refund"]);
  });

  it("a function of the input decides per call, given the call id, the messages and the tool's context", async () => {
    const env = await openEnvironment();
    const ran: string[] = [];
    const seen: unknown[] = [];
    const agent = env.agent({
      id: "a",
      model: twoCallModel(),
      tools: toolsRecording(ran),
      toolsContext: { refund: { limit: 5 } },
      toolApproval: {
        refund: (input: unknown, options) => {
          seen.push([input, typeof options.toolCallId, options.messages.length > 0, options.toolContext]);
          return "denied";
        },
      },
    });
    expect(await agent.start("go").result).toMatchObject({ outcome: "completed", output: "done" });
    expect(ran).toEqual(["lookup 2"]);
    expect(seen).toEqual([[{ orderId: "1" }, "string", true, { limit: 5 }]]);
  });
});

describe("toolApproval as one function", () => {
  it("decides each call; the asked call waits, the denied one is declined with its own reason even when the person declines the rest", async () => {
    const env = await openEnvironment();
    const ran: string[] = [];
    const model = twoCallModel();
    const calls = recordCalls(model);
    const asked: string[] = [];
    const toolApproval: ToolApproval = ({ toolCall }) => {
      asked.push(toolCall.toolName);
      return toolCall.toolName === "refund" ? { type: "user-approval", reason: "money" } : { type: "denied", reason: "not now" };
    };
    const agent = env.agent({ id: "a", model, tools: toolsRecording(ran), toolApproval });
    const { run, asked: request } = startAsking(agent);
    const { approvalId, toolCalls } = await request;
    expect(toolCalls.map((call) => call.toolName)).toEqual(["refund"]);
    const resumed = await agent.resume(await run.executionId, { approvalId, approved: false, reason: "no refund" }).result;
    expect(resumed).toMatchObject({ outcome: "completed", output: "done" });
    expect(ran).toEqual([]);
    expect(Object.values(toolOutputsOf(calls[1])).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))).toEqual([
      { type: "execution-denied", reason: "no refund" },
      { type: "execution-denied", reason: "not now" },
    ]);
    // Once per call, before the barrier: the resume did not ask again.
    expect(asked).toEqual(["refund", "lookup"]);
  });

  it("a function that throws, or answers what is not a status, fails the execution STREAM_CALLBACK naming toolApproval", async () => {
    const env = await openEnvironment();
    const throwing = env.agent({
      id: "a",
      model: twoCallModel(),
      tools: toolsRecording([]),
      toolApproval: () => {
        throw new Error("broken policy");
      },
    });
    await expect(throwing.start("go").result).rejects.toMatchObject({ code: "STREAM_CALLBACK", details: { setting: "toolApproval" } });
    const wrong = env.agent({ id: "b", model: twoCallModel(), tools: toolsRecording([]), toolApproval: (() => "maybe") as unknown as ToolApproval });
    await expect(wrong.start("go").result).rejects.toMatchObject({
      code: "STREAM_CALLBACK",
      details: { setting: "toolApproval", toolName: "refund" },
      message: expect.stringContaining('"maybe"'),
    });
  });
});

describe("toolApproval across a restart", () => {
  it("the verdicts written with the suspended batch stand in the next process, whatever its toolApproval says", async () => {
    const path = await temporaryStorePath();
    const first = await Phronomy.open({ store: path, logger: recordingLogger() });
    const firstAgent = first.agent({
      id: "support",
      model: twoCallModel(),
      tools: toolsRecording([]),
      toolApproval: { refund: "user-approval", lookup: { type: "denied", reason: "lookups are off" } },
    });
    const { run, asked } = startAsking(firstAgent);
    const executionId = await run.executionId;
    const { approvalId } = await asked;
    await first.close();
    await expect(run.result).rejects.toMatchObject({ code: "RUNTIME_SHUTDOWN" });

    const second = await Phronomy.open({ store: path, logger: recordingLogger() });
    const ran: string[] = [];
    const model = twoCallModel();
    const calls = recordCalls(model);
    const decided: string[] = [];
    const agent = second.agent({
      id: "support",
      model,
      tools: toolsRecording(ran),
      toolApproval: ({ toolCall }) => void decided.push(toolCall.toolName),
    });
    const result = await agent.resume(executionId, { approvalId, approved: true }).result;
    expect(result).toMatchObject({ outcome: "completed", output: "done" });
    expect(ran).toEqual(["refund 1"]);
    expect(decided).toEqual([]);
    expect(Object.values(toolOutputsOf(calls[0]))).toContainEqual({ type: "execution-denied", reason: "lookups are off" });
    await second.close();
  });
});

describe("toolApproval, checked when the agent is defined", () => {
  it("a tool it does not have, a status that is not one, or a value that is neither map nor function is INVALID_INPUT", async () => {
    const env = await openEnvironment();
    const tools = toolsRecording([]);
    const model = twoCallModel();
    expect(() => env.agent({ id: "a", model, tools, toolApproval: { refnd: "denied" } })).toThrow(
      /"toolApproval" names "refnd", which is not one of its tools/,
    );
    expect(() => env.agent({ id: "a", model, tools, toolApproval: { refund: "ask" as unknown as "denied" } })).toThrow(/"toolApproval.refund" must be/);
    expect(() => env.agent({ id: "a", model, tools, toolApproval: "user-approval" as unknown as ToolApproval })).toThrow(
      expect.objectContaining({ code: "INVALID_INPUT" }),
    );
  });
});

describe("repairToolCall", () => {
  it("is experimental_repairToolCall by AI SDK 7's name; giving both is refused", async () => {
    const env = await openEnvironment();
    const model = scriptedModel(({ messages }) =>
      turnOf(messages) === 0 ? { toolCalls: [{ toolName: "lokup", input: { orderId: "42" } }] } : { text: "done" },
    );
    const ran: string[] = [];
    const tools = { lookup: toolsRecording(ran).lookup };
    const agent = env.agent({ id: "a", model, tools, repairToolCall: async ({ toolCall }) => ({ ...toolCall, toolName: "lookup" }) });
    expect(await agent.start("go").result).toMatchObject({ outcome: "completed", output: "done" });
    expect(ran).toEqual(["lookup 42"]);
    const repair = async () => null;
    expect(() => env.agent({ id: "b", model, tools, repairToolCall: repair, experimental_repairToolCall: repair })).toThrow(
      /give "repairToolCall" or "experimental_repairToolCall"/,
    );
  });
});

describe("toolOrder", () => {
  it("is the order the tools are sent to the provider in: those named first, the rest after, sorted", async () => {
    const env = await openEnvironment();
    const model = scriptedModel([{ text: "hi" }]);
    const calls = recordCalls(model);
    const { refund, lookup } = toolsRecording([]);
    const agent = env.agent({ id: "a", model, tools: { refund, lookup, audit: lookup }, toolOrder: ["refund"] });
    expect(await agent.start("go").result).toMatchObject({ outcome: "completed", output: "hi" });
    expect(calls[0]?.tools?.map((tool) => tool.name)).toEqual(["refund", "audit", "lookup"]);
    expect(() => env.agent({ id: "b", model, tools: { refund }, toolOrder: ["refnd"] })).toThrow(/"toolOrder" names "refnd"/);
  });
});

describe("settings still refused", () => {
  it("each is refused INVALID_INPUT saying why and what to use instead", async () => {
    const env = await openEnvironment();
    const model = twoCallModel();
    for (const [key, why] of [["experimental_steering", /cannot replay after a restart/]] as const) {
      const definition = { id: "a", model, [key]: () => undefined } as unknown as Parameters<typeof env.agent>[0];
      expect(() => env.agent(definition)).toThrow(
        expect.objectContaining({ code: "INVALID_INPUT", message: expect.stringContaining(`"${key}" is not supported`) }),
      );
      expect(() => env.agent(definition)).toThrow(why);
    }
  });
});
