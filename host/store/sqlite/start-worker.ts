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

/** The worker's young generation, in MB (Node only). V8 grows it to 16 MB
 * or more per semi-space under a burst of groups and keeps it; the worker's
 * garbage is the decoded groups and their answers, a few kilobytes per
 * operation, so a small one costs a few quick scavenges and saves its
 * growth in RSS (docs/decisions/0028-memory-of-idle-and-suspended.md). */
export const workerYoungGenerationMb = 2;

type ThreadOptions = { workerData: WorkerData; transferList: MessagePort[]; execArgv: string[]; resourceLimits?: { maxYoungGenerationSizeMb: number } };

export function startStoreWorker(settings: WorkerSettings): StoreWorker {
  const { port1, port2 } = new MessageChannel();
  const workerData: WorkerData = { settings, port: port2 };
  const onNode = process.versions["bun"] === undefined && process.versions["deno"] === undefined;
  const options: ThreadOptions = {
    workerData,
    transferList: [port2],
    execArgv: [],
    ...(onNode ? { resourceLimits: { maxYoungGenerationSizeMb: workerYoungGenerationMb } } : {}),
  };
  return { thread: startThread(options), port: port1 };
}

function startThread(options: ThreadOptions): Worker {
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
