// The `phronomy` command on a PostgreSQL store (`--store postgres://…`),
// through real processes against a fresh schema of the test database: run,
// ls, show, approve; a read command refused on a schema with no store; run
// refused while another live process owns the agent (its lease), ls and
// show beside it; approve beside it (through the approval inbox); recover
// leaving an agent another process owns to it, then
// finishing the execution once that lease is gone. The URL carries a
// password (the server trusts loopback, so any is accepted): it must never
// be printed.

import { randomBytes } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { Phronomy } from "../../host/index.js";
import { loadAgentModule } from "../../host/cli/agent-module.js";
import type { PostgresStore } from "../../host/store/postgres-store.js";
import { agentRunModel } from "../runtime/helpers.js";
import { postgresUrl, withClient } from "../postgres/database.js";
import { cli, describeResult, errorLines, exampleModule, fixture, jsonOf, startCli, type CliResult } from "./helpers.js";

const password = "pw-never-printed";

// The tests run at once, so their schemas are dropped after all of them
// (database.ts's freshSchema drops every schema after each test).
const schemas: string[] = [];
afterAll(async () => {
  if (schemas.length > 0) await withClient((client) => client.query(schemas.map((name) => `DROP SCHEMA IF EXISTS ${name} CASCADE`).join("; ")));
});

/** A fresh schema's URL with a password, and the same URL as printed. */
function storeUrls(extra = ""): { url: string; shown: string; schema: string } {
  const schema = `phronomy_cli_${process.pid}_${randomBytes(5).toString("hex")}`;
  schemas.push(schema);
  const base = new URL(postgresUrl);
  base.password = password;
  const url = `${base.toString()}?schema=${schema}${extra}`;
  return { url, shown: url.replace(`:${password}@`, ":***@"), schema };
}

function expectNoPassword(...results: CliResult[]): void {
  for (const result of results) expect(`${result.stdout}${result.stderr}`, describeResult(result)).not.toContain(password);
}

