// `env.admin` where the dashboard needs more than the handler tests show:
// queued messages listed and cancelled from the page, executions held for
// recovery on a store nobody owns (a process killed mid-tool), and the
// refusals — a visitor does not recover, a decision on another approval id
// decides nothing.

import { describe, expect, it } from "vitest";
import { ApprovalMismatchError, InvalidInputError, Phronomy } from "../../host/index.js";
import { createDashboard } from "../../host/ui/index.js";
import { fixture as cliFixture, startCli, temporaryStore } from "../cli/helpers.js";
import { agentRunModel, deferred, lookupTool, recordingLogger } from "../runtime/helpers.js";
import { openFixture, suspended } from "./fixture.js";

const origin = "http://127.0.0.1:4002";

describe("env.admin and the dashboard", () => {
  it("lists a queued message and cancels it from the page", async () => {
    const store = await temporaryStore();
    const env = await Phronomy.open({ store, logger: recordingLogger() });
    const gate = deferred();
    try {
      const agent = env.agent({ id: "chat", model: agentRunModel(), onBusy: "enqueue", tools: { lookup: lookupTool({ gate: gate.promise }) } });
      agent.start("first").result.catch(() => undefined);
      const second = agent.start("second");
      second.result.catch(() => undefined);
      const queuedId = await second.executionId;
      expect((await env.admin.queued()).map((row) => row.executionId)).toEqual([queuedId]);
      const dashboard = createDashboard(env);
      const page = await (await dashboard.handle(new Request(`${origin}/?token=${dashboard.token}`))).text();
      expect(page).toMatch(new RegExp(`<section id="queued">[\\s\\S]*${queuedId}[\\s\\S]*/actions/cancel`));
      const cancelled = await dashboard.handle(
        new Request(`${origin}/actions/cancel`, {
          method: "POST",
          headers: { origin, "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ token: dashboard.token, executionId: queuedId }).toString(),
        }),
      );
      expect(new URL(cancelled.headers.get("location")!, origin).searchParams.get("notice")).toContain("cancelled");
      expect(await env.admin.queued()).toEqual([]);
    } finally {
      gate.resolve();
      await env.close();
    }
  });

  it("holds for recovery what a killed process left unfinished; a visitor shows it and does not recover", async () => {
    const store = await temporaryStore();
    const killed = startCli(["run", cliFixture("slow-agent.ts"), "take your time", "--store", store]);
    const admitted = await killed.stderrMatching(/tool slowTool started/);
    const executionId = /execution ([0-9a-f-]{36}) of agent/.exec(admitted)![1]!;
    killed.child.kill("SIGKILL");
    await killed.done;
    const visitor = await Phronomy.open({ store, visitor: true, logger: recordingLogger() });
    try {
      const held = await visitor.admin.held();
      expect(held).toEqual([
        { row: expect.objectContaining({ executionId, phase: "dispatching_tools" }), reason: expect.stringContaining("no process owns the store") },
      ]);
      const dashboard = createDashboard(visitor);
      const page = await (await dashboard.handle(new Request(`${origin}/?token=${dashboard.token}`))).text();
      expect(page).toMatch(new RegExp(`<section id="held">[\\s\\S]*${executionId}[\\s\\S]*recovery runs in the process that owns it`));
      await expect(visitor.admin.recover()).rejects.toBeInstanceOf(InvalidInputError);
    } finally {
      await visitor.close();
    }
  }, 60_000);

  it("decide refuses another approval id, and an execution not waiting, deciding nothing", async () => {
    const fixture = await openFixture();
    try {
      const executionId = await fixture.start("refund", { orderId: "1" });
      await fixture.until(executionId, suspended);
      await expect(fixture.environment.admin.decide(executionId, { approvalId: "another", approved: true })).rejects.toBeInstanceOf(ApprovalMismatchError);
      await expect(fixture.environment.admin.decide("no-such-execution", { approvalId: "x", approved: true })).rejects.toMatchObject({
        code: "APPROVAL_MISMATCH",
      });
      expect((await fixture.environment.execution(executionId))?.status).toBe("suspended");
      expect(fixture.refunds).toEqual([]);
    } finally {
      await fixture.close();
    }
  });
});
