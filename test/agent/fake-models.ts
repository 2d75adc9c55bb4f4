// Hand-written provider models for the agent tests: each records the call
// options it received and answers with exactly the result it is given, in
// the shape of one specification version (v2, v3 or v4).

import type {
  LanguageModelV2,
  LanguageModelV2CallOptions,
  LanguageModelV2StreamPart,
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3GenerateResult,
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4GenerateResult,
  LanguageModelV4StreamPart,
} from "@ai-sdk/provider";

export type LanguageModelV2GenerateResult = Awaited<ReturnType<LanguageModelV2["doGenerate"]>>;

export interface Recorder<Options> {
  readonly calls: Options[];
}

export function fakeV4Model(
  answer: (options: LanguageModelV4CallOptions) => LanguageModelV4GenerateResult | Promise<LanguageModelV4GenerateResult>,
  streamParts: (options: LanguageModelV4CallOptions) => LanguageModelV4StreamPart[] = () => [],
): LanguageModelV4 & Recorder<LanguageModelV4CallOptions> {
  const calls: LanguageModelV4CallOptions[] = [];
  return {
    specificationVersion: "v4",
    provider: "fake",
    modelId: "fake-v4",
    supportedUrls: {},
    calls,
    async doGenerate(options) {
      calls.push(options);
      return answer(options);
    },
    async doStream(options) {
      calls.push(options);
      return { stream: streamOf(streamParts(options)) };
    },
  };
}

export function fakeV3Model(result: LanguageModelV3GenerateResult): LanguageModelV3 & Recorder<LanguageModelV3CallOptions> {
  const calls: LanguageModelV3CallOptions[] = [];
  return {
    specificationVersion: "v3",
    provider: "fake",
    modelId: "fake-v3",
    supportedUrls: {},
    calls,
    async doGenerate(options) {
      calls.push(options);
      return result;
    },
    async doStream() {
      throw new Error("not streamed in these tests");
    },
  };
}

export function fakeV2Model(
  result: LanguageModelV2GenerateResult,
  streamParts: LanguageModelV2StreamPart[] = [],
): LanguageModelV2 & Recorder<LanguageModelV2CallOptions> {
  const calls: LanguageModelV2CallOptions[] = [];
  return {
    specificationVersion: "v2",
    provider: "fake",
    modelId: "fake-v2",
    supportedUrls: {},
    calls,
    async doGenerate(options) {
      calls.push(options);
      return result;
    },
    async doStream(options) {
      calls.push(options);
      return { stream: streamOf(streamParts) };
    },
  };
}

export function streamOf<Part>(parts: readonly Part[]): ReadableStream<Part> {
  let next = 0;
  return new ReadableStream<Part>({
    pull(controller) {
      const part = parts[next];
      next += 1;
      if (part === undefined) controller.close();
      else controller.enqueue(part);
    },
  });
}

export function v4Usage(input: number | undefined, output: number | undefined): LanguageModelV4GenerateResult["usage"] {
  return {
    inputTokens: { total: input, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: output, text: undefined, reasoning: undefined },
  };
}
