// A child process a test runs to its end: by default a TypeScript script
// through tsx with the Node flags every spawned child runs with
// (node-flags.ts), the repository as its working directory, its exit code,
// signal and output collected. A crash test runs one until it kills itself
// (SIGKILL) and reads the one JSON line it printed before the kill — what
// it left for the next process (an execution id, the runs it started).

import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { childNodeFlags } from "./node-flags.js";

export const repositoryRoot = fileURLToPath(new URL("../..", import.meta.url));

/** How a child ended, and what it printed. */
export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** What runs the script: Node with tsx unless named (another runtime). */
export interface ChildRuntime {
  readonly command: string;
  readonly arguments: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
}

const nodeWithTsx: ChildRuntime = { command: process.execPath, arguments: [...childNodeFlags, "--import", "tsx"] };

/** Runs `script` with `args` to its end. */
export function runChild(script: string, args: readonly string[], runtime: ChildRuntime = nodeWithTsx): Promise<ChildExit> {
  const child = spawn(runtime.command, [...runtime.arguments, script, ...args], {
    cwd: repositoryRoot,
    stdio: ["ignore", "pipe", "pipe"],
    ...(runtime.env !== undefined ? { env: runtime.env } : {}),
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** Runs `script` (through tsx) with `args` until it SIGKILLs itself; the
 * first line of its output that opens a JSON object, parsed. */
export async function runUntilKilled<T>(script: string, args: readonly string[]): Promise<T> {
  const { code, signal, stdout, stderr } = await runChild(script, args);
  const line = stdout.split("\n").find((text) => text.startsWith("{"));
  if (signal !== "SIGKILL" || line === undefined) {
    throw new Error(`the child ended with code ${String(code)}, signal ${String(signal)}\nstdout: ${stdout}\nstderr: ${stderr}`);
  }
  return JSON.parse(line) as T;
}
