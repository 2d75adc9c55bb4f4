// Running the `phronomy` command as a user does: a real child process
// (`node host/cli/bin.js …`) against a store in a temporary directory,
// with its stdout, stderr, exit code and signal collected. Colors are off
// and stderr is a pipe, so progress is printed as plain lines.

import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { cleanUpAfterEachFile } from "../support/cleanups.js";
import { childNodeFlags } from "../support/node-flags.js";

export const repositoryRoot = resolve(import.meta.dirname, "../..");
export const launcher = join(repositoryRoot, "host/cli/bin.js");
export const exampleModule = join(repositoryRoot, "examples/support-agent.ts");
export const fixture = (name: string) => join(repositoryRoot, "test/cli/fixtures", name);

/**
 * A command that takes longer than this is hung, not slow. Generous: a
 * command that loads a TypeScript agent module through tsx took over 30 s
 * on this 2-core machine while the rest of the suite ran beside it.
 */
const commandTimeoutMs = 90_000;

const directories: string[] = [];
cleanUpAfterEachFile(async () => {
  for (const directory of directories.splice(0)) await rm(directory, { recursive: true, force: true });
});

export async function temporaryDirectory(): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), "phronomy-cli-"));
  directories.push(directory);
  return directory;
}

/** A store path in a fresh temporary directory (the file does not exist yet). */
export async function temporaryStore(): Promise<string> {
  return join(await temporaryDirectory(), "store.db");
}

export interface CliResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CliOptions {
  readonly cwd?: string;
  readonly env?: Record<string, string | undefined>;
  /** Written to the command's stdin (which is then closed). */
  readonly input?: string;
}

export interface RunningCli {
  readonly child: ChildProcessWithoutNullStreams;
  readonly done: Promise<CliResult>;
  /** Resolves once stderr matches (rejects if the process ends first). */
  stderrMatching(pattern: RegExp): Promise<string>;
}

export function startCli(args: readonly string[], options: CliOptions = {}): RunningCli {
  const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: "1", FORCE_COLOR: undefined, CI: "1" };
  for (const key of ["PHRONOMY_STORE", "PHRONOMY_MODEL", "PHRONOMY_BASE_URL", "PHRONOMY_API_KEY"]) delete env[key];
  Object.assign(env, options.env);
  const child = spawn(process.execPath, [...childNodeFlags, launcher, ...args], { cwd: options.cwd ?? repositoryRoot, env: env as NodeJS.ProcessEnv });
  child.stdin.end(options.input ?? "");
  let stdout = "";
  let stderr = "";
  const stderrListeners: (() => void)[] = [];
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
    for (const listener of stderrListeners) listener();
  });
  const done = new Promise<CliResult>((resolveDone, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`phronomy ${args.join(" ")} took longer than ${commandTimeoutMs} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, commandTimeoutMs);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      for (const listener of stderrListeners) listener();
      resolveDone({ code, signal, stdout, stderr });
    });
  });
  done.catch(() => undefined);
  return {
    child,
    done,
    stderrMatching: (pattern) =>
      new Promise((resolveMatch, reject) => {
        const check = () => {
          if (pattern.test(stderr)) resolveMatch(stderr);
          else if (child.exitCode !== null || child.signalCode !== null)
            reject(new Error(`the process ended before stderr matched ${pattern}\nstdout:\n${stdout}\nstderr:\n${stderr}`));
        };
        stderrListeners.push(check);
        check();
      }),
  };
}

export function cli(args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  return startCli(args, options).done;
}

/** The JSON document a `--json` command printed on stdout. `any`: each
 * test reads the fields of the command it ran, and its assertions check them. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function jsonOf(result: CliResult): any {
  try {
    return JSON.parse(result.stdout);
  } catch {
    throw new Error(`stdout is not one JSON document (exit ${String(result.code)})\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`);
  }
}

/** For assertion messages: everything the process said. */
export function describeResult(result: CliResult): string {
  return `exit ${String(result.code)} signal ${String(result.signal)}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`;
}

/** stderr's error lines (`phronomy: [CODE] …`). */
export function errorLines(result: CliResult): string[] {
  return result.stderr.split("\n").filter((line) => line.startsWith("phronomy:"));
}
