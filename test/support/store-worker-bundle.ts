// Vitest global setup: bundles the SQLite store's worker (host/store/sqlite/
// worker.ts and what it imports) into one plain-JavaScript file once per test
// run, and names it in `PHRONOMY_TEST_STORE_WORKER` for start-worker.ts.
//
// Why: started from the `.ts` sources, each store worker loads tsx and
// registers its hooks before it can import worker.ts, 1.4–2.6 s of a 2.5–3.5 s
// start on 2 loaded cores, and every `SqliteStore.open` starts one. The
// bundle starts like the worker in dist/ does. esbuild is tsx's own
// dependency (tsx transpiles with it), so it is resolved from tsx rather
// than hoped to be hoisted; it bundles the worker's files in about 0.1 s.
// Node's own `--experimental-strip-types` in the worker would not do: it
// needs Node 22.6 or later, and the sources import `./x.js` for `x.ts`,
// which only a loader (tsx again) resolves.
//
// The bundle lives under build/ in the repository, so that the packages it
// leaves external (better-sqlite3) resolve from the same node_modules as the
// sources do. It is written to a name of its own and renamed into place, so
// that two runs in one worktree never load a half-written file; in watch
// mode it is rebuilt before each rerun, so that it follows edits.

import { randomUUID } from "node:crypto";
import { renameSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type { TestProject } from "vitest/node";

/** The part of esbuild's API used here (its types are tsx's, too). */
interface Esbuild {
  build(options: Record<string, unknown>): Promise<unknown>;
}

const root = fileURLToPath(new URL("../../", import.meta.url));
const workerSource = fileURLToPath(new URL("../../host/store/sqlite/worker.ts", import.meta.url));
const bundlePath = fileURLToPath(new URL("../../build/test-store-worker/worker.mjs", import.meta.url));

function loadEsbuild(): Esbuild {
  const fromRoot = createRequire(root);
  return createRequire(fromRoot.resolve("tsx/package.json"))("esbuild") as Esbuild;
}

async function bundleWorker(esbuild: Esbuild): Promise<void> {
  // Each project of a run calls its global setup, perhaps at once.
  const partial = `${bundlePath}.${randomUUID()}`;
  await esbuild.build({
    entryPoints: [workerSource],
    outfile: partial,
    bundle: true,
    // Packages stay imports, as in dist/: only the repository's own files
    // are bundled.
    packages: "external",
    platform: "node",
    format: "esm",
    // What tsx would emit on this Node, so that the bundle runs the same code.
    target: `node${process.versions.node}`,
    logLevel: "error",
  });
  renameSync(partial, bundlePath);
}

export default async function setup(project: TestProject): Promise<void> {
  const esbuild = loadEsbuild();
  await bundleWorker(esbuild);
  process.env["PHRONOMY_TEST_STORE_WORKER"] = bundlePath;
  project.onTestsRerun(() => bundleWorker(esbuild));
}
