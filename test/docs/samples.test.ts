// README's code samples cannot drift (issue 17): a ```ts block marked
// `<!-- example: examples/<file> -->` must be that file, byte for byte, and
// the file runs (its `phronomy` imports pointed at the sources) and exits
// 0 in a fresh directory.

import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { finished, repositoryRoot } from "../package/packed-project.js";
import { childNodeFlags } from "../support/node-flags.js";

const samplesRoot = join(repositoryRoot, "node_modules", ".cache", "phronomy-samples");
const readme = readFileSync(join(repositoryRoot, "README.md"), "utf8");
const marked = [...readme.matchAll(/<!-- example: (examples\/[\w./-]+) -->\n```ts\n([\s\S]*?)```\n/g)].map((match) => ({ file: match[1]!, block: match[2]! }));

/** The example with its package imports pointed at this checkout's sources. */
function fromSources(text: string): string {
  const entry = (path: string) => pathToFileURL(join(repositoryRoot, path)).href;
  return text.replaceAll(`from "phronomy/testing"`, `from "${entry("host/testing.ts")}"`).replaceAll(`from "phronomy"`, `from "${entry("host/index.ts")}"`);
}

describe("README's samples", () => {
  it("marks at least the quick start", () => {
    expect(marked.map((sample) => sample.file)).toContain("examples/quickstart.ts");
  });

  for (const { file, block } of marked) {
    it(`${file} is the README's block and runs`, async () => {
      expect(block).toBe(readFileSync(join(repositoryRoot, file), "utf8"));
      // Inside the checkout, so that the sample's own imports (zod) resolve
      // from its node_modules; the store it opens is made in the same place.
      mkdirSync(samplesRoot, { recursive: true });
      const directory = mkdtempSync(join(samplesRoot, "sample-"));
      try {
        const script = join(directory, "sample.mts");
        writeFileSync(script, fromSources(block));
        const tsx = join(repositoryRoot, "node_modules", "tsx", "dist", "cli.mjs");
        const child = spawn(process.execPath, [...childNodeFlags, tsx, script], { cwd: directory, env: process.env, stdio: ["ignore", "pipe", "pipe"] });
        const result = await finished(child, `tsx ${file}`);
        expect(result.stderr).toBe("");
        expect(result.code).toBe(0);
        expect(result.stdout).toContain("Order 42 has shipped.");
      } finally {
        rmSync(directory, { recursive: true, force: true });
      }
    }, 120_000);
  }
});
