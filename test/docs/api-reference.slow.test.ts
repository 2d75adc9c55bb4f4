// The API reference cannot drift (issue 17): TypeDoc regenerates it from
// the doc comments of the package's three entries (typedoc.json: every
// export documented, every warning an error) into a temporary directory,
// and the result must be the committed docs/api/, file for file and byte
// for byte. `npm run docs:api` rewrites docs/api/ after a change.

import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTimeoutMs, finished, repositoryRoot } from "../package/packed-project.js";

const committed = join(repositoryRoot, "docs", "api");
let generated: string;
let typedoc: { code: number | null; output: string };

function filesUnder(directory: string): string[] {
  return readdirSync(directory, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(directory, join(entry.parentPath, entry.name)))
    .sort();
}

beforeAll(async () => {
  generated = mkdtempSync(join(tmpdir(), "phronomy-api-"));
  const bin = join(repositoryRoot, "node_modules", "typedoc", "bin", "typedoc");
  const child = spawn(process.execPath, [bin, "--out", generated], { cwd: repositoryRoot, stdio: ["ignore", "pipe", "pipe"] });
  const result = await finished(child, "typedoc", buildTimeoutMs);
  typedoc = { code: result.code, output: result.stdout + result.stderr };
}, buildTimeoutMs + 10_000);

afterAll(() => {
  if (generated !== undefined) rmSync(generated, { recursive: true, force: true });
});

describe("docs/api/, the API reference", () => {
  it("TypeDoc finds every export documented and warns about nothing", () => {
    expect(typedoc.output).toBe("");
    expect(typedoc.code).toBe(0);
  });

  it("is what TypeDoc generates from the sources (npm run docs:api rewrites it)", () => {
    const files = filesUnder(generated);
    expect(files).toContain("README.md");
    expect(filesUnder(committed), "docs/api/ holds other files than TypeDoc makes: npm run docs:api").toEqual(files);
    const stale = files.filter((file) => readFileSync(join(generated, file), "utf8") !== readFileSync(join(committed, file), "utf8"));
    expect(stale, "docs/api/ is stale: npm run docs:api").toEqual([]);
  });

  it("covers the three entries of package.json exports", () => {
    const index = readFileSync(join(committed, "README.md"), "utf8");
    for (const entry of ["phronomy", "phronomy/testing", "phronomy/ui"]) expect(index).toContain(entry);
  });
});
