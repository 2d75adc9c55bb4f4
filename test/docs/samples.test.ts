// Every code sample of the documentation is a file under examples/ and runs
// (issue 17, docs/decisions/0046): each TypeScript or JavaScript block of
// README.md, docs/cli.md and docs/runtimes.md is marked
// `<!-- example: examples/<file>[#region] -->` and is that file (or that
// region of it) byte for byte; every file under examples/ runs here — its
// `phronomy` imports pointed at the sources, in a fresh directory — on its
// runtime (Node through tsx, or Bun's own binary), exits 0 with nothing on
// stderr and prints what `runs` says, or is named as run by another test
// that does (the agent module by test/cli, the chat server by test/chat).
// The packed package runs examples/agent.ts on Node 20, 22 and 24, Deno and
// Bun (test/package/).

import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { finished } from "../package/packed-project.js";
import { freshSchema, postgresUrl } from "../postgres/database.js";
import { childNodeFlags } from "../support/node-flags.js";
import { blocksOf, documents, exampleFiles, exampleText, fromSources, isCode, repositoryRoot } from "./samples.js";

const samplesRoot = join(repositoryRoot, "node_modules", ".cache", "phronomy-samples");
const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/.source;

interface Runs {
  readonly runtime: "node" | "bun";
  /** The lines it prints, in order: each a string or a pattern of the whole line. */
  readonly prints: readonly (string | RegExp)[];
  /** Its environment variables beside the test's. */
  readonly env?: () => Record<string, string>;
}

/** How each example is checked. */
const runs: Readonly<Record<string, Runs | { readonly runBy: string }>> = {
  "examples/quickstart.ts": {
    runtime: "node",
    prints: ["model_call_started", "model_call_finished", "tool_call_started", "tool_call_finished", "model_call_started", "model_call_finished", "done", new RegExp(`^Order 42 has shipped\\. \\d+ ${uuid}$`)],
  },
  "examples/conversations.ts": { runtime: "node", prints: ['ada 200 {"output":"Order 42 is shipped."}', 'grace 200 {"output":"Order 7 is packed."}', "ada grace"] },
  "examples/busy-conversation.ts": {
    runtime: "node",
    prints: ["the queue is full: try again later", "second was queued", "first: CANCELLED", "second: Order 43 has shipped.", "the interrupting message: Your order is cancelled."],
  },
  "examples/from-the-ai-sdk.ts": { runtime: "node", prints: ['{"orderId":"42","status":"out for delivery"} 0.2'] },
  "examples/retention.ts": {
    runtime: "node",
    prints: ['nothing finished an hour ago: {"executions":0,"steps":0,"journal":0,"approvals":0}', /^chat's, finished now, pruned: \{"executions":1,"steps":\d+,/, "left: refunds"],
  },
  "examples/cancel-retry.ts": {
    runtime: "node",
    prints: ["the first run: CANCELLED", "cancelled: cancelled", "retried: completed Order 42 has shipped.", /^timeline from the retry on: retried .* terminal$/],
  },
  "examples/hono-chat.ts": {
    runtime: "node",
    prints: [
      /^200 text\/event-stream(;.*)? start start-step tool-input-available tool-output-available finish-step start-step text-start (text-delta )+text-end finish-step finish$/,
      /^resumed after the third chunk: start tool-output-available finish-step start-step text-start (text-delta )+text-end finish-step finish$/,
    ],
  },
  "examples/dashboard-bun.ts": { runtime: "bun", prints: [/^http:\/\/127\.0\.0\.1:\d+\/admin\/agents\/\?token=/, "page 200 true without the token 403"] },
  // The test server, a fresh schema dropped after the test (test/postgres/database.ts).
  "examples/postgres.ts": { runtime: "node", prints: ["Order 42 has shipped.", "sent twice, ran once: true"], env: () => ({ DATABASE_URL: postgresUrl, PHRONOMY_SCHEMA: freshSchema() }) },
  "examples/agent.ts": { runtime: "node", prints: ["completed Order 42 is out for delivery."] },
  "examples/support-agent.ts": { runBy: "test/cli/run.test.ts" },
  "examples/chat-server.ts": { runBy: "test/chat/example-server.test.ts" },
};

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
      const helpers = existsSync(join(repositoryRoot, how.runBy, "..", "helpers.ts")) ? readFileSync(join(repositoryRoot, how.runBy, "..", "helpers.ts"), "utf8") : "";
      expect(`${test}\n${helpers}`.includes(file), `${how.runBy} (or its helpers.ts) names ${file}`).toBe(true);
    }
  });
});

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
        const command = how.runtime === "node"
          ? [process.execPath, ...childNodeFlags, join(repositoryRoot, "node_modules", "tsx", "dist", "cli.mjs"), script]
          : [join(repositoryRoot, "node_modules", ".bin", "bun"), "--unhandled-rejections=strict", script];
        const child = spawn(command[0]!, command.slice(1), { cwd: directory, env: { ...process.env, NO_COLOR: "1", ...how.env?.() }, stdio: ["ignore", "pipe", "pipe"] });
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
