// Chat streams (docs/decisions/0036): a Run, or an execution by id, as the
// AI SDK's UI message stream, read with the AI SDK's own reader
// (`readUIMessageStream`); every chunk's position resumes the stream right
// after it, mid-run and after the end, with no duplicate and no gap; an
// approval shows as the AI SDK's approval parts; bad ids and positions are
// typed errors. Real SQLite stores, scripted models.

import { dynamicTool, readUIMessageStream, type UIMessage } from "ai";
import { z } from "zod";
import { describe, expect, it, onTestFinished } from "vitest";
import { humanInput, Phronomy, waitForEvent, type ChatChunk, type Environment } from "../../host/index.js";
import { comparePositions, parsePosition } from "../../host/chat/positions.js";
import type { ScriptedTurn } from "../../host/agent/scripted-model.js";
import { approvalRefundTool, deferred, lookupTool, openEnvironment, recordingLogger, scriptedModel, turnOf } from "../runtime/helpers.js";

const ANSWER = "Order 42 has shipped, it arrives on Tuesday.";

/** lookup, lookup, then a streamed answer. */
function twoLookupsModel(answer = ANSWER) {
  return scriptedModel(({ messages }) => {
    const turn = turnOf(messages);
    if (turn < 2) return { text: turn === 0 ? "Let me look that up." : "", toolCalls: [{ toolName: "lookup", input: { orderId: `4${turn + 2}` } }] };
    return { text: answer };
  });
}

