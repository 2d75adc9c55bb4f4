// The code samples of the documentation a user reads (README.md,
// docs/cli.md, docs/runtimes.md — the three that ship in the package) and
// the files under examples/ they come from (issue 17, docs/decisions/0046).
//
// A TypeScript or JavaScript block is marked by the line before it:
//
//   <!-- example: examples/quickstart.ts -->          the whole file, byte for byte
//   <!-- example: examples/retention.ts#readme -->    the file's lines between
//                                                     `// #region readme` and `// #endregion`
//
// Shell blocks are parsed for the `phronomy` command lines they show
// (test/docs/cli-samples.test.ts); output blocks (no language, `jsonc`) are
// illustrations whose shapes test/cli asserts.

import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const repositoryRoot = fileURLToPath(new URL("../..", import.meta.url));

/** The documents whose samples must run. */
export const documents = ["README.md", "docs/cli.md", "docs/runtimes.md"] as const;

/** Languages that are code a user copies into a program. */
const codeLanguages = new Set(["ts", "typescript", "tsx", "js", "javascript", "mjs", "jsx"]);
const shellLanguages = new Set(["sh", "bash", "shell", "console"]);

export interface Block {
  readonly document: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly language: string;
  readonly text: string;
  /** `examples/<file>` with its `#region`, when the block is marked. */
  readonly example?: { readonly file: string; readonly region?: string };
}

/** Every fenced block of `document` (indented ones too, as inside a list). */
export function blocksOf(document: string): Block[] {
  const lines = readFileSync(join(repositoryRoot, document), "utf8").split("\n");
  const blocks: Block[] = [];
  for (let index = 0; index < lines.length; index++) {
    const open = /^(\s*)```(\w*)\s*$/.exec(lines[index]!);
    if (open === null) continue;
    const indent = open[1]!.length;
    const body: string[] = [];
    let end = index + 1;
    while (end < lines.length && !/^\s*```\s*$/.test(lines[end]!)) body.push(lines[end++]!.slice(indent));
    const marker = /^\s*<!-- example: (examples\/[\w./-]+?)(?:#([\w-]+))? -->\s*$/.exec(lines[index - 1] ?? "");
    blocks.push({
      document,
      line: index + 1,
      language: open[2]!,
      text: body.length === 0 ? "" : `${body.join("\n")}\n`,
      ...(marker ? { example: { file: marker[1]!, ...(marker[2] !== undefined ? { region: marker[2] } : {}) } } : {}),
    });
    index = end;
  }
  return blocks;
}

export function isCode(block: Block): boolean {
  return codeLanguages.has(block.language);
}

export function isShell(block: Block): boolean {
  return shellLanguages.has(block.language);
}

/** What a marked block must equal: the file, or its region. */
export function exampleText(file: string, region?: string): string {
  const text = readFileSync(join(repositoryRoot, file), "utf8");
  if (region === undefined) return text;
  const lines = text.split("\n");
  const start = lines.findIndex((line) => line.trim() === `// #region ${region}`);
  if (start < 0) throw new Error(`${file} has no "// #region ${region}"`);
  const end = lines.findIndex((line, index) => index > start && line.trim() === "// #endregion");
  if (end < 0) throw new Error(`${file}: "// #region ${region}" has no "// #endregion"`);
  return `${lines.slice(start + 1, end).join("\n")}\n`;
}

/** The files under examples/. */
export function exampleFiles(): string[] {
  return readdirSync(join(repositoryRoot, "examples"))
    .filter((name) => /\.(ts|mts|js|mjs)$/.test(name))
    .map((name) => `examples/${name}`)
    .sort();
}

/** The example with its package imports pointed at this checkout's sources
 * (as tsconfig.json's `paths` does for the type checker). */
export function fromSources(text: string): string {
  const entry = (path: string) => pathToFileURL(join(repositoryRoot, path)).href;
  return text
    .replaceAll(`from "phronomy/testing"`, `from "${entry("host/testing.ts")}"`)
    .replaceAll(`from "phronomy/ui"`, `from "${entry("host/ui/index.ts")}"`)
    .replaceAll(`from "phronomy/chat"`, `from "${entry("host/chat/index.ts")}"`)
    .replaceAll(`from "phronomy"`, `from "${entry("host/index.ts")}"`);
}
