// Every file under examples/ runs (issue 17, docs/decisions/0046): its
// `phronomy` imports pointed at the sources, in a fresh directory, on its
// runtime (Node through tsx, or Bun's own binary), it exits 0 with nothing
// on stderr and prints what example-runs.ts says. A child process each: the
// slow set (samples.test.ts checks the documents' blocks are these files).

import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { finished } from "../package/packed-project.js";
import { childNodeFlags } from "../support/node-flags.js";
import { runs } from "./example-runs.js";
import { fromSources, repositoryRoot } from "./samples.js";

const samplesRoot = join(repositoryRoot, "node_modules", ".cache", "phronomy-samples");

describe("the examples run", () => {
  for (const [file, how] of Object.entries(runs)) {
    if ("runBy" in how) continue;
    it(`${file} on ${how.runtime} prints what it should`, async () => {
      // Inside the checkout, so that the example's own imports (zod, hono,
      // ai) resolve from its node_modules; its store is made there too.
      mkdirSync(samplesRoot, { recursive: true });
      const directory = mkdtempSync(join(samplesRoot, "sample-"));
      try {
        mkdirSync(join(directory, "data"));
        const script = join(directory, how.runtime === "node" ? "sample.mts" : "sample.ts");
        writeFileSync(script, fromSources(readFileSync(join(repositoryRoot, file), "utf8")));
        const command =
          how.runtime === "node"
            ? [process.execPath, ...childNodeFlags, join(repositoryRoot, "node_modules", "tsx", "dist", "cli.mjs"), script]
            : [join(repositoryRoot, "node_modules", ".bin", "bun"), "--unhandled-rejections=strict", script];
        const child = spawn(command[0]!, command.slice(1), {
          cwd: directory,
          env: { ...process.env, NO_COLOR: "1", ...how.env?.() },
          stdio: ["ignore", "pipe", "pipe"],
        });
        const result = await finished(child, `${how.runtime} ${file}`);
        expect(result.stderr).toBe("");
        expect(result.code).toBe(0);
        const lines = result.stdout.trimEnd().split("\n");
        expect(lines, result.stdout).toHaveLength(how.prints.length);
        how.prints.forEach((expected, index) => {
          if (typeof expected === "string") expect(lines[index]).toBe(expected);
          else expect(lines[index]).toMatch(expected);
        });
      } finally {
        rmSync(directory, { recursive: true, force: true });
      }
    }, 120_000);
  }
});
