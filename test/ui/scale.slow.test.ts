// The dashboard at scale in a real browser (chromium through playwright-core,
// as browser.slow.test.ts): paging by cursor, the search box, bulk cancel
// and retry with their confirmation step, counts over the whole store, the
// approvals section obeying the filter, a failed terminal's red dot, and
// secrets masked by their shape (docs/decisions/0082).

import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scriptedModel } from "../../host/testing.js";
import { serveDashboard } from "../../host/ui/index.js";
import { listShownMax } from "../../host/ui/list-page.js";
import { ended, openFixture, suspended, type Fixture } from "./fixture.js";
import { launchChromium } from "./processes.js";

let fixture: Fixture;
let served: Awaited<ReturnType<typeof serveDashboard>>;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  fixture = await openFixture();
  served = await serveDashboard(fixture.environment, { pollMs: 250 });
  browser = await launchChromium();
  page = await browser.newPage();
}, 30_000);

afterAll(async () => {
  await browser?.close();
  await served?.close();
  await fixture?.close();
});

const listWith = (params: Record<string, string>) => {
  const url = new URL(served.url);
  for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
  return url.toString();
};
const shownIds = () => page.locator("#executions tbody tr").evaluateAll((rows) => rows.map((row) => row.getAttribute("data-execution")));

