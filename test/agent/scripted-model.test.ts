// The scripted model that ships for demos and tests: list and function
// scripts, deterministic call ids and usage, streaming, exhaustion, script
// checks, latency and aborts, and the v3 flavour.

import type { LanguageModelV3, LanguageModelV4 } from "@ai-sdk/provider";
import { describe, expect, it } from "vitest";
import { InvalidInputError, ModelFailedError } from "../../host/errors.js";
import type { ConversationMessage } from "../../host/agent/messages.js";
import { assistantMessage, toolMessage } from "../../host/agent/messages.js";
import { callModel } from "../../host/agent/model.js";
import { scriptedModel, streamDeltasMax, textDeltas } from "../../host/agent/scripted-model.js";

function signal(): AbortSignal {
  return new AbortController().signal;
}

const question: ConversationMessage[] = [{ role: "user", content: "Where is order 42?" }];

describe("scriptedModel with a list of turns", () => {
  it("serves turns in order with deterministic call ids and usage", async () => {
    const model = scriptedModel([
      {
        text: "Looking.",
        toolCalls: [
          { toolName: "lookup", input: { orderId: 42 } },
          { toolName: "audit", input: {} },
        ],
      },
      { text: "It has shipped." },
    ]);
    const first = await callModel(model, { messages: question, tools: [], signal: signal() });
    expect(first.text).toBe("Looking.");
    expect(first.toolCalls).toEqual([
      { callId: "call-0-0", toolName: "lookup", input: { orderId: 42 } },
      { callId: "call-0-1", toolName: "audit", input: {} },
    ]);
    expect(first.finishReason).toBe("tool-calls");
    expect(first.usage.inputTokens).toBeGreaterThan(0);
    expect(first.usage.totalTokens).toBe(first.usage.inputTokens + first.usage.outputTokens);

    const messages = [
      ...question,
      assistantMessage(first),
      toolMessage(
        first.toolCalls.map((call) => ({
          callId: call.callId,
          toolName: call.toolName,
          output: "done",
          isError: false,
        })),
      ),
    ];
    const second = await callModel(model, { messages, tools: [], signal: signal() });
    expect(second).toMatchObject({ text: "It has shipped.", toolCalls: [], finishReason: "stop" });
    expect(model.turnsServed).toBe(2);

    const again = await callModel(
      scriptedModel([
        {
          text: "Looking.",
          toolCalls: [
            { toolName: "lookup", input: { orderId: 42 } },
            { toolName: "audit", input: {} },
          ],
        },
      ]),
      {
        messages: question,
        tools: [],
        signal: signal(),
      },
    );
    expect(again.usage).toEqual(first.usage);
  });

  it("fails clearly when the script runs out", async () => {
    const model = scriptedModel([{ text: "only one" }]);
    await callModel(model, { messages: question, tools: [], signal: signal() });
    const failure = await callModel(model, { messages: question, tools: [], signal: signal() }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ModelFailedError);
    expect((failure as ModelFailedError).code).toBe("MODEL_FAILED");
    expect((failure as ModelFailedError).message).toMatch(/ran out of turns: the script has 1 and turn 2 was requested/);
  });

  it("takes explicit call ids, usage and finish reasons", async () => {
    const model = scriptedModel([
      {
        toolCalls: [{ toolName: "lookup", input: { orderId: 1 }, callId: "mine" }],
        usage: { inputTokens: 100, outputTokens: 7 },
        finishReason: "length",
      },
    ]);
    const turn = await callModel(model, { messages: question, tools: [], signal: signal() });
    expect(turn).toEqual({
      text: "",
      toolCalls: [{ callId: "mine", toolName: "lookup", input: { orderId: 1 } }],
      usage: { inputTokens: 100, outputTokens: 7, totalTokens: 107 },
      finishReason: "length",
    });
  });

  it("fails a turn scripted as a provider error with MODEL_FAILED", async () => {
    const model = scriptedModel([{ error: "rate limited" }, { text: "recovered" }]);
    await expect(callModel(model, { messages: question, tools: [], signal: signal() })).rejects.toThrow(/failed: rate limited/);
    const turn = await callModel(model, { messages: question, tools: [], signal: signal() });
    expect(turn.text).toBe("recovered");
  });

  it("rejects malformed scripts and options with InvalidInputError naming the place", () => {
    expect(() => scriptedModel([{ text: "ok" }, { toolCalls: [{ toolName: "t", input: { when: new Date() } as never }] }])).toThrow(
      /script\[1\]\.toolCalls\[0\]\.input must be JSON/,
    );
    expect(() => scriptedModel([{ txt: "typo" } as never])).toThrow(/script\[0\] has an unknown key "txt"/);
    expect(() =>
      scriptedModel([
        {
          toolCalls: [
            { toolName: "a", input: 1, callId: "x" },
            { toolName: "b", input: 2, callId: "x" },
          ],
        },
      ]),
    ).toThrow(/repeats "x"/);
    expect(() => scriptedModel([{ usage: { inputTokens: -1 } }])).toThrow(/usage\.inputTokens must be a non-negative integer/);
    expect(() => scriptedModel([], { latency: 5 } as never)).toThrow(InvalidInputError);
    expect(() => scriptedModel([], { latencyMs: -1 })).toThrow(/latencyMs/);
  });
});

