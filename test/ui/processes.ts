// What the dashboard's process tests share: a `phronomy` command run as a
// person runs it (its output collected), the dashboard URL it prints, and
// the browser driven by playwright-core (test/support/chromium.ts: the
// system's chromium, or the one the devDependency @sparticuz/chromium ships).

import { spawn, type ChildProcess } from "node:child_process";
import { launcher, repositoryRoot } from "../cli/helpers.js";
import { childNodeFlags } from "../support/node-flags.js";

export { launchChromium } from "../support/chromium.js";

/** A `phronomy` command running in a child process. */
export interface CliProcess {
  readonly child: ChildProcess;
  /** Standard output and standard error so far, interleaved as they arrived. */
  output(): string;
  readonly exited: Promise<number | null>;
  /** The dashboard URL (with its token) the command printed, once it has. */
  dashboardUrl(): Promise<URL>;
}

export function runCli(args: readonly string[], env: NodeJS.ProcessEnv = {}): CliProcess {
  const child = spawn(process.execPath, [...childNodeFlags, launcher, ...args], { cwd: repositoryRoot, env: { ...process.env, NO_COLOR: "1", ...env } });
  let output = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    output += chunk;
  });
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  const shown = () => output;
  return {
    child,
    exited,
    output: shown,
    dashboardUrl: async () => new URL(await until(() => /(http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]+)/.exec(output)?.[1], shown)),
  };
}

/** Polls `probe` until it answers; on timeout fails with `shown()` (the output so far). */
export async function until<T>(probe: () => T | undefined, shown: () => string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out; output so far:\n${shown()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
