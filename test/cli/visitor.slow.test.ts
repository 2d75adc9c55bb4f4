// The CLI as a visitor (docs/decisions/0015): while an application owns a
// SQLite store — here this test process, with the example agent defined —
// `ls` and `show` read it and `approve` files the decision, which the owner
// applies (its tool runs there) and whose outcome the CLI prints; `run`
// still needs ownership and says who owns the store.

import { describe, expect, it } from "vitest";
import { Phronomy } from "../../host/index.js";
import { loadAgentModule } from "../../host/cli/agent-module.js";
import { cli, describeResult, errorLines, exampleModule, jsonOf, temporaryStore } from "./helpers.js";

describe("phronomy beside a live owner", () => {
  it("ls and show read, approve is applied by the owner and prints the outcome, run is refused", async () => {
    const store = await temporaryStore();
    const suspended = jsonOf(await cli(["run", exampleModule, "Please refund order 42", "--store", store, "--json"]));
    expect(suspended.outcome).toBe("suspended");
    const owner = await Phronomy.open({ store });
    try {
      const { definition } = await loadAgentModule(exampleModule, { model: undefined, storePath: store });
      owner.agent(definition);
      await owner.recovery(definition.id);

      const listed = await cli(["ls", "--store", store, "--json"]);
      expect(listed.code, describeResult(listed)).toBe(0);
      expect(jsonOf(listed).executions.map((row: { executionId: string }) => row.executionId)).toEqual([suspended.executionId]);
      const shown = await cli(["show", suspended.executionId, "--store", store]);
      expect(shown.code, describeResult(shown)).toBe(0);
      expect(shown.stdout).toContain("waiting for approval");

      const approved = await cli(["approve", suspended.executionId, "--store", store, "--reason", "looks right"]);
      expect(approved.code, describeResult(approved)).toBe(0);
      expect(approved.stderr).toContain(`the store is owned by process ${process.pid}`);
      expect(approved.stdout).toMatch(/refund/i);
      const row = await owner.execution(suspended.executionId);
      expect(row).toMatchObject({ status: "terminal", outcome: "completed" });

      const again = await cli(["approve", suspended.executionId, "--store", store]);
      expect(again.code).toBe(1);
      expect(errorLines(again)).toEqual([expect.stringContaining("[NOT_WAITING_FOR_APPROVAL]")]);

      const run = await cli(["run", exampleModule, "Where is my order 7?", "--store", store]);
      expect(run.code).toBe(1);
      expect(errorLines(run)).toEqual([expect.stringContaining(`[STORE] the store at ${store} is owned by process ${process.pid} on `)]);
      expect(errorLines(run)[0]).toContain("`run`, `recover`, `prune` and `demo` need to own the store");
    } finally {
      await owner.close();
    }
  });
});
