// `node scripts/bench-compiled.mjs bench/e2e/<file>.ts`: runs a benchmark on
// the compiled package, as an application runs it, instead of under tsx.
//
// Memory figures need it: tsx installs its loader hooks on a thread of
// their own (a V8 isolate, ≈40 MB of RSS), and the SQLite store's worker,
// started from the `.ts` sources, registers them again in the worker (one
// more), so a benchmark run under tsx carries ≈50 MB that no application
// has (docs/decisions/0028-memory-of-idle-and-suspended.md). Here the host
// is compiled into build/bench-dist/ (scripts/build-dist.mjs) and the
// benchmark's files beside it, with the same relative paths, so
// `../../host/index.js` resolves to the compiled host; node_modules is
// found from the worktree above. The child runs with `--expose-gc` and the
// caller's environment (BENCH_* variables).
//
// Plain JavaScript, so that it runs before anything is compiled.

import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const script = process.argv[2];
if (script === undefined || !script.startsWith("bench/") || !script.endsWith(".ts")) {
  console.error("usage: node scripts/bench-compiled.mjs bench/[<directory>/]<file>.ts [<the benchmark's arguments>]");
  process.exit(2);
}
// BENCH_DIST: another directory under build/ (a second build measured
// while a long benchmark still runs from the first).
const out = join(root, "build", process.env.BENCH_DIST ?? "bench-dist");
execFileSync(process.execPath, [join(root, "scripts", "build-dist.mjs"), out], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
// build-dist.mjs makes the package refuse a Node older than its floor
// (22.13, docs/decisions/0060). A benchmark measures this repository's code
// on the machine's Node, as its tests do (Node 20 on the development
// machines), so its copy keeps the sources' unenforced line: without this,
// every benchmark run here stops at Phronomy.open with UNSUPPORTED_RUNTIME.
unenforceNodeFloor(join(out, "host", "runtime", "supported-runtime.js"));
const ts = createRequire(import.meta.url)("typescript");
// Every benchmark file, so that one may import another's (bench/index.ts
// imports bench/store and bench/e2e).
const files = readdirSync(join(root, "bench"), { recursive: true })
  .map(String)
  // bench/peers/node_modules holds the peers' own packages (installed on
  // demand by bench/peers/run.ts), not benchmark files.
  .filter((name) => name.endsWith(".ts") && !name.endsWith(".d.ts") && !name.split(/[\\/]/).includes("node_modules"));
for (const file of files) {
  const source = readFileSync(join(root, "bench", file), "utf8");
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    fileName: basename(file),
  });
  mkdirSync(dirname(join(out, "bench", file)), { recursive: true });
  writeFileSync(join(out, "bench", file.replace(/\.ts$/, ".js")), outputText);
}
const entry = join(out, script.replace(/\.ts$/, ".js"));
// BENCH_NODE_OPTIONS: flags for the benchmark's own node (e.g. --cpu-prof).
const flags = (process.env.BENCH_NODE_OPTIONS ?? "").split(" ").filter((flag) => flag !== "");
// Arguments after the file are the benchmark's own.
const { status } = spawnSync(process.execPath, ["--expose-gc", ...flags, entry, ...process.argv.slice(3)], { cwd: root, stdio: "inherit", env: process.env });
process.exit(status ?? 1);

/** Turns back the one line build-dist.mjs rewrote; it must be there once. */
function unenforceNodeFloor(file) {
  const enforced = "export const nodeFloorEnforced = true;";
  const text = readFileSync(file, "utf8");
  if (text.split(enforced).length !== 2) {
    console.error(`bench-compiled: ${file} does not hold "${enforced}" once`);
    process.exit(1);
  }
  writeFileSync(file, text.replace(enforced, "export const nodeFloorEnforced = false;"));
}
