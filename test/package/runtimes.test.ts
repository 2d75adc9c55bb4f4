// The published package on Node, Deno and Bun (issue 6, SPEC §9): the
// tarball `npm pack` makes is installed into a fresh temporary project (not
// the source tree), and each runtime runs, from that project:
//
// * the smoke (`smoke.mjs`): open a store, the agent-run workload, a run
//   suspended for approval, a crash inside a tool, reopen, recovery with the
//   same idempotency key, the approval granted, verify; every phase of one
//   store on a different runtime, so a store written by one runtime is
//   recovered and read by the others;
// * the one-owner lock across runtimes: while one runtime owns a store,
//   the other two are refused at once, naming the owner;
// * visitors (SPEC §4.3, docs/decisions/0015): on each runtime, an owner
//   and a visitor in one process — the visitor lists the execution the
//   owner suspended for approval, is refused a write (StoreError, reason
//   `visitor`), files the approval with `agent.resume` and its run
//   completes once the owner applied it; and across processes and
//   runtimes, a visitor on one runtime approving beside an owner on
//   another (node → bun, bun → deno, deno → node);
// * differential fuzzing of the packaged core against the reference model
//   (`fuzz.ts`, compiled to plain JavaScript into the project);
// * examples/agent.ts, the program docs/runtimes.md runs on each runtime,
//   as that page runs it (`node agent.mjs` on Node — the file is plain
//   JavaScript too —, `bun agent.ts`,
//   `deno run --allow-read --allow-write --allow-sys=hostname agent.ts`).
//   Node 22 and 24 run it as `node agent.ts` in node-versions.test.ts.
//
// "node" is Node 22 (`packageNodeVersion`, fetched from the registry): the
// package needs 22.13 or later (decision 0060); there the store runs on
// node:sqlite.
//
// The project is set up by packed-project.ts (what it installs and links,
// and why). PACKAGE_FUZZ_RUNS and PACKAGE_FUZZ_SEED set the fuzzing.

import { spawn, type ChildProcess } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  buildTimeoutMs,
  finished,
  installedPackage,
  packagedFiles,
  installProject,
  packTarball,
  repositoryRoot as root,
  reported,
  runtimeNames,
  runtimes,
  startScript,
  succeed,
  type PackedTarball,
  type RuntimeName,
} from "./packed-project.js";
import { childNodeFlags } from "../support/node-flags.js";

// Deep streams (≈200 messages each, test/fuzz/arbitraries.ts): 300 of them
// are about twice the messages the 5,000 shallow streams were.
const fuzzRuns = Number(process.env.PACKAGE_FUZZ_RUNS ?? 300);
const fuzzSeed = Number(process.env.PACKAGE_FUZZ_SEED ?? Date.now() % 2_147_483_647);

/** The exit code smoke.mjs's `crash` phase dies with. */
const crashExitCode = 75;

let workspace: string;
let project: string;
let packed: PackedTarball;

beforeAll(async () => {
  workspace = mkdtempSync(join(tmpdir(), "phronomy-package-"));
  project = join(workspace, "project");
  packed = await packTarball(workspace);
  // The same fast-check as the repository's, so that a seed replays the
  // same streams under vitest; and the AI SDK (`ai`), the optional peer an
  // application that calls models installs beside Phronomy; zod, which
  // examples/agent.ts uses.
  await installProject(project, packed.path, [installedPackage("fast-check"), installedPackage("ai"), installedPackage("zod")]);
  copyFileSync(join(root, "test", "package", "smoke.mjs"), join(project, "smoke.mjs"));
  copyFileSync(join(root, "examples", "agent.ts"), join(project, "agent.ts"));
  copyFileSync(join(root, "examples", "agent.ts"), join(project, "agent.mjs"));
  await compileFuzzHarness(project);
}, 600_000);

afterAll(() => {
  if (workspace !== undefined) rmSync(workspace, { recursive: true, force: true });
});

/** fuzz.ts and what it imports from test/ and assembly/, as plain
 * JavaScript under `<project>/harness/` (it resolves "phronomy" and
 * "fast-check" from the project). */
async function compileFuzzHarness(directory: string): Promise<void> {
  const configPath = join(directory, "harness.tsconfig.json");
  writeFileSync(
    configPath,
    JSON.stringify({
      extends: join(root, "tsconfig.json"),
      compilerOptions: {
        noEmit: false,
        outDir: join(directory, "harness"),
        rootDir: root,
        noEmitOnError: true,
        typeRoots: [join(root, "node_modules", "@types")],
      },
      include: [],
      files: [join(root, "test", "package", "fuzz.ts"), join(root, "host", "types", "webassembly.d.ts")],
    }),
  );
  await succeed(process.execPath, [...childNodeFlags, join(root, "node_modules", "typescript", "bin", "tsc"), "-p", configPath], directory, buildTimeoutMs);
}

