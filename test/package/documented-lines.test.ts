// Every install and run line of the documentation runs (issue 24, decision
// 0060): the lines of README.md, docs/cli.md and docs/runtimes.md — in shell
// blocks and in inline code — that install the package (`npm install
// phronomy …`, `bun add phronomy …`, `npx -p phronomy … phronomy demo`) or
// run the minimal agent (`node agent.mjs`, `deno run … agent.ts`, `bun
// agent.ts` …) are run as written, with the packed tarball in place of
// `phronomy` (it is not fetched from the registry) and the Node the
// package supports first on PATH (the registry's Node 22: this machine's
// may be older). Each install runs in a fresh directory and must succeed;
// then every run line of its runtime runs there (after each npm install the
// Node and Deno lines, after each Bun install the Bun lines), with
// examples/agent.ts as agent.ts and agent.mjs and zod added as the page
// says ("add a Standard Schema library"), and must print the agent's
// answer: an install line that leaves out what the agent needs fails.

import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blocksOf, documents, isShell } from "../docs/samples.js";
import { buildTimeoutMs, finished, nodeBinary, packageNodeVersion, packTarball, repositoryRoot, type Finished } from "./packed-project.js";

const installPattern = /^(npm install phronomy\b.*|bun add phronomy\b.*|npx -p phronomy .* phronomy demo)$/;
const runPattern = /^(mkdir -p data && )?(node agent\.mjs|npx tsx agent\.ts|bun agent\.ts|deno run .*agent\.(ts|mjs))$/;

interface Line {
  readonly where: string;
  readonly line: string;
}

/** The commands of `text`, its comment dropped, split at `;` (a `mkdir -p data && …` stays one line). */
function commandsIn(text: string): string[] {
  return text
    .replace(/\s+#.*$/, "")
    .split(/\s*;\s*/)
    .map((command) => command.trim())
    .filter((command) => command.length > 0);
}

/** Every command line the documents show, in shell blocks and inline code. */
function documentedLines(): Line[] {
  const lines: Line[] = [];
  for (const document of documents) {
    for (const block of blocksOf(document).filter(isShell)) {
      block.text.split("\n").forEach((text, index) => {
        if (!text.trimStart().startsWith("#")) for (const line of commandsIn(text)) lines.push({ where: `${document}:${block.line + 1 + index}`, line });
      });
    }
    readFileSync(join(repositoryRoot, document), "utf8")
      .split("\n")
      .forEach((text, index) => {
        for (const match of text.matchAll(/`([^`]+)`/g)) lines.push({ where: `${document}:${index + 1}`, line: match[1]!.trim() });
      });
  }
  return lines;
}

const documented = documentedLines();
const installs = [...new Set(documented.filter(({ line }) => installPattern.test(line)).map(({ line }) => line))];
const runs = [...new Set(documented.filter(({ line }) => runPattern.test(line)).map(({ line }) => line))];

let workspace: string;
let tarball: string;
let path: string;
/** The directory each install line made. */
const installed = new Map<string, string>();

/** `line` through the shell in `directory`, `phronomy` (as a package) the tarball. */
function shell(line: string, directory: string, timeoutMs = buildTimeoutMs): Promise<Finished> {
  const command = line.replace(/(npm install|bun add) phronomy\b/, `$1 ${tarball}`).replace(/-p phronomy /, `-p ${tarball} `);
  const env = { ...process.env, PATH: path, NO_COLOR: "1", npm_config_prefer_offline: "true", npm_config_yes: "true" };
  const child = spawn("sh", ["-c", command], { cwd: directory, env, stdio: ["ignore", "pipe", "pipe"] });
  return finished(child, `${command} in ${directory}`, timeoutMs);
}

/** Whether `runLine` runs in a project `installLine` made: Bun's for bun, npm's for Node and Deno. */
function runsAfter(installLine: string, runLine: string): boolean {
  return /(^| )bun agent/.test(runLine) ? installLine.startsWith("bun add") : installLine.startsWith("npm install");
}

/** Every run line after every install line of its runtime. */
const pairs = installs.flatMap((install) => runs.filter((run) => runsAfter(install, run)).map((run) => [run, install] as const));

beforeAll(async () => {
  workspace = mkdtempSync(join(tmpdir(), "phronomy-documented-"));
  tarball = (await packTarball(workspace)).path;
  const node = await nodeBinary(packageNodeVersion);
  path = [dirname(node), join(repositoryRoot, "node_modules", ".bin"), process.env["PATH"] ?? ""].join(":");
}, buildTimeoutMs + 120_000);

afterAll(() => {
  if (workspace !== undefined) rmSync(workspace, { recursive: true, force: true });
});

describe("the documentation's install and run lines", () => {
  it("are found: npm's and Bun's installs, the npx demo, and a run line per runtime", () => {
    expect(installs).toEqual(expect.arrayContaining(["npm install phronomy ai", "bun add phronomy ai", "npx -p phronomy -p ai@7 phronomy demo"]));
    const runtimesRun = ["node agent.mjs", "bun agent.ts", "deno run"].filter((start) =>
      runs.some((line) => line.replace(/^mkdir -p data && /, "").startsWith(start)),
    );
    expect(runtimesRun).toEqual(["node agent.mjs", "bun agent.ts", "deno run"]);
    for (const line of runs)
      expect(
        installs.some((install) => runsAfter(install, line)),
        `an install line for "${line}"`,
      ).toBe(true);
  });

  it.each(installs)(
    "`%s` installs (the packed tarball for phronomy)",
    async (line) => {
      const directory = join(workspace, `install-${installed.size}`);
      mkdirSync(directory, { recursive: true });
      const result = await shell(line.startsWith("npx") ? line : `echo '{"name":"app","private":true,"type":"module"}' > package.json && ${line}`, directory);
      expect(result.code, `${line}\n${result.stdout}\n${result.stderr}`).toBe(0);
      if (line.startsWith("npx")) expect(result.stdout).toContain("refund");
      installed.set(line, directory);
    },
    buildTimeoutMs,
  );

  it.each(pairs)(
    "`%s` runs the agent after `%s`",
    async (line, install) => {
      const directory = installed.get(install)!;
      expect(directory, "its install ran").toBeDefined();
      for (const file of ["agent.ts", "agent.mjs"]) copyFileSync(join(repositoryRoot, "examples", "agent.ts"), join(directory, file));
      const added = await shell(line.includes("bun agent") ? "bun add zod" : "npm install zod", directory);
      expect(added.code, added.stderr).toBe(0);
      rmSync(join(directory, "data"), { recursive: true, force: true });
      const ran = await shell(line.startsWith("mkdir") ? line : `mkdir -p data && ${line}`, directory, 120_000);
      expect({ code: ran.code, stdout: ran.stdout }, ran.stderr).toEqual({ code: 0, stdout: "completed Order 42 is out for delivery.\n" });
    },
    buildTimeoutMs,
  );
});
