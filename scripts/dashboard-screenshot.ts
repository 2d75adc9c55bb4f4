// `npx tsx scripts/dashboard-screenshot.ts`: the README's picture of the
// dashboard (docs/images/dashboard.png). Runs `phronomy demo --ui` on a
// temporary store, opens its page in the tests' browser (playwright-core;
// test/support/chromium.ts: CHROMIUM_PATH, the system's chromium, or the
// one the devDependency @sparticuz/chromium ships), and takes the
// execution waiting for approval, then approves it.

import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { launchChromium } from "../test/support/chromium.js";

const root = resolve(import.meta.dirname, "..");
const directory = await mkdtemp(join(tmpdir(), "phronomy-screenshot-"));
const child = spawn(process.execPath, [join(root, "host/cli/bin.js"), "demo", "--ui", "--store", join(directory, "store.db")], {
  env: { ...process.env, NO_COLOR: "1" },
});
let output = "";
child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
  output += chunk;
});
child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
  output += chunk;
});
const browser = await launchChromium();
try {
  let url: string | undefined;
  for (let waited = 0; url === undefined; waited += 50) {
    if (waited > 30_000) throw new Error(`no dashboard URL; output:\n${output}`);
    url = /(http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]+)/.exec(output)?.[1];
    await new Promise((done) => setTimeout(done, 50));
  }
  const page = await browser.newPage({ viewport: { width: 1200, height: 860 }, deviceScaleFactor: 1 });
  await page.goto(url);
  await page.locator("#approvals article header a").first().click();
  await page.locator("input[name=reason]").first().fill("arrived damaged; photo checked");
  await page.screenshot({ path: join(root, "docs/images/dashboard.png") });
  await page.locator("button.approve").click();
  await page.locator('.summary[data-outcome="completed"]').waitFor({ timeout: 15_000 });
  console.log("docs/images/dashboard.png written; the approved execution completed");
} finally {
  await browser.close();
  child.kill("SIGINT");
  await rm(directory, { recursive: true, force: true });
}
