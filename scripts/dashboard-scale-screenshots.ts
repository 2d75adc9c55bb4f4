// `npm run docs:screenshots` (with the other dashboard scripts): the
// README's pictures of the list at work (decisions 0082, 0089) —
// docs/images/dashboard-search.png (words searched within one agent
// definition's conversations, a page of them with the pager, rows
// selected), dashboard-paging.png (an older page of a search, with its
// pager) and dashboard-bulk.png (the confirmation page of a bulk
// cancel, listing exactly what it takes). A store in a temporary
// directory with two definitions, the scripted "support" agent of the
// tests (test/ui/work-fixture.ts) and a "billing" one, the tests' browser
// (test/support/chromium.ts).

import { join, resolve } from "node:path";
import { launchChromium } from "../test/support/chromium.js";
import { openWorkFixture } from "../test/ui/work-fixture.js";
import { serveDashboard } from "../host/ui/index.js";
import { scriptedModel } from "../host/testing.js";

const root = resolve(import.meta.dirname, "..");
const fixture = await openWorkFixture();
fixture.environment.agent({ name: "billing", model: scriptedModel(() => ({ text: "The invoice is corrected and sent again." })) });
const served = await serveDashboard(fixture.environment, { pollMs: 1_000 });
const browser = await launchChromium();
const at = (path: string, params: Record<string, string> = {}) => {
  const url = new URL(served.url.replace("/?", `${path}?`));
  for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
  return url.toString();
};
const cities = ["Lyon", "Porto", "Leeds", "Graz", "Turin", "Ghent"];
try {
  // 150 conversations: parcels asked about and refunds waiting (support), invoices (billing).
  const started: string[] = [];
  for (let index = 0; index < 150; index++) {
    const order = 4_100 + index;
    const [definition, message] =
      index % 3 === 2
        ? ["billing", `Invoice for order ${order} shows the wrong address`]
        : index % 10 === 0
          ? ["support", `Refund order ${order}, the parcel arrived damaged`]
          : ["support", `Where is my parcel for order ${order}? It left ${cities[index % cities.length]} on Monday`];
    const run = fixture.environment.admin.start(definition, message, { conversationId: `${definition}-${1_000 + index}` });
    run.result.catch(() => undefined); // the refunds are cancelled below
    started.push(await run.executionId);
  }
  for (const executionId of started) await fixture.until(executionId, (status) => status === "terminal" || status === "suspended");
  const page = await browser.newPage({ viewport: { width: 1200, height: 1100 }, deviceScaleFactor: 1 });
  // Words searched within one definition's completed conversations, a page of them, three selected.
  await page.goto(at("/", { definition: "support", status: "completed", text: "parcel lyon" }));
  const boxes = page.locator("#executions tbody input[type=checkbox]");
  for (const index of [0, 2, 3]) await boxes.nth(index).check();
  await page.screenshot({ path: join(root, "docs/images/dashboard-search.png") });
  // A page deep in a word's matches: the pager back to newer ones and the newest.
  await page.goto(at("/", { definition: "support", text: "parcel" }));
  await page.locator('a.page[rel="next"]').click();
  await page.locator('a.page[rel="prev"]').waitFor();
  await page.setViewportSize({ width: 1200, height: 420 });
  await page.locator("nav.pager").scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(root, "docs/images/dashboard-paging.png") });
  await page.setViewportSize({ width: 1200, height: 900 });
  // The refunds waiting, all that match cancelled after a confirmation: the page lists them.
  await page.goto(at("/", { definition: "support", status: "suspended", text: "refund" }));
  await page.locator("#bulk button[name=matching][value=cancel]").click();
  await page.locator("#bulk-targets").waitFor();
  await page.screenshot({ path: join(root, "docs/images/dashboard-bulk.png") });
  console.log("docs/images/dashboard-search.png, dashboard-paging.png and dashboard-bulk.png written");
} finally {
  await browser.close();
  await served.close();
  await fixture.close();
}
