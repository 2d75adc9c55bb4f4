// `npm run demo -- --ui` as a person uses it: the command prints the
// dashboard's URL; in chromium the demo's execution waits for approval; a
// click on Approve runs the refund and the page shows the execution
// complete, while the command prints the outcome and its timeline.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { launchChromium, runCli, until } from "./processes.js";

it("demo --ui: the execution waits in the page, a click approves it, the page shows it complete", async () => {
  const directory = await mkdtemp(join(tmpdir(), "phronomy-demo-ui-"));
  const demo = runCli(["demo", "--ui", "--store", join(directory, "store.db")], { CI: "1" });
  const browser = await launchChromium();
  try {
    const url = await demo.dashboardUrl();
    const page = await browser.newPage();
    await page.goto(url.href);
    const approval = page.locator("#approvals article").first();
    expect(await approval.textContent()).toContain("issueRefund");
    await approval.locator("header a").click();
    expect(await page.locator(".summary .badge").textContent()).toBe("waiting for approval");
    await page.locator("button.approve").click();
    await page.locator('.summary[data-outcome="completed"]').waitFor({ timeout: 15_000 });
    expect(await page.locator('li.step[data-kind="tool_results"]').last().textContent()).toContain("R-");
    await until(() => /5\. completed/.exec(demo.output())?.[0], demo.output);
    expect(demo.output()).toContain("Durable timeline");
  } finally {
    await browser.close();
    demo.child.kill("SIGINT");
    expect(await demo.exited).toBe(0);
    await rm(directory, { recursive: true, force: true });
  }
}, 60_000);
