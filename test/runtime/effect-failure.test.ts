// A throw while the coordinator carries out one execution's effect fails
// that execution through its terminal commit (issue 24; decision 0056): it
// is not only logged by the control loop, which left the execution pending
// for good, its conversation AGENT_BUSY and env.close() hanging. The fault
// the public API reaches: the application's OpenTelemetry tracer throwing
// when the model call's span starts (a control message carries that effect
// out). (The tests run with --unhandled-rejections=strict.)

import { trace, type Span, type Tracer, type TracerProvider } from "@opentelemetry/api";
import { afterAll, describe, expect, it } from "vitest";
import { Phronomy } from "../../host/index.js";
import { lookupTool, recordingLogger, scriptedModel, temporaryStorePath } from "./helpers.js";

/** Throws when a span whose name starts with `failing.prefix` starts. */
const failing = { prefix: "chat " };
const span: Span = {
  spanContext: () => ({ traceId: "0".repeat(31) + "1", spanId: "0".repeat(15) + "1", traceFlags: 1 }),
  setAttribute: () => span,
  setAttributes: () => span,
  addEvent: () => span,
  addLink: () => span,
  addLinks: () => span,
  setStatus: () => span,
  updateName: () => span,
  end: () => undefined,
  isRecording: () => true,
  recordException: () => undefined,
};
const tracer: Tracer = {
  startSpan(name: string): Span {
    if (failing.prefix !== "" && name.startsWith(failing.prefix)) throw new Error(`tracer bug starting "${name}"`);
    return span;
  },
  startActiveSpan: (() => {
    throw new Error("not used");
  }) as Tracer["startActiveSpan"],
};
const provider: TracerProvider = { getTracer: () => tracer };
trace.setGlobalTracerProvider(provider);
afterAll(() => trace.disable());

describe("a throw while carrying out an execution's effect", () => {
  it("fails that execution durably (INTERNAL), frees the conversation, and close resolves", async () => {
    const store = await temporaryStorePath();
    const env = await Phronomy.open({ store, logger: recordingLogger() });
    const model = scriptedModel(() => ({ text: "ok" }));
    const agent = env.agent({ id: "traced", model });
    failing.prefix = "chat ";
    const failure = await agent.start("hello").result.catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "INTERNAL", agentId: "traced" });
    expect((failure as Error).message).toMatch(/StartProviderCall.*tracer bug/);
    const rows = await env.executions({ agentId: "traced" });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "INTERNAL" } });
    expect(model.turnsServed).toBe(0);
    failing.prefix = "";
    await expect(agent.start("again").result).resolves.toMatchObject({ outcome: "completed", output: "ok" });
    await env.close();
    const reopened = await Phronomy.open({ store, logger: recordingLogger() });
    reopened.agent({ id: "traced", model });
    expect(await reopened.recover()).toEqual([]);
    await reopened.close();
    expect(model.turnsServed).toBe(1);
  }, 30_000);

  it("a throw launching one tool call is that call's failure: the model is told, the run completes", async () => {
    const env = await Phronomy.open({ store: await temporaryStorePath(), logger: recordingLogger() });
    const told: string[] = [];
    const model = scriptedModel(({ turn, messages }) => {
      if (turn === 0) return { toolCalls: [{ toolName: "lookup", input: { orderId: "42" } }] };
      told.push(JSON.stringify(messages.at(-1)));
      return { text: "sorry" };
    });
    const agent = env.agent({ id: "traced-tool", model, tools: { lookup: lookupTool() } });
    failing.prefix = "execute_tool ";
    await expect(agent.start("where is 42?").result).resolves.toMatchObject({ outcome: "completed", output: "sorry" });
    expect(told.join("")).toMatch(/tracer bug starting/);
    await env.close();
  }, 30_000);

  it("a throw opening the run's own span fails the start durably, frees the conversation", async () => {
    const env = await Phronomy.open({ store: await temporaryStorePath(), logger: recordingLogger() });
    const agent = env.agent({ id: "traced-run", model: scriptedModel(() => ({ text: "ok" })) });
    failing.prefix = "invoke_agent ";
    await expect(agent.start("hello").result).rejects.toMatchObject({ code: "INTERNAL", agentId: "traced-run" });
    const rows = await env.executions({ agentId: "traced-run" });
    expect(rows[0]).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "INTERNAL" } });
    failing.prefix = "";
    await expect(agent.start("again").result).resolves.toMatchObject({ outcome: "completed" });
    await env.close();
  }, 30_000);
});