describe.concurrent("phronomy on PostgreSQL", () => {
  it("run, ls, show and approve on a schema; a read command refuses a schema with no store; the password is never printed", async () => {
    const { url, shown } = storeUrls();
    const missing = await cli(["ls", "--store", url]);
    expect(missing.code, describeResult(missing)).toBe(1);
    expect(errorLines(missing)).toEqual([
      `phronomy: [STORE_NOT_FOUND] no Phronomy store in schema "${new URL(url).searchParams.get("schema")}" at ${shown}: \`phronomy run\` creates one, or name the schema with ?schema=<name>`,
    ]);

    const completedRun = await cli(["run", exampleModule, "Where is my order 7?", "--store", url, "--json"]);
    const failedRun = await cli(["run", fixture("failing-agent.ts"), "hi", "--store", url, "--json"]);
    const suspendedRun = await cli(["run", exampleModule, "Please refund order 42", "--store", url]);
    expect(completedRun.code, describeResult(completedRun)).toBe(0);
    expect(failedRun.code, describeResult(failedRun)).toBe(1);
    expect(suspendedRun.code, describeResult(suspendedRun)).toBe(3);
    const completed = jsonOf(completedRun);
    const failed = jsonOf(failedRun);
    expect(completed).toMatchObject({ outcome: "completed", output: "Your teapot (order 7) is delivered with DHL." });
    // The commands it suggests name the store without its password.
    expect(suspendedRun.stderr).toContain(`--store '${shown}' [--reason "…"]`);
    const suspendedId = /execution ([0-9a-f-]{36}) is waiting for approval/.exec(suspendedRun.stderr)![1]!;

    const table = await cli(["ls", "--store", url]);
    expect(table.code, describeResult(table)).toBe(0);
    expect(table.stdout).toContain(`${completed.executionId} │ support`);
    expect(table.stdout).toMatch(new RegExp(`${failed.executionId} │ failing\\s+│ failed \\[MODEL_FAILED\\]`));
    expect(table.stdout).toMatch(new RegExp(`${suspendedId} │ support\\s+│ waiting for approval`));
    expect(table.stdout).toContain("3 executions\n");
    const listed = await cli(["ls", "--store", url, "--json", "--status", "completed"]);
    expect(jsonOf(listed)).toEqual({ store: shown, executions: [expect.objectContaining({ executionId: completed.executionId, outcome: "completed" })] });

    const shownRun = await cli(["show", completed.executionId.slice(0, 8), "--store", url]);
    expect(shownRun.code, describeResult(shownRun)).toBe(0);
    expect(shownRun.stdout).toContain("timeline (8 steps)");
    expect(shownRun.stdout).toContain(`lookupOrder call-0-0 key ${completed.executionId}:call-0-0`);
    const shownSuspended = await cli(["show", suspendedId, "--store", url]);
    expect(shownSuspended.stdout).toContain(`decide: phronomy approve ${suspendedId} --store '${shown}'`);
    const unknown = await cli(["show", "0000aaaa-none", "--store", url]);
    expect(errorLines(unknown)).toEqual([`phronomy: [EXECUTION_NOT_FOUND] no execution "0000aaaa-none" in the store at ${shown}; \`phronomy ls\` lists them`]);

    const approved = await cli(["approve", suspendedId, "--agent-module", exampleModule, "--store", url, "--reason", "damaged", "--json"]);
    expect(approved.code, describeResult(approved)).toBe(0);
    expect(jsonOf(approved)).toMatchObject({ executionId: suspendedId, outcome: "completed" });
    expectNoPassword(missing, completedRun, failedRun, suspendedRun, table, listed, shownRun, shownSuspended, unknown, approved);
  });

  it("run is refused (AGENT_BUSY) while another live process owns the agent; ls and show work beside it; once it closes, run goes on", async () => {
    const { url } = storeUrls();
    const first = await cli(["run", exampleModule, "Where is my order 7?", "--store", url, "--json"]);
    expect(first.code, describeResult(first)).toBe(0);
    const owner = await Phronomy.open({ store: url, logger: { warn: () => undefined } });
    let refused: CliResult, listed: CliResult, shown: CliResult;
    try {
      await owner.agent({ id: "support", model: agentRunModel() }).ready;
      await owner.recovery("support");
      const ownerName = (owner.store as PostgresStore).leaseOwner;

      refused = await cli(["run", exampleModule, "Where is my order 42?", "--store", url, "--json"]);
      expect(refused.code, describeResult(refused)).toBe(1);
      expect(jsonOf(refused)).toMatchObject({
        outcome: "failed",
        error: { code: "AGENT_BUSY", message: expect.stringContaining(`held by ${ownerName} until`) },
      });
      expect(refused.stderr).toContain(`warning: [phronomy] agent "support" is owned by ${ownerName}`);
      listed = await cli(["ls", "--store", url, "--json"]);
      expect(listed.code, describeResult(listed)).toBe(0);
      expect(jsonOf(listed).executions).toHaveLength(1);
      shown = await cli(["show", jsonOf(first).executionId, "--store", url]);
      expect(shown.code, describeResult(shown)).toBe(0);
    } finally {
      await owner.close(); // releases the lease: the next process takes the agent at once
    }
    const after = await cli(["run", exampleModule, "Where is my order 42?", "--store", url, "--json"]);
    expect(after.code, describeResult(after)).toBe(0);
    expect(jsonOf(after)).toMatchObject({ outcome: "completed" });
    expectNoPassword(first, refused, listed, shown, after);
  });

  it("approve while another live process owns the agent: the decision goes through the approval inbox, the owner runs the tool, the CLI prints the outcome", async () => {
    const { url } = storeUrls();
    const suspended = jsonOf(await cli(["run", exampleModule, "Please refund order 42", "--store", url, "--json"]));
    expect(suspended.outcome).toBe("suspended");
    const owner = await Phronomy.open({ store: url, logger: { warn: () => undefined } });
    try {
      const { definition } = await loadAgentModule(exampleModule, { model: undefined, storePath: url });
      owner.agent(definition);
      await owner.recovery(definition.id);
      const approved = await cli(["approve", suspended.executionId, "--agent-module", exampleModule, "--store", url, "--json"]);
      expect(approved.code, describeResult(approved)).toBe(0);
      expect(jsonOf(approved)).toMatchObject({ executionId: suspended.executionId, outcome: "completed" });
      expect(await owner.execution(suspended.executionId)).toMatchObject({ status: "terminal", outcome: "completed" });
      // Decided once, by the owner's resume path.
      const decided = (await owner.timeline(suspended.executionId)).filter((step) => step.kind === "approval_decided");
      expect(decided).toEqual([expect.objectContaining({ payload: expect.objectContaining({ approved: true }) })]);
      expectNoPassword(approved);
    } finally {
      await owner.close();
    }
  });

  it("recover right after the run's process was killed reclaims its partition at once (same host: the same default instance id) and finishes it", async () => {
    // The killed run holds its partition for up to 10 s; the next command on
    // this host opens with the same instance id, whose session lock died
    // with it, so it reclaims the partition at once (docs/decisions/0030).
    const { url, shown, schema } = storeUrls("&lease_ms=10000");
    const killed = startCli(["run", fixture("slow-agent.ts"), "take your time", "--store", url]);
    const admitted = await killed.stderrMatching(/tool slowTool started/);
    const executionId = /execution ([0-9a-f-]{36}) of agent/.exec(admitted)![1]!;
    killed.child.kill("SIGKILL");
    await killed.done;

    const recovered = await cli(["recover", "--store", url, "--agent-module", fixture("slow-agent.ts"), "--json"], { env: { SLOW_TOOL_SECONDS: "0" } });
    expect(recovered.code, describeResult(recovered)).toBe(0);
    expect(jsonOf(recovered)).toMatchObject({
      store: shown,
      executions: [
        expect.objectContaining({
          executionId,
          agentId: "slow",
          phase: "dispatching_tools",
          status: "continued",
          result: expect.objectContaining({ outcome: "completed" }),
        }),
      ],
      summary: { resolved: 1, waitingForApproval: 0, needsAttention: 0, waitingForAgent: 0, ownedElsewhere: 0 },
    });
    const partitions = await withClient(
      async (client) =>
        (
          await client.query<{ epoch: string; live: boolean }>(
            `SELECT epoch, expires_at > clock_timestamp() AS live FROM ${schema}.partitions WHERE partition = ${schema}.partition_of('slow')`,
          )
        ).rows,
    );
    // Taken by the run (epoch 1), reclaimed by recover (epoch 2) and released when it closed.
    expect(partitions).toEqual([{ epoch: "2", live: false }]);
    expectNoPassword(recovered);
  });

  it("demo refuses a PostgreSQL store; other schemes are refused by name", async () => {
    const { url, shown } = storeUrls();
    const demo = await cli(["demo", "--store", url]);
    expect(demo.code, describeResult(demo)).toBe(1);
    expect(errorLines(demo)).toEqual([
      `phronomy: [STORE_NOT_SUPPORTED] the demo runs on the embedded SQLite store (its refund ledger is a file beside it), not on ${shown}: give --store a file path, or none`,
    ]);
    const mysql = await cli(["ls", "--store", "mysql://user:secret@db.example/phronomy"]);
    expect(errorLines(mysql)).toEqual([
      "phronomy: [STORE_NOT_SUPPORTED] --store mysql://user:***@db.example/phronomy: a store is a SQLite file path or a postgres:// URL",
    ]);
    expectNoPassword(demo);
    expect(mysql.stderr).not.toContain("secret");
  });
});
