// `ls`, `show` and `recover` through real processes, and what every
// command does with bad input: bad arguments, a missing, foreign,
// unsupported or owned store, an unknown execution id, a broken agent
// module — one line, a stable code, a non-zero exit, a stack trace only
// with --debug.

import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Phronomy } from "../../host/index.js";
import { cli, describeResult, errorLines, exampleModule, fixture, jsonOf, repositoryRoot, startCli, temporaryDirectory, temporaryStore } from "./helpers.js";

describe.concurrent("phronomy ls and show", () => {
  it("ls lists executions as a table and as JSON, filtered by status, outcome and agent; show prints the timeline", async () => {
    const store = await temporaryStore();
    const completed = jsonOf(await cli(["run", exampleModule, "Where is my order 7?", "--store", store, "--json"]));
    const failed = jsonOf(await cli(["run", fixture("failing-agent.ts"), "hi", "--store", store, "--json"]));
    const suspended = jsonOf(await cli(["run", exampleModule, "Please refund order 42", "--store", store, "--json"]));

    const table = await cli(["ls", "--store", store]);
    expect(table.code, describeResult(table)).toBe(0);
    expect(table.stdout).toMatch(/execution\s+│ agent\s+│ state/);
    expect(table.stdout).toContain(`${completed.executionId} │ support`);
    expect(table.stdout).toMatch(new RegExp(`${failed.executionId} │ failing\\s+│ failed \\[MODEL_FAILED\\]`));
    expect(table.stdout).toMatch(new RegExp(`${suspended.executionId} │ support\\s+│ waiting for approval`));
    expect(table.stdout).toContain("3 executions\n");

    const all = jsonOf(await cli(["ls", "--store", store, "--json"]));
    expect(all.store).toBe(store);
    expect(all.executions.map((row: { executionId: string }) => row.executionId)).toEqual([suspended.executionId, failed.executionId, completed.executionId]);
    expect(Object.keys(all.executions[0]).sort()).toEqual([
      "agentId",
      "approvalRequest",
      "createdAt",
      "error",
      "executionId",
      "input",
      "outcome",
      "output",
      "phase",
      "revision",
      "status",
      "updatedAt",
      "usage",
    ]);
    const ids = async (...args: string[]) =>
      jsonOf(await cli(["ls", "--store", store, "--json", ...args])).executions.map((row: { executionId: string }) => row.executionId);
    expect(await ids("--status", "failed")).toEqual([failed.executionId]);
    expect(await ids("--agent", "support", "--status", "terminal")).toEqual([completed.executionId]);
    const none = await cli(["ls", "--store", store, "--agent", "nobody"]);
    expect(none.stdout).toBe(`no executions (agent "nobody") in the store at ${store}\n`);

    const shown = await cli(["show", completed.executionId, "--store", store]);
    expect(shown.code, describeResult(shown)).toBe(0);
    expect(shown.stdout).toMatch(/state\s+completed · status terminal/);
    expect(shown.stdout).toContain("timeline (8 steps)");
    for (const label of ["input", "model barrier", "model response", "tool barrier", "tool results", "terminal"]) expect(shown.stdout).toContain(label);
    expect(shown.stdout).toContain(`lookupOrder call-0-0 key ${completed.executionId}:call-0-0`);

    const document = jsonOf(await cli(["show", suspended.executionId.slice(0, 6), "--store", store, "--json"]));
    expect(document.execution).toMatchObject({
      executionId: suspended.executionId,
      status: "suspended",
      approvalRequest: { toolCalls: [{ toolName: "issueRefund" }] },
    });
    expect(document.timeline.map((step: { kind: string }) => step.kind)).toEqual([
      "input",
      "provider_barrier",
      "model_response",
      "tool_barrier",
      "tool_results",
      "provider_barrier",
      "model_response",
      "approval_requested",
    ]);
    expect(document.timeline[3]).toMatchObject({
      seq: 4,
      kind: "tool_barrier",
      at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      offsetMs: expect.any(Number),
      summary: expect.stringContaining("idempotency".slice(0, 0)),
    });
    expect(document.timeline[3].payload.calls[0]).toMatchObject({ toolName: "lookupOrder", idempotencyKey: `${suspended.executionId}:call-1-0` });
  });
});

