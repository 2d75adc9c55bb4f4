// The conversation format: JSON-safe by type and checked when read back.

import { describe, expect, expectTypeOf, it } from "vitest";
import type { Json } from "../../host/store/records.js";
import { addUsage, usageSummary } from "../../host/words.js";
import { assistantMessage, isConversationMessage, isJson, toolMessage, type ConversationMessage, type ModelTurn } from "../../host/agent/messages.js";

describe("conversation messages", () => {
  it("are assignable to Json, turns included, so they persist as they are", () => {
    expectTypeOf<ConversationMessage>().toExtend<Json>();
    expectTypeOf<ModelTurn>().toExtend<Json>();
  });

  it("are recognised when well formed and refused otherwise", () => {
    const turn: ModelTurn = {
      text: "Looking.",
      toolCalls: [{ callId: "c1", toolName: "lookup", input: { orderId: 42 } }],
      usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
      finishReason: "tool-calls",
    };
    const good: unknown[] = [
      { role: "system", content: "Be brief." },
      { role: "user", content: "hi" },
      assistantMessage(turn),
      toolMessage([{ callId: "c1", toolName: "lookup", output: null, isError: false }]),
    ];
    for (const message of good) expect(isConversationMessage(message)).toBe(true);
    expect(JSON.parse(JSON.stringify(good))).toEqual(good);
    expect(assistantMessage(turn)).toEqual({ role: "assistant", text: "Looking.", toolCalls: turn.toolCalls });

    const bad: unknown[] = [
      null,
      { role: "user" },
      { role: "robot", content: "x" },
      { role: "assistant", text: "x" },
      { role: "assistant", text: "x", toolCalls: [{ callId: "c", toolName: "t", input: undefined }] },
      { role: "tool", results: [{ callId: "c", toolName: "t", output: 1 }] },
    ];
    for (const message of bad) expect(isConversationMessage(message)).toBe(false);
  });

  it("checks JSON values deeply and refuses what JSON cannot carry", () => {
    expect(isJson({ a: [1, "two", null, { b: true }] })).toBe(true);
    for (const value of [undefined, Number.NaN, Number.POSITIVE_INFINITY, new Date(), new Map(), () => 1, 1n, [undefined]]) {
      expect(isJson(value)).toBe(false);
    }
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(isJson(cyclic)).toBe(false);
  });
});

describe("usage totals", () => {
  it("sum every count, keep each detail either side reported, and read as the CLI prints them", () => {
    const first = { inputTokens: 100, outputTokens: 20, totalTokens: 120, cacheReadTokens: 80, reasoningTokens: 5 };
    const second = { inputTokens: 50, outputTokens: 10, totalTokens: 60, cacheWriteTokens: 40 };
    const sum = addUsage(first, second);
    expect(sum).toEqual({ inputTokens: 150, outputTokens: 30, totalTokens: 180, cacheReadTokens: 80, cacheWriteTokens: 40, reasoningTokens: 5 });
    expect(
      addUsage({ inputTokens: 1, outputTokens: 1, totalTokens: 2 }, { inputTokens: 1, outputTokens: 1, totalTokens: 2 }),
      "no detail: none invented",
    ).toEqual({
      inputTokens: 2,
      outputTokens: 2,
      totalTokens: 4,
    });
    expect(usageSummary(sum)).toBe("150 in · 30 out (5 reasoning) · 180 tokens · 80 cache read · 40 cache write");
    expect(usageSummary({ inputTokens: 3, outputTokens: 4, totalTokens: 7 }, "total")).toBe("3 in · 4 out · 7 total");
  });
});
