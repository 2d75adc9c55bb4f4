// `phronomy ls --search` through a real process (docs/decisions/0082): the
// words are found in inputs and outputs through `env.admin.page`, filters
// combine with them, and a limit past one page is refused as usage.

import { describe, expect, it } from "vitest";
import { cli, describeResult, exampleModule, jsonOf, temporaryStore } from "./helpers.js";

describe("phronomy ls --search", () => {
  it("lists the executions whose input or output has the words, newest first", async () => {
    const store = await temporaryStore();
    const order = jsonOf(await cli(["run", exampleModule, "Where is my order 7?", "--store", store, "--json"]));
    const refund = jsonOf(await cli(["run", exampleModule, "Please refund order 42", "--store", store, "--json"]));
    const ids = async (...args: string[]) => {
      const result = await cli(["ls", "--store", store, "--json", ...args]);
      expect(result.code, describeResult(result)).toBe(0);
      return jsonOf(result).executions.map((row: { executionId: string }) => row.executionId);
    };
    expect(await ids("--search", "order")).toEqual([refund.executionId, order.executionId]);
    expect(await ids("--search", "REFUND ord")).toEqual([refund.executionId]);
    expect(await ids("--search", "order", "--status", "suspended")).toEqual([refund.executionId]);
    expect(await ids("--search", "nothing-like-this")).toEqual([]);
    const table = await cli(["ls", "--store", store, "--search", "kettle"]);
    expect(table.stdout).toBe(`no executions (matching "kettle") in the store at ${store}\n`);
    const tooMany = await cli(["ls", "--store", store, "--search", "order", "--limit", "500"]);
    expect(tooMany.code).not.toBe(0);
    expect(tooMany.stderr).toContain("--limit must be at most 200 with --search");
  }, 60_000);
});