describe("scriptedModel's reasoning, sources, files and token details", () => {
  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47]).toString("base64");
  const turn = {
    reasoning: "The user wants a kettle.",
    text: "Here is one.",
    reasoningAfterText: "That should do.",
    sources: [
      { url: "https://example.com/k", title: "Kettles" },
      { mediaType: "application/pdf", title: "Manual", filename: "m.pdf" },
    ],
    files: [{ mediaType: "image/png", base64: png }],
    usage: { inputTokens: 50, outputTokens: 20, cacheReadTokens: 40, reasoningTokens: 6 },
  };

  for (const streamed of [false, true]) {
    it(`come back from a call in the order scripted (${streamed ? "streamed" : "whole"}), with the usage details`, async () => {
      const deltas: string[] = [];
      const answered = await callModel(scriptedModel([turn]), {
        messages: question,
        tools: [],
        signal: signal(),
        ...(streamed ? { onTextDelta: (delta: string) => deltas.push(delta) } : {}),
      });
      expect(answered).toMatchObject({
        text: "Here is one.",
        reasoning: [{ text: "The user wants a kettle." }, { text: "That should do." }],
        sources: [
          { sourceType: "url", id: "source-0-0", url: "https://example.com/k", title: "Kettles" },
          { sourceType: "document", id: "source-0-1", mediaType: "application/pdf", title: "Manual", filename: "m.pdf" },
        ],
        files: [{ mediaType: "image/png", data: png }],
        partOrder: ["reasoning", "text", "reasoning", "source", "source", "file"],
        usage: { inputTokens: 50, outputTokens: 20, totalTokens: 70, cacheReadTokens: 40, reasoningTokens: 6 },
      });
      if (streamed) expect(deltas.join("")).toBe("Here is one.");
    });
  }

  it("refuses a malformed source or file, naming it", () => {
    expect(() => scriptedModel([{ sources: [{ title: "no url" } as never] }])).toThrow(/script\[0\]\.sources\[0\] must be \{ url, title\? \}/);
    expect(() => scriptedModel([{ files: [{ mediaType: "image/png" } as never] }])).toThrow(/script\[0\]\.files\[0\] must be \{ mediaType, base64 \}/);
    expect(() => scriptedModel([{ reasoning: 42 as never }])).toThrow(/script\[0\]\.reasoning must be a string/);
  });
});

