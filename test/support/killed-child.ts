// A child process a crash test runs until it kills itself (SIGKILL): the
// Node flags every spawned child runs with, the repository as its working
// directory, and the one JSON line it printed before the kill — what it
// left for the next process (an execution id, the runs it started). An end
// by any other signal or code, or no JSON line, rejects with its output.

import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { childNodeFlags } from "./node-flags.js";

const repositoryRoot = fileURLToPath(new URL("../..", import.meta.url));

/** Runs `script` (through tsx) with `args` until it SIGKILLs itself; the
 * first line of its output that opens a JSON object, parsed. */
export function runUntilKilled<T>(script: string, args: readonly string[]): Promise<T> {
  const child = spawn(process.execPath, [...childNodeFlags, "--import", "tsx", script, ...args], {
    cwd: repositoryRoot,
    stdio: ["ignore", "pipe", "pipe"],
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
    child.on("close", (code, signal) => {
      const line = stdout.split("\n").find((text) => text.startsWith("{"));
      if (signal !== "SIGKILL" || line === undefined)
        return reject(new Error(`the child ended with code ${String(code)}, signal ${String(signal)}\nstdout: ${stdout}\nstderr: ${stderr}`));
      resolve(JSON.parse(line) as T);
    });
  });
}
