// Tracing through the OpenTelemetry API, named and attributed as the GenAI
// semantic conventions say: one span per execution (`invoke_agent <agent>`)
// with a child per model call (`chat <model>`) and per tool call
// (`execute_tool <tool>`); the tool's own work runs with its span active,
// so spans the tool starts nest under it. The API is a no-op until the
// application installs an SDK, so this costs nothing by default.
//
// The API itself is loaded only once something registered a global with it
// (a tracer provider, a context manager: the API keeps them on `globalThis`
// under a symbol of its major version). Until then a span is one shared
// object that does nothing, as the API's own non-recording span would do:
// loading the API cost ≈1–6 MB of RSS and every execution a span of its own
// (docs/decisions/0028-memory-of-idle-and-suspended.md).

import { createRequire } from "node:module";
import type * as OpenTelemetry from "@opentelemetry/api";

export type Attributes = Record<string, string | number | boolean | string[]>;

/** A span's name and attributes, asked for only when a span is recorded. */
export interface SpanDescription {
  readonly name: string;
  readonly attributes: Attributes;
}

export interface Span {
  /** An OpenTelemetry span: false for the shared one that does nothing,
   * for which attributes need not be built. */
  readonly recording: boolean;
  /** Adds attributes known only later (usage, finish reason). */
  set(attributes: Attributes): void;
  end(): void;
  fail(error: unknown): void;
  /** The OpenTelemetry span; undefined while the API is not in use. */
  readonly otel: OpenTelemetry.Span | undefined;
}

/** Where the OpenTelemetry API (1.x) keeps what was registered with it. */
const globalKey = Symbol.for("opentelemetry.js.api.1");

let api: typeof OpenTelemetry | undefined;

/** The API, once anything was registered with it; loaded on first need. */
function openTelemetry(): typeof OpenTelemetry | undefined {
  if (api !== undefined) return api;
  if ((globalThis as Record<symbol, unknown>)[globalKey] === undefined) return undefined;
  api = createRequire(import.meta.url)("@opentelemetry/api") as typeof OpenTelemetry;
  return api;
}

const noSpan: Span = { recording: false, otel: undefined, set: () => undefined, end: () => undefined, fail: () => undefined };

export class Tracer {
  private tracer: OpenTelemetry.Tracer | undefined;

  private otelTracer(): OpenTelemetry.Tracer | undefined {
    if (this.tracer !== undefined) return this.tracer;
    this.tracer = openTelemetry()?.trace.getTracer("phronomy");
    return this.tracer;
  }

  // The span's name and attributes come as a function: every run opens
  // six spans or so, and without an SDK building their attributes was
  // most of what tracing cost (issue 25).

  startExecution(agentId: string, attributes: () => Attributes): Span {
    const tracer = this.otelTracer();
    return tracer === undefined ? noSpan : wrap(tracer.startSpan(`invoke_agent ${agentId}`, { attributes: attributes() }), api!);
  }

  startChild(parent: Span | undefined, describe: () => SpanDescription): Span {
    const tracer = this.otelTracer();
    if (tracer === undefined) return noSpan;
    const { context, trace } = api!;
    const parentContext = parent?.otel !== undefined ? trace.setSpan(context.active(), parent.otel) : context.active();
    const { name, attributes } = describe();
    return wrap(tracer.startSpan(name, { attributes }, parentContext), api!);
  }

  /** Runs `work` with `span` as the active span: what it starts (the
   * tool's own spans, the AI SDK's) is its child, when the application's
   * SDK has a context manager. */
  within<T>(span: Span, work: () => T): T {
    if (span.otel === undefined || api === undefined) return work();
    const { context, trace } = api;
    return context.with(trace.setSpan(context.active(), span.otel), work);
  }
}

function wrap(otel: OpenTelemetry.Span, { SpanStatusCode }: typeof OpenTelemetry): Span {
  let ended = false;
  return {
    recording: true,
    otel,
    set(attributes: Attributes) {
      if (!ended) otel.setAttributes(attributes);
    },
    end() {
      if (ended) return;
      ended = true;
      otel.end();
    },
    fail(error: unknown) {
      if (ended) return;
      ended = true;
      otel.recordException(error instanceof Error ? error : String(error));
      otel.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      otel.end();
    },
  };
}
