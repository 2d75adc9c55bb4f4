// A language model that answers only by streaming, for the tests of
// durable streaming (docs/decisions/0072): its `doStream` hands out the
// given text deltas, optionally holding back all but the first few until a
// gate opens, so a test can attach a watcher in the middle of a call; its
// `doGenerate` is absent, or throws the AI SDK's
// UnsupportedFunctionalityError as stream-only providers do.

import { UnsupportedFunctionalityError, type LanguageModelV3, type LanguageModelV3StreamPart, type LanguageModelV4 } from "@ai-sdk/provider";

export interface StreamOnlyModelOptions {
  /** The answer, delta by delta. */
  readonly deltas: readonly string[];
  /** How many deltas go out before the stream waits for `gate` (default: all). */
  readonly before?: number;
  /** Opens the rest of the stream. */
  readonly gate?: Promise<void>;
  /** Called when the deltas before the gate were handed out. */
  readonly onHeld?: () => void;
  /** `absent`: the model has no doGenerate; `unsupported` (default): it throws. */
  readonly generate?: "absent" | "unsupported";
  readonly specificationVersion?: "v3" | "v4";
}

/** What the model did, for assertions. */
export interface StreamOnlyRecord {
  /** doGenerate calls (each threw). */
  generateCalls: number;
  /** doStream calls. */
  streamCalls: number;
}

export type StreamOnlyModel = (LanguageModelV3 | LanguageModelV4) & StreamOnlyRecord;

export function streamOnlyModel(options: StreamOnlyModelOptions): StreamOnlyModel {
  const specificationVersion = options.specificationVersion ?? "v4";
  const record: StreamOnlyRecord = { generateCalls: 0, streamCalls: 0 };
  const model = {
    specificationVersion,
    provider: "stream-only",
    modelId: `stream-only-${specificationVersion}`,
    supportedUrls: {},
    get generateCalls() {
      return record.generateCalls;
    },
    get streamCalls() {
      return record.streamCalls;
    },
    async doStream() {
      record.streamCalls += 1;
      return { stream: partsStream(options) };
    },
    ...(options.generate === "absent"
      ? {}
      : {
          async doGenerate(): Promise<never> {
            record.generateCalls += 1;
            throw new UnsupportedFunctionalityError({ functionality: "doGenerate", message: "this model answers only by streaming (doStream)" });
          },
        }),
  };
  return model as unknown as StreamOnlyModel;
}

function partsStream(options: StreamOnlyModelOptions): ReadableStream<LanguageModelV3StreamPart> {
  const before = options.before ?? options.deltas.length;
  const parts: LanguageModelV3StreamPart[] = [
    { type: "stream-start", warnings: [] },
    { type: "text-start", id: "text-0" },
    ...options.deltas.map((delta): LanguageModelV3StreamPart => ({ type: "text-delta", id: "text-0", delta })),
    { type: "text-end", id: "text-0" },
    { type: "finish", usage: usageOf(options.deltas.join("").length), finishReason: { unified: "stop", raw: "stop" } },
  ];
  // The parts up to and including the `before`-th delta go out at once.
  const heldFrom = 2 + before;
  let next = 0;
  return new ReadableStream<LanguageModelV3StreamPart>({
    async pull(controller) {
      if (next === heldFrom && options.gate !== undefined && before < options.deltas.length) {
        options.onHeld?.();
        await options.gate;
      }
      const part = parts[next];
      next += 1;
      if (part === undefined) controller.close();
      else controller.enqueue(part);
    },
  });
}

function usageOf(characters: number): Extract<LanguageModelV3StreamPart, { type: "finish" }>["usage"] {
  const outputTokens = Math.ceil(characters / 4);
  return {
    inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: outputTokens, text: outputTokens, reasoning: 0 },
  };
}
