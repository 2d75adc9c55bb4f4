// Starts the store worker from wherever this module runs, on Node, Deno and
// Bun: from the compiled `.js` in `dist/`, where the worker entry is plain
// JavaScript (every runtime), or from the `.ts` sources, where the worker
// must load TypeScript (Node under vitest or tsx; Bun runs it natively).
//
// From sources on Node, `execArgv: ["--import", "tsx"]` is not enough on
// Node 20: tsx installs its loader hooks only on the main thread there, so
// the worker would fail with "Unknown file extension .ts". The worker is
// therefore started from a two-line bootstrap that registers tsx's ESM hooks
// in the worker itself (tsx's `register()` API) and then imports `worker.ts`.
//
// Requests and replies travel over a channel of their own
// (`worker-protocol.ts` says why); `parentPort` is not used.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { MessageChannel, Worker, type MessagePort } from "node:worker_threads";
import type { WorkerData, WorkerSettings } from "./worker-protocol.js";

/** A started worker: the thread (lifetime, `exit` and `error` events) and
 * the calling thread's end of its channel (requests and replies). */
export interface StoreWorker {
  readonly thread: Worker;
  readonly port: MessagePort;
}

export function startStoreWorker(settings: WorkerSettings): StoreWorker {
  const { port1, port2 } = new MessageChannel();
  const workerData: WorkerData = { settings, port: port2 };
  const options = { workerData, transferList: [port2], execArgv: [] };
  return { thread: startThread(options), port: port1 };
}

function startThread(options: { workerData: WorkerData; transferList: MessagePort[]; execArgv: string[] }): Worker {
  if (!import.meta.url.endsWith(".ts")) return new Worker(new URL("./worker.js", import.meta.url), options);
  if (process.versions["bun"] !== undefined) return new Worker(new URL("./worker.ts", import.meta.url), options);
  const entry = new URL("./worker.ts", import.meta.url).href;
  const bootstrap = `import(${JSON.stringify(tsxRegisterUrl())})
    .then(({ register }) => { register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(bootstrap, { ...options, eval: true });
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
