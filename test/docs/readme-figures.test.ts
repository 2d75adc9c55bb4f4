// README's figures about the build cannot drift (issue 17): every
// `<!-- figure: name -->…<!-- /figure -->` in README.md and
// docs/runtimes.md is recomputed from the build (scripts/readme-figures.ts:
// the release wasm, the packed tarball, the install by the lockfile, the
// dashboard's script) and must match it, sizes within the script's
// tolerance. `npm run readme:figures` rewrites them.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import {
  exportedNames,
  figureDocuments,
  figureMatches,
  markedFigures,
  measureBuildFigures,
  renderFigures,
  staleFigures,
  writeFigures,
} from "../../scripts/readme-figures.js";
import { buildTimeoutMs, repositoryRoot } from "../package/packed-project.js";

let rendered: Record<string, string>;

beforeAll(async () => {
  rendered = renderFigures(await measureBuildFigures());
}, buildTimeoutMs + 60_000);

describe("README's figures", () => {
  for (const document of figureDocuments) {
    it(`${document}: every figure is the build's (npm run readme:figures rewrites them)`, () => {
      const text = readFileSync(join(repositoryRoot, document), "utf8");
      expect(markedFigures(text).length).toBeGreaterThan(0);
      expect(staleFigures(text, rendered)).toEqual([]);
    });
  }

  it("marks the wasm, the tarball and the install in README", () => {
    const names = markedFigures(readFileSync(join(repositoryRoot, "README.md"), "utf8")).map((figure) => figure.name);
    for (const name of ["wasm", "tarball-packed", "install-own", "install-ai", "exports"]) expect(names).toContain(name);
  });

  it("phronomy's own install is phronomy and its three dependencies", () => {
    expect(rendered["install-own-names"]).toBe("@opentelemetry/api, @standard-schema/spec, commander");
    expect(rendered["install-own"]).toMatch(/^4 packages, /);
  });
});

describe("figure comparison", () => {
  it("counts the names a page of the API reference documents, once each", () => {
    expect(exportedNames("### Phronomy\n#### Methods\n### PostgresStore\n### PostgresStore\n### tool()\n")).toEqual(["Phronomy", "PostgresStore", "tool"]);
  });

  it("sizes within the tolerance match, counts and words must be equal", () => {
    expect(figureMatches("8.8 KB", "8.9 KB")).toBe(true);
    expect(figureMatches("8.8 KB", "9.4 KB")).toBe(false);
    expect(figureMatches("399 KB packed, 1,421 KB unpacked, 315 files", "401 KB packed, 1,430 KB unpacked, 315 files")).toBe(true);
    expect(figureMatches("399 KB packed, 1,421 KB unpacked, 315 files", "399 KB packed, 1,421 KB unpacked, 316 files")).toBe(false);
    expect(figureMatches("4 packages, 2.3 MB", "5 packages, 2.3 MB")).toBe(false);
    expect(figureMatches("4 packages, 2.3 MB", "4 packages, 2.3 KB")).toBe(false);
    expect(figureMatches("commander, pg", "commander")).toBe(false);
  });

  it("writes every marker's figure and refuses an unknown name", () => {
    expect(writeFigures("a <!-- figure: wasm -->1 KB<!-- /figure --> b", { wasm: "8.8 KB" })).toBe("a <!-- figure: wasm -->8.8 KB<!-- /figure --> b");
    expect(() => writeFigures("<!-- figure: nope -->x<!-- /figure -->", { wasm: "8.8 KB" })).toThrow(/no figure named "nope"/);
  });
});
