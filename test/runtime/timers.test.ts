// Durable timers through the public API (docs/decisions/0076): a `timer()`
// call suspends the execution with kind `timer` and a `dueAt`; the due
// sweep fires it on time — in the same process, and after the store was
// closed and opened again; `{ waitId, fire: true }` fires it now; a second
// fire, a fire after a cancel, and a person's answer to a timer are
// refused; a `humanInput()` given `timeoutMs` ends with `{ timedOut: true }`.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { humanInput, Phronomy, timer, type Environment } from "../../host/index.js";
import type { ConversationMessage } from "../../host/agent/messages.js";
import { dueWaitsBatchMax } from "../../host/store/due-waits.js";
import type { Json } from "../../host/store/records.js";
import { openEnvironment, recordingLogger, scriptedModel, temporaryStorePath, waitFor } from "./helpers.js";

/** Slack for a timer firing late on a loaded machine (2 cores, 8 engineers). */
const lateMsMax = 3_000;

/** The result the model was told last, if the last message is a tool's. */
function toolResultOf(messages: readonly ConversationMessage[]): unknown {
  const told = messages.at(-1);
  return told?.role === "tool" ? told.results[0]?.output : undefined;
}

/** Calls `toolName` with `input`, then answers with what it was told. */
function callingModel(toolName: string, input: Json) {
  return scriptedModel(({ messages }) => {
    if (messages.at(-1)?.role !== "tool") return { toolCalls: [{ toolName, input }] };
    return { text: JSON.stringify(toolResultOf(messages)) };
  });
}

const pause = timer({
  description: "Waits for a number of milliseconds",
  inputSchema: z.object({ ms: z.number().int().min(0) }),
  until: ({ ms }) => ms,
});

function sleeper(env: Environment, ms: number, id = "sleeper") {
  return env.agent({ id, model: callingModel("pause", { ms }), tools: { pause } });
}

async function pendingOf(env: Environment, executionId: string) {
  return waitFor(async () => (await env.pendingApprovals()).find((item) => item.executionId === executionId));
}

