// `phronomy/chat` loads in a browser (docs/decisions/0072): bundled for
// the browser platform with every package resolved (nothing left
// external), it needs no `node:` module and no run-time import of `ai`;
// the bundle, loaded on its own, builds a transport that reconnects.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

interface Esbuild {
  build(options: Record<string, unknown>): Promise<{ outputFiles: { text: string }[]; metafile: { inputs: Record<string, unknown> } }>;
}

const root = fileURLToPath(new URL("../../", import.meta.url));
const entry = fileURLToPath(new URL("../../host/chat/index.ts", import.meta.url));

/** esbuild, as tsx brings it (test/support/store-worker-bundle.ts does the same). */
function loadEsbuild(): Esbuild {
  const fromRoot = createRequire(root);
  return createRequire(fromRoot.resolve("tsx/package.json"))("esbuild") as Esbuild;
}

describe("the phronomy/chat entry", () => {
  it("bundles for the browser with nothing external, no node: module, no ai at run time; the bundle builds a transport", async () => {
    const result = await loadEsbuild().build({
      entryPoints: [entry],
      bundle: true,
      platform: "browser",
      format: "esm",
      write: false,
      metafile: true,
      logLevel: "silent",
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(
      inputs.every((input) => input.startsWith("host/")),
      inputs.join(", "),
    ).toBe(true);
    expect(inputs).toContain("host/chat/transport.ts");
    const text = result.outputFiles[0]!.text;
    expect(text).not.toMatch(/["']node:/);
    const directory = mkdtempSync(join(tmpdir(), "phronomy-chat-entry-"));
    try {
      const file = join(directory, "chat.mjs");
      writeFileSync(file, text);
      const loaded = (await import(pathToFileURL(file).href)) as typeof import("../../host/chat/index.js");
      const transport = new loaded.PhronomyChatTransport({ api: "/api/chat" });
      expect(transport.resumeStreamIsReplay).toBe(true);
      expect(loaded.reconnectAttemptsMaxDefault).toBe(8);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