describe.concurrent("phronomy recover", () => {
  it("a run killed mid-tool is left unfinished; recover without its module says so (exit 1), with it finishes the run (exit 0)", async () => {
    const store = await temporaryStore();
    const killed = startCli(["run", fixture("slow-agent.ts"), "take your time", "--store", store]);
    const admitted = await killed.stderrMatching(/tool slowTool started/);
    const executionId = /execution ([0-9a-f-]{36}) of agent/.exec(admitted)![1]!;
    killed.child.kill("SIGKILL");
    expect((await killed.done).signal).toBe("SIGKILL");

    const listed = jsonOf(await cli(["ls", "--store", store, "--status", "active", "--json"]));
    expect(listed.executions).toEqual([expect.objectContaining({ executionId, status: "active", phase: "dispatching_tools" })]);
    const shown = await cli(["show", executionId, "--store", store]);
    expect(shown.stdout).toMatch(/state\s+unfinished \(dispatching_tools\)/);
    expect(shown.stdout).toContain("phronomy recover");

    const withoutModule = await cli(["recover", "--store", store, "--json"]);
    expect(withoutModule.code, describeResult(withoutModule)).toBe(1);
    expect(jsonOf(withoutModule)).toEqual({
      store,
      executions: [expect.objectContaining({ executionId, agentId: "slow", phase: "dispatching_tools", status: "waiting_for_agent" })],
      summary: { resolved: 0, waitingForApproval: 0, needsAttention: 0, waitingForAgent: 1, ownedElsewhere: 0, queued: 0 },
    });

    const recovered = await cli(["recover", "--store", store, "--agent-module", fixture("slow-agent.ts")], { env: { SLOW_TOOL_SECONDS: "0" } });
    expect(recovered.code, describeResult(recovered)).toBe(0);
    expect(recovered.stdout).toMatch(new RegExp(`${executionId} │ slow\\s+│ dispatching_tools │ continued \\(framework_tools\\) │ completed`));
    expect(recovered.stdout).toContain("1 resolved · 0 waiting for approval · 0 need attention");

    const timeline = await cli(["show", executionId, "--store", store]);
    expect(timeline.stdout).toMatch(
      /tool barrier\s+slowTool call-0-0 key [^\n]+\n[^\n]+recovered\s+by process \d+: from dispatching_tools, continuing with framework_tools\n[^\n]+tool barrier\s+slowTool call-0-0[^\n]+\n\s+↻ recovery: the batch is dispatched again/,
    );
    expect(timeline.stdout).toMatch(/terminal\s+completed/);

    const nothing = await cli(["recover", "--store", store]);
    expect(nothing.code).toBe(0);
    expect(nothing.stdout).toBe(`nothing to recover: every execution in the store at ${store} has ended\n`);
  });

  it("run recovers the agent's unfinished execution before starting a new one", async () => {
    const store = await temporaryStore();
    const killed = startCli(["run", fixture("slow-agent.ts"), "first", "--store", store]);
    await killed.stderrMatching(/tool slowTool started/);
    killed.child.kill("SIGKILL");
    await killed.done;
    const result = await cli(["run", fixture("slow-agent.ts"), "second", "--store", store, "--json"], { env: { SLOW_TOOL_SECONDS: "0" } });
    expect(result.code, describeResult(result)).toBe(0);
    expect(result.stderr).toMatch(
      /recovering execution [0-9a-f-]{36}, left unfinished by an earlier process \(phase dispatching_tools, continuation framework_tools\)/,
    );
    expect(result.stderr).toMatch(/recovered execution [0-9a-f-]{36}: completed/);
    expect(jsonOf(result)).toMatchObject({ outcome: "completed", output: "done sleeping" });
    const rows = jsonOf(await cli(["ls", "--store", store, "--json"])).executions;
    expect(rows.map((row: { outcome: string }) => row.outcome)).toEqual(["completed", "completed"]);
  });
});