describe("timer()", () => {
  it("suspends with kind timer and its dueAt, listed by pendingApprovals, and fires on time: the call's result is { firedAt }", async () => {
    const env = await openEnvironment();
    const started = Date.now();
    const run = sleeper(env, 400).start("go");
    const executionId = await run.executionId;
    const pending = await pendingOf(env, executionId);
    expect(pending).toMatchObject({ kind: "timer", request: { kind: "timer", toolCalls: [{ toolName: "pause", input: { ms: 400 } }] } });
    expect(pending.dueAt).toBe(pending.request.dueAt);
    expect(pending.dueAt).toBeGreaterThanOrEqual(started + 400);
    expect((await env.execution(executionId))?.status).toBe("suspended");
    const result = await run.result;
    const { firedAt } = JSON.parse(String(result.output)) as { firedAt: number };
    expect(firedAt).toBeGreaterThanOrEqual(pending.dueAt ?? Infinity);
    expect(firedAt - (pending.dueAt ?? 0)).toBeLessThan(lateMsMax);
    expect(await env.pendingApprovals()).toEqual([]);
    const decided = (await env.timeline(executionId)).find((step) => step.kind === "approval_decided");
    expect(decided?.payload).toMatchObject({ approved: true, action: { kind: "fire", callId: "call-0-0", value: { firedAt } } });
    await env.close();
  });

  it("fires on time after the store was closed and opened again, with nothing else asking", async () => {
    const path = await temporaryStorePath();
    const first = await Phronomy.open({ store: path, logger: recordingLogger() });
    const executionId = await sleeper(first, 700).start("go").executionId;
    const pending = await pendingOf(first, executionId);
    await first.close();
    const second = await openEnvironment({ store: path });
    sleeper(second, 700);
    const ended = await waitFor(async () => {
      const row = await second.execution(executionId);
      return row?.status === "terminal" ? row : undefined;
    });
    expect(ended.outcome).toBe("completed");
    const { firedAt } = JSON.parse(String(ended.output)) as { firedAt: number };
    expect(firedAt).toBeGreaterThanOrEqual(pending.dueAt ?? Infinity);
    expect(firedAt - (pending.dueAt ?? 0)).toBeLessThan(lateMsMax);
    await second.close();
  });

  it("fires a timer due while no process was open as soon as it is opened again", async () => {
    const path = await temporaryStorePath();
    const first = await Phronomy.open({ store: path, logger: recordingLogger() });
    const executionId = await sleeper(first, 200).start("go").executionId;
    const pending = await pendingOf(first, executionId);
    await first.close();
    await new Promise((resolve) => setTimeout(resolve, 400));
    const opened = Date.now();
    const second = await openEnvironment({ store: path });
    sleeper(second, 200);
    const ended = await waitFor(async () => {
      const row = await second.execution(executionId);
      return row?.status === "terminal" ? row : undefined;
    });
    const { firedAt } = JSON.parse(String(ended.output)) as { firedAt: number };
    expect(firedAt).toBeGreaterThan(pending.dueAt ?? Infinity);
    expect(firedAt - opened).toBeLessThan(lateMsMax);
    await second.close();
  });

  it("fires now with { waitId, fire: true }: two fires at once commit once (the second follows the first), a fire after the end is refused", async () => {
    const env = await openEnvironment();
    const agent = sleeper(env, 60_000);
    const run = agent.start("go");
    const executionId = await run.executionId;
    const waitId = (await pendingOf(env, executionId)).request.approvalId;
    const [once, twice] = await Promise.all([
      agent.resume(executionId, { waitId, fire: true }).result,
      agent.resume(executionId, { waitId, fire: true }).result,
    ]);
    expect(once.outcome).toBe("completed");
    expect(twice.output).toBe(once.output);
    expect((JSON.parse(String(once.output)) as { firedAt: number }).firedAt).toBeLessThan(Date.now() + 1);
    expect((await env.timeline(executionId)).filter((step) => step.kind === "approval_decided")).toHaveLength(1);
    await expect(agent.resume(executionId, { waitId, fire: true }).result).rejects.toMatchObject({
      code: "APPROVAL_MISMATCH",
      details: { mismatch: "execution_ended" },
    });
    await env.close();
  });

  it("refuses a fire after a cancel, and a person's answer to a timer (APPROVAL_MISMATCH wait_kind)", async () => {
    const env = await openEnvironment();
    const agent = sleeper(env, 60_000);
    const executionId = await agent.start("go").executionId;
    const waitId = (await pendingOf(env, executionId)).request.approvalId;
    for (const decision of [
      { waitId, value: { firedAt: 1 } },
      { approvalId: waitId, approved: true },
    ]) {
      await expect(agent.resume(executionId, decision).result).rejects.toMatchObject({
        code: "APPROVAL_MISMATCH",
        details: { mismatch: "wait_kind", waitKind: "timer" },
      });
    }
    expect((await env.execution(executionId))?.status).toBe("suspended");
    await env.cancel(executionId);
    await expect(agent.resume(executionId, { waitId, fire: true }).result).rejects.toMatchObject({
      code: "APPROVAL_MISMATCH",
      details: { mismatch: "execution_ended" },
    });
    expect((await env.execution(executionId))?.error).toMatchObject({ code: "CANCELLED" });
    await env.close();
  });

  it("takes a Date from until(), and fails the execution (TOOL_FAILED) when until() throws or gives no time", async () => {
    const env = await openEnvironment();
    const at = timer({ inputSchema: z.object({ at: z.string() }), until: ({ at }) => new Date(at) });
    const dated = env.agent({ id: "dated", model: callingModel("at", { at: new Date(Date.now() + 300).toISOString() }), tools: { at } });
    expect((await dated.start("go").result).outcome).toBe("completed");
    const broken = env.agent({ id: "broken", model: callingModel("at", { at: "not a date" }), tools: { at } });
    await expect(broken.start("go").result).rejects.toMatchObject({ code: "TOOL_FAILED", message: expect.stringMatching(/until\(\) must give a Date/) });
    await env.close();
  });

  it("fires more timers than one batch read holds (dueWaitsBatchMax), each once", async () => {
    const env = await openEnvironment();
    const count = dueWaitsBatchMax + 20;
    const sleepers = env.agent({ name: "sleepers", model: callingModel("pause", { ms: 1_500 }), tools: { pause } });
    const runs = Array.from({ length: count }, (_, index) => sleepers.conversation(`user-${index}`).start("go"));
    const results = await Promise.all(runs.map((run) => run.result));
    expect(results.filter((result) => result.outcome === "completed")).toHaveLength(count);
    const timelines = await Promise.all(results.map((result) => env.timeline(result.executionId)));
    expect(timelines.map((steps) => steps.filter((step) => step.kind === "approval_decided").length)).toEqual(Array(count).fill(1));
    await env.close();
  }, 120_000);

  it("refuses bad timer() options with INVALID_INPUT naming them", () => {
    const inputSchema = z.object({});
    expect(() => timer({ inputSchema, until: 5 } as never)).toThrow(/"until" must be a function/);
    expect(() => timer({ inputSchema: {}, until: () => 1 } as never)).toThrow(/"inputSchema" must be a Standard Schema/);
    expect(() => timer({ inputSchema, until: () => 1, every: 1 } as never)).toThrow(/"every" is not an option/);
  });
});

