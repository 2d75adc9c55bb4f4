// `phronomy cancel` and `phronomy retry` (docs/decisions/0026): the CLI
// cancels an execution nothing runs (its process ended) as the store's
// owner, and as a visitor beside a live owner, which applies the cancel;
// `retry` continues a cancelled execution as attempt 2 with the agent's
// module; ended and completed executions are refused with typed errors.

import { describe, expect, it } from "vitest";
import { Phronomy } from "../../host/index.js";
import { loadAgentModule } from "../../host/cli/agent-module.js";
import { cli, describeResult, errorLines, exampleModule, jsonOf, temporaryStore } from "./helpers.js";

describe("phronomy cancel and retry", () => {
  it("cancels a suspended execution as the owner, refuses a second cancel, and retries it into the same approval, which then completes", async () => {
    const store = await temporaryStore();
    const suspended = jsonOf(await cli(["run", exampleModule, "Please refund order 42", "--store", store, "--json"]));
    expect(suspended.outcome).toBe("suspended");
    const executionId: string = suspended.executionId;

    const cancelled = await cli(["cancel", executionId.slice(0, 8), "--reason", "asked twice", "--store", store, "--json"]);
    expect(cancelled.code, describeResult(cancelled)).toBe(0);
    expect(jsonOf(cancelled)).toMatchObject({
      executionId,
      outcome: "cancelled",
      error: { code: "CANCELLED", message: expect.stringContaining("asked twice") },
    });

    const again = await cli(["cancel", executionId, "--store", store]);
    expect(again.code).toBe(1);
    expect(errorLines(again)).toEqual([expect.stringContaining("[EXECUTION_ENDED]")]);
    expect(errorLines(again)[0]).toContain("outcome cancelled");

    const retried = await cli(["retry", executionId, "--agent-module", exampleModule, "--store", store]);
    expect(retried.code, describeResult(retried)).toBe(3);
    expect(retried.stdout + retried.stderr).toContain("attempt 2");

    const approved = await cli(["approve", executionId, "--agent-module", exampleModule, "--store", store, "--json"]);
    expect(approved.code, describeResult(approved)).toBe(0);
    expect(jsonOf(approved)).toMatchObject({ executionId, outcome: "completed" });

    const completed = await cli(["retry", executionId, "--agent-module", exampleModule, "--store", store]);
    expect(completed.code).toBe(1);
    expect(errorLines(completed)).toEqual([expect.stringContaining("[RETRY_REFUSED]")]);
    const shown = await cli(["show", executionId, "--store", store]);
    expect(shown.code, describeResult(shown)).toBe(0);
    expect(shown.stdout).toContain("retried");
  });

  it("beside a live owner, cancel and retry are filed for the owner, which applies them; the command prints the outcome", async () => {
    const store = await temporaryStore();
    const suspended = jsonOf(await cli(["run", exampleModule, "Please refund order 42", "--store", store, "--json"]));
    const owner = await Phronomy.open({ store });
    try {
      const { definition } = await loadAgentModule(exampleModule, { model: undefined, storePath: store });
      owner.agent(definition);
      await owner.recovery(definition.id);
      const cancelled = await cli(["cancel", suspended.executionId, "--store", store, "--reason", "from the CLI"]);
      expect(cancelled.code, describeResult(cancelled)).toBe(0);
      expect(cancelled.stdout).toContain(`cancelled execution ${suspended.executionId}`);
      expect(await owner.execution(suspended.executionId)).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "CANCELLED" } });
      // No agent module: the owner runs the new attempt with its own agent.
      const retried = await cli(["retry", suspended.executionId, "--store", store]);
      expect(retried.code, describeResult(retried)).toBe(3);
      expect(retried.stdout).toContain("the store's owner runs it");
      expect(retried.stderr).toContain("is waiting for approval");
      expect(await owner.execution(suspended.executionId)).toMatchObject({ status: "suspended", metadata: { attempt: 2 } });
    } finally {
      await owner.close();
    }
  });
});