async function readAll(stream: ReadableStream<ChatChunk>): Promise<ChatChunk[]> {
  const chunks: ChatChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

/** The final message the AI SDK builds from these chunks. */
async function messageOf(chunks: readonly ChatChunk[], message?: UIMessage): Promise<UIMessage> {
  const stream = new ReadableStream<ChatChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  let last: UIMessage | undefined;
  for await (const state of readUIMessageStream({ stream, ...(message ? { message } : {}), terminateOnError: true })) last = state;
  return structuredClone(last!);
}

/** The chunks without their `start` (each stream opens with one). */
function body(chunks: readonly ChatChunk[]): ChatChunk[] {
  return chunks.filter((chunk) => chunk.type !== "start");
}

function expectIncreasing(chunks: readonly ChatChunk[]): void {
  const positions = body(chunks).map((chunk) => parsePosition(chunk.position, "x"));
  for (let index = 1; index < positions.length; index += 1) {
    expect(comparePositions(positions[index - 1]!, positions[index]!), `positions ${chunks.map((chunk) => chunk.position).join(" ")}`).toBeLessThanOrEqual(0);
  }
}

describe("a Run as the AI SDK's UI message stream", () => {
  it("a dynamicTool's call is a dynamic-tool part, a tool()'s a tool-<name> part", async () => {
    const env = await openEnvironment();
    const search = dynamicTool({ description: "Searches", inputSchema: z.object({ query: z.string() }), execute: async () => ({ hits: 2 }) });
    const model = scriptedModel(
      ({ messages }): ScriptedTurn =>
        messages.at(-1)?.role === "tool"
          ? { text: "Found them." }
          : {
              toolCalls: [
                { toolName: "search", input: { query: "kettles" } },
                { toolName: "lookup", input: { orderId: "42" } },
              ],
            },
    );
    const run = env.agent({ id: "searcher", model, tools: { search, lookup: lookupTool() } }).start("Find kettles");
    const message = await messageOf(await readAll(await env.stream(run)));
    expect(message.parts.filter((part) => part.type !== "step-start" && part.type !== "text")).toEqual([
      expect.objectContaining({ type: "dynamic-tool", toolName: "search", state: "output-available", input: { query: "kettles" }, output: { hits: 2 } }),
      expect.objectContaining({ type: "tool-lookup", state: "output-available", input: { orderId: "42" } }),
    ]);
  });

  it("the model's reasoning is a reasoning part before its text; resumed after any chunk, exactly the rest", async () => {
    const env = await openEnvironment();
    const base = scriptedModel(() => ({ text: "It is 42." }));
    const model = {
      ...base,
      doGenerate: async (options: Parameters<typeof base.doGenerate>[0]) => {
        const result = await base.doGenerate(options);
        return { ...result, content: [{ type: "reasoning" as const, text: "The user wants the answer." }, ...result.content] };
      },
    };
    const run = env.agent({ id: "thinker", model }).start("What is the answer?");
    const chunks = await readAll(await env.stream(run));
    expectIncreasing(chunks);
    const message = await messageOf(chunks);
    expect(message.parts.filter((part) => part.type !== "step-start")).toEqual([
      expect.objectContaining({ type: "reasoning", text: "The user wants the answer.", state: "done" }),
      expect.objectContaining({ type: "text", text: "It is 42.", state: "done" }),
    ]);
    const executionId = await run.executionId;
    for (const [index, chunk] of chunks.entries()) {
      if (chunk.type === "start" || chunk.type === "finish") continue;
      const rest = await readAll(await env.stream(executionId, { resumeAt: chunk.position }));
      expect(body(rest).map((each) => each.type)).toEqual(body(chunks.slice(index + 1)).map((each) => each.type));
    }
  });

  it("text, tool calls with inputs and outputs, steps and finish, as readUIMessageStream builds them", async () => {
    const env = await openEnvironment();
    const support = env.agent({ id: "support", model: twoLookupsModel(), tools: { lookup: lookupTool() } });
    const run = support.start("Where is order 42?", { stream: true });
    const chunks = await readAll(await env.stream(run));
    const executionId = await run.executionId;

    expect(chunks[0]).toMatchObject({ type: "start", messageId: executionId, messageMetadata: { executionId }, position: "0" });
    expect(chunks.at(-1)).toMatchObject({ type: "finish", finishReason: "stop", messageMetadata: { executionId, outcome: "completed" } });
    expectIncreasing(chunks);
    const message = await messageOf(chunks);
    expect(message.id).toBe(executionId);
    expect(message.parts).toEqual([
      { type: "step-start" },
      expect.objectContaining({ type: "text", text: "Let me look that up.", state: "done" }),
      expect.objectContaining({
        type: "tool-lookup",
        toolCallId: expect.any(String),
        state: "output-available",
        input: { orderId: "42" },
        output: { orderId: "42", status: "shipped" },
      }),
      { type: "step-start" },
      expect.objectContaining({ type: "tool-lookup", state: "output-available", input: { orderId: "43" }, output: { orderId: "43", status: "shipped" } }),
      { type: "step-start" },
      expect.objectContaining({ type: "text", text: ANSWER, state: "done" }),
    ]);
    await expect(run.result).resolves.toMatchObject({ output: ANSWER });

    // A replay after the end, by id, is the same stream.
    const replay = await readAll(await env.stream(executionId));
    expect(await messageOf(replay)).toEqual(message);
  });

  it("resuming after every position of a finished execution gives exactly the rest", async () => {
    const env = await openEnvironment();
    const support = env.agent({ id: "support", model: twoLookupsModel(), tools: { lookup: lookupTool() } });
    const run = support.start("Where is order 42?");
    await run.result;
    const executionId = await run.executionId;
    const full = body(await readAll(await env.stream(executionId)));
    const content = full.filter((chunk) => chunk.type !== "finish");
    const whole = await messageOf(content);
    for (let cut = 0; cut < full.length; cut += 1) {
      const resumed = await readAll(await env.stream(executionId, { resumeAt: full[cut]!.position }));
      // Every stream opens with start and ends with finish; between them, exactly what follows the cut.
      expect(resumed.at(-1), `resumed at ${full[cut]!.position}`).toMatchObject({ type: "finish", position: full.at(-1)!.position });
      const rest = body(resumed).filter((chunk) => chunk.type !== "finish");
      expect(
        rest.map((chunk) => chunk.position),
        `resumed at ${full[cut]!.position}`,
      ).toEqual(content.slice(cut + 1).map((chunk) => chunk.position));
      expect(await messageOf([...content.slice(0, cut + 1), ...rest])).toEqual(whole);
    }
  });

  it("a stream resumed mid-run, inside a streamed text and while a tool runs: no duplicate, no gap", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const model = scriptedModel(
      ({ messages }) => {
        const turn = turnOf(messages);
        if (turn === 0) return { text: "Looking up order 42 for you right now.", toolCalls: [{ toolName: "lookup", input: { orderId: "42" } }] };
        return { text: ANSWER };
      },
      { latencyMs: 300 },
    );
    const support = env.agent({ id: "support", model, tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const run = support.start("Where is order 42?", { stream: true });
    const executionId = await run.executionId;
    onTestFinished(() => gate.resolve());

    // Client 1 (the route that started the run) leaves once it saw part of the first streamed text.
    const first = await env.stream(run);
    const seen: ChatChunk[] = [];
    const reader = first.getReader();
    for (;;) {
      const next = await reader.read();
      seen.push(next.value!);
      if (next.value!.type === "text-delta") break;
    }
    await reader.cancel();
    expect(seen.at(-1)!.position, "a position inside the streamed text").toMatch(/^\d+\.t\d+$/);

    // Client 2 resumes there, leaves while the tool runs.
    const second = await env.stream(executionId, { resumeAt: seen.at(-1)!.position });
    const secondChunks: ChatChunk[] = [];
    const secondReader = second.getReader();
    for (;;) {
      const next = await secondReader.read();
      secondChunks.push(next.value!);
      if (next.value!.type === "tool-input-available") break;
    }
    await secondReader.cancel();
    gate.resolve();

    // Client 3 resumes after the tool call and reads to the end.
    const third = await readAll(await env.stream(executionId, { resumeAt: secondChunks.at(-1)!.position }));
    expect(third.at(-1)).toMatchObject({ type: "finish", finishReason: "stop" });
    const stitched = [...seen, ...body(secondChunks), ...body(third)];
    expectIncreasing(stitched);
    const positions = body(stitched).map((chunk) => chunk.position);
    expect(new Set(positions).size, `no position twice: ${positions.join(" ")}`).toBe(positions.length);

    const message = await messageOf(stitched);
    const replayed = await messageOf(await readAll(await env.stream(executionId)));
    expect(message).toEqual(replayed);
    expect(message.parts).toEqual([
      { type: "step-start" },
      expect.objectContaining({ type: "text", text: "Looking up order 42 for you right now.", state: "done" }),
      expect.objectContaining({ type: "tool-lookup", state: "output-available", input: { orderId: "42" } }),
      { type: "step-start" },
      expect.objectContaining({ type: "text", text: ANSWER, state: "done" }),
    ]);
  });

  it("an approval: the tool part asks for it, the stream finishes; after the decision the stream continues", async () => {
    const env = await openEnvironment();
    const refunds: string[] = [];
    const model = scriptedModel(({ messages }) =>
      turnOf(messages) === 0 ? { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] } : { text: "Refunded." },
    );
    const support = env.agent({ id: "support", model, tools: { refund: approvalRefundTool(refunds) } });
    const run = support.start("Refund order 42");
    const chunks = await readAll(await env.stream(run));
    const executionId = await run.executionId;
    const finish = chunks.at(-1)!;
    expect(finish).toMatchObject({ type: "finish", finishReason: "tool-calls", messageMetadata: { executionId, outcome: "suspended" } });
    const suspended = await messageOf(chunks);
    const part = suspended.parts.find((candidate) => candidate.type === "tool-refund") as { state: string; approval: { id: string } };
    expect(part).toMatchObject({ state: "approval-requested", input: { orderId: "42", amount: 30 } });

    const [pending] = await env.pendingApprovals();
    expect(pending!.request.approvalId).toBe(part.approval.id.split(":")[0]);
    const resumed = support.resume(executionId, { approvalId: pending!.request.approvalId, approved: true });
    const rest = await readAll(await env.stream(resumed, { resumeAt: (finish as { messageMetadata: { resumeAt: string } }).messageMetadata.resumeAt }));
    await resumed.result;
    expect(rest.at(-1)).toMatchObject({ type: "finish", finishReason: "stop" });
    const done = await messageOf(rest, suspended);
    expect(done.parts.filter((candidate) => candidate.type !== "step-start")).toEqual([
      expect.objectContaining({
        type: "tool-refund",
        state: "output-available",
        output: { refunded: "42" },
        approval: expect.objectContaining({ id: part.approval.id, approved: true }),
      }),
      expect.objectContaining({ type: "text", text: "Refunded." }),
    ]);
    expect(refunds).toHaveLength(1);
  });

  it("a typed wait: the tool part stays input-available, a data-wait part carries the response schema; the value arrives as the call's output", async () => {
    const env = await openEnvironment();
    const askDate = humanInput({
      description: "Asks for a delivery date",
      inputSchema: z.object({ question: z.string() }),
      responseSchema: z.object({ date: z.string() }),
    });
    const model = scriptedModel(({ messages }) =>
      turnOf(messages) === 0 ? { toolCalls: [{ toolName: "askDate", input: { question: "When?" } }] } : { text: "Booked." },
    );
    const booking = env.agent({ id: "booking", model, tools: { askDate } });
    const run = booking.start("Book a delivery");
    const chunks = await readAll(await env.stream(run));
    const executionId = await run.executionId;
    const finish = chunks.at(-1)!;
    expect(finish).toMatchObject({ type: "finish", messageMetadata: { executionId, outcome: "suspended" } });
    const suspended = await messageOf(chunks);
    const [pending] = await env.pendingApprovals();
    const waitId = pending!.request.approvalId;
    expect(suspended.parts.find((candidate) => candidate.type === "tool-askDate")).toMatchObject({ state: "input-available", input: { question: "When?" } });
    expect(suspended.parts.find((candidate) => candidate.type === "data-wait")).toMatchObject({
      id: waitId,
      data: { waitId, kind: "input", responseSchema: { type: "object", properties: { date: { type: "string" } } } },
    });
    const resumed = booking.resume(executionId, { waitId, value: { date: "2027-01-05" } });
    const rest = await readAll(await env.stream(resumed, { resumeAt: (finish as { messageMetadata: { resumeAt: string } }).messageMetadata.resumeAt }));
    await resumed.result;
    const done = await messageOf(rest, suspended);
    expect(done.parts.find((candidate) => candidate.type === "tool-askDate")).toMatchObject({ state: "output-available", output: { date: "2027-01-05" } });
    expect(done.parts.at(-1)).toMatchObject({ type: "text", text: "Booked." });
  });

  it("an event wait: a data-wait part with kind event and its key; the signal's payload arrives as the call's output (decision 0077)", async () => {
    const env = await openEnvironment();
    const awaitPayment = waitForEvent({
      inputSchema: z.object({ orderId: z.string() }),
      key: ({ orderId }) => `payment:${orderId}`,
      payloadSchema: z.object({ amount: z.number() }),
    });
    const model = scriptedModel(({ messages }) =>
      turnOf(messages) === 0 ? { toolCalls: [{ toolName: "awaitPayment", input: { orderId: "42" } }] } : { text: "Paid." },
    );
    const checkout = env.agent({ id: "checkout", model, tools: { awaitPayment } });
    const run = checkout.start("Take the payment");
    const chunks = await readAll(await env.stream(run));
    const finish = chunks.at(-1)!;
    const suspended = await messageOf(chunks);
    const [pending] = await env.pendingApprovals();
    const waitId = pending!.request.approvalId;
    expect(suspended.parts.find((candidate) => candidate.type === "tool-approval-request")).toBeUndefined();
    expect(suspended.parts.find((candidate) => candidate.type === "data-wait")).toMatchObject({
      id: waitId,
      data: { waitId, kind: "event", key: "payment:42", responseSchema: { type: "object", properties: { amount: { type: "number" } } } },
    });
    await env.signal("payment:42", { amount: 30 });
    const rest = await readAll(
      await env.stream(await run.executionId, { resumeAt: (finish as { messageMetadata: { resumeAt: string } }).messageMetadata.resumeAt }),
    );
    const done = await messageOf(rest, suspended);
    expect(done.parts.find((candidate) => candidate.type === "tool-awaitPayment")).toMatchObject({ state: "output-available", output: { amount: 30 } });
    expect(done.parts.at(-1)).toMatchObject({ type: "text", text: "Paid." });
  });

  it("a failed execution streams an error, then finish with reason error", async () => {
    const env = await openEnvironment();
    const model = scriptedModel([{ error: "the provider is down" }]);
    const run = env.agent({ id: "support", model }).start("Where is order 42?");
    const chunks = await readAll(await env.stream(run));
    expect(chunks.map((chunk) => chunk.type)).toEqual(["start", "start-step", "finish-step", "error", "finish"]);
    expect(chunks.find((chunk) => chunk.type === "error")).toMatchObject({ errorText: expect.stringContaining("MODEL_FAILED") });
    expect(chunks.at(-1)).toMatchObject({ finishReason: "error", messageMetadata: { outcome: "failed" } });
  });

  it("an output guardrail: the chat shows the redacted answer, not the streamed one, and nothing of a blocked one", async () => {
    const env = await openEnvironment();
    const model = scriptedModel(() => ({ text: "Your card 4111 1111 1111 1111 was charged." }), { latencyMs: 300 });
    const redacting = env.agent({
      id: "redacting",
      model,
      outputGuardrail: (text) => ({ action: "redact", text: text.replace(/\d{4} \d{4} \d{4} (\d{4})/, "•••• $1") }),
    });
    const run = redacting.start("What did you charge?", { stream: true });
    const chunks = await readAll(await env.stream(run));
    expect(
      chunks.map((chunk) => chunk.type),
      "the raw text streamed live, then was dropped",
    ).toContain("reset-step");
    const message = await messageOf(chunks);
    expect(message.parts).toEqual([{ type: "step-start" }, expect.objectContaining({ type: "text", text: "Your card •••• 1111 was charged.", state: "done" })]);
    const executionId = await run.executionId;
    expect(await messageOf(await readAll(await env.stream(executionId)))).toEqual(message);

    const blocking = env.agent({ id: "blocking", model, outputGuardrail: () => ({ action: "block", reason: "card numbers" }) });
    const blocked = await readAll(await env.stream(blocking.start("What did you charge?")));
    expect(blocked.map((chunk) => chunk.type)).toEqual(["start", "start-step", "finish-step", "error", "finish"]);
    expect(blocked.find((chunk) => chunk.type === "error")).toMatchObject({ errorText: expect.stringContaining("OUTPUT_BLOCKED") });
    expect(JSON.stringify(blocked)).not.toContain("4111");
  });

  it("env.retry: the failed attempt's stream ends in error; resumed after it, the stream goes on with the new attempt; a replay reads through", async () => {
    const env = await openEnvironment();
    const failing = { on: true };
    const model = scriptedModel(({ messages }) => {
      if (turnOf(messages) === 0) return { toolCalls: [{ toolName: "lookup", input: { orderId: "42" } }] };
      return failing.on ? { error: "the provider is down" } : { text: ANSWER };
    });
    const support = env.agent({ id: "support", model, tools: { lookup: lookupTool() } });
    const run = support.start("Where is order 42?");
    const failed = await readAll(await env.stream(run));
    expect(failed.at(-2)).toMatchObject({ type: "error", errorText: expect.stringContaining("MODEL_FAILED") });
    expect(failed.at(-1)).toMatchObject({ type: "finish", finishReason: "error" });
    const executionId = await run.executionId;

    failing.on = false;
    const retried = env.retry(executionId);
    const rest = await readAll(await env.stream(retried, { resumeAt: failed.at(-1)!.position }));
    expect(rest.at(-1)).toMatchObject({ type: "finish", finishReason: "stop" });
    expect(body(rest).map((chunk) => chunk.type)).toEqual(["start-step", "text-start", "text-delta", "text-end", "finish-step", "finish"]);

    // A full replay: the superseded failure is a transient part, so the AI SDK reads on to the answer.
    const replay = await readAll(await env.stream(executionId));
    expect(replay.find((chunk) => chunk.type === "error")).toBeUndefined();
    expect(replay.find((chunk) => chunk.type === "data-attempt-failed")).toMatchObject({ transient: true, position: failed.at(-2)!.position });
    const message = await messageOf(replay);
    expect(message.parts.at(-1)).toMatchObject({ type: "text", text: ANSWER });
  });

  it("a queued message's stream waits for it to run, then streams it", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const support = env.agent({ id: "support", model: twoLookupsModel(), tools: { lookup: lookupTool({ gate: gate.promise }) }, onBusy: "enqueue" });
    const first = support.start("Where is order 42?");
    await first.executionId;
    onTestFinished(() => gate.resolve());
    const queued = support.start("And order 43?");
    const stream = await env.stream(queued);
    expect((await env.execution(await queued.executionId))?.status).toBe("queued");
    setTimeout(() => gate.resolve(), 100);
    const chunks = await readAll(stream);
    expect(chunks.at(-1)).toMatchObject({ type: "finish", finishReason: "stop" });
    expect((await messageOf(chunks)).parts.at(-1)).toMatchObject({ type: "text", text: ANSWER });
  });

  it("a visitor of the store streams an execution its owner runs, by tailing the timeline", async () => {
    const owner = await openEnvironment();
    const gate = deferred();
    const support = owner.agent({ id: "support", model: twoLookupsModel(), tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const run = support.start("Where is order 42?");
    const executionId = await run.executionId;
    onTestFinished(() => gate.resolve());
    const visitor: Environment = await Phronomy.open({ store: owner.store.path, visitor: true, logger: recordingLogger() });
    try {
      const stream = await visitor.stream(executionId);
      setTimeout(() => gate.resolve(), 200);
      const chunks = await readAll(stream);
      expect(chunks.at(-1)).toMatchObject({ type: "finish", finishReason: "stop" });
      expect(await messageOf(chunks)).toEqual(await messageOf(await readAll(await owner.stream(executionId))));
    } finally {
      await visitor.close();
    }
  });
});

describe("bad input is a typed error", () => {
  it("an unknown execution, a malformed or foreign position, an unknown option, a refused run", async () => {
    const env = await openEnvironment();
    const support = env.agent({ id: "support", model: twoLookupsModel(), tools: { lookup: lookupTool() } });
    const run = support.start("Where is order 42?");
    await run.result;
    const executionId = await run.executionId;
    await expect(env.stream("no-such-execution")).rejects.toMatchObject({ code: "EXECUTION_NOT_FOUND", executionId: "no-such-execution" });
    await expect(env.stream(executionId, { resumeAt: "banana" })).rejects.toMatchObject({ code: "INVALID_INPUT", details: { reason: "malformed" } });
    await expect(env.stream(executionId, { resumeAt: "9999.0" })).rejects.toMatchObject({ code: "INVALID_INPUT", details: { reason: "unknown_position" } });
    await expect(env.stream(executionId, { resumeAt: "1.t3" })).rejects.toMatchObject({ code: "INVALID_INPUT", details: { reason: "unknown_position" } });
    await expect(env.stream(executionId, { resumeAt: "2.40" })).rejects.toMatchObject({ code: "INVALID_INPUT", details: { reason: "unknown_position" } });
    await expect(env.stream(executionId, { since: "0" } as never)).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(env.stream("")).rejects.toMatchObject({ code: "INVALID_INPUT" });

    const gate = deferred();
    const busy = env.agent({ id: "busy", model: twoLookupsModel(), tools: { lookup: lookupTool({ gate: gate.promise }) } });
    const running = busy.start("first");
    await running.executionId;
    await expect(env.stream(busy.start("second"))).rejects.toMatchObject({ code: "AGENT_BUSY" });
    gate.resolve();
    await running.result;
    await env.close();
    await expect(env.stream(executionId)).rejects.toMatchObject({ code: "RUNTIME_SHUTDOWN" });
  });
});
