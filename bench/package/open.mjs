// One cold start, for bench/package/index.ts: in a fresh process, import
// the installed package, open an environment on the store at `<store>`
// (a new one when the file does not exist yet: created and migrated), close
// it. Prints `OPEN <json>` with the milliseconds of each step. Plain
// JavaScript: it runs as is on Node, Deno and Bun.
//
//   open.mjs <store> [offload policy]

import { existsSync } from "node:fs";
import process from "node:process";

const [store, policy] = process.argv.slice(2);
if (store === undefined) throw new Error("usage: open.mjs <store> [offload policy]");
const existed = existsSync(store);
const started = performance.now();
const { Phronomy } = await import("phronomy");
const imported = performance.now();
const env = await Phronomy.open({ store, ...(policy === undefined ? {} : { offloadPolicy: policy }) });
const opened = performance.now();
await env.close();
const closed = performance.now();
console.log(`OPEN ${JSON.stringify({ existed, importMs: imported - started, openMs: opened - imported, closeMs: closed - opened })}`);
