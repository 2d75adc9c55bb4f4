// The OpenTelemetry API is loaded only once something was registered with
// it (docs/decisions/0028-memory-of-idle-and-suspended.md): until then
// executions run without it, and a tracer provider registered later, with
// the environment already open, records the next executions' spans.
// Nothing here imports the API statically, so this file starts without it.

import { createRequire } from "node:module";
import { afterAll, describe, expect, it } from "vitest";
import { Tracer } from "../../host/runtime/tracing.js";
import { agentRunModel, lookupTool, openEnvironment } from "./helpers.js";

const require = createRequire(import.meta.url);
const globalKey = Symbol.for("opentelemetry.js.api.1");

/** Whether the API's CommonJS build, the one the environment loads on
 * first need, is loaded (this file imports the ESM build, later). */
function apiLoaded(): boolean {
  return require.cache[require.resolve("@opentelemetry/api")] !== undefined;
}

describe("tracing, loaded on first need", () => {
  afterAll(async () => {
    const { trace } = await import("@opentelemetry/api");
    trace.disable();
  });

  it("runs without the API until a provider is registered, then records with it", async () => {
    expect((globalThis as Record<symbol, unknown>)[globalKey]).toBeUndefined();
    const env = await openEnvironment();
    const agent = env.agent({ id: "lazy-traced", model: agentRunModel(), tools: { lookup: lookupTool() } });
    expect((await agent.start("Where is order 42?").result).outcome).toBe("completed");
    expect(apiLoaded()).toBe(false);
    // Without the API a span's name and attributes are never built (every
    // run opens about six spans: issue 25).
    const tracer = new Tracer();
    const built: string[] = [];
    const execution = tracer.startExecution("lazy-traced", () => {
      built.push("invoke_agent");
      return {};
    });
    const chat = tracer.startChild(execution, () => {
      built.push("chat");
      return { name: "chat scripted", attributes: {} };
    });
    expect(built).toEqual([]);
    expect([execution.recording, chat.recording]).toEqual([false, false]);

    const names: string[] = [];
    const { trace } = await import("@opentelemetry/api");
    const span = {
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
    trace.setGlobalTracerProvider({
      getTracer: () => ({
        startSpan: (name: string) => {
          names.push(name);
          return span;
        },
        startActiveSpan: () => {
          throw new Error("not used");
        },
      }),
    });
    expect((await agent.start("Where is order 42?").result).outcome).toBe("completed");
    expect(names).toEqual(["invoke_agent lazy-traced", "chat scripted", "execute_tool lookup", "chat scripted", "execute_tool lookup", "chat scripted"]);
    // The environment loaded its own copy (CommonJS) only now.
    expect(apiLoaded()).toBe(true);
    await env.close();
  });
});
