// One OpenTelemetry span per execution, with a child span per model call
// and per tool call, through the OpenTelemetry API, named and attributed as
// the GenAI semantic conventions say: recorded here by a small tracer
// provider registered as the global one, and a context manager on
// AsyncLocalStorage, as an application's SDK would install them.

import { AsyncLocalStorage } from "node:async_hooks";
import {
  context as otelContext,
  ROOT_CONTEXT,
  trace,
  type Context,
  type ContextManager,
  type Span,
  type SpanOptions,
  type Tracer,
  type TracerProvider,
} from "@opentelemetry/api";
import { z } from "zod";
import { afterAll, describe, expect, it } from "vitest";
import { tool, type ApprovalRequest } from "../../host/index.js";
import { agentRunModel, lookupTool, openEnvironment, scriptedModel } from "./helpers.js";

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
    setAttribute: (key, value) => {
      record.attributes[key] = value;
      return span;
    },
    setAttributes: (attributes) => {
      Object.assign(record.attributes, attributes);
      return span;
    },
    addEvent: () => span,
    addLink: () => span,
    addLinks: () => span,
    setStatus: (status) => {
      record.status = status.code;
      return span;
    },
    updateName: () => span,
    end: () => {
      record.ended = true;
    },
    isRecording: () => true,
    recordException: () => undefined,
  };
  return span;
}

const tracer: Tracer = {
  startSpan(name: string, options?: SpanOptions, context: Context = otelContext.active()): Span {
    const parent = trace.getSpan(context)?.spanContext().spanId;
    const record: RecordedSpan = {
      name,
      spanId: String(nextId++).padStart(16, "0"),
      parentSpanId: parent,
      attributes: { ...options?.attributes },
      ended: false,
      status: 0,
    };
    recorded.push(record);
    return recordingSpan(record);
  },
  startActiveSpan: (() => {
    throw new Error("not used");
  }) as Tracer["startActiveSpan"],
};

const provider: TracerProvider = { getTracer: () => tracer };
trace.setGlobalTracerProvider(provider);

/** What @opentelemetry/context-async-hooks does, in a few lines. */
const storage = new AsyncLocalStorage<Context>();
const contextManager: ContextManager = {
  active: () => storage.getStore() ?? ROOT_CONTEXT,
  with: (context, fn, thisArg, ...args) => storage.run(context, () => fn.call(thisArg, ...args)),
  bind: (_context, target) => target,
  enable() {
    return contextManager;
  },
  disable() {
    return contextManager;
  },
};
otelContext.setGlobalContextManager(contextManager);
afterAll(() => {
  trace.disable();
  otelContext.disable();
});

describe("tracing", () => {
  it("records invoke_agent with chat and execute_tool spans as its children, with GenAI attributes", async () => {
    const env = await openEnvironment();
    const agent = env.agent({ id: "traced", model: agentRunModel(), tools: { lookup: lookupTool() }, temperature: 0.2, maxOutputTokens: 300 });
    const result = await agent.start("Where is order 42?").result;
    const execution = recorded.find((span) => span.name === "invoke_agent traced" && span.attributes["phronomy.execution_id"] === result.executionId);
    expect(execution).toMatchObject({
      attributes: {
        "phronomy.agent_id": "traced",
        "phronomy.mode": "invoke",
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "traced",
        "gen_ai.request.model": "scripted",
        "gen_ai.provider.name": "phronomy.scripted",
        "gen_ai.usage.input_tokens": result.usage.inputTokens,
        "gen_ai.usage.output_tokens": result.usage.outputTokens,
      },
      ended: true,
    });
    const children = recorded.filter((span) => span.parentSpanId === execution!.spanId);
    expect(children.map((span) => span.name)).toEqual(["chat scripted", "execute_tool lookup", "chat scripted", "execute_tool lookup", "chat scripted"]);
    expect(children.every((span) => span.ended)).toBe(true);
    const chat = children[0]!;
    expect(chat.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.request.model": "scripted",
      "gen_ai.request.temperature": 0.2,
      "gen_ai.request.max_tokens": 300,
      "gen_ai.response.finish_reasons": ["tool-calls"],
      "phronomy.attempts": 1,
    });
    expect(chat.attributes["gen_ai.usage.input_tokens"]).toBeGreaterThan(0);
    expect(chat.attributes["gen_ai.usage.output_tokens"]).toBeGreaterThan(0);
    expect(children[1]!.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "lookup",
      "gen_ai.tool.type": "function",
      "gen_ai.tool.description": "Looks an order up",
      "phronomy.tool": "lookup",
    });
    expect(children[1]!.attributes["gen_ai.tool.call.id"]).toEqual(expect.any(String));
  });

  it("gives a resume its own invoke_agent span: the start's ends when the execution suspends (as the seed's span per resume)", async () => {
    const env = await openEnvironment();
    const refund = tool({ inputSchema: z.object({}), needsApproval: true, execute: () => "refunded" });
    const model = scriptedModel(({ turn }) => (turn === 0 ? { toolCalls: [{ toolName: "refund", input: {} }] } : { text: "refunded" }));
    const agent = env.agent({ id: "resumed", model, tools: { refund } });
    const run = agent.start("refund order 42");
    let request: ApprovalRequest | undefined;
    for await (const event of run.events) if (event.type === "approval_required") request = event.request;
    const spansOf = (): RecordedSpan[] =>
      recorded.filter((span) => span.name === "invoke_agent resumed" && span.attributes["phronomy.execution_id"] === request!.executionId);
    expect(spansOf()).toMatchObject([{ ended: true, attributes: { "phronomy.run": "start", "phronomy.outcome": "suspended" } }]);
    await agent.resume(request!.executionId, { approvalId: request!.approvalId, approved: true }).result;
    const [start, resume] = spansOf();
    expect(resume).toMatchObject({ ended: true, attributes: { "phronomy.run": "resume", "phronomy.agent_id": "resumed" } });
    expect(resume!.spanId).not.toBe(start!.spanId);
    const childrenOf = (span: RecordedSpan): string[] => recorded.filter((child) => child.parentSpanId === span.spanId).map((child) => child.name);
    expect({ start: childrenOf(start!), resume: childrenOf(resume!) }).toEqual({ start: ["chat scripted"], resume: ["execute_tool refund", "chat scripted"] });
  });

  it("nests the spans a tool starts under its execute_tool span", async () => {
    const env = await openEnvironment();
    const traced = tool({
      inputSchema: z.object({}),
      async execute() {
        const span = trace.getTracer("application").startSpan("application.work");
        await new Promise((resolve) => setTimeout(resolve, 1));
        span.end();
        return "ok";
      },
    });
    const model = scriptedModel([{ toolCalls: [{ toolName: "work", input: {} }] }, { text: "done" }]);
    await env.agent({ id: "nested", model, tools: { work: traced } }).start("go").result;
    const toolSpan = recorded.find((span) => span.name === "execute_tool work");
    const work = recorded.find((span) => span.name === "application.work");
    expect(work?.parentSpanId).toBe(toolSpan?.spanId);
  });
});
