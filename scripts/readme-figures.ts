// `npm run readme:figures`: the figures README.md and docs/runtimes.md give
// about the build, computed from the build and written between markers
// (issue 17, docs/decisions/0045):
//
//   the release core is <!-- figure: wasm -->8.8 KB<!-- /figure --> of WebAssembly
//
// * `wasm`, `wasm-gzipped`: build/core.release.wasm (`npm run build:core`);
// * `tarball`: `npm pack --json` of the package staged as the package tests
//   stage it (test/package/packed-project.ts: dist/ built from the sources);
// * `install-own`, `install-ai`, `install-cli`: what `npm install phronomy`
//   adds, alone, with `ai`, and with `@ai-sdk/openai-compatible` too, from
//   package-lock.json and this checkout's node_modules
//   (bench/package/install-size.ts `lockfileInstall`): no registry, so CI
//   can check it; `npm run bench:package` measures a real install;
// * `dashboard-script`: the dashboard's script (host/ui/assets.ts);
// * `exports`: the names each entry exports, counted in the API reference
//   (docs/api/, which test/docs/api-reference.slow.test.ts keeps current).
//
// `-- --check` writes nothing and exits 1 naming every figure that differs
// beyond the tolerance (test/docs/readme-figures.slow.test.ts does the same
// comparison). Sizes are KB of 1,024 bytes and MB of 10^6 bytes, as
// bench:package prints them.

import { readFileSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { gzipSync } from "node:zlib";
import { lockfileInstall, type InstallSize } from "../bench/package/install-size.js";
import { appJs } from "../host/ui/assets.js";
import { packTarball, repositoryRoot } from "../test/package/packed-project.js";

/** The documents that carry figures, relative to the repository. */
export const figureDocuments = ["README.md", "docs/runtimes.md"] as const;

/** A size read back from a document may differ from the build by this much
 * (relative) before it counts as stale: every edit of the sources moves the
 * tarball by a few bytes, and rewriting README for each would be noise.
 * A size may also differ by one unit of its last digit shown (rounding).
 * Counts (packages, files) must match exactly. */
export const sizeToleranceRatio = 0.03;

export interface BuildFigures {
  readonly wasmBytes: number;
  readonly wasmGzippedBytes: number;
  readonly tarball: { readonly packedBytes: number; readonly unpackedBytes: number; readonly files: number };
  readonly installOwn: InstallSize;
  readonly installAi: InstallSize;
  readonly installCli: InstallSize;
  readonly dashboardScriptBytes: number;
  /** Exported names per entry, from the API reference. */
  readonly exports: Readonly<Record<string, number>>;
}

/** The API reference's page of each package entry (docs/api/). */
const entryPages = {
  phronomy: "phronomy.md",
  "phronomy/testing": "phronomy/testing.md",
  "phronomy/ui": "phronomy/ui.md",
  "phronomy/chat": "phronomy/chat.md",
} as const;

/** The names a page of the API reference documents: its `### name`
 * headings, once each (a constant and a type of one name share a name). */
export function exportedNames(page: string): string[] {
  return [...new Set([...page.matchAll(/^### (\S+?)(?:\(\))?$/gm)].map((match) => match[1]!))];
}

/** Builds what it needs (dist/ into a temporary stage) and measures. */
export async function measureBuildFigures(): Promise<BuildFigures> {
  const wasm = readFileSync(join(repositoryRoot, "build", "core.release.wasm"));
  const workspace = mkdtempSync(join(tmpdir(), "phronomy-figures-"));
  try {
    const packed = await packTarball(workspace);
    return {
      wasmBytes: wasm.length,
      wasmGzippedBytes: gzipSync(wasm).length,
      tarball: { packedBytes: packed.size, unpackedBytes: packed.unpackedSize, files: packed.files.length },
      installOwn: lockfileInstall(packed.unpackedSize),
      installAi: lockfileInstall(packed.unpackedSize, ["ai"]),
      installCli: lockfileInstall(packed.unpackedSize, ["ai", "@ai-sdk/openai-compatible"]),
      dashboardScriptBytes: Buffer.byteLength(appJs),
      exports: Object.fromEntries(
        Object.entries(entryPages).map(([entry, page]) => [entry, exportedNames(readFileSync(join(repositoryRoot, "docs", "api", page), "utf8")).length]),
      ),
    };
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}

const kilobytes = (bytes: number): string => `${(bytes / 1024).toLocaleString("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 })} KB`;
const wholeKilobytes = (bytes: number): string => `${Math.round(bytes / 1024).toLocaleString("en-US")} KB`;
const megabytes = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`;
const install = (size: InstallSize): string => `${size.packages} packages, ${megabytes(size.bytes)}`;

/** Each marker's text. */
export function renderFigures(figures: BuildFigures): Record<string, string> {
  return {
    wasm: kilobytes(figures.wasmBytes),
    "wasm-gzipped": kilobytes(figures.wasmGzippedBytes),
    tarball: `${wholeKilobytes(figures.tarball.packedBytes)} packed, ${wholeKilobytes(figures.tarball.unpackedBytes)} unpacked, ${figures.tarball.files} files`,
    "tarball-packed": wholeKilobytes(figures.tarball.packedBytes),
    "install-own": install(figures.installOwn),
    "install-own-names": figures.installOwn.names.filter((name) => name !== "phronomy").join(", "),
    "install-ai": install(figures.installAi),
    "install-cli": install(figures.installCli),
    "dashboard-script": kilobytes(figures.dashboardScriptBytes),
    exports: `${Object.values(figures.exports).reduce((sum, count) => sum + count, 0)} names (${Object.entries(figures.exports)
      .map(([entry, count]) => `${count} from \`${entry}\``)
      .join(", ")})`,
  };
}

const markerPattern = /<!-- figure: ([\w-]+) -->([\s\S]*?)<!-- \/figure -->/g;

/** Every marker in `text`: its name and the text it holds. */
export function markedFigures(text: string): { readonly name: string; readonly text: string }[] {
  return [...text.matchAll(markerPattern)].map((match) => ({ name: match[1]!, text: match[2]! }));
}

/** `text` with every marker's content replaced by its figure. */
export function writeFigures(text: string, rendered: Record<string, string>): string {
  return text.replace(markerPattern, (whole, name: string) => {
    const figure = rendered[name];
    if (figure === undefined) throw new Error(`readme-figures: no figure named "${name}" (known: ${Object.keys(rendered).join(", ")})`);
    return `<!-- figure: ${name} -->${figure}<!-- /figure -->`;
  });
}

/** Whether a document's figure is still the build's: the same words, and
 * every number equal (counts) or within `sizeToleranceRatio` (a number
 * followed by KB or MB). */
export function figureMatches(written: string, computed: string): boolean {
  const numbers = /(\d[\d,]*(?:\.\d+)?)( (?:KB|MB))?/g;
  const shape = (text: string) => text.replace(numbers, "#");
  if (shape(written) !== shape(computed)) return false;
  const wanted = [...computed.matchAll(numbers)];
  return [...written.matchAll(numbers)].every((match, index) => {
    const value = Number(match[1]!.replaceAll(",", ""));
    const expected = Number(wanted[index]![1]!.replaceAll(",", ""));
    if (match[2] !== wanted[index]![2]) return false;
    if (match[2] === undefined) return value === expected;
    // One unit of the last digit shown, at least: 2.24 KB and 2.26 KB show
    // as 2.2 and 2.3 though they differ by 1%.
    const shownUnit = 10 ** -(wanted[index]![1]!.split(".")[1]?.length ?? 0);
    return Math.abs(value - expected) <= Math.max(expected * sizeToleranceRatio, shownUnit) + 1e-9;
  });
}

/** The figures of `text` that no longer match, as `name: written ≠ computed`. */
export function staleFigures(text: string, rendered: Record<string, string>): string[] {
  return markedFigures(text).flatMap(({ name, text: written }) => {
    const computed = rendered[name];
    if (computed === undefined) return [`${name}: no such figure`];
    return figureMatches(written, computed) ? [] : [`${name}: "${written}" ≠ "${computed}"`];
  });
}

async function main(check: boolean): Promise<number> {
  const rendered = renderFigures(await measureBuildFigures());
  let stale = 0;
  for (const document of figureDocuments) {
    const path = join(repositoryRoot, document);
    const text = readFileSync(path, "utf8");
    if (check) {
      for (const line of staleFigures(text, rendered)) {
        console.log(`${document}: ${line}`);
        stale += 1;
      }
      continue;
    }
    const written = writeFigures(text, rendered);
    if (written !== text) writeFileSync(path, written);
    console.log(`${document}: ${markedFigures(text).length} figures${written === text ? ", unchanged" : ", written"}`);
  }
  if (check) console.log(stale === 0 ? "readme-figures: every figure matches the build" : `readme-figures: ${stale} stale; run npm run readme:figures`);
  return stale === 0 ? 0 : 1;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.includes("--check"));
}
