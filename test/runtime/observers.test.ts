// Observers of an execution that suspends for approval, the event streams
// of a suspending run, and the callback-error policy, through the public
// API on real SQLite files (SPEC §6.1, §6.3, docs/decisions/0018):
// * `env.wait` is an exact observer: when the execution suspends (or is
//   found suspended, live or only durable) it is rejected at once with
//   ApprovalRequiredError naming the approval, while the start's own
//   `run.result` stays pending until the execution really ends;
// * each Run's `run.events` (and its `onEvent`) ends after one terminal
//   event: a start that suspends ends at `approval_required`, the resume's
//   Run carries the rest;
// * under `callbackErrorPolicy: "fail_task"` only a listener throwing on the
//   event that ends the execution (`done`, `handoff`) fails the task; one
//   throwing on progress or `approval_required` is only reported.

import { describe, expect, it } from "vitest";
import { ApprovalRequiredError, handoff, Phronomy, StreamCallbackError, type Environment, type ExecutionEvent } from "../../host/index.js";
import {
  agentRunModel,
  approvalRefundTool,
  deferred,
  lookupTool,
  openEnvironment,
  recordingLogger,
  scriptedModel,
  temporaryStorePath,
  turnOf,
  waitFor,
} from "./helpers.js";

/** Asks to refund order 42 (needs approval) once `gate` opens, then answers. */
function refundModel(gate?: Promise<void>) {
  return scriptedModel(async ({ messages }) => {
    if (turnOf(messages) > 0) return { text: "Your refund of 30 is on its way." };
    await gate;
    return { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] };
  });
}

function refundAgent(env: Environment, refunds: string[] = [], gate?: Promise<void>) {
  return env.agent({ id: "support", model: refundModel(gate), tools: { refund: approvalRefundTool(refunds) } });
}

async function pendingApprovalOf(env: Environment, executionId: string) {
  const pending = await waitFor(async () => (await env.pendingApprovals()).find((item) => item.executionId === executionId));
  return pending.request;
}

async function collect(events: AsyncIterable<ExecutionEvent>): Promise<ExecutionEvent[]> {
  const seen: ExecutionEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}

describe("env.wait on an execution that suspends for approval", () => {
  it("is rejected with ApprovalRequiredError naming the approval when the execution suspends; the start's result waits for the end", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const agent = refundAgent(env, [], gate.promise);
    const run = agent.start("Refund order 42");
    const executionId = await run.executionId;
    const observer = env.wait(executionId);
    gate.resolve();
    const error = await observer.result.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    const request = await pendingApprovalOf(env, executionId);
    expect(error).toBeInstanceOf(ApprovalRequiredError);
    expect(error).toMatchObject({
      code: "APPROVAL_REQUIRED",
      executionId,
      agentId: "support",
      approvalId: request.approvalId,
      request: { approvalId: request.approvalId, toolCalls: [{ toolName: "refund" }] },
    });
    expect((error as Error).message).toContain(request.approvalId);
    expect((error as Error).message).toContain("agent.resume");
    expect((error as Error).message).not.toContain("env.recover()");
    expect((await collect(observer.events)).map((event) => event.type).at(-1), "an observer hears the progress, then approval_required").toBe(
      "approval_required",
    );
    const resumed = agent.resume(executionId, { approvalId: request.approvalId, approved: true });
    await expect(resumed.result).resolves.toMatchObject({ outcome: "completed" });
    await expect(run.result).resolves.toMatchObject({ executionId, outcome: "completed" });
    await expect(env.wait(executionId).result).resolves.toMatchObject({ executionId, outcome: "completed" });
  });

  it("is rejected at once when the execution is already suspended in this environment", async () => {
    const env = await openEnvironment();
    const agent = refundAgent(env);
    const executionId = await agent.start("Refund order 42").executionId;
    const request = await pendingApprovalOf(env, executionId);
    const error = await env.wait(executionId).result.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(ApprovalRequiredError);
    expect(error).toMatchObject({ code: "APPROVAL_REQUIRED", executionId, approvalId: request.approvalId });
    await expect(env.wait(executionId).executionId, "the execution exists: its id resolves").resolves.toBe(executionId);
  });

  it("a handler may ask again and again: 5,000 waits on a suspended execution (more than the 4,096 observers an execution holds) are each told APPROVAL_REQUIRED", async () => {
    const env = await openEnvironment();
    const agent = refundAgent(env);
    const executionId = await agent.start("Refund order 42").executionId;
    const { approvalId } = await pendingApprovalOf(env, executionId);
    const errors = await Promise.all(
      Array.from({ length: 5_000 }, () =>
        env.wait(executionId).result.then(
          () => undefined,
          (caught: unknown) => caught,
        ),
      ),
    );
    expect(new Set(errors.map((error) => (error as { code?: string }).code))).toEqual(new Set(["APPROVAL_REQUIRED"]));
    await expect(agent.resume(executionId, { approvalId, approved: true }).result).resolves.toMatchObject({ outcome: "completed" });
  });

  it("is rejected at once when the suspension is only durable here (recovery not run), and after a restart that recovered it", async () => {
    const path = await temporaryStorePath();
    const first = await Phronomy.open({ store: path, logger: recordingLogger() });
    const executionId = await refundAgent(first).start("Refund order 42").executionId;
    const request = await pendingApprovalOf(first, executionId);
    await first.close();

    const durableOnly = await Phronomy.open({ store: path, logger: recordingLogger(), recover: false });
    try {
      const error = await durableOnly.wait(executionId).result.then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(ApprovalRequiredError);
      expect(error).toMatchObject({ code: "APPROVAL_REQUIRED", executionId, agentId: "support", approvalId: request.approvalId });
      expect((error as Error).message).not.toContain("env.recover()");
    } finally {
      await durableOnly.close();
    }

    const recovered = await Phronomy.open({ store: path, logger: recordingLogger() });
    try {
      refundAgent(recovered);
      await recovered.recovery("support");
      await expect(recovered.wait(executionId).result).rejects.toMatchObject({ code: "APPROVAL_REQUIRED", approvalId: request.approvalId });
    } finally {
      await recovered.close();
    }
  });
});