describe("scriptedModel with a function", () => {
  const script = ({ messages, turn }: { messages: ConversationMessage[]; turn: number }) => {
    const last = messages.at(-1);
    if (last?.role === "user") return { toolCalls: [{ toolName: "echo", input: { said: last.content } }] };
    if (last?.role === "tool") return { text: `echo said ${JSON.stringify(last.results[0]?.output)} at turn ${turn}` };
    return { text: "?" };
  };

  it("answers from the conversation, so one instance serves concurrent executions", async () => {
    const model = scriptedModel(script, { latencyMs: 5 });
    const runOne = async (said: string) => {
      const messages: ConversationMessage[] = [{ role: "user", content: said }];
      const first = await callModel(model, { messages, tools: [], signal: signal() });
      const call = first.toolCalls[0];
      if (call === undefined) throw new Error("expected a tool call");
      messages.push(assistantMessage(first), toolMessage([{ ...call, output: said.toUpperCase(), isError: false }]));
      return { first, final: await callModel(model, { messages, tools: [], signal: signal() }) };
    };
    const [a, b] = await Promise.all([runOne("hi"), runOne("bye")]);
    expect(a.first.toolCalls).toEqual([{ callId: "call-0-0", toolName: "echo", input: { said: "hi" } }]);
    expect(b.first.toolCalls).toEqual([{ callId: "call-0-0", toolName: "echo", input: { said: "bye" } }]);
    expect(a.final.text).toBe('echo said "HI" at turn 1');
    expect(b.final.text).toBe('echo said "BYE" at turn 1');
  });

  it("sees the system prompt and checks what the function returns", async () => {
    const seen: ConversationMessage[][] = [];
    const model = scriptedModel(({ messages }) => {
      seen.push(messages);
      return { text: 42 } as never;
    });
    const call = callModel(model, { system: "Be brief.", messages: question, tools: [], signal: signal() });
    await expect(call).rejects.toThrow(InvalidInputError);
    await expect(call).rejects.toThrow(/script\(\{ turn: 0 \}\)\.text must be a string/);
    expect(seen[0]).toEqual([{ role: "system", content: "Be brief." }, ...question]);
  });
});

describe("scriptedModel streaming", () => {
  it("streams text in a few deltas and assembles the same turn", async () => {
    const text = "Your order shipped yesterday and should arrive on Friday.";
    const model = scriptedModel(() => ({ text, toolCalls: [{ toolName: "track", input: { orderId: 42 } }] }));
    const deltas: string[] = [];
    const streamed = await callModel(model, { messages: question, tools: [], signal: signal(), onTextDelta: (delta) => deltas.push(delta) });
    const generated = await callModel(model, { messages: question, tools: [], signal: signal() });
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.length).toBeLessThanOrEqual(streamDeltasMax);
    expect(deltas.join("")).toBe(text);
    expect(streamed).toEqual(generated);
  });

  it("splits text into deltas that join back exactly", () => {
    for (const text of ["", "one", "  leading and trailing  ", "a b c d e f g h i j", "line\nbreaks\n\nkept"]) {
      const deltas = textDeltas(text);
      expect(deltas.join("")).toBe(text);
      expect(deltas.length).toBeLessThanOrEqual(streamDeltasMax);
    }
  });

  it("errors the stream with the abort reason", async () => {
    const controller = new AbortController();
    const model = scriptedModel([{ text: "one two three four five six" }]);
    const call = callModel(model, {
      messages: question,
      tools: [],
      signal: controller.signal,
      onTextDelta: () => controller.abort("stop streaming"),
    });
    await expect(call).rejects.toBe("stop streaming");
  });
});

describe("scriptedModel aborts and latency", () => {
  it("cuts the latency short with the signal's reason and keeps the turn", async () => {
    const model = scriptedModel([{ text: "first" }], { latencyMs: 30_000 });
    const controller = new AbortController();
    const reason = new Error("cancelled");
    const started = Date.now();
    const call = callModel(model, { messages: question, tools: [], signal: controller.signal });
    setTimeout(() => controller.abort(reason), 10);
    await expect(call).rejects.toBe(reason);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(model.turnsServed).toBe(0);
  });

  it("rejects doGenerate with the reason of an already aborted signal", async () => {
    const model = scriptedModel([{ text: "never" }]);
    const controller = new AbortController();
    controller.abort("early");
    await expect(model.doGenerate({ prompt: [], abortSignal: controller.signal })).rejects.toBe("early");
  });

  it("records the last call's options", async () => {
    const model = scriptedModel([{ text: "ok" }]);
    await callModel(model, { messages: question, tools: [], signal: signal() });
    expect(model.lastCallOptions?.prompt).toEqual([{ role: "user", content: [{ type: "text", text: "Where is order 42?" }] }]);
  });
});

describe("scriptedModel versions", () => {
  it("is a LanguageModelV4 by default and a LanguageModelV3 on request", async () => {
    const v4: LanguageModelV4 = scriptedModel([{ text: "four" }]);
    const v3: LanguageModelV3 = scriptedModel([{ text: "three" }], { specificationVersion: "v3" });
    expect(v4.specificationVersion).toBe("v4");
    expect(v3.specificationVersion).toBe("v3");
    const turn = await callModel(v3, { messages: question, tools: [], signal: signal() });
    expect(turn.text).toBe("three");
  });
});
