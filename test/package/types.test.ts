// The package's types in a strict consumer (issue 17): the packed tarball
// installed into a fresh project with what an AI SDK application has (`ai`,
// `@types/node`), compiled with `strict` and `skipLibCheck: false` under
// `moduleResolution` node16 and bundler (ESM), and from a CommonJS module
// (a type import with `resolution-mode`, the package loaded with a dynamic
// import). No `pg`, `@types/pg` or other optional peer is installed: the
// public types name none. `@types/json-schema` is installed because the AI
// SDK's own types (`@ai-sdk/provider`) import it without depending on it;
// any strict AI SDK application needs it, with or without Phronomy.

import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTimeoutMs, finished, installedPackage, installProject, packTarball, repositoryRoot } from "./packed-project.js";
import { compilerOptions, strictConsumer as consumer } from "./strict-consumer.js";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";

let workspace: string;
let project: string;

const commonJs = `import type { Environment } from "phronomy" with { "resolution-mode": "import" };
export async function main(): Promise<Environment> {
  const { Phronomy } = await import("phronomy");
  return Phronomy.open({ store: "./agents.db" });
}
`;

async function tsc(config: string): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [join(project, "node_modules", "typescript", "bin", "tsc"), "-p", config], {
    cwd: project,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const result = await finished(child, `tsc -p ${config}`, buildTimeoutMs);
  return { code: result.code, output: result.stdout + result.stderr };
}

beforeAll(async () => {
  workspace = mkdtempSync(join(tmpdir(), "phronomy-types-"));
  project = join(workspace, "project");
  const packed = await packTarball(workspace);
  await installProject(project, packed.path, [installedPackage("ai"), installedPackage("@types/node"), "@types/json-schema@7"]);
  symlinkSync(join(repositoryRoot, "node_modules", "typescript"), join(project, "node_modules", "typescript"), "dir");
  writeFileSync(join(project, "index.ts"), consumer);
  mkdirSync(join(project, "cjs"));
  writeFileSync(join(project, "cjs", "package.json"), `${JSON.stringify({ type: "commonjs" })}\n`);
  writeFileSync(join(project, "cjs", "index.ts"), commonJs);
  writeFileSync(join(project, "tsconfig.node16.json"), JSON.stringify({ compilerOptions: compilerOptions("node16", "node16"), files: ["index.ts"] }));
  writeFileSync(join(project, "tsconfig.bundler.json"), JSON.stringify({ compilerOptions: compilerOptions("esnext", "bundler"), files: ["index.ts"] }));
  writeFileSync(join(project, "tsconfig.cjs.json"), JSON.stringify({ compilerOptions: compilerOptions("node16", "node16"), files: ["cjs/index.ts"] }));
}, buildTimeoutMs + 120_000);

afterAll(() => {
  if (workspace !== undefined) rmSync(workspace, { recursive: true, force: true });
});

describe("the package's types in a strict consumer (skipLibCheck: false)", () => {
  it("no optional peer is installed", () => {
    for (const name of ["pg", "@types/pg", "better-sqlite3", "@ai-sdk/openai-compatible"])
      expect(existsSync(join(project, "node_modules", name)), name).toBe(false);
  });

  for (const [label, config] of [
    ["ESM, moduleResolution node16", "tsconfig.node16.json"],
    ["ESM, moduleResolution bundler", "tsconfig.bundler.json"],
    ["CommonJS, moduleResolution node16", "tsconfig.cjs.json"],
  ] as const) {
    it(
      `compiles: ${label}`,
      async () => {
        const result = await tsc(config);
        expect(result.output).toBe("");
        expect(result.code).toBe(0);
      },
      buildTimeoutMs + 10_000,
    );
  }
});
