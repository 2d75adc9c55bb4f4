// What `npm install` adds to an application (issue 17): the packages and
// megabytes of node_modules after installing the packed tarball into a
// fresh project: Phronomy's own, with the AI SDK (`ai`, the optional peer
// every model call needs, docs/decisions/0033), and for the CLI with a real model
// (`--model openai-compatible:…` needs the optional peer
// @ai-sdk/openai-compatible). better-sqlite3, which an application on Node
// 20 adds itself (and Node 22.13+ does without), is counted apart.
//
// Two ways: `measureInstall` installs from the registry into a fresh project
// (what bench:package prints); `lockfileInstall` computes the same from
// package-lock.json and this checkout's node_modules, without the network
// (what README's figures and their CI check use, scripts/readme-figures.ts;
// docs/decisions/0045). They differ when the registry has newer versions
// in range than the lock.

import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { installProject, repositoryRoot } from "../../test/package/packed-project.js";

export interface InstallSize {
  readonly packages: number;
  readonly bytes: number;
  readonly names: readonly string[];
}

/** Installs `tarball` (and `extra`) into `directory` and measures node_modules. */
export async function measureInstall(directory: string, tarball: string, extra: readonly string[] = []): Promise<InstallSize> {
  await installProject(directory, tarball, extra);
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

interface LockedPackage {
  readonly version: string;
  readonly dependencies?: Record<string, string>;
  readonly optionalDependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
  readonly peerDependenciesMeta?: Record<string, { readonly optional?: boolean }>;
}

/** What installing phronomy (`unpackedBytes`, the tarball's `unpackedSize`)
 * and `extra` adds, by the lock: phronomy's dependencies and `extra`, each
 * with its dependencies and its non-optional peers (npm installs those),
 * transitively, resolved as Node resolves them from the lock's
 * `node_modules` paths; one package per name and version (a fresh install
 * hoists duplicates); sizes of this checkout's installed copies (without
 * their nested node_modules, counted as packages of their own). An
 * optional dependency counts when it is installed here. */
export function lockfileInstall(unpackedBytes: number, extra: readonly string[] = [], root = repositoryRoot): InstallSize {
  const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")) as { packages: Record<string, LockedPackage> };
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { dependencies?: Record<string, string> };
  const found = new Map<string, string>();
  const visit = (from: string, name: string, optional: boolean): void => {
    const path = lockedPath(lock.packages, from, name);
    if (path === undefined || (optional && statSync(join(root, path), { throwIfNoEntry: false }) === undefined)) {
      if (optional) return;
      throw new Error(`install-size: ${name} (needed from ${from || "the package"}) is not in package-lock.json`);
    }
    const entry = lock.packages[path]!;
    const id = `${name}@${entry.version}`;
    if (found.has(id)) return;
    found.set(id, path);
    const peers = Object.keys(entry.peerDependencies ?? {}).filter((peer) => entry.peerDependenciesMeta?.[peer]?.optional !== true);
    for (const dependency of [...Object.keys(entry.dependencies ?? {}), ...peers]) visit(path, dependency, false);
    for (const dependency of Object.keys(entry.optionalDependencies ?? {})) visit(path, dependency, true);
  };
  for (const name of [...Object.keys(manifest.dependencies ?? {}), ...extra]) visit("", name, false);
  const bytes = [...found.values()].reduce((total, path) => total + bytesOfPackage(join(root, path)), unpackedBytes);
  const names = ["phronomy", ...[...found.keys()].map((id) => id.slice(0, id.lastIndexOf("@")))].sort();
  return { packages: found.size + 1, bytes, names };
}

/** The lock's path for `name` required from the package at `from` ("" for
 * the root): `from/node_modules/name`, else the same from each enclosing
 * node_modules, as Node looks it up. */
function lockedPath(packages: Record<string, LockedPackage>, from: string, name: string): string | undefined {
  let base = from;
  for (;;) {
    const path = `${base === "" ? "" : `${base}/`}node_modules/${name}`;
    if (packages[path] !== undefined) return path;
    if (base === "") return undefined;
    const nested = base.lastIndexOf("/node_modules/");
    base = nested < 0 ? "" : base.slice(0, nested);
  }
}

/** A package directory's bytes, without its nested node_modules. */
function bytesOfPackage(path: string): number {
  const stats = statSync(path, { throwIfNoEntry: false });
  if (stats === undefined || stats.isSymbolicLink()) return 0;
  if (!stats.isDirectory()) return stats.size;
  return readdirSync(path).reduce((total, entry) => (entry === "node_modules" ? total : total + bytesOfPackage(join(path, entry))), 0);
}
