// Waits beyond yes/no through the public API, on real SQLite files closed
// and reopened between the suspension and the answer (docs/decisions/0075):
// an approval approved with edited arguments (validated, hashed, recorded
// with who decided; the model sees the edited call), answered in place of
// the tool, and a typed wait (`humanInput`) given a value its schema
// accepts. A refused answer stores nothing; a resume of the wrong kind, or
// a second one, is refused.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { humanInput, Phronomy, tool, type Environment } from "../../host/index.js";
import type { ConversationMessage } from "../../host/agent/messages.js";
import type { ScriptedTurn } from "../../host/agent/scripted-model.js";
import { openEnvironment, recordingLogger, scriptedModel, temporaryStorePath, waitFor } from "./helpers.js";

/** What the model saw last: the tool call it made and the result it got. */
interface Seen {
  call?: unknown;
  result?: unknown;
}

function lastCallAndResult(messages: readonly ConversationMessage[], seen: Seen): void {
  const assistant = [...messages].reverse().find((message) => message.role === "assistant" && message.toolCalls.length > 0);
  const told = messages.at(-1);
  if (assistant?.role === "assistant") seen.call = assistant.toolCalls[0]?.input;
  if (told?.role === "tool") seen.result = told.results[0]?.output;
}

/** Asks to refund 30 on order 42 (approval needed over 10), then answers. */
function refundModel(seen: Seen) {
  return scriptedModel(({ messages }) => {
    if (messages.at(-1)?.role !== "tool") return { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] };
    lastCallAndResult(messages, seen);
    return { text: `done: ${JSON.stringify(seen.result)}` };
  });
}

function refundTool(refunds: unknown[]) {
  return tool({
    description: "Refunds an order",
    inputSchema: z.object({ orderId: z.string(), amount: z.number().max(100) }),
    needsApproval: ({ amount }) => amount > 10,
    execute: (input) => {
      refunds.push(input);
      return { refunded: input.amount };
    },
  });
}

/** Asks a person for a delivery date, then answers with it. */
function askingModel(seen: Seen) {
  return scriptedModel(({ messages }) => {
    if (messages.at(-1)?.role !== "tool") return { toolCalls: [{ toolName: "askDate", input: { question: "Which day suits you?" } }] };
    lastCallAndResult(messages, seen);
    return { text: `booked for ${JSON.stringify(seen.result)}` };
  });
}

const askDate = humanInput({
  description: "Asks the customer for a delivery date",
  inputSchema: z.object({ question: z.string() }),
  responseSchema: z.object({ date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/), note: z.string().default("") }),
});

/** Suspends in one environment, closes it, and reopens the file. */
async function suspendThenReopen(define: (env: Environment) => { start(input: string): { executionId: Promise<string> } }) {
  const path = await temporaryStorePath();
  const first = await Phronomy.open({ store: path, logger: recordingLogger() });
  const run = define(first).start("go");
  const executionId = await run.executionId;
  const pending = await waitFor(async () => (await first.pendingApprovals()).find((item) => item.executionId === executionId));
  await first.close();
  const second = await openEnvironment({ store: path });
  return { second, executionId, pending };
}

