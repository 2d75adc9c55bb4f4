// What `npm install` adds to an application (issue 17): the packages and
// megabytes of node_modules after installing the packed tarball into a
// fresh project: Phronomy's own, with the AI SDK (`ai`, the optional peer
// every model call needs, docs/decisions/0033), and for the CLI with a real model
// (`--model openai-compatible:…` needs the optional peer
// @ai-sdk/openai-compatible). better-sqlite3, which an application on Node
// 20 adds itself (and Node 22.13+ does without), is counted apart.

import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { installProject } from "../../test/package/packed-project.js";

export interface InstallSize {
  readonly packages: number;
  readonly bytes: number;
  readonly names: readonly string[];
}

/** Installs `tarball` (and `extra`) into `directory` and measures node_modules. */
export async function measureInstall(directory: string, tarball: string, extra: readonly string[] = []): Promise<InstallSize> {
  await installProject(directory, tarball, extra, false);
  const modules = join(directory, "node_modules");
  const names = packagesUnder(modules);
  return { packages: names.length, bytes: bytesUnder(modules), names };
}

/** Every installed package (`name` or `@scope/name`), nested ones too. */
function packagesUnder(modules: string): string[] {
  const found: string[] = [];
  const visit = (directory: string): void => {
    let entries: string[];
    try {
      entries = readdirSync(directory);
    } catch {
      return;
    }
    for (const entry of entries) {
      if (entry.startsWith(".")) continue;
      if (entry.startsWith("@")) {
        for (const scoped of readdirSync(join(directory, entry))) {
          found.push(`${entry}/${scoped}`);
          visit(join(directory, entry, scoped, "node_modules"));
        }
        continue;
      }
      found.push(entry);
      visit(join(directory, entry, "node_modules"));
    }
  };
  visit(modules);
  return found.sort();
}

function bytesUnder(path: string): number {
  const stats = statSync(path, { throwIfNoEntry: false });
  if (stats === undefined || stats.isSymbolicLink()) return 0;
  if (!stats.isDirectory()) return stats.size;
  return readdirSync(path).reduce((total, entry) => total + bytesUnder(join(path, entry)), 0);
}
