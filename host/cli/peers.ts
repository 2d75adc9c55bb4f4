// The optional peer dependencies the demo needs beside the package, checked
// before it opens anything (issue 17). `npx phronomy demo` in an empty
// directory installs phronomy alone, and npm installs no optional peer:
// the demo's model is scripted, but it is called through the AI SDK like
// every model (`ai`, docs/decisions/0033), and on Node before 22.13 the
// store needs better-sqlite3 (decision 0040). Failing on the first model
// call with "npm install ai" would send an npx user to install into a
// project they do not have; instead the demo names the one command that
// runs it (`npx -p phronomy -p ai@7 phronomy demo`), and the project way.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { sqliteDriverName } from "../testing.js";
import { CliError } from "./errors.js";

/** An optional peer that is not installed, and what to install it by. */
export interface MissingPeer {
  readonly name: string;
  /** `name@major`, from the package's own peer range (`ai@7`). */
  readonly spec: string;
}

/** The peers the demo needs that this installation lacks, `ai` first. */
export async function missingDemoPeers(): Promise<MissingPeer[]> {
  const missing: MissingPeer[] = [];
  if (await aiMissing()) missing.push(peer("ai"));
  if (sqliteDriverName() === "better-sqlite3" && !resolvable("better-sqlite3")) missing.push(peer("better-sqlite3"));
  return missing;
}

/** The npx command line that runs `phronomy demo` with `missing` installed beside it. */
export function npxDemoCommand(missing: readonly MissingPeer[]): string {
  return `npx ${["phronomy", ...missing.map((entry) => entry.spec)].map((name) => `-p ${name}`).join(" ")} phronomy demo`;
}

/** The error the demo fails with when peers are missing: it names them and
 * the exact command that works. */
export function missingPeersError(missing: readonly MissingPeer[]): CliError {
  const names = missing.map((entry) => entry.name);
  const command = npxDemoCommand(missing);
  const reasons = [
    ...(names.includes("ai") ? ["the demo's scripted model is called through the AI SDK, like every model"] : []),
    ...(names.includes("better-sqlite3")
      ? [`the store needs better-sqlite3 on Node ${process.versions.node}, where node:sqlite is not built in (Node 22.13 and later)`]
      : []),
  ];
  const what = names.length === 1 ? "an optional peer dependency" : "optional peer dependencies";
  return new CliError(
    "MISSING_PACKAGE",
    `the demo needs ${names.join(" and ")} beside phronomy (${reasons.join("; ")}), ${what} that npx does not install. Run: ${command} (in a project: npm install phronomy ${missing.map((entry) => entry.spec).join(" ")}, then npx phronomy demo)`,
    undefined,
    { details: { missingPackages: names, command } },
  );
}

/** Throws `missingPeersError` unless everything the demo needs is installed. */
export async function requireDemoPeers(): Promise<void> {
  const missing = await missingDemoPeers();
  if (missing.length > 0) throw missingPeersError(missing);
}

/** Whether `ai` is not installed (as opposed to installed and failing to
 * load, which the library reports on the first model call). */
async function aiMissing(): Promise<boolean> {
  try {
    await import("ai");
    return false;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return (error as { code?: unknown } | null)?.code === "ERR_MODULE_NOT_FOUND" && /['"]ai['"]/.test(message);
  }
}

function resolvable(name: string): boolean {
  try {
    createRequire(import.meta.url).resolve(name);
    return true;
  } catch {
    return false;
  }
}

/** `name@major` from the package's peer range (`^7.0.0` → `ai@7`). */
function peer(name: string): MissingPeer {
  const major = /^\^?(\d+)\./.exec(peerRanges()[name] ?? "")?.[1];
  return { name, spec: major === undefined ? name : `${name}@${major}` };
}

let ranges: Record<string, string> | undefined;

/** The package's `peerDependencies`, read beside the compiled CLI
 * (dist/host/cli → the package's root) or the sources (host/cli). */
function peerRanges(): Record<string, string> {
  if (ranges !== undefined) return ranges;
  for (const relative of ["../../package.json", "../../../package.json"]) {
    try {
      const manifest = JSON.parse(readFileSync(new URL(relative, import.meta.url), "utf8")) as { name?: string; peerDependencies?: Record<string, string> };
      if (manifest.name === "phronomy") return (ranges = manifest.peerDependencies ?? {});
    } catch {
      // not there: try the next place
    }
  }
  return (ranges = {});
}
