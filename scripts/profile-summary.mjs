// `node scripts/profile-summary.mjs <file.cpuprofile> [runs]`: where a V8
// CPU profile's time went (docs/decisions/0043). Prints the share of
// samples by kind of code (self time: the frame that was running) and the
// inclusive share of the frames the host's hot path goes through (a sample
// counts for every such frame on its stack), and, given the runs the
// profile covered, microseconds per run.
//
// Plain JavaScript, so that it runs on any profile without a build.

import { readFileSync } from "node:fs";

const [file, runsText] = process.argv.slice(2);
if (file === undefined) {
  console.error("usage: node scripts/profile-summary.mjs <file.cpuprofile> [runs]");
  process.exit(2);
}
const runs = runsText === undefined ? undefined : Number(runsText);
const profile = JSON.parse(readFileSync(file, "utf8"));
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

// Sample durations: timeDeltas[i] is the time before sample i.
const weights = new Map();
let total = 0;
profile.samples.forEach((id, index) => {
  const delta = profile.timeDeltas[index + 1] ?? profile.timeDeltas[index] ?? 0;
  weights.set(id, (weights.get(id) ?? 0) + delta);
  total += delta;
});

function kindOf(frame) {
  const { functionName: name, url } = frame.callFrame;
  if (name === "(idle)") return "idle";
  if (name === "(garbage collector)") return "GC";
  if (name === "(program)") return "program (native, unattributed)";
  if (url.includes("/node_modules/ai/") || url.includes("/node_modules/@ai-sdk/")) return "AI SDK";
  if (url.includes("/node_modules/zod/")) return "zod";
  if (url.includes("/node_modules/")) return `node_modules: ${url.split("/node_modules/")[1]?.split("/")[0]}`;
  if (url.startsWith("wasm://") || url.includes(".wasm")) return "core (wasm)";
  const host = url.match(/\/host\/([a-z-]+)\/(?:([a-z-]+)\/)?/);
  if (host) return `host/${host[1]}${host[1] === "store" && host[2] ? `/${host[2]}` : ""}`;
  if (url.includes("/bench/")) return "bench";
  if (url.startsWith("node:")) return "node internals";
  if (url === "") return `native: ${name || "(anonymous)"}`;
  return url.split("/").slice(-2).join("/");
}

const selfByKind = new Map();
const selfByFunction = new Map();
for (const [id, weight] of weights) {
  const frame = nodes.get(id);
  const kind = kindOf(frame);
  selfByKind.set(kind, (selfByKind.get(kind) ?? 0) + weight);
  const { functionName, url, lineNumber } = frame.callFrame;
  const key = `${functionName || "(anonymous)"} ${url.split("/").slice(-2).join("/")}:${lineNumber + 1}`;
  selfByFunction.set(key, (selfByFunction.get(key) ?? 0) + weight);
}

// Inclusive: a sample counts once for each named frame on its stack.
const inclusiveNames = [
  "apply",
  "carryOut",
  "drain",
  "flush",
  "commitInline",
  "commitGroup",
  "applyOperation",
  "sendToWorker",
  "onWorkerReply",
  "startModelCall",
  "callModel",
  "generateText",
  "directStep",
  "startToolBatch",
  "executeTool",
  "validateToolInput",
  "toModelMessages",
  "deliverOutcome",
  "emit",
  "stringify",
  "parse",
  "postMessage",
  "change",
  "prepareExecution",
  "providerBarrier",
  "toolBarrier",
  "terminalCommit",
  "run",
  "exec",
  "prepare",
  "get",
  "all",
];
const inclusive = new Map();
for (const [id, weight] of weights) {
  const seen = new Set();
  for (let cursor = id; cursor !== undefined; cursor = parent.get(cursor)) {
    const name = nodes.get(cursor).callFrame.functionName;
    if (inclusiveNames.includes(name) && !seen.has(name)) {
      seen.add(name);
      inclusive.set(name, (inclusive.get(name) ?? 0) + weight);
    }
  }
}

const busy = total - (selfByKind.get("idle") ?? 0);
const show = (micros) => {
  const share = `${((micros / total) * 100).toFixed(1).padStart(5)}%`;
  return runs === undefined ? share : `${share} ${(micros / runs).toFixed(0).padStart(6)} µs/run`;
};
console.log(
  `${file}: ${(total / 1e6).toFixed(2)} s sampled, ${((busy / total) * 100).toFixed(0)}% busy${runs === undefined ? "" : `, ${runs} runs: ${(busy / runs).toFixed(0)} µs busy per run`}`,
);
console.log("\nself time by kind of code:");
for (const [kind, micros] of [...selfByKind].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${show(micros)}  ${kind}`);
console.log("\nself time, top functions:");
for (const [name, micros] of [...selfByFunction].sort((a, b) => b[1] - a[1]).slice(0, 40)) console.log(`  ${show(micros)}  ${name}`);
console.log("\ninclusive (frames on the stack):");
for (const [name, micros] of [...inclusive].sort((a, b) => b[1] - a[1])) console.log(`  ${show(micros)}  ${name}`);
