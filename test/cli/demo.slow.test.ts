// `phronomy demo` and `phronomy demo --crash` end to end, through real
// processes: the support agent suspends for the refund's approval, is
// approved after the environment is reopened, refunds once and answers;
// with --crash the approving process is killed (SIGKILL) right after the
// refund's tool barrier and the next process recovers the run — the
// refund still happens exactly once, with the barrier's idempotency key.

import { describe, expect, it } from "vitest";
import { DEMO_INPUT, demoAgentDefinition, demoLedgerPath, readRefunds } from "../../host/cli/demo-agent.js";
import { existsSync } from "node:fs";
import { Phronomy, type ApprovalRequest } from "../../host/index.js";
import { missingPeersError, npxDemoCommand } from "../../host/cli/peers.js";
import { cli, describeResult, errorLines, fixture, jsonOf, temporaryStore } from "./helpers.js";

const ANSWER = /^I'm sorry your blue kettle arrived broken\. I've refunded €39\.90 to your card \(refund R-[0-9A-F]{8}\); it shows up within 3 days\.$/;

describe.concurrent("phronomy demo", () => {
  it("tells the story on stdout and prints the durable timeline; exit 0; ls and show see the execution", async () => {
    const store = await temporaryStore();
    const result = await cli(["demo", "--store", store]);
    expect(result.code, describeResult(result)).toBe(0);
    const out = result.stdout;
    for (const line of [
      "1. A customer writes:",
      "2. The model wants to call issueRefund(",
      "is suspended. The request (approval id",
      "3. The environment closes, as if the process stopped",
      "Recovery reads it back from the store: still waiting for approval.",
      "4. A support lead approves it",
      "5. completed: \"I'm sorry your blue kettle arrived broken.",
      "Refunds issued for this execution: 1 (R-",
      "Durable timeline of execution",
    ])
      expect(out, describeResult(result)).toContain(line);
    for (const kind of ["input", "model barrier", "model response", "tool barrier", "tool results", "approval requested", "approval decided", "terminal"])
      expect(out).toContain(kind);
    expect(result.stderr).toMatch(/approval required: issueRefund\(\{"orderId":"42","amountCents":3990,"reason":"arrived damaged"\}\)/);
    expect(result.stderr).toMatch(/tool issueRefund started · idempotency key/);

    const executionId = /Durable timeline of execution ([0-9a-f-]{36})/.exec(out)![1]!;
    const shown = jsonOf(await cli(["show", executionId, "--store", store, "--json"]));
    expect(shown.execution).toMatchObject({ agentId: "demo-support", status: "terminal", outcome: "completed", output: expect.stringMatching(ANSWER) });
    expect(shown.timeline.map((step: { kind: string }) => step.kind)).toEqual([
      "input",
      "provider_barrier",
      "model_response",
      "tool_barrier",
      "tool_results",
      "provider_barrier",
      "model_response",
      "approval_requested",
      "approval_decided",
      "tool_barrier",
      "tool_results",
      "provider_barrier",
      "model_response",
      "terminal",
    ]);
    expect(shown.timeline.some((step: { recovery?: string }) => step.recovery !== undefined)).toBe(false);
  });

  it("--crash: the approving process is killed after the refund's barrier; the next one recovers it and refunds exactly once", async () => {
    const store = await temporaryStore();
    const result = await cli(["demo", "--crash", "--store", store, "--json"]);
    expect(result.code, describeResult(result)).toBe(0);
    expect(result.stderr).toContain("the refund's tool barrier is durable: killing this process now (SIGKILL)");
    expect(result.stderr).toMatch(/✖ Process \d+ was killed by SIGKILL right after the refund's tool barrier \(revision \d+\) was committed/);
    expect(result.stderr).toMatch(/phase dispatching_tools → framework_tools: the recorded refund batch is dispatched again/);
    expect(result.stderr).not.toMatch(/tool issueRefund started[\s\S]*the refund's tool barrier is durable/);

    const document = jsonOf(result);
    expect(document).toMatchObject({
      store,
      agentId: "demo-support",
      crashed: true,
      outcome: "completed",
      output: expect.stringMatching(ANSWER),
      approval: { approved: true, toolCalls: [{ toolName: "issueRefund", input: { orderId: "42", amountCents: 3990 } }] },
      recovery: { executionId: document.executionId, phase: "dispatching_tools", status: "continued", continuation: "framework_tools" },
    });
    expect(document.refunds).toEqual([
      expect.objectContaining({ orderId: "42", amountCents: 3990, idempotencyKey: `${document.executionId}:${document.approval.toolCalls[0].callId}` }),
    ]);
    const barriers = document.timeline.filter((step: { kind: string }) => step.kind === "tool_barrier");
    expect(barriers).toHaveLength(3);
    expect(barriers[1].payload.calls).toEqual(barriers[2].payload.calls);
    expect(barriers[2].recovery).toMatch(/^recovery: the batch is dispatched again after a crash/);
    expect(document.timeline.at(-1)).toMatchObject({ kind: "terminal", payload: { outcome: "completed" } });

    const recovered = await cli(["recover", "--store", store]);
    expect(recovered.stdout).toBe(`nothing to recover: every execution in the store at ${store} has ended\n`);
  });

  it("approve needs no --agent-module for the demo agent's executions: an approval left pending by another process", async () => {
    const store = await temporaryStore();
    const environment = await Phronomy.open({ store });
    let request: ApprovalRequest | undefined;
    try {
      const agent = environment.agent(demoAgentDefinition(store));
      const run = agent.start(DEMO_INPUT, {
        onEvent: (event) => {
          if (event.type === "approval_required") request = event.request;
        },
      });
      await run.executionId;
      for (let waited = 0; request === undefined && waited < 10_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      await environment.close();
    }
    expect(request, "the demo agent should ask for approval").toBeDefined();
    const approved = await cli(["approve", request!.executionId, "--store", store, "--reason", "from the test", "--json"]);
    expect(approved.code, describeResult(approved)).toBe(0);
    expect(jsonOf(approved)).toMatchObject({
      executionId: request!.executionId,
      agentId: "demo-support",
      outcome: "completed",
      output: expect.stringMatching(ANSWER),
    });
    expect(readRefunds(demoLedgerPath(store))).toEqual([
      expect.objectContaining({ idempotencyKey: `${request!.executionId}:${request!.toolCalls[0]!.callId}` }),
    ]);
  });

  it("without ai installed (npx phronomy demo in an empty directory) it fails before opening anything, naming the command that works", async () => {
    const store = await temporaryStore();
    const hidden = { NODE_OPTIONS: `--import=${fixture("without-ai.mjs")}` };
    const result = await cli(["demo", "--store", store], { env: hidden });
    expect(result.code, describeResult(result)).toBe(1);
    expect(errorLines(result)).toEqual([
      "phronomy: [MISSING_PACKAGE] the demo needs ai beside phronomy (the demo's scripted model is called through the AI SDK, like every model), an optional peer dependency that npx does not install. Run: npx -p phronomy -p ai@7 phronomy demo (in a project: npm install phronomy ai@7, then npx phronomy demo)",
    ]);
    expect(existsSync(store), "nothing is created").toBe(false);
    const json = await cli(["demo", "--store", store, "--json"], { env: hidden });
    expect(jsonOf(json).error).toMatchObject({
      code: "MISSING_PACKAGE",
      details: { missingPackages: ["ai"], command: "npx -p phronomy -p ai@7 phronomy demo" },
    });
  });
});

describe("the demo's missing peers", () => {
  it("on a Node without node:sqlite, the command names better-sqlite3 too", () => {
    const missing = [
      { name: "ai", spec: "ai@7" },
      { name: "better-sqlite3", spec: "better-sqlite3@12" },
    ];
    expect(npxDemoCommand(missing)).toBe("npx -p phronomy -p ai@7 -p better-sqlite3@12 phronomy demo");
    const error = missingPeersError(missing);
    expect(error.code).toBe("MISSING_PACKAGE");
    expect(error.message).toContain("the demo needs ai and better-sqlite3 beside phronomy");
    expect(error.message).toContain(
      "optional peer dependencies that npx does not install. Run: npx -p phronomy -p ai@7 -p better-sqlite3@12 phronomy demo (in a project: npm install phronomy ai@7 better-sqlite3@12, then npx phronomy demo)",
    );
  });
});
