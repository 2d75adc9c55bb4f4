// A temporary project that installed the packed package, and the three
// runtimes that run code in it: shared by the package tests
// (runtimes.test.ts) and the package benchmark (bench/package/index.ts).
//
// The tarball is what `npm pack` makes of the package: package.json,
// README.md and LICENSE of this repository and a `dist/` built by
// scripts/build-dist.mjs from the core in build/ (which `npm test` and
// `npm run build` make first), staged in a directory of its own so that
// runs side by side never share (or delete) one. The project installs it, with its
// dependencies, from npm as an application would; only better-sqlite3, the
// optional peer dependency an application on Node installs itself, is
// linked from this repository, since compiling it from source takes
// minutes. bun and deno are the repository's devDependencies.

import { spawn, type ChildProcess } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { childNodeFlags } from "../support/node-flags.js";

export const repositoryRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const bin = join(repositoryRoot, "node_modules", ".bin");
const nodeBinaries = join(repositoryRoot, "node_modules", ".cache", "phronomy-node-binaries");

/** The Node the packed package runs on in runtimes.test.ts and the package
 * benchmark; node-versions.test.ts runs it on 22 and 24. */
export const packageNodeVersion = "22.23.5";

/** Where `nodeBinary(version)` puts that version's `node`. */
export function nodeBinaryPath(version: string): string {
  return join(nodeBinaries, version, "package", "bin", "node");
}

/** The `node` binary of `version`: the registry's node-<platform>-<arch>
 * package, fetched once. */
export async function nodeBinary(version: string): Promise<string> {
  const binary = nodeBinaryPath(version);
  if (existsSync(binary)) return binary;
  // A directory of this process's own, renamed into place: test files fetching side by side never share one.
  const directory = join(nodeBinaries, `${version}.${process.pid}`);
  mkdirSync(directory, { recursive: true });
  try {
    const packed = await succeed("npm", ["pack", "--json", `node-${process.platform}-${process.arch}@${version}`], directory);
    const [tarball] = JSON.parse(packed.stdout) as { filename: string }[];
    await succeed("tar", ["xzf", tarball!.filename], directory);
    rmSync(join(directory, tarball!.filename));
    renameIfAbsent(directory, join(nodeBinaries, version));
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
  return binary;
}

function renameIfAbsent(from: string, to: string): void {
  try {
    renameSync(from, to);
  } catch (error) {
    if (!existsSync(join(to, "package", "bin", "node"))) throw error;
  }
}

export interface RuntimeCommand {
  readonly command: string;
  readonly arguments: readonly string[];
  /** The SQLite library the store must pick there. */
  readonly driver: string;
}

/** How each runtime starts a script; Deno with the permissions
 * docs/runtimes.md documents (and no more). An unhandled rejection ends the
 * script with an error on every runtime, whether or not something installed
 * an `unhandledRejection` handler: Node and Bun are told so by
 * `--unhandled-rejections=strict` (by default both end the process only
 * when no handler is installed); Deno has no such flag, and ends the
 * process on an unhandled rejection unless a handler was installed (the
 * package installs none). */
export const runtimes = {
  // `nodeBinary(packageNodeVersion)` fetches it (installProject does).
  node: { command: nodeBinaryPath(packageNodeVersion), arguments: [...childNodeFlags], driver: "node:sqlite" },
  bun: { command: join(bin, "bun"), arguments: ["--unhandled-rejections=strict"], driver: "bun:sqlite" },
  // The AI SDK (`ai`) reads the host name when it loads.
  deno: { command: join(bin, "deno"), arguments: ["run", "--allow-read", "--allow-write", "--allow-sys=hostname"], driver: "node:sqlite" },
} as const satisfies Record<string, RuntimeCommand>;

export type RuntimeName = keyof typeof runtimes;
export const runtimeNames = Object.keys(runtimes) as RuntimeName[];

/** A child process running longer than this is a hang. */
export const processTimeoutMs = 60_000;
/** A build (tsc) or an install running longer than this is a hang. */
export const buildTimeoutMs = 300_000;

export interface PackedTarball {
  /** The tarball's absolute path. */
  readonly path: string;
  readonly size: number;
  readonly unpackedSize: number;
  readonly files: readonly { readonly path: string; readonly size: number }[];
  /** The staged package directory the tarball was packed from. */
  readonly stage: string;
}

export interface Finished {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** What the package holds beside dist/ (package.json `files`). */
export const packagedFiles = ["package.json", "README.md", "LICENSE", "CHANGELOG.md", "docs/cli.md", "docs/runtimes.md"] as const;

/** Stages the package in `<destination>/package` and packs it into
 * `destination`. Not `npm run build`, which would rewrite build/*.wasm
 * under the feet of tests running beside this; and `npm pack
 * --ignore-scripts`, since `prepack` is that full build. */
export async function packTarball(destination: string): Promise<PackedTarball> {
  const stage = join(destination, "package");
  mkdirSync(stage, { recursive: true });
  mkdirSync(join(stage, "docs"), { recursive: true });
  for (const file of packagedFiles) copyFileSync(join(repositoryRoot, file), join(stage, file));
  // A tsc build of the host: minutes on a loaded 2-core machine.
  await succeed(process.execPath, [...childNodeFlags, join(repositoryRoot, "scripts", "build-dist.mjs"), join(stage, "dist")], repositoryRoot, buildTimeoutMs);
  const output = await succeed("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", destination], stage);
  const [tarball] = JSON.parse(output.stdout) as (Omit<PackedTarball, "path" | "stage"> & { filename: string })[];
  if (tarball === undefined) throw new Error(`npm pack printed no tarball: ${output.stdout}`);
  return { path: join(destination, tarball.filename), size: tarball.size, unpackedSize: tarball.unpackedSize, files: tarball.files, stage };
}

/** A new project in `directory` with the tarball and `packages` installed,
 * and the Node it runs on (`packageNodeVersion`) fetched. */
export async function installProject(directory: string, tarball: string, packages: readonly string[] = []): Promise<void> {
  mkdirSync(directory, { recursive: true });
  writeFileSync(join(directory, "package.json"), `${JSON.stringify({ name: "phronomy-package-check", private: true, type: "module" }, null, 2)}\n`);
  await succeed("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", tarball, ...packages], directory, buildTimeoutMs);
  await nodeBinary(packageNodeVersion);
}