describe("the dashboard at scale in chromium", () => {
  it("pages by cursor: older, newer, and back to the newest; the counts cover every execution", async () => {
    const ids: string[] = [];
    for (let index = 0; index < listShownMax + 5; index++) ids.push(await fixture.start(`hello ${index}`));
    for (const id of ids) await fixture.until(id, ended);
    const newestFirst = (await fixture.environment.executions({ limit: 1_000 })).map((row) => row.executionId);
    await page.goto(served.url);
    expect(await shownIds()).toEqual(newestFirst.slice(0, listShownMax));
    expect(await page.locator(".count").first().locator("b").textContent()).toBe(String(newestFirst.length));
    expect(await page.locator('a.page[rel="prev"]').count()).toBe(0);
    await page.locator('a.page[rel="next"]').click();
    await expect.poll(shownIds).toEqual(newestFirst.slice(listShownMax));
    expect(await page.locator('a.page[rel="next"]').count()).toBe(0);
    await page.locator('a.page[rel="prev"]').click();
    await expect.poll(shownIds).toEqual(newestFirst.slice(0, listShownMax));
  }, 60_000);

  it("searches inputs and outputs from the search box", async () => {
    const parcel = await fixture.start("where is my parcel");
    await fixture.until(parcel, ended);
    await page.goto(served.url);
    await page.locator('form.filter input[name="text"]').fill("PARCEL");
    await page.locator('form.filter button[type="submit"]').click();
    await expect.poll(shownIds).toEqual([parcel]);
    await page.locator('form.filter input[name="text"]').fill("hello 7");
    await page.locator('form.filter button[type="submit"]').click();
    await expect.poll(async () => (await shownIds()).length).toBe(1);
  });

  it("lists the conversations of one agent definition by its name (offered from the definitions here), beside the agent filter", async () => {
    const model = scriptedModel(() => ({ text: "Noted." }));
    const billing = fixture.environment.agent({ name: "billing", model });
    const shipping = fixture.environment.agent({ name: "shipping", model });
    const runs: { executionId: string }[] = [];
    // One after another, so their times order them.
    for (const run of [
      () => billing.conversation("bill-1").start("invoice one"),
      () => shipping.conversation("ship-1").start("a parcel"),
      () => billing.conversation("bill-2").start("invoice two"),
    ]) {
      const executionId = await run().executionId;
      await fixture.until(executionId, ended);
      runs.push({ executionId });
    }
    await page.goto(served.url);
    expect(await page.locator("#definition-names option").evaluateAll((options) => options.map((option) => option.getAttribute("value")))).toEqual(
      expect.arrayContaining(["billing", "shipping"]),
    );
    await page.locator('form.filter input[name="definition"]').fill("billing");
    await page.locator('form.filter button[type="submit"]').click();
    await expect.poll(shownIds).toEqual([runs[2]!.executionId, runs[0]!.executionId]);
    expect(await page.locator("#executions .definition").allTextContents()).toEqual(["billing", "billing"]);
    await page.locator('form.filter input[name="agent"]').fill("bill-1");
    await page.locator('form.filter button[type="submit"]').click();
    await expect.poll(shownIds).toEqual([runs[0]!.executionId]);
    await page.locator('form.filter input[name="definition"]').fill("shipping");
    await page.locator('form.filter button[type="submit"]').click();
    await expect.poll(async () => page.locator("#executions").textContent()).toContain("No execution matches.");
    await page.locator('form.filter input[name="agent"]').fill("");
    await page.locator('form.filter button[type="submit"]').click();
    await expect.poll(shownIds).toEqual([runs[1]!.executionId]);
  }, 60_000);

  it("shows approvals only when the status filter would list them, and masks a card number and a bearer token by their shape", async () => {
    const waiting = await fixture.start("refund", { orderId: "42", card: "4242 4242 4242 4242", note: "use Bearer abcdefghijklmnop123" });
    await fixture.until(waiting, suspended);
    await page.goto(listWith({ status: "suspended" }));
    const card = page.locator(`#approvals article[data-execution="${waiting}"]`);
    await card.waitFor();
    const text = (await card.textContent()) ?? "";
    expect(text).toContain("card ***4242");
    expect(text).toContain("Bearer ***");
    expect(text).not.toContain("4242 4242 4242 4242");
    expect(text).not.toContain("abcdefghijklmnop123");
    expect(text).toContain('"orderId": "42"');
    await page.goto(listWith({ status: "completed" }));
    expect(await page.locator("#approvals article").count()).toBe(0);
    expect(await page.locator("#approvals").textContent()).toContain("None matches the filter (1 waiting in all)");
    await fixture.environment.cancel(waiting);
  });

  it("cancels the selected after a confirmation, then retries all that match the filter after another; a failed terminal's dot is red", async () => {
    const slow = [await fixture.start("slow"), await fixture.start("slow")];
    for (const id of slow) await fixture.until(id, (status) => status === "active");
    await page.goto(listWith({ status: "active" }));
    for (const id of slow) await page.locator(`input[type="checkbox"][value="${id}"]`).check();
    await page.locator('#bulk button[name="action"][value="cancel"]').click();
    // The confirmation page lists exactly the selected; nothing is done yet.
    await page.locator("#bulk-targets").waitFor();
    expect(new Set(await page.locator("#bulk-targets tbody tr").evaluateAll((rows) => rows.map((row) => row.getAttribute("data-execution"))))).toEqual(
      new Set(slow),
    );
    expect((await fixture.environment.execution(slow[0]!))?.status).toBe("active");
    await page.locator('input[name="reason"]').fill("clearing the queue");
    await page.locator("#confirm-bulk").click();
    await page.locator(".notice.ok").waitFor();
    // The lookups in flight ignore the abort: each cancel takes once its lookup returns.
    expect(await page.locator(".notice.ok").textContent()).toBe("cancel of 2 executions: 0 cancelled, 2 stopping after their work in flight");
    fixture.releaseLookups();
    for (const id of slow) await fixture.until(id, (status, outcome) => status === "terminal" && outcome === "failed");

    // The failed terminal's dot is red, not green.
    await page.goto(served.url.replace("/?", `/executions/${slow[0]}?`));
    await page.locator("li.step.terminal.failed").waitFor();
    // Read at once in the page: the live region may swap the element between two calls.
    const dot = await page.evaluate(
      `(() => { const steps = document.querySelectorAll('li.step[data-kind="terminal"]'); return getComputedStyle(steps[steps.length - 1], "::before").backgroundColor; })()`,
    );
    expect(dot).toBe("rgb(180, 35, 24)");

    // Retry every execution the filter matches: the confirmation lists them.
    await page.goto(listWith({ status: "failed" }));
    await page.locator('#bulk button[name="matching"][value="retry"]').click();
    await page.locator("#bulk-targets").waitFor();
    const targets = await page.locator("#bulk-targets tbody tr").evaluateAll((rows) => rows.map((row) => row.getAttribute("data-execution")));
    expect(targets).toEqual(expect.arrayContaining(slow));
    await page.locator("#confirm-bulk").click();
    await page.locator(".notice.ok").waitFor();
    expect(await page.locator(".notice.ok").textContent()).toContain(`retry of ${targets.length} execution`);
    for (const id of slow) await fixture.until(id, (status, outcome) => status === "terminal" && outcome === "completed");
  }, 60_000);
});
