// `phronomy run` through real processes: a completed run (human and
// `--json`), a run that waits for approval (exit 3) and is then approved
// and rejected from other processes, a failing model (the typed error's
// code, exit 1), input from stdin, and Ctrl-C while a tool runs: the
// terminal `cancelled` is recorded, the exit code is 130, and the store is
// intact and usable.

import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { Phronomy } from "../../host/index.js";
import { cli, describeResult, errorLines, exampleModule, fixture, jsonOf, startCli, temporaryStore } from "./helpers.js";

describe.concurrent("phronomy run", () => {
  it("runs the example agent and prints its answer on stdout, progress on stderr; exit 0", async () => {
    const store = await temporaryStore();
    const result = await cli(["run", exampleModule, "Where is my order 7?", "--store", store]);
    expect(result.code, describeResult(result)).toBe(0);
    expect(result.stdout).toBe("Your teapot (order 7) is delivered with DHL.\n");
    expect(result.stderr).toMatch(/execution [0-9a-f-]{36} of agent "support" admitted/);
    expect(result.stderr).toMatch(/model call · turn 1/);
    expect(result.stderr).toMatch(/tool lookupOrder started · idempotency key [0-9a-f-]{36}:call-0-0/);
    expect(result.stderr).toMatch(/✔ completed in \d+\.\d+s · execution [0-9a-f-]{36} · 2 model calls · 1 tool call · \d+ tokens/);
  });

  it("--json prints one result document; `-` reads the input from stdin", async () => {
    const store = await temporaryStore();
    const result = await cli(["run", exampleModule, "-", "--store", store, "--json"], { input: "Where is my order 42?\n" });
    expect(result.code, describeResult(result)).toBe(0);
    const output = jsonOf(result);
    expect(output).toEqual({
      executionId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      agentId: "support",
      outcome: "completed",
      output: "Your blue kettle (order 42) is out for delivery with PostNL.",
      usage: { inputTokens: expect.any(Number), outputTokens: expect.any(Number), totalTokens: expect.any(Number) },
      modelCalls: 2,
      toolCalls: 1,
      elapsedMs: expect.any(Number),
    });
    const empty = await cli(["run", exampleModule, "-", "--store", store], { input: "  \n" });
    expect(empty.code).toBe(2);
    expect(errorLines(empty)).toEqual(["phronomy: [USAGE] the input is empty: give the agent something to do"]);
  });

  it("a run that needs approval exits 3 and says how to decide; approve and reject finish runs from new processes", async () => {
    const store = await temporaryStore();
    const suspended = await cli(["run", exampleModule, "Please refund order 42", "--store", store, "--json"]);
    expect(suspended.code, describeResult(suspended)).toBe(3);
    const pending = jsonOf(suspended);
    expect(pending).toMatchObject({
      outcome: "suspended",
      agentId: "support",
      approval: {
        approvalId: expect.any(String),
        argumentsHash: expect.any(String),
        toolCalls: [{ toolName: "issueRefund", input: { orderId: "42", amountCents: 3990 } }],
      },
    });
    expect(suspended.stderr).toContain(`phronomy approve ${pending.executionId} --agent-module`);

    // The agent runs one execution at a time: a new run is refused until the approval is decided.
    const busy = await cli(["run", exampleModule, "Where is my order 7?", "--store", store]);
    expect(busy.code, describeResult(busy)).toBe(1);
    expect(errorLines(busy)).toEqual([expect.stringContaining(`[AGENT_BUSY] agent "support" has execution ${pending.executionId} waiting for approval`)]);

    const approved = await cli(["approve", pending.executionId, "--agent-module", exampleModule, "--store", store, "--reason", "fine", "--json"]);
    expect(approved.code, describeResult(approved)).toBe(0);
    expect(jsonOf(approved)).toMatchObject({ executionId: pending.executionId, outcome: "completed", output: "Order 42 is refunded." });
    expect(approved.stderr).toMatch(/approving execution .* issueRefund\(\{"orderId":"42","amountCents":3990\}\)/s);

    const again = await cli(["approve", pending.executionId, "--agent-module", exampleModule, "--store", store]);
    expect(again.code).toBe(1);
    expect(errorLines(again)).toEqual([
      expect.stringMatching(/\[NOT_WAITING_FOR_APPROVAL\] execution .* is not waiting for approval: it is completed \(its last approval was approved at /),
    ]);

    const second = jsonOf(await cli(["run", exampleModule, "Refund order 7 please", "--store", store, "--json"]));
    expect(second.outcome).toBe("suspended");
    const rejected = await cli(["reject", second.executionId.slice(0, 8), "--agent-module", exampleModule, "--store", store, "--reason", "not eligible"]);
    expect(rejected.code, describeResult(rejected)).toBe(0);
    expect(rejected.stdout).toBe("The refund of order 7 was not approved.\n");
    const shown = jsonOf(await cli(["show", second.executionId, "--store", store, "--json"]));
    expect(shown.timeline.find((step: { kind: string }) => step.kind === "approval_decided")).toMatchObject({
      payload: { approved: false, reason: "not eligible" },
    });
  });

  it("a failing model ends the run with the typed error's code and message; exit 1", async () => {
    const store = await temporaryStore();
    const result = await cli(["run", fixture("failing-agent.ts"), "hello", "--store", store]);
    expect(result.code, describeResult(result)).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/✖ failed: \[MODEL_FAILED\] execution [0-9a-f-]{36}: model "phronomy.scripted\/scripted" failed: the provider is on fire/);
  });

  it("Ctrl-C while a tool runs cancels the execution: terminal cancelled recorded, exit 130, the store intact", async () => {
    const store = await temporaryStore();
    const running = startCli(["run", fixture("slow-agent.ts"), "take your time", "--store", store, "--json"]);
    await running.stderrMatching(/tool slowTool started/);
    running.child.kill("SIGINT");
    const result = await running.done;
    expect(result.code, describeResult(result)).toBe(130);
    expect(result.stderr).toContain("Ctrl-C: cancelling the execution");
    const output = jsonOf(result);
    expect(output).toMatchObject({ agentId: "slow", outcome: "failed", error: { code: "CANCELLED" }, toolCalls: 1 });

    const database = new Database(store, { readonly: true });
    try {
      expect(database.pragma("integrity_check", { simple: true })).toBe("ok");
    } finally {
      database.close();
    }
    // The lock was released: this process can own the store, and sees the terminal.
    const environment = await Phronomy.open({ store });
    try {
      expect(await environment.execution(output.executionId)).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "CANCELLED" } });
      const kinds = (await environment.timeline(output.executionId)).map((step) => step.kind);
      expect(kinds).toEqual(["input", "provider_barrier", "model_response", "tool_barrier", "terminal"]);
      expect(await environment.store.unfinishedExecutions()).toEqual([]);
    } finally {
      await environment.close();
    }
  });
});
