// Tracing through the OpenTelemetry API, named and attributed as the GenAI
// semantic conventions say: one span per execution (`invoke_agent <agent>`)
// with a child per model call (`chat <model>`) and per tool call
// (`execute_tool <tool>`); the tool's own work runs with its span active,
// so spans the tool starts nest under it. The API is a no-op until the
// application installs an SDK, so this costs nothing by default.

import { context, SpanStatusCode, trace, type Span as OtelSpan } from "@opentelemetry/api";

export type Attributes = Record<string, string | number | boolean | string[]>;

export interface Span {
  /** Adds attributes known only later (usage, finish reason). */
  set(attributes: Attributes): void;
  end(): void;
  fail(error: unknown): void;
  readonly otel: OtelSpan;
}

export class Tracer {
  private readonly tracer = trace.getTracer("phronomy");

  startExecution(agentId: string, attributes: Attributes): Span {
    return wrap(this.tracer.startSpan(`invoke_agent ${agentId}`, { attributes }));
  }

  startChild(parent: Span | undefined, name: string, attributes: Attributes): Span {
    const parentContext = parent ? trace.setSpan(context.active(), parent.otel) : context.active();
    return wrap(this.tracer.startSpan(name, { attributes }, parentContext));
  }

  /** Runs `work` with `span` as the active span: what it starts (the
   * tool's own spans, the AI SDK's) is its child, when the application's
   * SDK has a context manager. */
  within<T>(span: Span, work: () => T): T {
    return context.with(trace.setSpan(context.active(), span.otel), work);
  }
}

function wrap(otel: OtelSpan): Span {
  let ended = false;
  return {
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
