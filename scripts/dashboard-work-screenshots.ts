// `npm run docs:screenshots` (with scripts/dashboard-screenshot.ts): the
// README's pictures of working in the dashboard (decision 0083) —
// docs/images/dashboard-conversation.png (a conversation as a transcript,
// a typed wait's form inline), dashboard-decide.png (an approval card with
// the conversation's last turns and the model's reasoning, its arguments
// open for editing) and dashboard-waterfall.png (where an execution's time
// went, the prompt sent unfolded). A store in a temporary directory, the
// scripted "support" agent of the tests (test/ui/work-fixture.ts, each
// model call taking 300 ms), the tests' browser (test/support/chromium.ts).

import { join, resolve } from "node:path";
import { launchChromium } from "../test/support/chromium.js";
import { openWorkFixture } from "../test/ui/work-fixture.js";
import { serveDashboard } from "../host/ui/index.js";

const root = resolve(import.meta.dirname, "..");
const fixture = await openWorkFixture({}, { latencyMs: 300 });
const served = await serveDashboard(fixture.environment, { pollMs: 250, identify: (request) => request.headers.get("x-user") ?? undefined });
const browser = await launchChromium();
const at = (path: string) => served.url.replace("/?", `${path}?`);
try {
  const page = await browser.newPage({ viewport: { width: 1200, height: 860 }, deviceScaleFactor: 1 });
  await page.setExtraHTTPHeaders({ "x-user": "ana@support" });
  const send = async (message: string) => {
    await page.locator("#send textarea[name=message]").fill(message);
    await page.locator("#send button[type=submit]").click();
  };
  // A conversation: a greeting, a refund approved with a smaller amount, a delivery date asked.
  await page.goto(at("/talk"));
  await page.locator("textarea[name=message]").fill("Hello, my kettle arrived with a cracked lid");
  await page.locator("form.talk button[type=submit]").click();
  await page.locator(".msg.assistant", { hasText: "You said" }).waitFor({ timeout: 15_000 });
  const conversationUrl = page.url();
  await send("Refund order 42, please");
  await page.locator(".transcript article.approval").waitFor({ timeout: 15_000 });
  // The approval, decided with context.
  await page.locator(".transcript article.approval header a").first().click();
  await page.locator("#actions details.edit summary").click();
  await page.locator("#actions textarea.json-edit").first().fill('{\n  "orderId": "42",\n  "amount": 30\n}');
  await page.locator("#actions .approval input[name=reason]").fill("lid only: partial refund");
  await page.screenshot({ path: join(root, "docs/images/dashboard-decide.png") });
  await page.locator("#actions button.approve").click();
  await page.locator('.summary[data-outcome="completed"]').waitFor({ timeout: 15_000 });
  // Where its time went.
  await page.locator("#waterfall details.prompt summary").first().click();
  await page.locator("#waterfall").scrollIntoViewIfNeeded();
  await page.locator("#waterfall").screenshot({ path: join(root, "docs/images/dashboard-waterfall.png") });
  // The conversation, a typed wait pending in it.
  await page.goto(conversationUrl);
  await send("When can you deliver the replacement?");
  await page.locator(".transcript article.typed-wait").waitFor({ timeout: 15_000 });
  await page.locator(".transcript input[name='field:date']").fill("2027-03-01");
  await page.locator(".transcript article.typed-wait").scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(root, "docs/images/dashboard-conversation.png"), fullPage: true });
  console.log("docs/images/dashboard-decide.png, dashboard-waterfall.png and dashboard-conversation.png written");
} finally {
  await browser.close();
  await served.close();
  await fixture.close();
}
