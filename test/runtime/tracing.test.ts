// One OpenTelemetry span per execution, with a child span per model call
// and per tool call, through the OpenTelemetry API: recorded here by a
// small tracer provider registered as the global one, as an application's
// SDK would be.

import { trace, type Context, type Span, type SpanOptions, type Tracer, type TracerProvider } from "@opentelemetry/api";
import { afterAll, describe, expect, it } from "vitest";
import { agentRunModel, lookupTool, openEnvironment } from "./helpers.js";

interface RecordedSpan {
  readonly name: string;
  readonly spanId: string;
  readonly parentSpanId: string | undefined;
  readonly attributes: Record<string, unknown>;
  ended: boolean;
  status: number;
}

const recorded: RecordedSpan[] = [];
let nextId = 1;

function recordingSpan(record: RecordedSpan): Span {
  const span: Span = {
    spanContext: () => ({ traceId: "0".repeat(31) + "1", spanId: record.spanId, traceFlags: 1 }),
    setAttribute: () => span,
    setAttributes: () => span,
    addEvent: () => span,
    addLink: () => span,
    addLinks: () => span,
    setStatus: (status) => { record.status = status.code; return span; },
    updateName: () => span,
    end: () => { record.ended = true; },
    isRecording: () => true,
    recordException: () => undefined,
  };
  return span;
}

const tracer: Tracer = {
  startSpan(name: string, options?: SpanOptions, context?: Context): Span {
    const parent = context ? trace.getSpan(context)?.spanContext().spanId : undefined;
    const record: RecordedSpan = { name, spanId: String(nextId++).padStart(16, "0"), parentSpanId: parent, attributes: { ...options?.attributes }, ended: false, status: 0 };
    recorded.push(record);
    return recordingSpan(record);
  },
  startActiveSpan: (() => { throw new Error("not used"); }) as Tracer["startActiveSpan"],
};

const provider: TracerProvider = { getTracer: () => tracer };
trace.setGlobalTracerProvider(provider);
afterAll(() => trace.disable());

describe("tracing", () => {
  it("records agent.execution with model and tool calls as its children", async () => {
    const env = await openEnvironment();
    const agent = env.agent({ id: "traced", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const result = await agent.start("Where is order 42?").result;
    const execution = recorded.find((span) => span.name === "agent.execution" && span.attributes["phronomy.execution_id"] === result.executionId);
    expect(execution).toMatchObject({ attributes: { "phronomy.agent_id": "traced", "phronomy.mode": "invoke" }, ended: true });
    const children = recorded.filter((span) => span.parentSpanId === execution!.spanId);
    expect(children.map((span) => span.name)).toEqual(["agent.model_call", "agent.tool_call", "agent.model_call", "agent.tool_call", "agent.model_call"]);
    expect(children.every((span) => span.ended)).toBe(true);
    expect(children.find((span) => span.name === "agent.tool_call")?.attributes["phronomy.tool"]).toBe("lookup");
  });
});