/** Runs one smoke phase; returns what it reported on its `SMOKE` line. */
async function smoke(runtime: RuntimeName, phase: string, store: string, expectedCode = 0): Promise<Record<string, unknown>> {
  const result = await finished(startScript(runtime, project, "smoke.mjs", [phase, store]), `smoke ${phase} on ${runtime}`);
  const facts = reported(result.stdout, "SMOKE");
  if (result.code !== expectedCode || facts === undefined) {
    throw new Error(`smoke ${phase} on ${runtime} exited ${result.code} (expected ${expectedCode})\n${result.stdout}\n${result.stderr}`);
  }
  expect(facts).toMatchObject({ phase, driver: runtimes[runtime].driver });
  return facts;
}

/** The runtimes from `offset` on, in a fixed rotation: node → bun → deno. */
function rotated(offset: number): RuntimeName[] {
  return runtimeNames.map((_, index) => runtimeNames[(index + offset) % runtimeNames.length]!);
}

// -- tests ------------------------------------------------------------------------

describe("the packed package", () => {
  it("holds the compiled JavaScript, its types and the release core; no install script, no source", () => {
    const paths = packed.files.map((file) => file.path);
    for (const path of [
      "package.json",
      "README.md",
      "LICENSE",
      "CHANGELOG.md",
      "dist/host/index.js",
      "dist/host/index.d.ts",
      "dist/host/testing.js",
      "dist/host/testing.d.ts",
      "dist/host/chat/index.js",
      "dist/host/chat/index.d.ts",
      "dist/host/store/sqlite/worker.js",
      "dist/build/core.release.wasm",
    ]) {
      expect(paths).toContain(path);
    }
    expect(paths.filter((path) => !path.startsWith("dist/") && !(packagedFiles as readonly string[]).includes(path))).toEqual([]);
    expect(paths.filter((path) => path.endsWith(".ts") && !path.endsWith(".d.ts"))).toEqual([]);
    const manifest = JSON.parse(readFileSync(join(project, "node_modules", "phronomy", "package.json"), "utf8")) as {
      scripts?: Record<string, string>;
      peerDependenciesMeta?: Record<string, { optional?: boolean }>;
    };
    for (const hook of ["preinstall", "install", "postinstall"]) expect(manifest.scripts?.[hook]).toBeUndefined();
    expect(manifest.peerDependenciesMeta?.["better-sqlite3"]?.optional).toBe(true);
    expect(existsSync(join(project, "node_modules", "phronomy", "dist", "build", "core.release.wasm"))).toBe(true);
    console.log(`package: ${packed.path}, ${packed.size} bytes packed, ${paths.length} files`);
  });

  it("runs the workload on every runtime, and a store written by one runtime is recovered and read by the others", async () => {
    // Three stores, each taken through its phases by the three runtimes in
    // turn, so that every runtime runs every phase and reads stores the two
    // others wrote. The stores are independent: they run side by side.
    await Promise.all(
      [0, 1, 2].map(async (offset) => {
        const [first, second, third] = rotated(offset) as [RuntimeName, RuntimeName, RuntimeName];
        const store = join(workspace, `store-${first}-${second}-${third}.db`);
        const written = await smoke(first, "run", store);
        const crashed = await smoke(second, "crash", store, crashExitCode);
        const resumed = await smoke(third, "resume", store);
        expect(resumed).toMatchObject({
          shipExecution: crashed["shipExecution"],
          refundExecution: written["refundExecution"],
          shipContinuation: "framework_tools",
        });
        expect(resumed["idempotencyKey"]).toBe(`${String(crashed["shipExecution"])}:call-0-0`);
        const verified = await smoke(first, "verify", store);
        expect(verified).toMatchObject({ executions: 4, byAgent: { support: 2, refunds: 1, shipping: 1 } });
      }),
    );
  });

  it("a script that leaves a rejection unhandled ends with an error on every runtime (Node and Bun even beside an unhandledRejection handler)", async () => {
    writeFileSync(
      join(project, "unhandled.mjs"),
      [
        'if (process.argv.includes("handler")) process.on("unhandledRejection", () => console.log("handled"));',
        'Promise.reject(new Error("left unhandled"));',
        'setTimeout(() => console.log("UNHANDLED still running"), 200);',
        "",
      ].join("\n"),
    );
    for (const runtime of runtimeNames) {
      // Deno has no --unhandled-rejections flag: a handler keeps it going, so it is checked without one.
      const scriptArguments = runtime === "deno" ? [] : ["handler"];
      const result = await finished(startScript(runtime, project, "unhandled.mjs", scriptArguments), `unhandled.mjs on ${runtime}`);
      expect({ runtime, code: result.code, stillRunning: result.stdout.includes("UNHANDLED still running") }).toEqual({
        runtime,
        code: 1,
        stillRunning: false,
      });
    }
  });

  it("one process owns a store whatever the runtime: the others are refused at once, naming the owner", async () => {
    for (const [owner, ...others] of [0, 1, 2].map(rotated) as [RuntimeName, RuntimeName, RuntimeName][]) {
      const store = join(workspace, `owned-by-${owner}.db`);
      const holder = startScript(owner, project, "smoke.mjs", ["hold", store]);
      const holderDone = finished(holder, `smoke hold on ${owner}`);
      const holding = await waitForLine(holder, "SMOKE");
      for (const other of others) {
        const refused = await smoke(other, "owned", store);
        expect(refused["owner"]).toMatchObject({ pid: holding["pid"] });
      }
      holder.stdin?.end();
      expect((await holderDone).code).toBe(0);
    }
  });

  it.each(runtimeNames)("a visitor beside its owner in one process on %s: reads, is refused a write, its approval is applied by the owner", async (runtime) => {
    const visited = await smoke(runtime, "visit", join(workspace, `visited-on-${runtime}.db`));
    expect(visited).toMatchObject({ refundExecution: expect.any(String), approvalId: expect.any(String) });
    console.log(
      `visitor on ${runtime}: opened in ${Number(visited["visitorOpenMs"]).toFixed(1)} ms, approval settled in ${Number(visited["resumeMs"]).toFixed(0)} ms`,
    );
  });

  it("a visitor on one runtime approves beside a live owner on another; the owner applies it", async () => {
    await Promise.all(
      [0, 1, 2].map(async (offset) => {
        const [owner, visitor] = rotated(offset) as [RuntimeName, RuntimeName, RuntimeName];
        const store = join(workspace, `served-by-${owner}.db`);
        const server = startScript(owner, project, "smoke.mjs", ["serve", store]);
        const serverDone = finished(server, `smoke serve on ${owner}`);
        const serving = await waitForLine(server, "SMOKE");
        try {
          const approved = await smoke(visitor, "approve", store);
          expect(approved).toMatchObject({ refundExecution: serving["refundExecution"], approvalId: serving["approvalId"] });
        } finally {
          server.stdin?.end();
        }
        // The owner checks, as it closes, that the refund ran once, in it.
        const served = await serverDone;
        if (served.code !== 0) throw new Error(`smoke serve on ${owner} exited ${served.code}\n${served.stdout}\n${served.stderr}`);
      }),
    );
  });

  it.each(runtimeNames)("examples/agent.ts (docs/runtimes.md) runs on %s from the installed package", async (runtime) => {
    // Each in a directory of its own (its ./data/agents.db), inside the project for its node_modules.
    const directory = join(project, `agent-on-${runtime}`);
    mkdirSync(join(directory, "data"), { recursive: true });
    const { command, arguments: runtimeArguments } = runtimes[runtime];
    // On Node as docs/runtimes.md's first line runs it: `node agent.mjs`.
    const script = [join(project, runtime === "node" ? "agent.mjs" : "agent.ts")];
    const child = spawn(command, [...runtimeArguments, ...script], { cwd: directory, env: { ...process.env, NO_COLOR: "1" }, stdio: ["pipe", "pipe", "pipe"] });
    child.stdin?.end();
    const result = await finished(child, `agent.ts on ${runtime}`);
    expect({ runtime, code: result.code, stdout: result.stdout }, result.stderr).toEqual({
      runtime,
      code: 0,
      stdout: "completed Order 42 is out for delivery.\n",
    });
  });

  it.each(runtimeNames)(`the packaged core agrees with the reference model on ${fuzzRuns} random streams under %s`, async (runtime) => {
    console.log(`package fuzzing on ${runtime}: PACKAGE_FUZZ_SEED=${fuzzSeed} PACKAGE_FUZZ_RUNS=${fuzzRuns}`);
    const result = await finished(
      startScript(runtime, project, join("harness", "test", "package", "fuzz.js"), [String(fuzzRuns), String(fuzzSeed)]),
      `fuzz on ${runtime}`,
    );
    if (result.code !== 0) throw new Error(`fuzzing on ${runtime} failed (seed ${fuzzSeed})\n${result.stdout}\n${result.stderr}`);
    const facts = reported(result.stdout, "FUZZ");
    expect(facts).toMatchObject({ runs: fuzzRuns, seed: fuzzSeed });
    expect(String(facts?.["core"])).toContain(join(project, "node_modules", "phronomy", "dist", "build", "core.release.wasm"));
  });
});

function waitForLine(child: ChildProcess, tag: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let seen = "";
    const onData = (chunk: Buffer): void => {
      seen += chunk.toString();
      const facts = reported(seen, tag);
      if (facts === undefined) return;
      child.stdout?.off("data", onData);
      resolve(facts);
    };
    child.stdout?.on("data", onData);
    child.on("close", (code) => reject(new Error(`exited ${code} before printing ${tag}: ${seen}`)));
  });
}
