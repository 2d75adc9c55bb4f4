// `toolCallConcurrency` (docs/decisions/0071): how many tool calls of one
// step run at once; the rest start as calls settle, in the model's order.
// A run cancelled while calls are held back ends, and its conversation is
// free for the next start (the held-back calls never run). Through the
// public API with the scripted model; concurrency is counted, not timed.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { tool } from "../../host/index.js";
import { deferred, openEnvironment, scriptedModel, turnOf } from "./helpers.js";

/** Calls `work` four times on its first turn, then answers "done". */
function fourCallModel() {
  return scriptedModel(({ messages }) =>
    turnOf(messages) === 0 ? { toolCalls: ["a", "b", "c", "d"].map((name) => ({ toolName: "work", input: { name } })) } : { text: "done" },
  );
}

/** A tool that counts how many of its calls run at once. */
function countingTool(seen: { running: number; most: number; order: string[] }, gate?: Promise<void>) {
  return tool({
    inputSchema: z.object({ name: z.string() }),
    async execute({ name }, { signal }) {
      seen.running += 1;
      seen.most = Math.max(seen.most, seen.running);
      seen.order.push(name);
      try {
        // Let the other calls start if they may, before settling.
        await new Promise((resolve) => setImmediate(resolve));
        if (gate) {
          signal.throwIfAborted();
          await Promise.race([gate, new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason)))]);
        }
        return name;
      } finally {
        seen.running -= 1;
      }
    },
  });
}

describe("toolCallConcurrency", () => {
  it("bounds how many calls of a step run at once; 1 runs them in the model's order", async () => {
    for (const [limit, most] of [
      [1, 1],
      [2, 2],
      [undefined, 4],
    ] as const) {
      const env = await openEnvironment();
      const seen = { running: 0, most: 0, order: [] as string[] };
      const agent = env.agent({
        id: "a",
        model: fourCallModel(),
        tools: { work: countingTool(seen) },
        ...(limit !== undefined ? { toolCallConcurrency: limit } : {}),
      });
      expect(await agent.start("go").result).toMatchObject({ outcome: "completed", output: "done" });
      expect(seen.most).toBe(most);
      if (limit === 1) expect(seen.order).toEqual(["a", "b", "c", "d"]);
      expect([...seen.order].sort()).toEqual(["a", "b", "c", "d"]);
    }
  });

  it("a run cancelled while calls are held back ends; they never run, and the conversation takes the next start", async () => {
    const env = await openEnvironment();
    const seen = { running: 0, most: 0, order: [] as string[] };
    const gate = deferred();
    const started = deferred();
    const controller = new AbortController();
    const agent = env.agent({ id: "a", model: fourCallModel(), tools: { work: countingTool(seen, gate.promise) }, toolCallConcurrency: 1 });
    const run = agent.start("go", {
      signal: controller.signal,
      onEvent: (event) => {
        if (event.type === "tool_call_started") started.resolve();
      },
    });
    await started.promise;
    controller.abort();
    await expect(run.result).rejects.toMatchObject({ code: "CANCELLED" });
    expect(seen.order).toEqual(["a"]);
    gate.resolve();
    const next = agent.start("again");
    expect(await next.result).toMatchObject({ outcome: "completed", output: "done" });
    expect(seen.order).toEqual(["a", "a", "b", "c", "d"]);
  });

  it("must be an integer of 1 or more", async () => {
    const env = await openEnvironment();
    for (const bad of [0, 1.5, -1, "2"]) {
      expect(() => env.agent({ id: "a", model: fourCallModel(), toolCallConcurrency: bad as number })).toThrow(
        /"toolCallConcurrency" must be an integer of 1 or more/,
      );
    }
  });
});
