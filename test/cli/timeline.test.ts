// How `phronomy show` reads a timeline (no processes here): each step's
// one-line summary, and the recovery marks it derives from the steps — a
// tool barrier repeating call ids with no results between them, a model
// barrier after a model barrier with no response between them.

import { describe, expect, it } from "vitest";
import type { StoredStep } from "../../host/index.js";
import { describeTimeline, renderTimeline } from "../../host/cli/timeline.js";

const call = { callId: "call-0-0", toolName: "refund", input: { orderId: "42" }, idempotencyKey: "e1:call-0-0" };

function steps(...kinds: [StoredStep["kind"], StoredStep["payload"]][]): StoredStep[] {
  return kinds.map(([kind, payload], index) => ({ seq: index + 1, kind, at: 1_000 + index * 250, payload }));
}

describe("the timeline as show prints it", () => {
  it("summarizes every kind of step, with offsets from the first", () => {
    const entries = describeTimeline(
      steps(
        ["input", "Refund order 42"],
        ["provider_barrier", { callId: "m1", revision: 2 }],
        [
          "model_response",
          { callId: "m1", text: "", toolCalls: [call], sources: [{ sourceType: "url", id: "s", url: "u" }], usage: { totalTokens: 30, reasoningTokens: 4 } },
        ],
        ["approval_requested", { revision: 3, approvalRequest: { approvalId: "a1", toolCalls: [call] } }],
        ["approval_decided", { approvalId: "a1", approved: false, reason: "no", revision: 4 }],
        ["tool_results", { results: [{ callId: "call-0-0", toolName: "refund", output: { declined: true, reason: "no" }, isError: true }], declined: true }],
        ["terminal", { outcome: "completed", revision: 5 }],
      ),
    );
    expect(entries.map((entry) => entry.summary)).toEqual([
      '"Refund order 42"',
      "model call m1 · revision 2",
      'asks for refund({"orderId":"42"}) · 1 source · 30 tokens · 4 reasoning',
      'refund({"orderId":"42"}) · approval id a1 · revision 3',
      'declined · reason "no" · revision 4',
      "refund declined (no)",
      "completed · revision 5",
    ]);
    expect(entries.map((entry) => entry.offsetMs)).toEqual([0, 250, 500, 750, 1000, 1250, 1500]);
    expect(entries.some((entry) => entry.recovery !== undefined)).toBe(false);
    expect(renderTimeline(entries)).toHaveLength(7);
  });

  it("marks a re-dispatched tool batch and a repeated model call as recovery", () => {
    const entries = describeTimeline(
      steps(
        ["input", "hi"],
        ["provider_barrier", { callId: "m1", revision: 2 }],
        ["provider_barrier", { callId: "m2", revision: 3 }],
        ["model_response", { callId: "m2", text: "", toolCalls: [call] }],
        ["tool_barrier", { calls: [call], revision: 4 }],
        ["tool_barrier", { calls: [call], revision: 5 }],
        ["tool_results", { results: [{ callId: "call-0-0", toolName: "refund", output: { ok: true }, isError: false }] }],
        ["tool_barrier", { calls: [{ ...call, callId: "call-1-0" }], revision: 6 }],
      ),
    );
    expect(entries.map((entry) => (entry.recovery === undefined ? "-" : entry.kind))).toEqual([
      "-",
      "-",
      "provider_barrier",
      "-",
      "-",
      "tool_barrier",
      "-",
      "-",
    ]);
    expect(entries[4]!.summary).toBe("refund call-0-0 key e1:call-0-0 · revision 4");
    const lines = renderTimeline(entries);
    expect(lines.filter((line) => line.includes("↻ recovery"))).toHaveLength(2);
  });
});
