// A model that answers only by streaming (issue 27 item 8, docs/decisions/
// 0072) works for runs that do not stream too: a model without
// `doGenerate`, or whose `doGenerate` throws the AI SDK's
// UnsupportedFunctionalityError, is called through `streamText` and its
// answer collected — no text deltas are emitted for a run that did not ask
// for them. A model with neither method is refused when it is defined.

import { describe, expect, it } from "vitest";
import { InvalidInputError, type ExecutionEvent } from "../../host/index.js";
import { openEnvironment } from "../runtime/helpers.js";
import { streamOnlyModel } from "../support/stream-only-model.js";

const deltas = ["Order 42 ", "has shipped ", "and arrives ", "on Monday."];
const answer = deltas.join("");

describe("a model that implements only doStream", () => {
  for (const specificationVersion of ["v3", "v4"] as const) {
    it(`${specificationVersion}, without doGenerate: a run that does not stream completes with the whole answer, and no deltas`, async () => {
      const env = await openEnvironment();
      const model = streamOnlyModel({ deltas, generate: "absent", specificationVersion });
      const events: ExecutionEvent[] = [];
      const run = env.agent({ id: "support", model }).start("Where is order 42?", { onEvent: (event) => void events.push(event) });
      await expect(run.result).resolves.toMatchObject({ outcome: "completed", output: answer });
      expect(model.streamCalls).toBe(1);
      expect(events.some((event) => event.type === "text_delta")).toBe(false);
    });
  }

  it("whose doGenerate throws UnsupportedFunctionalityError: called streaming instead, and from then on streaming only", async () => {
    const env = await openEnvironment();
    const model = streamOnlyModel({ deltas, generate: "unsupported", specificationVersion: "v3" });
    const support = env.agent({ id: "support", model });
    await expect(support.start("Where is order 42?").result).resolves.toMatchObject({ outcome: "completed", output: answer });
    await expect(support.start("And order 43?").result).resolves.toMatchObject({ outcome: "completed", output: answer });
    expect({ generateCalls: model.generateCalls, streamCalls: model.streamCalls }).toEqual({ generateCalls: 1, streamCalls: 2 });
  });

  it("a streamed run of such a model emits its deltas as they come", async () => {
    const env = await openEnvironment();
    const model = streamOnlyModel({ deltas, generate: "absent" });
    const run = env.agent({ id: "support", model }).start("Where is order 42?", { stream: true });
    const heard: string[] = [];
    for await (const event of run.events) if (event.type === "text_delta") heard.push(event.delta);
    expect(heard).toEqual(deltas);
  });

  it("a model with neither doGenerate nor doStream is refused when defined, with INVALID_INPUT naming it", async () => {
    const env = await openEnvironment();
    const model = { specificationVersion: "v3", provider: "broken", modelId: "none", supportedUrls: {} };
    expect(() => env.agent({ id: "support", model: model as never })).toThrow(InvalidInputError);
    expect(() => env.agent({ id: "support", model: model as never })).toThrow(/"broken\/none" has neither doGenerate nor doStream/);
  });
});

describe("a model that implements only doGenerate", () => {
  it("a streamed run gets its answer as one delta (the model cannot stream), not MODEL_FAILED", async () => {
    const env = await openEnvironment();
    const streaming = streamOnlyModel({ deltas, generate: "absent" });
    const model = {
      specificationVersion: "v4",
      provider: "whole-only",
      modelId: "whole",
      supportedUrls: {},
      // The stream-only model's stream, collected: the same answer, whole.
      doGenerate: async (options: never) => {
        const { stream } = (await streaming.doStream(options)) as {
          stream: ReadableStream<{ type: string; delta?: string; usage?: unknown; finishReason?: unknown }>;
        };
        const parts: { type: string; delta?: string; usage?: unknown; finishReason?: unknown }[] = [];
        for await (const part of stream) parts.push(part);
        const finish = parts.find((part) => part.type === "finish")!;
        return {
          content: [{ type: "text", text: parts.map((part) => part.delta ?? "").join("") }],
          usage: finish.usage,
          finishReason: finish.finishReason,
          warnings: [],
        };
      },
    };
    const run = env.agent({ id: "support", model: model as never }).start("Where is order 42?", { stream: true });
    const heard: string[] = [];
    for await (const event of run.events) if (event.type === "text_delta") heard.push(event.delta);
    expect(heard).toEqual([answer]);
    await expect(run.result).resolves.toMatchObject({ outcome: "completed", output: answer });
  });
});
