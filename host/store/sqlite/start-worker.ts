// Starts the store worker from wherever this module runs: from the compiled
// `.js` in `dist/`, where the worker entry is plain JavaScript, or from the
// `.ts` sources (vitest, tsx), where the worker must load TypeScript.
//
// From sources, `execArgv: ["--import", "tsx"]` is not enough on Node 20:
// tsx installs its loader hooks only on the main thread there, so the worker
// would fail with "Unknown file extension .ts". The worker is therefore
// started from a two-line bootstrap that registers tsx's ESM hooks in the
// worker itself (tsx's `register()` API) and then imports `worker.ts`.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import type { WorkerSettings } from "./worker-protocol.js";

export function startStoreWorker(settings: WorkerSettings): Worker {
  if (!import.meta.url.endsWith(".ts")) {
    return new Worker(new URL("./worker.js", import.meta.url), { workerData: settings, execArgv: [] });
  }
  const entry = new URL("./worker.ts", import.meta.url).href;
  const bootstrap = `import(${JSON.stringify(tsxRegisterUrl())})
    .then(({ register }) => { register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(bootstrap, { eval: true, workerData: settings, execArgv: [] });
}

/** The file URL of tsx's ESM `register` API, read from tsx's own exports
 * map (the worker's bootstrap has no module path to resolve "tsx" from). */
function tsxRegisterUrl(): string {
  const require = createRequire(import.meta.url);
  const manifestPath = require.resolve("tsx/package.json");
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as {
    exports: { "./esm/api": { import: { default: string } } };
  };
  return pathToFileURL(join(dirname(manifestPath), manifest.exports["./esm/api"].import.default)).href;
}
