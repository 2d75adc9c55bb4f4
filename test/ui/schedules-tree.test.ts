// The dashboard's schedules page and an execution's child tree (decision
// 0088), through its handler: the list shows timing, next run and last
// firing; cancel and run-now go through a confirmation page (a GET that
// does nothing) and a POST carrying the token and the page's Origin; a
// visitor reads schedules and acts on them (decision 0097); an execution's page links
// its parent and lists its children with their state.

import { afterEach, describe, expect, it } from "vitest";
import { agentTool, Phronomy, type Environment } from "../../host/index.js";
import { createDashboard, type Dashboard } from "../../host/ui/index.js";
import { echoModel, openEnvironment, recordingLogger, scriptedModel, waitFor } from "../runtime/helpers.js";

const origin = "http://127.0.0.1:4100";
const opened: Environment[] = [];
afterEach(async () => {
  for (const environment of opened.splice(0).reverse()) await environment.close();
});

async function page(dashboard: Dashboard, path: string, params: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  const url = new URL(path, origin);
  url.searchParams.set("token", dashboard.token);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  const response = await dashboard.handle(new Request(url));
  return { status: response.status, body: await response.text() };
}

async function post(dashboard: Dashboard, fields: Record<string, string>, headers: Record<string, string> = { origin }): Promise<Response> {
  return dashboard.handle(
    new Request(new URL("/actions/schedule", origin), {
      method: "POST",
      headers: { ...headers, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(fields).toString(),
    }),
  );
}

describe("the schedules page", () => {
  it("lists schedules; cancel and run now are confirmed, then posted with the token from the page's origin", async () => {
    const environment = await openEnvironment();
    const support = environment.agent({ name: "support", model: echoModel({ lookup: false }) });
    const daily = await support.conversation("user-1").schedule("Daily digest", { cron: "0 9 * * *" });
    const once = await support.conversation("user-2").schedule("Check back", { at: new Date(Date.now() + 3_600_000) });
    const dashboard = createDashboard(environment);

    const list = await page(dashboard, "/schedules");
    expect(list.status).toBe(200);
    expect(list.body).toContain(`data-schedule="${daily.scheduleId}"`);
    expect(list.body).toContain("cron <code>0 9 * * *</code>");
    expect(list.body).toMatch(/class="next-run">\d{4}-\d\d-\d\d 09:00:00Z/);
    expect((await page(dashboard, "/schedules", { state: "cancelled" })).body).toContain("No schedules cancelled");
    expect((await page(dashboard, "/")).body).toContain("/schedules?token=");

    const confirm = await page(dashboard, `/schedules/${once.scheduleId}`, { confirm: "run" });
    expect(confirm.body).toContain("Run now: schedule");
    expect(confirm.body).toContain('name="scheduleAction" value="run"');
    expect(await environment.schedule(once.scheduleId)).toMatchObject({ firings: 0 }); // a GET does nothing

    expect((await post(dashboard, { scheduleId: once.scheduleId, scheduleAction: "run" })).status).toBe(403); // no token
    expect(
      (await post(dashboard, { token: dashboard.token, scheduleId: once.scheduleId, scheduleAction: "run" }, { origin: "https://evil.example" })).status,
    ).toBe(403);
    const ran = await post(dashboard, { token: dashboard.token, scheduleId: once.scheduleId, scheduleAction: "run" });
    expect(ran.status).toBe(303);
    const ranAt = new URL(ran.headers.get("location")!, origin);
    expect(ranAt.pathname).toBe(`/schedules/${once.scheduleId}`);
    expect(ranAt.searchParams.get("notice")).toMatch(/fired schedule .* now: execution \S+ started/);
    const fired = await environment.schedule(once.scheduleId);
    expect(fired).toMatchObject({ state: "done", firings: 1, lastFiring: { outcome: "started" } });
    expect((await page(dashboard, `/schedules/${once.scheduleId}`)).body).toContain(`/executions/${fired!.lastFiring!.executionId}`);

    const cancelled = await post(dashboard, { token: dashboard.token, scheduleId: daily.scheduleId, scheduleAction: "cancel" });
    expect(new URL(cancelled.headers.get("location")!, origin).searchParams.get("notice")).toContain(`cancelled schedule ${daily.scheduleId}`);
    expect(await environment.schedule(daily.scheduleId)).toMatchObject({ state: "cancelled" });
    const again = await post(dashboard, { token: dashboard.token, scheduleId: daily.scheduleId, scheduleAction: "run" });
    expect(new URL(again.headers.get("location")!, origin).searchParams.get("error")).toContain("only an active schedule runs");
    const bad = await post(dashboard, { token: dashboard.token, scheduleId: daily.scheduleId, scheduleAction: "explode" });
    expect(new URL(bad.headers.get("location")!, origin).searchParams.get("error")).toContain('"cancel" or "run"');
    expect((await page(dashboard, "/schedules/no-such-schedule")).status).toBe(404);
  });

  it("a visitor's dashboard lists the owner's schedules, runs one now in the owner and cancels one", async () => {
    const owner = await openEnvironment();
    const daily = await owner
      .agent({ name: "support", model: echoModel({ lookup: false }) })
      .conversation("user-1")
      .schedule("Daily digest", { cron: "0 9 * * *" });
    const visitor = await Phronomy.open({ store: owner.store.path, visitor: true, logger: recordingLogger() });
    opened.push(visitor);
    const dashboard = createDashboard(visitor);
    const list = await page(dashboard, "/schedules");
    expect(list.body).toContain(`data-schedule="${daily.scheduleId}"`);
    expect(list.body).toContain("a run now is started by the owner");
    const ran = await post(dashboard, { token: dashboard.token, scheduleId: daily.scheduleId, scheduleAction: "run" });
    const notice = new URL(ran.headers.get("location")!, origin).searchParams.get("notice");
    const [execution] = await owner.executions({ agentId: "user-1" });
    expect(notice).toBe(`fired schedule ${daily.scheduleId} now: execution ${execution?.executionId} started`);
    const cancelled = await post(dashboard, { token: dashboard.token, scheduleId: daily.scheduleId, scheduleAction: "cancel" });
    expect(new URL(cancelled.headers.get("location")!, origin).searchParams.get("notice")).toContain(`cancelled schedule ${daily.scheduleId}`);
    expect(await owner.schedule(daily.scheduleId)).toMatchObject({ state: "cancelled", firings: 1 });
  });
});

describe("the child tree on an execution's page", () => {
  it("the parent lists its children with their state; a child links its parent; an execution with neither shows no tree", async () => {
    const environment = await openEnvironment();
    const researcher = environment.agent({ name: "researcher", model: scriptedModel(() => ({ text: "found kettles" })) });
    const research = agentTool(researcher, { description: "Researches a topic" });
    const parentModel = scriptedModel(({ messages }) =>
      messages.at(-1)?.role === "tool" ? { text: "done" } : { toolCalls: [{ toolName: "research", input: { input: "kettles" } }] },
    );
    const support = environment.agent({ name: "support", model: parentModel, tools: { research } });
    const run = support.conversation("ana").start("find me a kettle");
    await run.result;
    const parentId = await run.executionId;
    const childId = (await waitFor(async () => (await environment.executionTree(parentId))?.children[0]))!.execution.executionId;
    const dashboard = createDashboard(environment);
    const parent = await page(dashboard, `/executions/${parentId}`);
    expect(parent.body).toContain('<section id="tree">');
    expect(parent.body).toMatch(
      new RegExp(
        `<li data-execution="${childId}"><a href="[^"]*/executions/${childId}\\?[^"]*"><code>${childId}</code></a> <span class="badge ok">completed</span>`,
      ),
    );
    const child = await page(dashboard, `/executions/${childId}`);
    expect(child.body).toMatch(new RegExp(`Started by <a href="[^"]*/executions/${parentId}\\?`));
    const alone = await researcher.conversation("solo").start("hello").executionId;
    await environment.wait(alone).result;
    expect((await page(dashboard, `/executions/${alone}`)).body).not.toContain('id="tree"');
  });
});
