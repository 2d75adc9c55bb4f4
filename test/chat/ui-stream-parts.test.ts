// The parts of an answer beside its text and tool calls in the chat stream
// (decision 0073): reasoning, cited sources and generated files are
// recorded with the model's answer and streamed in the order the model
// produced them, live and replayed alike — also when the model streams
// reasoning after some text; the provider's token details (cached,
// reasoning) are kept in the usage of the run, the row and the stream's
// finish. A hand-written AI SDK model (v4) produces the parts.

import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4Content, LanguageModelV4StreamPart, LanguageModelV4Usage } from "@ai-sdk/provider";
import { readUIMessageStream, type UIMessage } from "ai";
import { describe, expect, it } from "vitest";
import { generatedFileBytesMax } from "../../host/agent/response-parts.js";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import type { ChatChunk } from "../../host/index.js";
import { deferred, openEnvironment } from "../runtime/helpers.js";

const usage: LanguageModelV4Usage = {
  inputTokens: { total: 120, noCache: 20, cacheRead: 100, cacheWrite: 0 },
  outputTokens: { total: 30, text: 22, reasoning: 8 },
};

/** A model answering every call with `content`; streamed, the parts go
 * out in that order, and the part at `holdBefore` waits for `hold`. */
function contentModel(content: readonly LanguageModelV4Content[], options: { hold?: Promise<void>; holdBefore?: number } = {}): LanguageModelV4 {
  return {
    specificationVersion: "v4",
    provider: "test.parts",
    modelId: "parts",
    supportedUrls: {},
    doGenerate: async () => ({ content: [...content], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] }),
    doStream: async (_options: LanguageModelV4CallOptions) => {
      const groups = content.map((part, index) => streamPartsOf(part, index));
      const stream = new ReadableStream<LanguageModelV4StreamPart>({
        async start(controller) {
          controller.enqueue({ type: "stream-start", warnings: [] });
          for (const [index, parts] of groups.entries()) {
            if (index === options.holdBefore) await options.hold;
            for (const part of parts) controller.enqueue(part);
          }
          controller.enqueue({ type: "finish", usage, finishReason: { unified: "stop", raw: "stop" } });
          controller.close();
        },
      });
      return { stream };
    },
  };
}

function streamPartsOf(part: LanguageModelV4Content, index: number): LanguageModelV4StreamPart[] {
  const id = `p${index}`;
  if (part.type === "text") {
    const middle = Math.ceil(part.text.length / 2);
    return [
      { type: "text-start", id },
      { type: "text-delta", id, delta: part.text.slice(0, middle) },
      { type: "text-delta", id, delta: part.text.slice(middle) },
      { type: "text-end", id },
    ];
  }
  if (part.type === "reasoning") {
    return [
      { type: "reasoning-start", id },
      { type: "reasoning-delta", id, delta: part.text },
      { type: "reasoning-end", id },
    ];
  }
  return [part as LanguageModelV4StreamPart];
}

async function readAll(stream: ReadableStream<ChatChunk>): Promise<ChatChunk[]> {
  const chunks: ChatChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

async function messageOf(chunks: readonly ChatChunk[]): Promise<UIMessage> {
  const stream = new ReadableStream<ChatChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  let last: UIMessage | undefined;
  for await (const state of readUIMessageStream({ stream, terminateOnError: true })) last = state;
  return structuredClone(last!);
}

const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a]).toString("base64");

const citing: LanguageModelV4Content[] = [
  { type: "reasoning", text: "Two sources agree." },
  { type: "source", sourceType: "url", id: "s1", url: "https://example.com/kettles", title: "Kettles" },
  { type: "text", text: "Kettles boil water [1][2]." },
  { type: "source", sourceType: "document", id: "s2", mediaType: "application/pdf", title: "Manual", filename: "manual.pdf" },
  { type: "file", mediaType: "image/png", data: { type: "data", data: png } },
];

