// `phronomy ls --search` through a real process (docs/decisions/0082): the
// words are found in inputs and outputs through `env.admin.page`, filters
// combine with them, and a limit past one page is refused as usage.

import { describe, expect, it } from "vitest";
import { Phronomy } from "../../host/index.js";
import { scriptedModel } from "../../host/testing.js";
import { recordingLogger } from "../runtime/helpers.js";
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

describe("phronomy ls --definition", () => {
  it("lists the executions of one named agent's conversations, with the other filters", async () => {
    const store = await temporaryStore();
    const environment = await Phronomy.open({ store, logger: recordingLogger() });
    const started: Record<string, string[]> = { support: [], billing: [] };
    try {
      const model = scriptedModel(() => ({ text: "ok" }));
      const support = environment.agent({ name: "support", model });
      const billing = environment.agent({ name: "billing", model });
      for (const [name, agent] of [
        ["support", support],
        ["billing", billing],
        ["support", support],
      ] as const) {
        const run = agent.conversation(`${name}-${started[name]?.length ?? 0}`).start(`a question for ${name}`);
        await run.result;
        started[name]?.push(await run.executionId);
      }
    } finally {
      await environment.close();
    }
    const ids = async (...args: string[]) => {
      const result = await cli(["ls", "--store", store, "--json", ...args]);
      expect(result.code, describeResult(result)).toBe(0);
      return jsonOf(result).executions.map((row: { executionId: string }) => row.executionId);
    };
    expect(await ids("--definition", "support")).toEqual([...(started["support"] ?? [])].reverse());
    expect(await ids("--definition", "billing")).toEqual(started["billing"]);
    expect(await ids("--definition", "support", "--limit", "1")).toEqual([started["support"]?.[1]]);
    expect(await ids("--definition", "support", "--agent", "support-0")).toEqual([started["support"]?.[0]]);
    expect(await ids("--definition", "support", "--status", "failed")).toEqual([]);
    expect(await ids("--definition", "support", "--search", "billing")).toEqual([]);
    const table = await cli(["ls", "--store", store, "--definition", "nobody"]);
    expect(table.stdout).toBe(`no executions (definition "nobody") in the store at ${store}\n`);
  }, 60_000);
});