/** `name@version` of a package as this repository has it installed. */
export function installedPackage(name: string): string {
  const manifest = JSON.parse(readFileSync(join(repositoryRoot, "node_modules", name, "package.json"), "utf8")) as { version: string };
  return `${name}@${manifest.version}`;
}

/** Starts `script` (relative to `project`) on `runtime`. */
export function startScript(runtime: RuntimeName, project: string, script: string, scriptArguments: readonly string[] = []): ChildProcess {
  const { command, arguments: runtimeArguments } = runtimes[runtime];
  // NO_COLOR: Deno colours its error output even into a pipe.
  return spawn(command, [...runtimeArguments, script, ...scriptArguments], {
    cwd: project,
    env: { ...process.env, NO_COLOR: "1" },
    stdio: ["pipe", "pipe", "pipe"],
  });
}

/** What `child` printed, once it ended; killed (and rejected) after
 * `timeoutMs` as a hang. */
export function finished(child: ChildProcess, label: string, timeoutMs = processTimeoutMs): Promise<Finished> {
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${label} did not finish in ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export async function succeed(command: string, commandArguments: readonly string[], cwd: string, timeoutMs = processTimeoutMs): Promise<Finished> {
  const child = spawn(command, commandArguments, { cwd, env: process.env, stdio: ["ignore", "pipe", "pipe"] });
  const result = await finished(child, `${command} ${commandArguments.join(" ")}`, timeoutMs);
  if (result.code !== 0) throw new Error(`${command} ${commandArguments.join(" ")} exited ${result.code}\n${result.stdout}\n${result.stderr}`);
  return result;
}

/** The JSON a script printed on its line `<tag> <json>`. */
export function reported(stdout: string, tag: string): Record<string, unknown> | undefined {
  const line = stdout.split("\n").find((candidate) => candidate.startsWith(`${tag} `));
  return line === undefined ? undefined : (JSON.parse(line.slice(tag.length + 1)) as Record<string, unknown>);
}
