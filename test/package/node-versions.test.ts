// The packed package on Node 22 and 24 without better-sqlite3 (issue 17,
// docs/decisions/0040, 0046 and 0060): an application that installs only
// `phronomy` (and `ai`) runs on Node's built-in `node:sqlite`, with no
// native build. On each version (22 is also runtimes.test.ts's Node) the
// packed-package suite runs what applies there:
//
// * the smoke phases (smoke.mjs: a run, a crash inside a tool, recovery
//   with the same idempotency key, an approval, verify), which report the
//   driver the store chose — node:sqlite — and the line it said so with
//   (at the logger's debug level, as it opened);
// * the types: a strict consumer (`strict`, `skipLibCheck: false`,
//   node16 resolution) compiled by tsc running on that Node, then run
//   there as TypeScript (Node strips the types);
// * examples/agent.ts, the docs/runtimes.md program, run as documented
//   there (`node agent.ts`; Deno and Bun are runtimes.test.ts's).
//
// Node 20, past its end of life and older than the AI SDK 7 allows, is
// refused: `Phronomy.open` rejects with UNSUPPORTED_RUNTIME naming the
// version found and the one needed, and the CLI says so (decision 0060).
// The project installs no optional peer but `ai`: a postgres:// store is refused
// naming `pg`, and the CLI's `--model openai-compatible:…` naming
// `@ai-sdk/openai-compatible`.
//
// The Node binaries are the registry's `node-<platform>-<arch>` packages at
// fixed versions, fetched once into node_modules/.cache.

