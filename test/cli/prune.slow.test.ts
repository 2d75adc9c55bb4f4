// `phronomy prune` through real processes: it deletes the finished
// executions asked for (all, by age, by agent) through env.prune(), says
// what it removed as text and as JSON, leaves a suspended execution alone,
// and refuses a bad duration as a usage error.

import { describe, expect, it } from "vitest";
import { cli, describeResult, errorLines, exampleModule, fixture, jsonOf, temporaryStore } from "./helpers.js";

describe("phronomy prune", () => {
  it("prunes by age and by agent, reports the counts, and never touches a suspended execution", async () => {
    const store = await temporaryStore();
    const completed = jsonOf(await cli(["run", exampleModule, "Where is my order 7?", "--store", store, "--json"]));
    const failed = jsonOf(await cli(["run", fixture("failing-agent.ts"), "hi", "--store", store, "--json"]));
    const suspended = jsonOf(await cli(["run", exampleModule, "Please refund order 42", "--store", store, "--json"]));
    const ids = async () =>
      jsonOf(await cli(["ls", "--store", store, "--json"]))
        .executions.map((row: { executionId: string }) => row.executionId)
        .sort();

    // The default retention (7 days): nothing is that old.
    const nothing = await cli(["prune", "--store", store]);
    expect(nothing.code, describeResult(nothing)).toBe(0);
    expect(nothing.stdout).toBe(
      `pruned 0 executions past the default retention (7 days) from ${store}: 0 steps, 0 journal records past the kept memory, 0 approval inbox rows\n`,
    );
    expect(await cli(["prune", "--older-than", "1h", "--store", store])).toMatchObject({ code: 0 });
    expect(await ids()).toEqual([completed.executionId, failed.executionId, suspended.executionId].sort());

    const one = jsonOf(await cli(["prune", "--older-than", "0", "--agent", "failing", "--store", store, "--json"]));
    expect(one).toMatchObject({ store, olderThanMs: 0, agentId: "failing", pruned: { executions: 1, journal: 0, approvals: 0 } });
    expect(one.pruned.steps).toBeGreaterThan(0);
    expect(await ids()).toEqual([completed.executionId, suspended.executionId].sort());

    const rest = await cli(["prune", "--older-than", "0ms", "--store", store]);
    expect(rest.code, describeResult(rest)).toBe(0);
    expect(rest.stdout).toMatch(
      /^pruned 1 execution finished more than 0ms ago from .*: \d+ steps, 0 journal records past the kept memory, 0 approval inbox rows\n$/,
    );
    expect(await ids()).toEqual([suspended.executionId]);
    const shown = await cli(["show", completed.executionId, "--store", store]);
    expect(shown.code).not.toBe(0);
  });

  it("refuses a duration it cannot read, and a store that does not exist", async () => {
    const store = await temporaryStore();
    const bad = await cli(["prune", "--older-than", "7 days", "--store", store]);
    expect(bad.code).toBe(2);
    expect(errorLines(bad)).toEqual(['phronomy: [USAGE] --older-than must be a duration such as 7d, 12h, 30m, 45s or 500ms, got "7 days"']);
    const missing = await cli(["prune", "--store", store]);
    expect(missing.code).toBe(1);
    expect(errorLines(missing)[0]).toMatch(/STORE_NOT_FOUND/);
  });
});
