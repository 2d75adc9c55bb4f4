// Every code sample of the documentation is a file under examples/ and runs
// (issue 17, docs/decisions/0046): each TypeScript or JavaScript block of
// README.md, docs/cli.md and docs/runtimes.md is marked
// `<!-- example: examples/<file>[#region] -->` and is that file (or that
// region of it) byte for byte; every file under examples/ is named in
// example-runs.ts, which examples-run.slow.test.ts runs (child processes:
// the slow set), or as run by another test that does (the agent module by
// test/cli, the chat server by test/chat).
// The packed package runs examples/agent.ts on Node 20, 22 and 24, Deno and
// Bun (test/package/).

import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runs } from "./example-runs.js";
import { blocksOf, documents, exampleFiles, exampleText, isCode, repositoryRoot } from "./samples.js";

const blocks = documents.flatMap(blocksOf);
const marked = blocks.filter((block) => block.example !== undefined);

describe("the documentation's code samples", () => {
  it("every TypeScript and JavaScript block is marked as an example", () => {
    const unmarked = blocks.filter((block) => isCode(block) && block.example === undefined).map((block) => `${block.document}:${block.line}`);
    expect(unmarked).toEqual([]);
    expect(marked.map((block) => block.example!.file)).toContain("examples/quickstart.ts");
  });

  for (const block of marked) {
    const { file, region } = block.example!;
    it(`${block.document}:${block.line} is ${file}${region === undefined ? "" : `#${region}`}`, () => {
      expect(isCode(block), "a marked block is TypeScript or JavaScript").toBe(true);
      expect(block.text).toBe(exampleText(file, region));
    });
  }

  it("the examples import the package by its name, never the sources by path", () => {
    const byPath = exampleFiles().filter((file) => /from "\.\.?\//.test(readFileSync(join(repositoryRoot, file), "utf8")));
    expect(byPath).toEqual([]);
  });

  it("every file under examples/ is run (here or by the test named), and every run is a file", () => {
    expect(exampleFiles()).toEqual(Object.keys(runs).sort());
    for (const [file, how] of Object.entries(runs)) {
      if (!("runBy" in how)) continue;
      expect(existsSync(join(repositoryRoot, how.runBy)), how.runBy).toBe(true);
      const test = readFileSync(join(repositoryRoot, how.runBy), "utf8");
      const helpers = existsSync(join(repositoryRoot, how.runBy, "..", "helpers.ts"))
        ? readFileSync(join(repositoryRoot, how.runBy, "..", "helpers.ts"), "utf8")
        : "";
      expect(`${test}\n${helpers}`.includes(file), `${how.runBy} (or its helpers.ts) names ${file}`).toBe(true);
    }
  });
});