describe("sources, files and reasoning in the chat stream", () => {
  it.each([false, true])("each in the model's order, as the AI SDK's parts; resumed after any chunk, exactly the rest (stream: %s)", async (stream) => {
    const env = await openEnvironment();
    const run = env.agent({ id: "citer", model: contentModel(citing) }).start("What do kettles do?", { stream });
    const chunks = await readAll(await env.stream(run));
    const message = await messageOf(chunks);
    expect(message.parts.filter((part) => part.type !== "step-start")).toEqual([
      expect.objectContaining({ type: "reasoning", text: "Two sources agree.", state: "done" }),
      { type: "source-url", sourceId: "s1", url: "https://example.com/kettles", title: "Kettles" },
      expect.objectContaining({ type: "text", text: "Kettles boil water [1][2].", state: "done" }),
      { type: "source-document", sourceId: "s2", mediaType: "application/pdf", title: "Manual", filename: "manual.pdf" },
      { type: "file", mediaType: "image/png", url: `data:image/png;base64,${png}` },
    ]);
    const executionId = await run.executionId;
    const replay = await readAll(await env.stream(executionId));
    expect(await messageOf(replay), "a replay by id").toEqual(message);
    for (const [index, chunk] of replay.entries()) {
      if (chunk.type === "start" || chunk.type === "finish") continue;
      const rest = await readAll(await env.stream(executionId, { resumeAt: chunk.position }));
      expect(rest.slice(1).map((each) => each.position)).toEqual(replay.slice(index + 1).map((each) => each.position));
    }
  });

  it(`a generated file over ${generatedFileBytesMax} bytes keeps only its size in the step and is not streamed`, async () => {
    const env = await openEnvironment();
    const big = Buffer.alloc(generatedFileBytesMax + 1, 7).toString("base64");
    const model = contentModel([
      { type: "text", text: "Here is the image." },
      { type: "file", mediaType: "image/png", data: { type: "data", data: big } },
    ]);
    const run = env.agent({ id: "painter", model }).start("Paint a kettle");
    const message = await messageOf(await readAll(await env.stream(run)));
    expect(message.parts.map((part) => part.type)).toEqual(["step-start", "text"]);
    const steps = await env.timeline(await run.executionId);
    const response = steps.find((step) => step.kind === "model_response")!.payload as { files: unknown };
    expect(response.files).toEqual([{ mediaType: "image/png", bytes: generatedFileBytesMax + 1, omitted: true }]);
  });

  for (const [order, content] of [
    [
      "reasoning streamed after some text",
      [
        { type: "text", text: "It is 42, " },
        { type: "reasoning", text: "Checking the sum." },
        { type: "text", text: "surely." },
      ],
    ],
    [
      "reasoning streamed before the text",
      [
        { type: "reasoning", text: "Checking the sum." },
        { type: "text", text: "It is 42, surely." },
      ],
    ],
  ] as const) {
    it(`live and replayed streams agree: ${order}`, async () => {
      const env = await openEnvironment();
      const hold = deferred();
      const at = content.findIndex((part) => part.type === "reasoning");
      // Streaming reasoning first: the hold comes after the text, so the client holds live text either way.
      const holdBefore = at === 0 ? content.length : at;
      const model = contentModel(content as readonly LanguageModelV4Content[], { hold: hold.promise, holdBefore });
      const run = env.agent({ id: "thinker", model }).start("What is the answer?", { stream: true });
      const reader = (await env.stream(run)).getReader();
      const live: ChatChunk[] = [];
      for (;;) {
        const next = await reader.read();
        if (next.done) break;
        live.push(next.value);
        if (next.value.type === "text-delta" && live.filter((chunk) => chunk.type === "text-delta").length === 1) hold.resolve();
      }
      expect(
        live.some((chunk) => /\.t\d+$/.test(chunk.position)),
        "some text went out live",
      ).toBe(true);
      const replayed = await messageOf(await readAll(await env.stream(await run.executionId)));
      expect(await messageOf(live)).toEqual(replayed);
      const expectedOrder = at === 0 ? ["reasoning", "text"] : ["text", "reasoning"];
      expect(replayed.parts.filter((part) => part.type !== "step-start").map((part) => part.type)).toEqual(expectedOrder);
      expect(replayed.parts.find((part) => part.type === "text")).toMatchObject({ text: "It is 42, surely." });
    });
  }
});

describe("with the scripted model", () => {
  it("reasoning, text, reasoning after it, sources and a file, streamed: the live message is the replayed one", async () => {
    const env = await openEnvironment();
    const model = scriptedModel(() => ({
      reasoning: "The user asks about kettles.",
      text: "Kettles boil water, quickly and safely.",
      reasoningAfterText: "Cite the manual.",
      sources: [{ mediaType: "application/pdf", title: "Manual" }],
      files: [{ mediaType: "image/png", base64: png }],
    }));
    const run = env.agent({ id: "scripted", model }).start("Kettles?", { stream: true });
    const live = await messageOf(await readAll(await env.stream(run)));
    expect(live).toEqual(await messageOf(await readAll(await env.stream(await run.executionId))));
    expect(live.parts.filter((part) => part.type !== "step-start").map((part) => part.type)).toEqual([
      "reasoning",
      "text",
      "reasoning",
      "source-document",
      "file",
    ]);
  });
});

describe("token details", () => {
  it("cached and reasoning tokens are kept in the run's result, the row, and the stream's finish", async () => {
    const env = await openEnvironment();
    const run = env
      .agent({
        id: "thinker",
        model: contentModel([
          { type: "reasoning", text: "Hm." },
          { type: "text", text: "42." },
        ]),
      })
      .start("Sum?");
    const chunks = await readAll(await env.stream(run));
    const expected = { inputTokens: 120, outputTokens: 30, totalTokens: 150, cacheReadTokens: 100, reasoningTokens: 8 };
    expect((await run.result).usage).toEqual(expected);
    expect((await env.execution(await run.executionId))?.usage).toEqual(expected);
    expect(chunks.at(-1)).toMatchObject({ type: "finish", messageMetadata: { usage: expected } });
  });
});
