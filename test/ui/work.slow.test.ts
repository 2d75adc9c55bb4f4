// The dashboard as a place to work (decision 0083) in Chromium
// (playwright-core; test/support/chromium.ts): a person talks to an agent
// and watches the answer arrive without a reload, reads the conversation
// as a transcript, opens the waterfall and the prompt sent, approves with
// edited arguments as an identified person, and answers a typed wait
// through the form its schema makes.

import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveDashboard } from "../../host/ui/index.js";
import { launchChromium } from "./processes.js";
import { openWorkFixture, type WorkFixture } from "./work-fixture.js";

let fixture: WorkFixture;
let served: Awaited<ReturnType<typeof serveDashboard>>;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  // Each model call takes 400 ms: long enough to see the page before the answer.
  fixture = await openWorkFixture({}, { latencyMs: 400 });
  served = await serveDashboard(fixture.environment, { pollMs: 250, identify: (request) => request.headers.get("x-user") ?? undefined });
  browser = await launchChromium();
  page = await browser.newPage();
  await page.setExtraHTTPHeaders({ "x-user": "ana@support" });
}, 30_000);

afterAll(async () => {
  await browser?.close();
  await served?.close();
  await fixture?.close();
});

const at = (path: string) => served.url.replace("/?", `${path}?`);

/** Sends a message from the talk page; the conversation page it lands on. */
async function talk(message: string): Promise<string> {
  await page.goto(at("/talk"));
  await page.locator("select[name=definition]").selectOption("support");
  await page.locator("textarea[name=message]").fill(message);
  await page.locator("form.talk button[type=submit]").click();
  await page.waitForURL(/\/conversations\//);
  return decodeURIComponent(/\/conversations\/([^?]+)/.exec(page.url())![1]!);
}

describe("working from the dashboard in chromium", () => {
  it("talks to an agent: the answer arrives on the conversation page without a reload, and the next message goes to the same conversation", async () => {
    const conversationId = await talk("hello");
    expect(await page.locator(".conversation-head h1").textContent()).toContain(`support · conversation ${conversationId}`);
    await page.evaluate(() => {
      (globalThis as unknown as { marker: number }).marker = 1;
    });
    await page.locator(".msg.assistant", { hasText: "You said: hello." }).waitFor({ timeout: 10_000 });
    expect(await page.evaluate(() => (globalThis as unknown as { marker?: number }).marker)).toBe(1); // updated live
    await page.locator("#send textarea[name=message]").fill("and again");
    await page.locator("#send button[type=submit]").click();
    await page.locator(".msg.assistant", { hasText: "You said: and again." }).waitFor({ timeout: 10_000 });
    expect(await page.locator(".transcript .exchange").count()).toBe(2);
    expect((await page.locator(".transcript .msg.user").allTextContents()).map((text) => text.replace(/\s+/g, " ").trim())).toEqual([
      "user hello",
      "user and again",
    ]);
  });

  it("decides with context: edits the arguments, approves as the identified person, and the timeline says who", async () => {
    const conversationId = await talk("Refund my order, it arrived broken");
    const card = page.locator(".transcript article.approval");
    await card.waitFor({ timeout: 10_000 });
    await card.locator("header a").first().click(); // the execution page, with the card and its context
    const context = page.locator("#actions .approval .context");
    expect(await context.locator(".turn.user").textContent()).toContain("Refund my order, it arrived broken");
    expect(await context.locator(".model-text").textContent()).toBe("I will refund order 42.");
    expect(await context.locator(".reasoning").textContent()).toContain("a refund is fair");
    await page.locator("#actions details.edit summary").click();
    const editor = page.locator("#actions textarea.json-edit").first();
    expect(JSON.parse(await editor.inputValue())).toEqual({ orderId: "42", amount: 80 });
    await editor.fill('{"orderId": "42", "amount": 30}');
    await page.locator("#actions button.approve").click();
    await page.locator('.summary[data-outcome="completed"]').waitFor({ timeout: 10_000 });
    expect(await page.locator(".notice.ok").textContent()).toContain("with edited arguments (as ana@support)");
    expect(await page.locator('li.step[data-kind="approval_decided"]').textContent()).toMatch(/approved with edited arguments\s+by ana@support/);
    // The conversation shows the decision inline, and the answer.
    await page.goto(at(`/conversations/${encodeURIComponent(conversationId)}`));
    expect(await page.locator(".transcript").textContent()).toContain('Done: {"orderId":"42","refunded":30}');
    expect(await page.locator(".transcript .decided-by").textContent()).toBe("ana@support");
  });

  it("shows where the time went: a bar per model call, tool batch and wait, the prompt folded until asked", async () => {
    await page.locator(".exchange-head a").last().click();
    const waterfall = page.locator("#waterfall");
    expect(await waterfall.locator("tr.span.model").count()).toBe(2);
    expect(await waterfall.locator("tr.span.tools").count()).toBe(1);
    expect(await waterfall.locator("tr.span.wait").count()).toBe(1);
    expect(await waterfall.locator("tr.span.model").first().textContent()).toContain("scripted-support-1");
    const took = await waterfall.locator("tr.span.model td.duration").first().textContent();
    expect(Number(/^(\d+) ms$/.exec(took!)?.[1] ?? (took!.endsWith(" s") ? 1000 : 0))).toBeGreaterThanOrEqual(400);
    const system = waterfall.locator("details.prompt").first().locator("pre");
    expect(await system.isVisible()).toBe(false);
    await waterfall.locator("details.prompt summary").first().click();
    expect(await system.isVisible()).toBe(true);
    expect(await system.textContent()).toBe("You help customers with their orders.");
  });

  it("answers a typed wait through the form its schema makes; a value the schema refuses is shown and nothing is decided", async () => {
    await talk("When can you deliver?");
    await page.locator(".transcript article.approval.typed-wait").waitFor({ timeout: 10_000 });
    const form = page.locator(".transcript form.typed");
    await form.locator("input[name='field:date']").fill("next week");
    await form.locator("select[name='field:slot']").selectOption("afternoon");
    await form.locator("input[name='field:floor']").fill("3");
    await form.locator("button.approve").click();
    expect(await page.locator(".notice.bad").textContent()).toContain("YYYY-MM-DD");
    expect(await page.locator(".transcript article.typed-wait").count()).toBe(1); // still waiting
    const again = page.locator(".transcript form.typed");
    await again.locator("input[name='field:date']").fill("2027-03-01");
    await again.locator("input[name='field:rush']").check();
    await again.locator("select[name='field:slot']").selectOption("afternoon");
    await again.locator("input[name='field:floor']").fill("3");
    await again.locator("button.approve").click();
    await page.locator(".msg.assistant", { hasText: "Done:" }).waitFor({ timeout: 10_000 });
    expect(await page.locator(".transcript").textContent()).toContain('Done: {"date":"2027-03-01","rush":true,"slot":"afternoon","floor":3}');
    expect(await page.locator(".transcript .decided-by").last().textContent()).toBe("ana@support");
  });
});
