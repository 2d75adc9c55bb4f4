// Which browser the dashboard's tests drive (test/support/chromium.ts,
// decision 0060): CHROMIUM_PATH, else the system's chromium where it is
// installed, else the one the devDependency @sparticuz/chromium ships —
// so `npm install && npm run test:slow` needs no browser on the machine. The
// packaged one is unpacked and a page loads in it whatever the machine has.

import { createServer } from "node:http";
import { chromium } from "playwright-core";
import { describe, expect, it } from "vitest";
import { chooseChromium, locateChromium, systemChromiumPath } from "../support/chromium.js";

describe("the tests' browser", () => {
  it("is CHROMIUM_PATH when set, else the system's chromium where it exists, else the packaged one", () => {
    const installed = (path: string) => path === systemChromiumPath;
    const missing = () => false;
    expect(chooseChromium({ CHROMIUM_PATH: "/opt/chrome" }, installed)).toBe("CHROMIUM_PATH");
    expect(chooseChromium({}, installed)).toBe("system");
    expect(chooseChromium({ CHROMIUM_PATH: "" }, installed)).toBe("system");
    expect(chooseChromium({}, missing)).toBe("@sparticuz/chromium");
  });

  it("the packaged chromium unpacks and loads a page (as on a machine without chromium)", async () => {
    const server = createServer((_request, response) => response.end("<title>t</title><h1>hello from the packaged chromium</h1>"));
    await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
    // As on a machine without chromium: no CHROMIUM_PATH, no system browser.
    const location = await locateChromium({}, () => false);
    expect(location.source).toBe("@sparticuz/chromium");
    const env = { ...process.env, ...location.env } as Record<string, string>;
    const browser = await chromium.launch({ executablePath: location.executablePath, args: ["--no-sandbox"], env });
    try {
      const page = await browser.newPage();
      const address = server.address();
      await page.goto(`http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}/`);
      expect(await page.textContent("h1")).toBe("hello from the packaged chromium");
      console.log(`packaged chromium ${browser.version()} at ${location.executablePath}`);
    } finally {
      await browser.close();
      server.close();
    }
  }, 120_000);
});
