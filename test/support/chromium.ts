// The browser the dashboard's tests (test/ui/) and scripts/dashboard-screenshot.ts
// drive with playwright-core, found without a download (decision 0060):
//
//   1. CHROMIUM_PATH, when set;
//   2. the system's chromium (Debian's package, /usr/bin/chromium), when it
//      is installed;
//   3. otherwise the headless Chromium that the devDependency
//      @sparticuz/chromium ships inside its npm package (brotli-packed, Linux
//      x64), unpacked once into node_modules/.cache/phronomy-chromium/<version>/
//      with the shared libraries it ships beside it (libnss3 and friends).
//
// So `npm install && npm run test:slow` needs no browser on the machine. The unpack
// writes to a temporary name and renames it into place: test files running
// side by side (and other checkouts) never see a half-written binary.

import { createReadStream, createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { fileURLToPath } from "node:url";
import { createBrotliDecompress } from "node:zlib";
import { execFileSync } from "node:child_process";
import { chromium, type Browser } from "playwright-core";

const repositoryRoot = fileURLToPath(new URL("../..", import.meta.url));
const packaged = join(repositoryRoot, "node_modules", "@sparticuz", "chromium");
export const systemChromiumPath = "/usr/bin/chromium";

/** Where a browser comes from, and how to start it. */
export interface ChromiumLocation {
  readonly source: "CHROMIUM_PATH" | "system" | "@sparticuz/chromium";
  readonly executablePath: string;
  /** Extra environment for the browser process (the packaged one's libraries). */
  readonly env: Readonly<Record<string, string>>;
}

/** Which browser to use: CHROMIUM_PATH, else the system's, else the packaged
 * one (to be unpacked). `exists` is injectable for the test of the order. */
export function chooseChromium(variables: NodeJS.ProcessEnv, exists: (path: string) => boolean = existsSync): ChromiumLocation["source"] {
  const override = variables["CHROMIUM_PATH"];
  if (override !== undefined && override !== "") return "CHROMIUM_PATH";
  return exists(systemChromiumPath) ? "system" : "@sparticuz/chromium";
}

/** The browser to launch, unpacking the packaged one on first use. */
export async function locateChromium(variables: NodeJS.ProcessEnv = process.env, exists: (path: string) => boolean = existsSync): Promise<ChromiumLocation> {
  const source = chooseChromium(variables, exists);
  if (source === "CHROMIUM_PATH") return { source, executablePath: variables["CHROMIUM_PATH"]!, env: {} };
  if (source === "system") return { source, executablePath: systemChromiumPath, env: {} };
  const directory = await unpackedChromium();
  return { source, executablePath: join(directory, "chromium"), env: { LD_LIBRARY_PATH: join(directory, "lib") } };
}

/** Launches the located browser headless (as root, so without the sandbox). */
export async function launchChromium(): Promise<Browser> {
  const location = await locateChromium();
  if (!existsSync(location.executablePath)) {
    const what = `no chromium at ${location.executablePath} (from ${location.source})`;
    throw new Error(`${what}: unset CHROMIUM_PATH, or run npm install (it brings @sparticuz/chromium)`);
  }
  const env = { ...process.env, ...location.env };
  return chromium.launch({ executablePath: location.executablePath, args: ["--no-sandbox"], env: env as Record<string, string> });
}

/** node_modules/.cache/phronomy-chromium/<version>/: `chromium` and `lib/`. */
async function unpackedChromium(): Promise<string> {
  const bin = join(packaged, "bin");
  if (!existsSync(join(bin, "chromium.br"))) {
    const what = `no browser: neither ${systemChromiumPath} nor ${bin}/chromium.br is there`;
    throw new Error(`${what}; run npm install (it brings the devDependency @sparticuz/chromium), install Debian's chromium, or set CHROMIUM_PATH`);
  }
  const { version } = JSON.parse(readFileSync(join(packaged, "package.json"), "utf8")) as { version: string };
  const directory = join(repositoryRoot, "node_modules", ".cache", "phronomy-chromium", version);
  if (existsSync(join(directory, "chromium"))) return directory;
  const staging = `${directory}.${process.pid}.${Date.now()}`;
  mkdirSync(join(staging, "lib"), { recursive: true });
  try {
    await pipeline(createReadStream(join(bin, "chromium.br")), createBrotliDecompress(), createWriteStream(join(staging, "chromium"), { mode: 0o755 }));
    // The libraries (lib/*.so): a brotli-packed tar, unpacked by the system's tar.
    const libraries = join(staging, "libraries.tar");
    await pipeline(createReadStream(join(bin, "al2023.tar.br")), createBrotliDecompress(), createWriteStream(libraries));
    execFileSync("tar", ["-xf", libraries, "-C", staging]);
    rmSync(libraries);
    renameIntoPlace(staging, directory);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return directory;
}

/** Renames `staging` to `directory`; another process that got there first wins. */
function renameIntoPlace(staging: string, directory: string): void {
  try {
    renameSync(staging, directory);
  } catch (error) {
    if (!existsSync(join(directory, "chromium"))) throw error;
  }
}
