// The schedules page and the child tree in a real browser (decision 0088):
// chromium driven by playwright-core opens the schedules from the header,
// runs one now through its confirmation page, cancels another, and walks
// an execution's tree from the parent to its child and back. The store
// lives for the file (test/cli/helpers.ts), not for one test.

import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agentTool, Phronomy, type Environment } from "../../host/index.js";
import { scriptedModel } from "../../host/testing.js";
import { serveDashboard } from "../../host/ui/index.js";
import { temporaryStore } from "../cli/helpers.js";
import { recordingLogger } from "../runtime/helpers.js";
import { launchChromium } from "./processes.js";

let environment: Environment;
let served: Awaited<ReturnType<typeof serveDashboard>>;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  environment = await Phronomy.open({ store: await temporaryStore(), logger: recordingLogger() });
  served = await serveDashboard(environment, { pollMs: 250 });
  browser = await launchChromium();
  page = await browser.newPage();
}, 30_000);

afterAll(async () => {
  await browser?.close();
  await served?.close();
  await environment?.close();
});

describe("schedules and the child tree in chromium", () => {
  it("runs a schedule now and cancels another, each through its confirmation", async () => {
    const support = environment.agent({ name: "support", model: scriptedModel(() => ({ text: "digest sent" })) });
    const daily = await support.conversation("user-1").schedule("Daily digest", { cron: "0 9 * * *" });
    const once = await support.conversation("user-2").schedule("Check back", { at: new Date(Date.now() + 3_600_000) });
    await page.goto(served.url);
    await page.locator("header a.nav", { hasText: "Schedules" }).click();
    await page.locator(`tr[data-schedule="${once.scheduleId}"] a`, { hasText: "Run now…" }).click();
    expect(await page.locator("h1").textContent()).toContain("Run now: schedule");
    await page.locator("#confirm-schedule").click();
    expect(await page.locator(".notice.ok").textContent()).toMatch(/fired schedule .* now: execution \S+ started/);
    await page.locator(".last-fired a", { hasText: "execution" }).click();
    await page.locator('.summary[data-outcome="completed"]').waitFor({ timeout: 10_000 });

    await page.goto(served.url.replace("/?", "/schedules?"));
    await page.locator(`tr[data-schedule="${daily.scheduleId}"] a`, { hasText: "Cancel…" }).click();
    await page.locator("#confirm-schedule").click();
    expect(await page.locator(".notice.ok").textContent()).toContain(`cancelled schedule ${daily.scheduleId}`);
    expect(await environment.schedule(daily.scheduleId)).toMatchObject({ state: "cancelled" });
  });

  it("walks from a parent execution to its child and back", async () => {
    const researcher = environment.agent({ name: "researcher", model: scriptedModel(() => ({ text: "found kettles" })) });
    const research = agentTool(researcher, { description: "Researches a topic" });
    const parentModel = scriptedModel(({ messages }) =>
      messages.at(-1)?.role === "tool" ? { text: "done" } : { toolCalls: [{ toolName: "research", input: { input: "kettles" } }] },
    );
    const run = environment.agent({ name: "assistant", model: parentModel, tools: { research } }).conversation("ana").start("find me a kettle");
    await run.result;
    const parentId = await run.executionId;
    await page.goto(served.url.replace("/?", `/executions/${parentId}?`));
    const child = page.locator("#tree ul.tree > li").first();
    expect(await child.locator(".badge").textContent()).toBe("completed");
    await child.locator("a").click();
    await page.locator("#parent a").waitFor();
    expect(await page.locator("#parent a").textContent()).toBe(parentId);
    await page.locator("#parent a").click();
    await page.locator("#tree").waitFor();
    expect(page.url()).toContain(`/executions/${parentId}`);
  });
});