import { existsSync, mkdirSync, mkdtempSync, rmSync, copyFileSync, symlinkSync, writeFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { finished, installedPackage, installProject, nodeBinary, packTarball, repositoryRoot, reported } from "./packed-project.js";
import { childNodeFlags } from "../support/node-flags.js";
import { compilerOptions, strictConsumer } from "./strict-consumer.js";

const versions = ["22.23.5", "24.22.3"] as const;
/** A Node the package refuses (decision 0060). */
const unsupportedVersion = "20.20.2";
const crashExitCode = 75;
/** tsc checks every declaration file the consumer reaches (the AI SDK's
 * too): a minute and more on a loaded 2-core machine. */
const tscTimeoutMs = 240_000;

let workspace: string;
let project: string;

async function smoke(node: string, phase: string, store: string, expectedCode = 0): Promise<Record<string, unknown>> {
  const child = spawn(node, [...childNodeFlags, "smoke.mjs", phase, store], {
    cwd: project,
    env: { ...process.env, NO_COLOR: "1", PHRONOMY_SQLITE_DRIVER: "" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  child.stdin?.end();
  const result = await finished(child, `smoke ${phase} on ${node}`);
  const facts = reported(result.stdout, "SMOKE");
  if (result.code !== expectedCode || facts === undefined)
    throw new Error(`smoke ${phase} on ${node} exited ${result.code} (expected ${expectedCode})\n${result.stdout}\n${result.stderr}`);
  return facts;
}

beforeAll(async () => {
  workspace = mkdtempSync(join(tmpdir(), "phronomy-node-versions-"));
  project = join(workspace, "project");
  const packed = await packTarball(workspace);
  // `ai` runs every model call (docs/decisions/0033); no other peer. zod for
  // the example; what a strict consumer compiles with (types.test.ts says why
  // @types/json-schema).
  await installProject(project, packed.path, [installedPackage("ai"), installedPackage("zod"), installedPackage("@types/node"), "@types/json-schema@7"]);
  symlinkSync(join(repositoryRoot, "node_modules", "typescript"), join(project, "node_modules", "typescript"), "dir");
  copyFileSync(join(repositoryRoot, "test", "package", "smoke.mjs"), join(project, "smoke.mjs"));
  copyFileSync(join(repositoryRoot, "examples", "agent.ts"), join(project, "agent.ts"));
  writeFileSync(join(project, "consumer.ts"), strictConsumer);
  writeFileSync(join(project, "tsconfig.strict.json"), JSON.stringify({ compilerOptions: compilerOptions("node16", "node16"), files: ["consumer.ts"] }));
}, 600_000);

afterAll(() => {
  if (workspace !== undefined) rmSync(workspace, { recursive: true, force: true });
});

/** Runs `script` (a path in the project) on `node` in a directory of its own. */
async function runOn(
  node: string,
  directory: string,
  script: readonly string[],
  timeoutMs?: number,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  mkdirSync(join(directory, "data"), { recursive: true });
  const child = spawn(node, [...childNodeFlags, ...script], {
    cwd: directory,
    env: { ...process.env, NO_COLOR: "1", PHRONOMY_SQLITE_DRIVER: "" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  child.stdin?.end();
  return finished(child, `${script.join(" ")} on ${node}`, timeoutMs);
}

describe("the packed package without better-sqlite3", () => {
  for (const version of versions) {
    it(`Node ${version}: the store picks node:sqlite and says so; runs, crashes, recovers and verifies`, async () => {
      const node = await nodeBinary(version);
      const store = join(workspace, `store-${version}.db`);
      const written = await smoke(node, "run", store);
      expect(written).toMatchObject({ phase: "run", driver: "node:sqlite" });
      expect(written["storeSaid"]).toBe(`[phronomy] the SQLite store at ${store} runs on node:sqlite`);
      const crashed = await smoke(node, "crash", store, crashExitCode);
      const resumed = await smoke(node, "resume", store);
      expect(resumed).toMatchObject({
        driver: "node:sqlite",
        shipExecution: crashed["shipExecution"],
        refundExecution: written["refundExecution"],
        shipContinuation: "framework_tools",
      });
      expect(resumed["idempotencyKey"]).toBe(`${String(crashed["shipExecution"])}:call-0-0`);
      expect(await smoke(node, "verify", store)).toMatchObject({ executions: 4, byAgent: { support: 2, refunds: 1, shipping: 1 } });
    }, 300_000);

    it(`Node ${version}: a strict consumer compiles (tsc on this Node, skipLibCheck: false) and runs as TypeScript`, async () => {
      const node = await nodeBinary(version);
      const compiled = await runOn(node, project, [join(project, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.strict.json"], tscTimeoutMs);
      expect(compiled.stdout + compiled.stderr).toBe("");
      expect(compiled.code).toBe(0);
      const ran = await runOn(node, join(workspace, `consumer-${version}`), [join(project, "consumer.ts")]);
      expect({ code: ran.code, stdout: ran.stdout }, ran.stderr).toEqual({ code: 0, stdout: "hi\n42\n" });
    }, 300_000);

    it(`Node ${version}: examples/agent.ts runs as docs/runtimes.md says (node agent.ts)`, async () => {
      const node = await nodeBinary(version);
      const ran = await runOn(node, join(workspace, `agent-${version}`), [join(project, "agent.ts")]);
      expect({ code: ran.code, stdout: ran.stdout }, ran.stderr).toEqual({ code: 0, stdout: "completed Order 42 is out for delivery.\n" });
    }, 300_000);
  }

  it(`Node ${unsupportedVersion}: Phronomy.open refuses with UNSUPPORTED_RUNTIME naming the version found and the one needed`, async () => {
    writeFileSync(
      join(project, "old-node.mjs"),
      [
        'import { Phronomy } from "phronomy";',
        "try {",
        '  await Phronomy.open({ store: "./data/agents.db" });',
        '  console.log("OPENED");',
        "} catch (error) {",
        "  console.log(`REFUSED ${JSON.stringify({ name: error.name, code: error.code, message: error.message, details: error.details })}`);",
        "}",
        "",
      ].join("\n"),
    );
    const node = await nodeBinary(unsupportedVersion);
    const result = await runOn(node, join(workspace, "old-node"), [join(project, "old-node.mjs")]);
    expect(reported(result.stdout, "REFUSED"), result.stdout + result.stderr).toEqual({
      name: "PhronomyError",
      code: "UNSUPPORTED_RUNTIME",
      message: expect.stringMatching(new RegExp(`^phronomy needs Node 22\\.13 or later; this is Node ${unsupportedVersion.replaceAll(".", "\\.")}\\. Upgrade`)),
      details: { runtime: "node", found: unsupportedVersion, needed: ">=22.13" },
    });
    const cli = join(project, "node_modules", "phronomy", "dist", "host", "cli", "cli.js");
    const demo = await runOn(node, join(workspace, "old-node-cli"), [cli, "demo", "--store", "demo.db"]);
    expect(demo.code, demo.stdout).not.toBe(0);
    expect(demo.stderr).toContain(`phronomy needs Node 22.13 or later; this is Node ${unsupportedVersion}`);
  }, 300_000);

  it("installs no optional peer but ai, and a postgres:// store without pg is refused naming it", async () => {
    expect(existsSync(join(project, "node_modules", "pg")), "pg is an optional peer").toBe(false);
    writeFileSync(
      join(project, "postgres.mjs"),
      [
        'import { Phronomy } from "phronomy";',
        "try {",
        '  await Phronomy.open({ store: "postgres://postgres@127.0.0.1:5432/test" });',
        '  console.log("OPENED");',
        "} catch (error) {",
        "  console.log(`REFUSED ${JSON.stringify({ code: error.code, message: error.message, details: error.details })}`);",
        "}",
        "",
      ].join("\n"),
    );
    const child = spawn(await nodeBinary(versions[0]), [...childNodeFlags, "postgres.mjs"], {
      cwd: project,
      env: { ...process.env, NO_COLOR: "1" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    child.stdin?.end();
    const result = await finished(child, "postgres.mjs");
    expect(reported(result.stdout, "REFUSED")).toMatchObject({
      code: "STORE",
      details: { missingPackage: "pg" },
      message: expect.stringContaining("npm install pg@"),
    });
  }, 120_000);

  it("--help names the command reference inside the installed package, and it is there", async () => {
    const cli = join(project, "node_modules", "phronomy", "dist", "host", "cli", "cli.js");
    const child = spawn(await nodeBinary(versions[0]), [...childNodeFlags, cli, "--help"], {
      cwd: project,
      env: { ...process.env, NO_COLOR: "1" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    child.stdin?.end();
    const result = await finished(child, "phronomy --help");
    const docs = /Docs: (.+)$/m.exec(result.stdout)?.[1];
    expect(docs).toBe(join(project, "node_modules", "phronomy", "docs", "cli.md"));
    expect(existsSync(docs!)).toBe(true);
  }, 120_000);

  it("the CLI asked for a real model without @ai-sdk/openai-compatible says which package to install", async () => {
    expect(existsSync(join(project, "node_modules", "@ai-sdk", "openai-compatible")), "an optional peer").toBe(false);
    writeFileSync(join(project, "agent.mjs"), 'export default { id: "support" };\n');
    const cli = join(project, "node_modules", "phronomy", "dist", "host", "cli", "cli.js");
    const child = spawn(
      await nodeBinary(versions[0]),
      [
        ...childNodeFlags,
        cli,
        "run",
        "agent.mjs",
        "hello",
        "--model",
        "openai-compatible:m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--store",
        join(workspace, "cli.db"),
      ],
      { cwd: project, env: { ...process.env, NO_COLOR: "1" }, stdio: ["pipe", "pipe", "pipe"] },
    );
    child.stdin?.end();
    const result = await finished(child, "phronomy run --model");
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("npm install @ai-sdk/openai-compatible");
  }, 120_000);
});