describe("approval actions", () => {
  it("approves with edited arguments after a reopen: validated, hashed and recorded with who decided; the tool runs with them and the model sees them", async () => {
    const refunds: unknown[] = [];
    const seen: Seen = {};
    const define = (env: Environment) => env.agent({ id: "support", model: refundModel(seen), tools: { refund: refundTool(refunds) } });
    const { second, executionId, pending } = await suspendThenReopen(define);
    expect(pending.kind).toBe("approval");
    const agent = define(second) as ReturnType<Environment["agent"]>;
    const input = { orderId: "42", amount: 20 };
    const result = await agent.resume(executionId, { approvalId: pending.request.approvalId, approved: true, input, decidedBy: "ana", reason: "partial" })
      .result;
    expect(result).toMatchObject({ outcome: "completed", output: 'done: {"refunded":20}' });
    expect(refunds).toEqual([input]);
    expect(seen.call).toEqual(input);
    const decided = (await second.timeline(executionId)).find((step) => step.kind === "approval_decided");
    expect(decided?.payload).toMatchObject({ approved: true, reason: "partial", decidedBy: "ana", action: { kind: "edit", callId: "call-0-0", value: input } });
    expect((decided?.payload as { action: { inputHash: string } }).action.inputHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it("refuses edited arguments its schema refuses with INVALID_INPUT naming the field, and stores nothing", async () => {
    const seen: Seen = {};
    const define = (env: Environment) => env.agent({ id: "support", model: refundModel(seen), tools: { refund: refundTool([]) } });
    const { second, executionId, pending } = await suspendThenReopen(define);
    const agent = define(second) as ReturnType<Environment["agent"]>;
    const before = await second.execution(executionId);
    const refused = agent.resume(executionId, { approvalId: pending.request.approvalId, approved: true, input: { orderId: "42", amount: 500 } }).result;
    await expect(refused).rejects.toMatchObject({ code: "INVALID_INPUT", details: { paths: [["amount"]] } });
    await expect(refused).rejects.toThrow(/amount/);
    expect(await second.execution(executionId)).toEqual(before);
    // Still pending: the right answer goes through.
    const result = await agent.resume(executionId, { approvalId: pending.request.approvalId, approved: true, input: { orderId: "42", amount: 5 } }).result;
    expect(result.output).toBe('done: {"refunded":5}');
  });

  it("responds in place of the tool after a reopen: the tool does not run, the value is its result", async () => {
    const refunds: unknown[] = [];
    const seen: Seen = {};
    const define = (env: Environment) => env.agent({ id: "support", model: refundModel(seen), tools: { refund: refundTool(refunds) } });
    const { second, executionId, pending } = await suspendThenReopen(define);
    const agent = define(second) as ReturnType<Environment["agent"]>;
    const result = await agent.resume(executionId, { approvalId: pending.request.approvalId, respond: { refunded: 0, note: "store credit instead" } }).result;
    expect(result.output).toBe('done: {"refunded":0,"note":"store credit instead"}');
    expect(refunds).toEqual([]);
    expect(seen.call).toEqual({ orderId: "42", amount: 30 });
  });
});

describe("typed waits", () => {
  it("suspends on a humanInput call, refuses a value its schema refuses (still pending), then takes a valid one after a reopen", async () => {
    const seen: Seen = {};
    const define = (env: Environment) => env.agent({ id: "booking", model: askingModel(seen), tools: { askDate } });
    const { second, executionId, pending } = await suspendThenReopen(define);
    expect(pending).toMatchObject({
      kind: "input",
      request: { kind: "input", toolCalls: [{ toolName: "askDate", input: { question: "Which day suits you?" } }] },
    });
    expect(pending.request.responseSchema).toMatchObject({ type: "object", properties: { date: { type: "string" } } });
    const agent = define(second) as ReturnType<Environment["agent"]>;
    const waitId = pending.request.approvalId;
    const refused = agent.resume(executionId, { waitId, value: { date: "tomorrow" } }).result;
    await expect(refused).rejects.toMatchObject({ code: "INVALID_INPUT", details: { paths: [["date"]] } });
    expect((await second.pendingApprovals()).map((item) => item.executionId)).toEqual([executionId]);
    const result = await agent.resume(executionId, { waitId, value: { date: "2027-01-05" } }).result;
    expect(result.output).toBe('booked for {"date":"2027-01-05","note":""}');
    expect(await second.pendingApprovals()).toEqual([]);
  });

  it("one question at a time: a call needing approval in the same turn is declined (the model is told) once the value is given; the others run", async () => {
    const env = await openEnvironment();
    const refunds: unknown[] = [];
    const looked: string[] = [];
    const lookup = tool({ inputSchema: z.object({ orderId: z.string() }), execute: ({ orderId }) => looked.push(orderId) });
    let told: unknown[] = [];
    const model = scriptedModel(({ messages }): ScriptedTurn => {
      const last = messages.at(-1);
      if (last?.role !== "tool") {
        return {
          toolCalls: [
            { toolName: "askDate", input: { question: "When?" } },
            { toolName: "refund", input: { orderId: "42", amount: 30 } },
            { toolName: "lookup", input: { orderId: "42" } },
          ],
        };
      }
      told = last.results.map((result) => result.output);
      return { text: "ok" };
    });
    const booking = env.agent({ id: "booking", model, tools: { askDate, refund: refundTool(refunds), lookup } });
    const executionId = await booking.start("go").executionId;
    const pending = await waitFor(async () => (await env.pendingApprovals()).find((item) => item.executionId === executionId));
    expect(pending.request).toMatchObject({ kind: "input", toolCalls: [{ toolName: "askDate" }], declinedCalls: ["call-0-1"] });
    await booking.resume(executionId, { waitId: pending.request.approvalId, value: { date: "2027-01-05" } }).result;
    expect(told).toEqual([
      { date: "2027-01-05", note: "" },
      { declined: true, reason: expect.stringMatching(/same turn as a request for a person's input/) },
      1,
    ]);
    expect(refunds).toEqual([]);
    expect(looked).toEqual(["42"]);
  });

  it("one question at a time holds back a call toolApproval asks about with a reason too: declined, never run unapproved (the core's verdict, 0087)", async () => {
    const env = await openEnvironment();
    const refunds: unknown[] = [];
    const refund = tool({
      inputSchema: z.object({ orderId: z.string(), amount: z.number() }),
      execute: (input) => {
        refunds.push(input);
        return { refunded: input.amount };
      },
    });
    let told: unknown[] = [];
    const model = scriptedModel(({ messages }): ScriptedTurn => {
      const last = messages.at(-1);
      if (last?.role !== "tool") {
        return {
          toolCalls: [
            { toolName: "askDate", input: { question: "When?" } },
            { toolName: "refund", input: { orderId: "42", amount: 30 } },
          ],
        };
      }
      told = last.results.map((result) => result.output);
      return { text: "ok" };
    });
    const toolApproval = { refund: { type: "user-approval", reason: "refunds need a person" } } as const;
    const booking = env.agent({ id: "booking", model, tools: { askDate, refund }, toolApproval });
    const executionId = await booking.start("go").executionId;
    const pending = await waitFor(async () => (await env.pendingApprovals()).find((item) => item.executionId === executionId));
    expect(pending.request).toMatchObject({ kind: "input", toolCalls: [{ toolName: "askDate" }], declinedCalls: ["call-0-1"] });
    await booking.resume(executionId, { waitId: pending.request.approvalId, value: { date: "2027-01-05" } }).result;
    expect(told[1]).toMatchObject({ declined: true });
    expect(refunds).toEqual([]);
  });

  it("refuses a resume of the other kind (APPROVAL_MISMATCH wait_kind) and a second value once resumed", async () => {
    const env = await openEnvironment();
    const seen: Seen = {};
    const booking = env.agent({ id: "booking", model: askingModel(seen), tools: { askDate } });
    const executionId = await booking.start("go").executionId;
    const pending = await waitFor(async () => (await env.pendingApprovals()).find((item) => item.executionId === executionId));
    const waitId = pending.request.approvalId;
    await expect(booking.resume(executionId, { approvalId: waitId, approved: true }).result).rejects.toMatchObject({
      code: "APPROVAL_MISMATCH",
      details: { mismatch: "wait_kind" },
    });
    const support = env.agent({ id: "support", model: refundModel({}), tools: { refund: refundTool([]) } });
    const refundId = await support.start("go").executionId;
    const approval = await waitFor(async () => (await env.pendingApprovals()).find((item) => item.executionId === refundId));
    await expect(support.resume(refundId, { waitId: approval.request.approvalId, value: { refunded: 1 } }).result).rejects.toMatchObject({
      code: "APPROVAL_MISMATCH",
      details: { mismatch: "wait_kind" },
    });
    await booking.resume(executionId, { waitId, value: { date: "2027-01-05" } }).result;
    await expect(booking.resume(executionId, { waitId, value: { date: "2027-01-06" } }).result).rejects.toMatchObject({ code: "APPROVAL_MISMATCH" });
  });
});

describe("what a resume and humanInput() refuse before anything is decided", () => {
  it("refuses malformed answers with INVALID_INPUT naming the key, and a humanInput() without Standard Schemas", async () => {
    const env = await openEnvironment();
    const support = env.agent({ id: "support", model: refundModel({}), tools: { refund: refundTool([]) } });
    const executionId = await support.start("go").executionId;
    const pending = await waitFor(async () => (await env.pendingApprovals()).find((item) => item.executionId === executionId));
    const approvalId = pending.request.approvalId;
    const refusals: [Parameters<typeof support.resume>[1], RegExp][] = [
      [{ waitId: approvalId, approved: true, value: 1 }, /"approved" is for approvals/],
      [{ waitId: approvalId }, /"value" is the answer/],
      [{ approvalId, value: 1 }, /name it with "waitId"/],
      [{ approvalId, approved: false, input: { orderId: "42", amount: 1 } }, /goes with "approved: true"/],
      [{ approvalId, approved: false, respond: 1 }, /"respond" answers in place of the tool/],
      [{ approvalId, approved: true, callId: "call-0-0" }, /"callId" names the call/],
      [{ approvalId, respond: () => 1 }, /"respond" must be plain JSON/],
      [{ approvalId, approved: true, decidedBy: "x".repeat(257) }, /"decidedBy" must be a string of at most 256/],
      [{ approvalId, respond: 1, callId: "call-9" }, /covers no call "call-9"/],
    ];
    for (const [decision, message] of refusals) {
      await expect(support.resume(executionId, decision).result).rejects.toMatchObject({ code: "INVALID_INPUT", message: expect.stringMatching(message) });
    }
    expect((await env.execution(executionId))?.status).toBe("suspended");
    expect(() => humanInput({ inputSchema: z.object({}), responseSchema: { type: "object" } as never })).toThrow(/"responseSchema" must be a Standard Schema/);
    expect(() => humanInput({ inputSchema: z.object({}), responseSchema: z.string(), execute: () => 1 } as never)).toThrow(/"execute" is not an option/);
  });
});
