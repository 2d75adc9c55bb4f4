// The dashboard where it usually runs: in another process than the one that
// runs the agents. `phronomy ui` on a SQLite store an application owns (a
// visitor: decisions go through the approval inbox, the owner runs the
// tool; retry is the owner's and is refused), and a dashboard on a
// PostgreSQL store opened by a process that defines no agent (its
// password never shown).

import { describe, expect, it } from "vitest";
import { Phronomy, type Environment } from "../../host/index.js";
import { createDashboard } from "../../host/ui/index.js";
import { atEnd, freshSchema, postgresUrl } from "../postgres/database.js";
import { approvalRefundTool, recordingLogger, scriptedModel } from "../runtime/helpers.js";
import { ended, openFixture, suspended } from "./fixture.js";
import { runCli } from "./processes.js";

async function decideThrough(
  handle: (request: Request) => Promise<Response>,
  base: string,
  token: string,
  environment: Environment,
  executionId: string,
  reason: string,
): Promise<URL> {
  const approval = (await environment.admin.approvals()).find((candidate) => candidate.executionId === executionId)!;
  const fields = { token, executionId, approvalId: approval.request.approvalId, argumentsHash: approval.request.argumentsHash, decision: "approve", reason };
  const response = await handle(
    new Request(`${base}/actions/decide`, {
      method: "POST",
      headers: { origin: base, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(fields).toString(),
    }),
  );
  expect(response.status).toBe(303);
  return new URL(response.headers.get("location")!, base);
}

describe("the dashboard beside the process that runs the agents", () => {
  it("phronomy ui visits a SQLite store its application owns: the approval goes through the inbox and the owner runs the tool", async () => {
    const fixture = await openFixture();
    const ui = runCli(["ui", "--store", fixture.environment.store.path]);
    try {
      const executionId = await fixture.start("refund", { orderId: "42" });
      await fixture.until(executionId, suspended);
      const url = await ui.dashboardUrl();
      const token = url.searchParams.get("token")!;
      const page = await (await fetch(url)).text();
      expect(page).toContain(`visiting beside its owner, process ${process.pid}`);
      expect(page).toContain(executionId);
      expect((await fetch(url.origin + "/")).status).toBe(403);
      const viaHttp = (request: Request) => fetch(request, { redirect: "manual" });
      const location = await decideThrough(viaHttp, url.origin, token, fixture.environment, executionId, "checked from the dashboard");
      expect(location.searchParams.get("notice")).toContain("approved");
      await fixture.until(executionId, ended);
      expect(await fixture.environment.execution(executionId)).toMatchObject({ outcome: "completed", output: "Refunded." });
      expect(fixture.refunds).toHaveLength(1);
      const retried = await viaHttp(
        new Request(`${url.origin}/actions/retry`, {
          method: "POST",
          headers: { origin: url.origin, "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ token, executionId }).toString(),
        }),
      );
      expect(new URL(retried.headers.get("location")!, url.origin).searchParams.get("error")).toMatch(/RETRY_REFUSED|completed/);
    } finally {
      ui.child.kill("SIGINT");
      expect(await ui.exited).toBe(0);
      await fixture.close();
    }
  }, 60_000);

  it("on PostgreSQL, from a process that defines no agent: the decision reaches the agent's owner; the URL's password is never rendered", async () => {
    const url = new URL(postgresUrl);
    url.password = "hunter2-never-shown";
    url.searchParams.set("schema", freshSchema());
    url.searchParams.set("lease_ms", "60000");
    const refunds: string[] = [];
    const owner = await Phronomy.open({ store: url.toString(), logger: recordingLogger() });
    atEnd(() => owner.close());
    const model = scriptedModel(({ messages }) =>
      messages.some((message) => message.role === "tool")
        ? { text: "Refunded." }
        : { toolCalls: [{ toolName: "refund", input: { orderId: "42", amount: 30 } }] },
    );
    const agent = owner.agent({ id: "billing", model, tools: { refund: approvalRefundTool(refunds) } });
    await owner.recovery("billing");
    const run = agent.start("Refund order 42");
    const executionId = await run.executionId;
    const visiting = await Phronomy.open({ store: url.toString(), logger: recordingLogger(), recover: false });
    atEnd(() => visiting.close());
    const dashboard = createDashboard(visiting);
    const base = "http://127.0.0.1:4001";
    for (let tries = 0; (await visiting.admin.approvals()).length === 0; tries += 1) {
      if (tries > 200) throw new Error("the execution never waited for approval");
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const page = await (await dashboard.handle(new Request(`${base}/?token=${dashboard.token}`))).text();
    expect(page).toContain("PostgreSQL, shared by its processes");
    expect(page).toContain(executionId);
    expect(page).not.toContain("hunter2-never-shown");
    const location = await decideThrough(dashboard.handle, base, dashboard.token, visiting, executionId, "fine");
    expect(location.searchParams.get("notice")).toContain("approved");
    await expect(run.result).resolves.toMatchObject({ outcome: "completed", output: "Refunded." });
    expect(refunds).toHaveLength(1);
    expect(visiting.admin.ownedElsewhere("billing")).toBe(true);
  }, 60_000);
});