describe("a wait's timeout (dueAt on any wait)", () => {
  const askDate = humanInput({
    inputSchema: z.object({ question: z.string() }),
    responseSchema: z.object({ date: z.string() }),
    timeoutMs: 300,
  });

  it("ends a humanInput() wait given timeoutMs with { timedOut: true } as the call's result", async () => {
    const env = await openEnvironment();
    const booking = env.agent({ id: "booking", model: callingModel("askDate", { question: "When?" }), tools: { askDate } });
    const run = booking.start("go");
    const pending = await pendingOf(env, await run.executionId);
    expect(pending).toMatchObject({ kind: "input" });
    expect(pending.dueAt).toBeGreaterThan(pending.request.requestedAt);
    expect((await run.result).output).toBe('{"timedOut":true}');
    await env.close();
  });

  it("takes the person's value before the timeout; the clock finds nothing to answer after it", async () => {
    const env = await openEnvironment();
    const booking = env.agent({ id: "booking", model: callingModel("askDate", { question: "When?" }), tools: { askDate } });
    const run = booking.start("go");
    const executionId = await run.executionId;
    const waitId = (await pendingOf(env, executionId)).request.approvalId;
    expect((await booking.resume(executionId, { waitId, value: { date: "2027-01-05" } }).result).output).toBe('{"date":"2027-01-05"}');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await env.timeline(executionId)).filter((step) => step.kind === "approval_decided")).toHaveLength(1);
    await env.close();
  });

  it("refuses to fire a wait with no due time (APPROVAL_MISMATCH wait_kind)", async () => {
    const env = await openEnvironment();
    const plain = humanInput({ inputSchema: z.object({ question: z.string() }), responseSchema: z.string() });
    const booking = env.agent({ id: "booking", model: callingModel("plain", { question: "When?" }), tools: { plain } });
    const executionId = await booking.start("go").executionId;
    const waitId = (await pendingOf(env, executionId)).request.approvalId;
    await expect(booking.resume(executionId, { waitId, fire: true }).result).rejects.toMatchObject({
      code: "APPROVAL_MISMATCH",
      message: expect.stringMatching(/has no due time/),
    });
    expect(() => humanInput({ inputSchema: z.object({}), responseSchema: z.string(), timeoutMs: -1 })).toThrow(/"timeoutMs" must be an integer/);
    await env.close();
  });
});