describe.concurrent("errors: one line, a code, a non-zero exit", () => {
  it("bad arguments exit 2 without touching anything; --json adds the error document", async () => {
    const directory = await temporaryDirectory();
    const store = join(directory, "store.db");
    const cases: [string[], RegExp][] = [
      [["bogus"], /\[USAGE\] unknown command 'bogus'/],
      [["show"], /\[USAGE\] missing required argument 'execution-id'/],
      [["ls", "--limit", "0"], /\[USAGE\] option '--limit <n>' argument '0' is invalid\. it must be a positive integer/],
      [["run", exampleModule, "hi", "--frobnicate"], /\[USAGE\] unknown option '--frobnicate'/],
    ];
    for (const [args, pattern] of cases) {
      const result = await cli([...args, "--store", store]);
      expect(result.code, describeResult(result)).toBe(2);
      expect(errorLines(result), describeResult(result)).toEqual([expect.stringMatching(pattern)]);
      expect(result.stderr.split("\n").filter(Boolean)).toHaveLength(1);
    }
    const json = await cli(["ls", "--status", "happy", "--json", "--store", store]);
    expect(jsonOf(json)).toEqual({ error: { code: "USAGE", message: expect.stringContaining("'happy' is invalid") } });
    const help = await cli(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage: phronomy [options] [command]");
    expect(help.stdout).toContain("Exit codes:");
    const docs = /^Docs: (.+)$/m.exec(help.stdout)?.[1];
    expect(docs, "--help names docs/cli.md").toBe(join(repositoryRoot, "docs/cli.md"));
    expect(existsSync(docs!)).toBe(true);
  });

  it("a missing, foreign, unsupported or owned store, an unknown execution, a broken module", async () => {
    const directory = await temporaryDirectory();
    const missing = await cli(["ls", "--store", join(directory, "nothing.db")]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(
      `phronomy: [STORE_NOT_FOUND] no store at ${join(directory, "nothing.db")}: \`phronomy demo\` or \`phronomy run\` creates one, or pass --store <path>\n`,
    );

    const foreign = join(directory, "notes.db");
    await writeFile(foreign, "these are my notes, not a database\n".repeat(10));
    const foreignResult = await cli(["ls", "--store", foreign]);
    expect(foreignResult.code).toBe(1);
    expect(errorLines(foreignResult)).toEqual([expect.stringMatching(/^phronomy: \[STORE\] .*notes\.db is not a SQLite database/)]);

    const other = await cli(["ls", "--store", "mysql://user:secret@db.example/phronomy", "--json"]);
    expect(other.code).toBe(1);
    expect(jsonOf(other).error).toEqual({
      code: "STORE_NOT_SUPPORTED",
      message: "--store mysql://user:***@db.example/phronomy: a store is a SQLite file path or a postgres:// URL",
    });

    const store = await temporaryStore();
    const owner = await Phronomy.open({ store });
    try {
      const owned = await cli(["recover", "--store", store]);
      expect(owned.code).toBe(1);
      expect(errorLines(owned)).toEqual([expect.stringContaining(`[STORE] the store at ${store} is owned by process ${process.pid} on `)]);
      expect(errorLines(owned)[0]).toContain("`ls`, `show`, `approve` and `reject` work beside it (as visitors)");
      const visited = await cli(["ls", "--store", store]);
      expect(visited.code, describeResult(visited)).toBe(0);
    } finally {
      await owner.close();
    }

    const unknown = await cli(["show", "0000aaaa-no-such-execution", "--store", store, "--debug"]);
    expect(unknown.code).toBe(1);
    expect(errorLines(unknown)).toEqual([
      `phronomy: [EXECUTION_NOT_FOUND] no execution "0000aaaa-no-such-execution" in the store at ${store}; \`phronomy ls\` lists them`,
    ]);
    expect(unknown.stderr, "--debug adds the stack").toMatch(/CliError: no execution .*\n\s+at /);
    const unknownApproval = await cli(["approve", "0000aaaa-no-such-execution", "--store", store, "--json"]);
    expect(unknownApproval.code).toBe(1);
    expect(jsonOf(unknownApproval).error.code).toBe("EXECUTION_NOT_FOUND");

    const notAgent = await cli(["run", fixture("not-an-agent.ts"), "hi", "--store", store]);
    expect(notAgent.code).toBe(1);
    expect(errorLines(notAgent)).toEqual([expect.stringContaining("[AGENT_MODULE] the agent module")]);
  });
});
