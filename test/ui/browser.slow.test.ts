// The dashboard in a real browser: chromium driven by playwright-core (the
// system's, or the one @sparticuz/chromium ships: test/support/chromium.ts). The page is served by
// node:http (`serveDashboard`) on a store owned by this test's environment.
// What a person does: open the list, watch a running execution finish
// without reloading, approve one and see the tool run and the terminal
// appear, reject one with a reason; and what an attacker cannot: act
// without the token, or run script through a tool's arguments.

import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveDashboard } from "../../host/ui/index.js";
import { ended, openFixture, suspended, type Fixture } from "./fixture.js";
import { launchChromium } from "./processes.js";

let fixture: Fixture;
let served: Awaited<ReturnType<typeof serveDashboard>>;
let browser: Browser;
let page: Page;
const dialogs: string[] = [];

beforeAll(async () => {
  fixture = await openFixture();
  served = await serveDashboard(fixture.environment, { pollMs: 250 });
  browser = await launchChromium();
  page = await browser.newPage();
  page.on("dialog", (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
}, 30_000);

afterAll(async () => {
  await browser?.close();
  await served?.close();
  await fixture?.close();
});

const pageOf = (executionId: string) => served.url.replace("/?", `/executions/${executionId}?`);

describe("the dashboard in chromium", () => {
  it("opens the list: counts per status, the executions, the approvals waiting", async () => {
    const done = await fixture.start("hello");
    await fixture.until(done, ended);
    const waiting = await fixture.start("refund", { orderId: "42" });
    await fixture.until(waiting, suspended);
    await page.goto(served.url);
    await expect.poll(() => page.locator(`tr[data-execution="${done}"] .badge`).textContent()).toBe("completed");
    expect(await page.locator('.count[data-status="suspended"] b').textContent()).toBe("1");
    expect(await page.locator(`#approvals article[data-execution="${waiting}"]`).count()).toBe(1);
    // Clear the approval for the scenarios after this one.
    await fixture.environment.cancel(waiting);
  });

  it("watches a running execution finish, without a reload", async () => {
    const executionId = await fixture.start("slow");
    await fixture.until(executionId, (status) => status === "active");
    await page.goto(pageOf(executionId));
    expect(await page.locator(".summary .badge").textContent()).toMatch(/^running/);
    await page.evaluate(() => {
      (globalThis as unknown as { marker: number }).marker = 1;
    });
    fixture.releaseLookups();
    await page.locator('.summary[data-outcome="completed"]').waitFor({ timeout: 10_000 });
    expect(await page.locator('li.step[data-kind="terminal"]').count()).toBe(1);
    expect(await page.locator('li.step[data-kind="tool_results"]').textContent()).toContain("shipped");
    expect(await page.evaluate(() => (globalThis as unknown as { marker?: number }).marker)).toBe(1); // the same page: updated live
  });

  it("approves a waiting execution: the tool runs and the terminal appears", async () => {
    const executionId = await fixture.start("refund", { orderId: "42", amountCents: 3990 });
    await fixture.until(executionId, suspended);
    await page.goto(served.url);
    await page.locator(`#approvals article[data-execution="${executionId}"] header a`).click();
    await page.locator("button.approve").click();
    await page.locator('.summary[data-outcome="completed"]').waitFor({ timeout: 10_000 });
    expect(await page.locator(".notice.ok").textContent()).toContain("approved");
    expect(await page.locator('li.step[data-kind="tool_results"]').last().textContent()).toContain("refunded");
    expect(await page.locator('li.step[data-kind="terminal"]').count()).toBe(1);
    expect(fixture.refunds).toHaveLength(1);
  });

  it("rejects one with a reason: the reason is recorded and shown, the tool never runs", async () => {
    const before = fixture.refunds.length;
    const executionId = await fixture.start("refund", { orderId: "7" });
    await fixture.until(executionId, suspended);
    await page.goto(pageOf(executionId));
    await page.locator("input[name=reason]").first().fill("no photo of the damage");
    await page.locator("button.reject").first().click();
    await page.locator('li.step[data-kind="terminal"]').waitFor({ timeout: 10_000 });
    expect(await page.locator('li.step[data-kind="approval_decided"]').textContent()).toMatch(/rejected[\s\S]*no photo of the damage/);
    expect(fixture.refunds).toHaveLength(before);
  });

  it("refuses an action without the token, or from another origin; nothing is decided", async () => {
    const executionId = await fixture.start("refund", { orderId: "8" });
    await fixture.until(executionId, suspended);
    const approval = (await fixture.environment.admin.approvals()).find((candidate) => candidate.executionId === executionId)!;
    const fields = { executionId, approvalId: approval.request.approvalId, decision: "approve" };
    const action = `${served.origin}/actions/decide`;
    const withoutToken = await page.request.post(action, { form: fields, headers: { origin: served.origin }, maxRedirects: 0 });
    expect(withoutToken.status()).toBe(403);
    const otherOrigin = await page.request.post(action, {
      form: { ...fields, token: served.dashboard.token },
      headers: { origin: "https://evil.example" },
      maxRedirects: 0,
    });
    expect(otherOrigin.status()).toBe(403);
    const pageWithoutToken = await page.goto(served.origin + "/");
    expect(pageWithoutToken?.status()).toBe(403);
    expect((await fixture.environment.execution(executionId))?.status).toBe("suspended");
    await fixture.environment.cancel(executionId);
  });

  it("renders hostile arguments as text: no script runs, no element is injected", async () => {
    const hostile = { orderId: "<script>alert(1)</script>", note: '"><img src=x onerror=alert(2)>' };
    const executionId = await fixture.start("refund", hostile);
    await fixture.until(executionId, suspended);
    await page.goto(pageOf(executionId));
    await page.waitForTimeout(600); // two live refreshes
    const arguments_ = await page.locator("#actions pre.json").first().textContent();
    expect(arguments_).toContain("<script>alert(1)</script>");
    expect(arguments_).toContain('"><img src=x onerror=alert(2)>');
    expect(await page.locator("main img").count()).toBe(0);
    expect(await page.locator("main script").count()).toBe(0);
    expect(dialogs).toEqual([]);
    await page.goto(served.url);
    await page.waitForTimeout(600);
    expect(await page.locator("main img").count()).toBe(0);
    expect(dialogs).toEqual([]);
  });
});
