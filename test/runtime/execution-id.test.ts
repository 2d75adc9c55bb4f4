// The ids the runtime makes for executions the application did not name
// (docs/decisions/0050): version 7 UUIDs, ordered by their creation time,
// each unique.

import { describe, expect, it } from "vitest";
import { newExecutionId } from "../../host/runtime/execution-id.js";
import { openEnvironment, scriptedModel } from "./helpers.js";

const version7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("newExecutionId", () => {
  it("is a version 7 UUID whose first 48 bits are the time it was made", () => {
    const now = Date.UTC(2026, 11, 2, 4, 30, 0, 123);
    const id = newExecutionId(now);
    expect(id).toMatch(version7);
    expect(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toBe(now);
  });

  it("sorts ids made at later milliseconds after earlier ones, and never repeats", () => {
    const ids = Array.from({ length: 1_000 }, (_, index) => newExecutionId(1_700_000_000_000 + index));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(Array.from({ length: 10_000 }, () => newExecutionId())).size).toBe(10_000);
  });

  it("names the executions a conversation starts, in the order they start", async () => {
    const env = await openEnvironment();
    try {
      const agent = env.agent({ name: "echo", model: scriptedModel(() => ({ text: "hi" })) });
      const ids: string[] = [];
      for (let index = 0; index < 3; index += 1) {
        const run = agent.conversation(`c${index}`).start("hello");
        ids.push(await run.executionId);
        await run.result;
        await new Promise((resolve) => setTimeout(resolve, 2)); // a later millisecond
      }
      for (const id of ids) expect(id).toMatch(version7);
      expect([...ids].sort()).toEqual(ids);
    } finally {
      await env.close();
    }
  });
});
