// `npm run build:dist`: the package's contents in `dist/`, from a clean
// directory: the host and the ABI compiled to ESM JavaScript with `.d.ts`
// types (tsconfig.build.json), and the release core beside them where
// `host/core/load-core.ts` looks for it from `dist/host/core/`
// (`../../build/core.release.wasm`, i.e. `dist/build/`). Run
// `npm run build:core` first (`npm run build` does both).
//
//   node scripts/build-dist.mjs [<out directory>]
//
// With a directory, builds there instead of `dist/` (the package tests
// stage their own copy, so that runs side by side never share one).
//
// Plain JavaScript, so that it runs before anything is compiled.

import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dist = resolve(process.argv[2] ?? join(root, "dist"));
const releaseCore = join(root, "build", "core.release.wasm");

if (!existsSync(releaseCore)) {
  console.error("build-dist: build/core.release.wasm is missing; run `npm run build:core` first");
  process.exit(1);
}

rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
execFileSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json"), "--outDir", dist], { cwd: root, stdio: "inherit" });
// The JavaScript again, over the first pass's, without its comments: V8
// keeps every module's source text for as long as the process lives (in
// the main thread and again in the store worker), and the host's comments
// are 30% of it — 1.3 MB of heap in every process that imports the package
// (decision 0109). The `.d.ts` files keep theirs (the first pass wrote
// them; `--removeComments` would strip their documentation too). The first
// pass checked the types: this one does not again (`--noCheck`; the
// JavaScript emitted does not depend on it, `isolatedModules`).
execFileSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json"), "--outDir", dist, "--removeComments", "--declaration", "false", "--noCheck"], {
  cwd: root,
  stdio: "inherit",
});
enforceNodeFloor(join(dist, "host", "runtime", "supported-runtime.js"));
mkdirSync(join(dist, "build"), { recursive: true });
copyFileSync(releaseCore, join(dist, "build", "core.release.wasm"));

// What the package's entry points need at run time; a missing one is a
// build bug that `npm pack` would otherwise ship.
const required = [
  "host/index.js",
  "host/index.d.ts",
  "host/testing.js",
  "host/testing.d.ts",
  "host/ui/index.js",
  "host/ui/index.d.ts",
  "host/chat/index.js",
  "host/chat/index.d.ts",
  "host/store/sqlite/worker.js",
  "host/core/load-core.js",
  "assembly/abi.js",
  "build/core.release.wasm",
];
const missing = required.filter((path) => !existsSync(join(dist, path)));
if (missing.length > 0) {
  console.error(`build-dist: ${dist} lacks ${missing.join(", ")}`);
  process.exit(1);
}
console.log(`build-dist: ${dist} ready (core.release.wasm ${statSync(releaseCore).size} bytes)`);

/** The package refuses a Node older than its floor (docs/decisions/0060);
 * the sources, which the repository's toolchain runs on the machine's
 * Node, do not. The one line that says so must be there to rewrite. */
function enforceNodeFloor(file) {
  const unenforced = "export const nodeFloorEnforced = false;";
  const text = readFileSync(file, "utf8");
  if (text.split(unenforced).length !== 2) {
    console.error(`build-dist: ${file} does not hold "${unenforced}" once`);
    process.exit(1);
  }
  writeFileSync(file, text.replace(unenforced, "export const nodeFloorEnforced = true;"));
}
