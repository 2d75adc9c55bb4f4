// `npm run demo -- --ui` as a person uses it: the command prints the
// dashboard's URL; in chromium the demo's execution waits for approval; a
// click on Approve runs the refund and the page shows the execution
// complete, while the command prints the outcome and its timeline.

import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { expect, it } from "vitest";
import { childNodeFlags } from "../support/node-flags.js";
import { launcher, repositoryRoot } from "../cli/helpers.js";

const chromiumPath = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium";

it("demo --ui: the execution waits in the page, a click approves it, the page shows it complete", async () => {
  expect(existsSync(chromiumPath), `no chromium at ${chromiumPath}`).toBe(true);
  const directory = await mkdtemp(join(tmpdir(), "phronomy-demo-ui-"));
  const child = spawn(process.execPath, [...childNodeFlags, launcher, "demo", "--ui", "--store", join(directory, "store.db")], {
    cwd: repositoryRoot, env: { ...process.env, NO_COLOR: "1", CI: "1" },
  });
  let output = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => { output += chunk; });
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => { output += chunk; });
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  const browser = await chromium.launch({ executablePath: chromiumPath, args: ["--no-sandbox"] });
  try {
    const url = await until(() => /(http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]+)/.exec(output)?.[1], () => output);
    const page = await browser.newPage();
    await page.goto(url);
    const approval = page.locator("#approvals article").first();
    expect(await approval.textContent()).toContain("issueRefund");
    await approval.locator("header a").click();
    expect(await page.locator(".summary .badge").textContent()).toBe("waiting for approval");
    await page.locator("button.approve").click();
    await page.locator('.summary[data-outcome="completed"]').waitFor({ timeout: 15_000 });
    expect(await page.locator('li.step[data-kind="tool_results"]').last().textContent()).toContain("R-");
    await until(() => /5\. completed/.exec(output)?.[0], () => output);
    expect(output).toContain("Durable timeline");
  } finally {
    await browser.close();
    child.kill("SIGINT");
    expect(await exited).toBe(0);
    await rm(directory, { recursive: true, force: true });
  }
}, 60_000);

async function until<T>(probe: () => T | undefined, shown: () => string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out; output so far:\n${shown()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
