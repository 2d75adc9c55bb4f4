// The runtimes the package supports (decision 0060): Node 22.13 and later
// (what the AI SDK 7, a peer dependency, requires, and the first Node 22
// with the built-in node:sqlite, so no supported Node needs a native
// build), Deno 2 and Bun 1. `Phronomy.open` refuses an older Node with
// `UNSUPPORTED_RUNTIME` naming the version found and the one needed,
// instead of failing later on whatever the old runtime lacks.
//
// The refusal is the package's: scripts/build-dist.mjs sets
// `nodeFloorEnforced` to true in the built dist/. The repository's own
// toolchain and tests run the sources, on the Node the machine has (Node
// 20 on the development machines), where it stays false.

import { PhronomyError } from "../errors.js";

/** The oldest Node the package runs on, [major, minor] (package.json `engines`). */
export const nodeVersionMin = [22, 13] as const;

/** True in the package (build-dist.mjs rewrites this line); false in the sources. */
export const nodeFloorEnforced: boolean = false;

/** `UNSUPPORTED_RUNTIME` when `versions` is a Node older than the floor. */
export function unsupportedRuntime(versions: NodeJS.ProcessVersions = process.versions): PhronomyError | undefined {
  if (versions["bun"] !== undefined || versions["deno"] !== undefined) return undefined;
  const [major = 0, minor = 0] = versions.node.split(".").map(Number);
  const [majorMin, minorMin] = nodeVersionMin;
  if (major > majorMin || (major === majorMin && minor >= minorMin)) return undefined;
  const needed = `${majorMin}.${minorMin}`;
  return new PhronomyError(
    "UNSUPPORTED_RUNTIME",
    `phronomy needs Node ${needed} or later; this is Node ${versions.node}. Upgrade Node (22 LTS or 24 LTS); `
      + "Node 20 reached its end of life in April 2026, and the AI SDK 7 needs Node 22 too",
    { details: { runtime: "node", found: versions.node, needed: `>=${needed}` } },
  );
}

/** Throws a `PhronomyError` with code `UNSUPPORTED_RUNTIME` when this Node
 * is older than the package supports (22.13), naming the version found and
 * the one needed (`details.found`, `details.needed`). `Phronomy.open` and
 * the `phronomy` command check it first; call it at start-up to fail before
 * anything else. Deno and Bun pass. */
export function checkSupportedRuntime(): void {
  if (!nodeFloorEnforced) return;
  const refusal = unsupportedRuntime();
  if (refusal !== undefined) throw refusal;
}
