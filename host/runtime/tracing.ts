// Tracing through the OpenTelemetry API: one span per execution
// (`agent.execution`) with child spans per model call and tool call. The
// API is a no-op until the application installs an SDK, so this costs
// nothing by default.

import { context, SpanStatusCode, trace, type Span as OtelSpan } from "@opentelemetry/api";

type Attributes = Record<string, string | number | boolean>;

export interface Span {
  end(): void;
  fail(error: unknown): void;
  readonly otel: OtelSpan;
}

export class Tracer {
  private readonly tracer = trace.getTracer("phronomy");

  startExecution(attributes: Attributes): Span {
    return wrap(this.tracer.startSpan("agent.execution", { attributes }));
  }

  startChild(parent: Span | undefined, name: string, attributes: Attributes): Span {
    const parentContext = parent ? trace.setSpan(context.active(), parent.otel) : context.active();
    return wrap(this.tracer.startSpan(name, { attributes }, parentContext));
  }
}

function wrap(otel: OtelSpan): Span {
  let ended = false;
  return {
    otel,
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
