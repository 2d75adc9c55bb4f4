// `npm run bench:package`: what the published package weighs and how fast
// an application starts on it, per runtime. Printed, never asserted.
//
// * the tarball (`npm pack`), its unpacked size, and the release core.wasm;
// * what an install adds (install-size.ts): packages and MB of node_modules
//   for the library alone, and for the CLI with a real model;
// * a cold start on Node, Deno and Bun, from a temporary project that
//   installed the tarball: `open.mjs` in a fresh process, `runs` times
//   (BENCH_RUNS, default 20) on a new store (the file created and
//   migrated) and as many times on an existing one (a store a previous
//   process closed: an application's restart); medians of importing the
//   package, `Phronomy.open` and `env.close()`. Targets (issue 6):
//   core.wasm ≤ 64 KB, open ≤ 20 ms on Node. The default offload policy
//   (`adaptive`) starts the store worker in the background; a last row
//   shows Node with policy `worker`, whose `open` waits for the worker
//   thread (docs/decisions/0008).
//
// Other sessions may be building and testing on this machine at the same
// time: the figures are medians for that reason, and still move from run to
// run.

import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import {
  finished,
  installedPackage,
  installProject,
  packTarball,
  repositoryRoot,
  reported,
  runtimeNames,
  startScript,
  type RuntimeName,
} from "../../test/package/packed-project.js";
import { lockfileInstall, measureInstall } from "./install-size.js";

const runs = Number(process.env.BENCH_RUNS ?? 20);
const wasmTargetBytes = 64 * 1024;
const openTargetMs = 20;

interface ColdStart {
  readonly importMs: number;
  readonly openMs: number;
  readonly closeMs: number;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

async function coldStart(runtime: RuntimeName, project: string, store: string, policy: string | undefined): Promise<ColdStart> {
  const result = await finished(startScript(runtime, project, "open.mjs", policy === undefined ? [store] : [store, policy]), `open.mjs on ${runtime}`);
  const facts = reported(result.stdout, "OPEN");
  if (result.code !== 0 || facts === undefined) throw new Error(`open.mjs on ${runtime} exited ${result.code}\n${result.stdout}\n${result.stderr}`);
  return { importMs: Number(facts["importMs"]), openMs: Number(facts["openMs"]), closeMs: Number(facts["closeMs"]) };
}

/** `runs` new stores, each opened by one process and then by another. */
async function coldStarts(runtime: RuntimeName, project: string, scratch: string, policy?: string): Promise<{ created: ColdStart[]; existing: ColdStart[] }> {
  const created: ColdStart[] = [];
  const existing: ColdStart[] = [];
  for (let run = 0; run < runs; run += 1) {
    const directory = mkdtempSync(join(scratch, `${runtime}-`));
    const store = join(directory, "agents.db");
    created.push(await coldStart(runtime, project, store, policy));
    existing.push(await coldStart(runtime, project, store, policy));
    rmSync(directory, { recursive: true, force: true });
  }
  return { created, existing };
}

const workspace = mkdtempSync(join(tmpdir(), "phronomy-bench-package-"));
try {
  const packed = await packTarball(workspace);
  const wasm = readFileSync(join(packed.stage, "dist", "build", "core.release.wasm"));
  const project = join(workspace, "project");
  await installProject(project, packed.path);
  copyFileSync(join(repositoryRoot, "bench", "package", "open.mjs"), join(project, "open.mjs"));
  const scratch = join(workspace, "stores");
  mkdirSync(scratch);

  console.log("Package");
  console.log(
    `  tarball            ${(packed.size / 1024).toFixed(1)} KB packed, ${(packed.unpackedSize / 1024).toFixed(1)} KB unpacked, ${packed.files.length} files`,
  );
  console.log(
    `  core.release.wasm  ${(wasm.length / 1024).toFixed(1)} KB (${wasm.length} bytes, ${gzipSync(wasm).length} gzipped); target ≤ ${wasmTargetBytes / 1024} KB: ${wasm.length <= wasmTargetBytes ? "met" : "MISSED"}`,
  );
  const own = await measureInstall(join(workspace, "install-own"), packed.path);
  const library = await measureInstall(join(workspace, "install-library"), packed.path, [installedPackage("ai")]);
  const cli = await measureInstall(join(workspace, "install-cli"), packed.path, [installedPackage("ai"), installedPackage("@ai-sdk/openai-compatible")]);
  const megabytes = (bytes: number): string => (bytes / 1e6).toFixed(1);
  console.log(`  phronomy's own     ${own.packages} packages, ${megabytes(own.bytes)} MB (npm install phronomy: ${own.names.join(", ")})`);
  console.log(
    `  with the AI SDK    ${library.packages} packages, ${megabytes(library.bytes)} MB (npm install phronomy ai, what an application runs; ai and its own dependencies are most of it)`,
  );
  console.log(`  CLI, real models   ${cli.packages} packages, ${megabytes(cli.bytes)} MB (+ @ai-sdk/openai-compatible)`);
  const locked = [
    lockfileInstall(packed.unpackedSize),
    lockfileInstall(packed.unpackedSize, ["ai"]),
    lockfileInstall(packed.unpackedSize, ["ai", "@ai-sdk/openai-compatible"]),
  ];
  console.log(
    `  by the lockfile    ${locked.map((size) => `${size.packages} packages, ${megabytes(size.bytes)} MB`).join("; ")} (README's figures, npm run readme:figures)`,
  );
  console.log(
    `  (better-sqlite3, optional on Node 22.13+ where node:sqlite is built in, comes on top: it builds from source where no prebuilt binary matches)`,
  );
  console.log(`\nCold start, medians of ${runs} fresh processes each (ms)`);
  console.log(`  ${"".padEnd(20)} ${"import".padStart(7)} ${"open new".padStart(9)} ${"open existing".padStart(14)} ${"close".padStart(6)}`);
  const rows: { label: string; runtime: RuntimeName; policy?: string }[] = [
    ...runtimeNames.map((runtime) => ({ label: runtime, runtime })),
    { label: "node, policy worker", runtime: "node", policy: "worker" },
  ];
  for (const { label, runtime, policy } of rows) {
    const { created, existing } = await coldStarts(runtime, project, scratch, policy);
    const all = [...created, ...existing];
    const cells = [
      median(all.map((start) => start.importMs))
        .toFixed(1)
        .padStart(7),
      median(created.map((start) => start.openMs))
        .toFixed(1)
        .padStart(9),
      median(existing.map((start) => start.openMs))
        .toFixed(1)
        .padStart(14),
      median(all.map((start) => start.closeMs))
        .toFixed(1)
        .padStart(6),
    ];
    const slowest = Math.max(median(created.map((start) => start.openMs)), median(existing.map((start) => start.openMs)));
    const verdict = label === "node" ? `   target open ≤ ${openTargetMs} ms: ${slowest <= openTargetMs ? "met" : "MISSED"}` : "";
    console.log(`  ${label.padEnd(20)} ${cells.join(" ")}${verdict}`);
  }
} finally {
  rmSync(workspace, { recursive: true, force: true });
}
