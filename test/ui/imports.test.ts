// The CLI and the dashboard use the library's public API only (STYLE.md,
// "grow out of"; docs/decisions/0038): every relative import leaving
// host/cli or host/ui — static, dynamic or type-only — names a public entry
// (host/index.ts, host/testing.ts, host/ui/index.ts), never the store's or
// the runtime's internals. A command or a page that needs more shows that
// `env.admin` lacks it.

import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const host = resolve(import.meta.dirname, "../../host");
const publicEntries = new Set(["index.ts", "testing.ts", "ui/index.ts"]);

function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|js|mjs)$/.test(entry.name) ? [path] : [];
  });
}

/** Every module specifier: `from "…"`, `import("…")`, `import "…"`. */
function specifiersOf(source: string): string[] {
  const found: string[] = [];
  for (const match of source.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)["']([^"']+)["']/g)) found.push(match[1]!);
  return found;
}

function internalImports(area: string): string[] {
  const root = join(host, area);
  const offending: string[] = [];
  for (const file of sourceFiles(root)) {
    for (const specifier of specifiersOf(readFileSync(file, "utf8"))) {
      if (!specifier.startsWith(".")) continue;
      const target = relative(host, resolve(dirname(file), specifier)).replace(/\.js$/, ".ts");
      const inside = !target.startsWith("..") && target.startsWith(`${area}/`);
      if (!inside && !publicEntries.has(target)) offending.push(`${relative(host, file)} imports ${specifier}`);
    }
  }
  return offending;
}

describe("host/cli and host/ui import the public API only", () => {
  it("finds the imports it checks (the scan is not vacuous)", () => {
    expect(specifiersOf(readFileSync(join(host, "cli/store.ts"), "utf8"))).toContain("../index.js");
    expect(specifiersOf('const x = await import("../store/x.js"); import type { A } from "../runtime/a.js";')).toEqual(["../store/x.js", "../runtime/a.js"]);
  });

  it("host/cli", () => {
    expect(internalImports("cli")).toEqual([]);
  });

  it("host/ui", () => {
    expect(internalImports("ui")).toEqual([]);
  });
});