describe("the events of a run that suspends", () => {
  it("the start's stream and listener end at approval_required; the resume's Run carries the rest; both results agree", async () => {
    const env = await openEnvironment();
    const refunds: string[] = [];
    const agent = refundAgent(env, refunds);
    const heard: string[] = [];
    const run = agent.start("Refund order 42", { onEvent: (event) => heard.push(event.type) });
    const started = await collect(run.events);
    expect(started.at(-1)?.type).toBe("approval_required");
    expect(started.filter((event) => event.type === "approval_required")).toHaveLength(1);
    const executionId = await run.executionId;
    const { approvalId } = await pendingApprovalOf(env, executionId);
    const resumedHeard: string[] = [];
    const resumed = agent.resume(executionId, { approvalId, approved: true, onEvent: (event) => resumedHeard.push(event.type) });
    const rest = (await collect(resumed.events)).map((event) => event.type);
    expect(rest).toContain("tool_call_started");
    expect(rest.at(-1)).toBe("done");
    expect(rest).not.toContain("approval_required");
    expect(resumedHeard).toEqual(rest);
    const result = await resumed.result;
    await expect(run.result).resolves.toEqual(result);
    expect(heard.at(-1), "the start's listener hears nothing after its terminal event").toBe("approval_required");
    expect(heard).toEqual(started.map((event) => event.type));
    expect(refunds).toHaveLength(1);
  });
});

describe("callbackErrorPolicy fail_task", () => {
  it("a listener throwing on progress events is reported; the completed run still completes", async () => {
    const logger = recordingLogger();
    const env = await openEnvironment({ callbackErrorPolicy: "fail_task", logger });
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const run = agent.start("Where is order 42?", {
      onEvent: (event) => {
        if (event.type !== "done") throw new Error(`listener broke on ${event.type}`);
      },
    });
    await expect(run.result).resolves.toMatchObject({ outcome: "completed", output: "Order 42 has shipped." });
    expect(logger.warnings.some((warning) => warning.includes("listener broke on model_call_started"))).toBe(true);
    expect((await env.execution(await run.executionId))?.outcome).toBe("completed");
  });

  it("a listener throwing on approval_required is reported; the start's result is the completed outcome", async () => {
    const logger = recordingLogger();
    const env = await openEnvironment({ callbackErrorPolicy: "fail_task", logger });
    const agent = refundAgent(env);
    const run = agent.start("Refund order 42", {
      onEvent: (event) => {
        if (event.type === "approval_required") throw new Error("no UI for approvals");
      },
    });
    const executionId = await run.executionId;
    const { approvalId } = await pendingApprovalOf(env, executionId);
    await expect(agent.resume(executionId, { approvalId, approved: true }).result).resolves.toMatchObject({ outcome: "completed" });
    await expect(run.result).resolves.toMatchObject({ executionId, outcome: "completed" });
    expect(logger.warnings.some((warning) => warning.includes("no UI for approvals"))).toBe(true);
  });

  it("a listener throwing on done fails the task with StreamCallbackError (the original as cause) while the durable outcome is completed", async () => {
    const env = await openEnvironment({ callbackErrorPolicy: "fail_task" });
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const broken = new Error("the UI went away");
    const run = agent.start("Where is order 42?", {
      onEvent: (event) => {
        if (event.type === "done") throw broken;
      },
    });
    const error = await run.result.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(StreamCallbackError);
    expect(error).toMatchObject({ code: "STREAM_CALLBACK", cause: broken, executionId: await run.executionId });
    expect((await env.execution(await run.executionId))?.outcome).toBe("completed");
  });

  it("a listener throwing on handoff fails the task too; one throwing on error leaves the execution's own error as the result", async () => {
    const env = await openEnvironment({ callbackErrorPolicy: "fail_task" });
    const triage = env.agent({
      id: "triage",
      model: scriptedModel([{ toolCalls: [{ toolName: "toBilling", input: { reason: "a refund question" } }] }]),
      tools: { toBilling: handoff({ to: "billing" }) },
    });
    const handedOff = triage.start("I want my money back", {
      onEvent: (event) => {
        if (event.type === "handoff") throw new Error("handoff UI broke");
      },
    });
    await expect(handedOff.result).rejects.toMatchObject({ code: "STREAM_CALLBACK", cause: { message: "handoff UI broke" } });
    expect((await env.execution(await handedOff.executionId))?.outcome).toBe("handed_off");

    const failing = env.agent({
      id: "failing",
      model: scriptedModel(() => {
        throw new Error("provider down");
      }),
    });
    const failed = failing.start("hi", {
      onEvent: (event) => {
        if (event.type === "error") throw new Error("error UI broke");
      },
    });
    await expect(failed.result).rejects.toMatchObject({ code: "MODEL_FAILED" });
  });

  it("under the default policy a listener throwing on done is reported only", async () => {
    const logger = recordingLogger();
    const env = await openEnvironment({ logger });
    const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const run = agent.start("Where is order 42?", {
      onEvent: () => {
        throw new Error("every event breaks");
      },
    });
    await expect(run.result).resolves.toMatchObject({ outcome: "completed" });
    expect(logger.warnings.some((warning) => warning.includes("every event breaks"))).toBe(true);
  });
});
