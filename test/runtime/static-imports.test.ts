// What importing `phronomy` loads (docs/decisions/0054): each store's
// implementation is loaded by the open that picks it, so a PostgreSQL
// application does not load the SQLite store's opening, offload, driver or
// worker modules, and a SQLite one does not load the PostgreSQL store (nor
// `pg`). Checked on the module graph Node would load: every file of the
// static closure of host/index.ts transpiled as the build emits it (type-only
// imports erased), its static imports followed; a dynamic `import()` is
// where loading stops.

import { readFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const host = resolve(import.meta.dirname, "../../host");

/** The specifiers a module imports or re-exports statically, once emitted. */
function staticSpecifiers(file: string): string[] {
  const { outputText } = ts.transpileModule(readFileSync(file, "utf8"), {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false },
    fileName: file,
  });
  const found: string[] = [];
  for (const match of outputText.matchAll(/^\s*(?:import|export)\s(?:[^;"']*?\sfrom\s*)?["']([^"']+)["']/gm)) found.push(match[1]!);
  return found;
}

/** Every file (relative to host/, `.ts`) and package the entry loads at import. */
function staticClosure(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string): void => {
    const name = relative(host, file);
    if (files.has(name)) return;
    files.add(name);
    for (const specifier of staticSpecifiers(file)) {
      if (specifier.startsWith(".")) visit(resolve(dirname(file), specifier).replace(/\.js$/, ".ts"));
      else packages.add(specifier);
    }
  };
  visit(resolve(host, entry));
  return { files, packages };
}

describe("importing phronomy", () => {
  const { files, packages } = staticClosure("index.ts");

  it("follows the runtime's imports (the walk is not vacuous)", () => {
    expect(files).toContain("runtime/environment.ts");
    expect(files).toContain("store/sqlite-store.ts");
    expect(staticSpecifiers(resolve(host, "store/sqlite-store.ts"))).not.toContain("./sqlite/open-owned.js");
  });

  it("loads no store's opening: the SQLite store's ownership, schema, offload, driver and worker, the visitor, the PostgreSQL store", () => {
    const storeOnly = [
      "store/sqlite/open-owned.ts",
      "store/sqlite/ownership.ts",
      "store/sqlite/schema.ts",
      "store/offload.ts",
      "store/sqlite/driver.ts",
      "store/sqlite/start-worker.ts",
      "store/sqlite/file-identity.ts",
      "store/sqlite-visitor.ts",
      "store/sqlite/visitor-connection.ts",
      "store/postgres-store.ts",
    ];
    expect(storeOnly.filter((file) => files.has(file))).toEqual([]);
  });

  it("loads no package but Node's", () => {
    expect([...packages].filter((name) => !name.startsWith("node:"))).toEqual([]);
  });
});
