// `npm run bench:memory`: where the RSS of a process holding suspended
// conversations goes (issue 26, decision 0074). One process, five points,
// each after two full GCs:
//
//   1. bare `node` (nothing of the package imported yet),
//   2. `import "phronomy"`,
//   3. an opened SQLite environment, the bench's definition ready and one
//      conversation suspended (the JIT warm), idle,
//   4. BENCH_SUSPENDED (default 10,000) more conversations suspended for
//      approval, as `npm run bench`'s approvals section suspends them (all
//      started at once on SQLite), right after the last suspension;
//   5. the same, 2 s later (V8 gives back what the burst grew).
//
// For each: RSS as the GC returned and once the pages it freed were given
// back (bench/memory.ts), `process.memoryUsage()`, V8's spaces (committed), and
// `/proc/self/smaps` grouped by what a mapping holds — the node binary and
// shared libraries (file-backed), the WebAssembly memory's reservation
// (the core's linear memory: the only anonymous mapping of several GiB),
// glibc's arenas (the main `[heap]` and the 64 MiB-aligned thread arenas:
// SQLite's page caches, better-sqlite3's statements, Node's own native
// memory), and the rest of anonymous memory (V8's heap pages of both
// isolates, thread stacks). Prints figures, asserts nothing.
//
//   BENCH_SUSPENDED=10000 npm run bench:memory
//   BENCH_OFFLOAD=inline npm run bench:memory      (no store worker)
//   BENCH_IN_FLIGHT=100 npm run bench:memory       (100 at a time)
//   BENCH_MAPS=1 npm run bench:memory              (the files resident, by file)
//
// Runs on the compiled package (scripts/bench-compiled.mjs).

import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getHeapSpaceStatistics } from "node:v8";
import { memoryAfterGc } from "../memory.js";

const SUSPENDED = Number(process.env.BENCH_SUSPENDED ?? 10_000);
const OFFLOAD = process.env.BENCH_OFFLOAD;
/** Conversations started and not yet suspended at a time (all at once by
 * default, as `npm run bench` starts them on SQLite). */
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? SUSPENDED);

const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

interface Smaps {
  /** File-backed pages resident: the binary, shared libraries, the core's file. */
  files: number;
  /** The WebAssembly memory's reservation (the core's linear memory). */
  wasm: number;
  /** glibc's main heap (`[heap]`) and its thread arenas. */
  malloc: number;
  /** Every other anonymous page: V8's heaps, thread stacks. */
  anonymous: number;
  rss: number;
}

/** Resident memory by kind, from `/proc/self/smaps` (Linux only). */
function smaps(): Smaps | undefined {
  let text: string;
  try {
    text = readFileSync("/proc/self/smaps", "utf8");
  } catch {
    return undefined;
  }
  const mappings: { start: number; end: number; inode: string; name: string; rss: number }[] = [];
  for (const line of text.split("\n")) {
    const header = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (header) {
      mappings.push({ start: Number.parseInt(header[1]!, 16), end: Number.parseInt(header[2]!, 16), inode: header[3]!, name: header[4]!, rss: 0 });
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && mappings.length > 0) mappings[mappings.length - 1]!.rss = Number(rss[1]) * 1024;
  }
  // The WebAssembly memory is one reservation of ≈10 GiB whose accessible
  // head (the memory's current size) is a mapping of its own, right before
  // the inaccessible rest.
  const reservations = new Set(mappings.filter((m) => m.end - m.start >= 4 * 2 ** 30).map((m) => m.start));
  const result: Smaps = { files: 0, wasm: 0, malloc: 0, anonymous: 0, rss: 0 };
  const byFile = new Map<string, number>();
  for (const m of mappings) {
    let kind: keyof Smaps;
    if (m.inode !== "0") kind = "files";
    else if (m.name === "[heap]") kind = "malloc";
    else if (reservations.has(m.start) || reservations.has(m.end)) kind = "wasm";
    // A thread arena is a 64 MiB-aligned reservation of 64 MiB; V8's pages
    // are 256 KiB and its reservations are not aligned the same way.
    else if (m.start % 2 ** 26 === 0 && m.end - m.start <= 2 ** 26) kind = "malloc";
    else kind = "anonymous";
    result[kind] += m.rss;
    result.rss += m.rss;
    if (kind === "files") byFile.set(m.name, (byFile.get(m.name) ?? 0) + m.rss);
  }
  if (process.env.BENCH_MAPS) for (const [name, rss] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 8)) console.log(`    ${mib(rss)} ${name}`);
  return result;
}

interface Point {
  label: string;
  /** RSS read at once after the collection returned. */
  rightAfterGc: number;
  usage: NodeJS.MemoryUsage;
  spaces: Record<string, number>;
  maps: Smaps | undefined;
}

function point(label: string): Point {
  if ((globalThis as { gc?: () => void }).gc === undefined) throw new Error("run with --expose-gc (npm run bench:memory does)");
  const usage = memoryAfterGc();
  const spaces: Record<string, number> = {};
  for (const space of getHeapSpaceStatistics()) spaces[space.space_name] = space.space_size;
  return { label, rightAfterGc: usage.rssRightAfterGc, usage, spaces, maps: smaps() };
}

function print(points: readonly Point[]): void {
  const rows: string[][] = [
    ["", ...points.map((p) => p.label)],
    ["RSS right after GC", ...points.map((p) => mib(p.rightAfterGc))],
    ["RSS once the GC's pages are released", ...points.map((p) => mib(p.usage.rss))],
    ["  file-backed (binary, libraries)", ...points.map((p) => (p.maps ? mib(p.maps.files) : "–"))],
    ["  WebAssembly memory (the core)", ...points.map((p) => (p.maps ? mib(p.maps.wasm) : "–"))],
    ["  glibc arenas (SQLite, native)", ...points.map((p) => (p.maps ? mib(p.maps.malloc) : "–"))],
    ["  other anonymous (V8 heaps, stacks)", ...points.map((p) => (p.maps ? mib(p.maps.anonymous) : "–"))],
    ["main heap used", ...points.map((p) => mib(p.usage.heapUsed))],
    ["main heap committed", ...points.map((p) => mib(p.usage.heapTotal))],
  ];
  for (const space of Object.keys(points[0]!.spaces)) rows.push([`  ${space}`, ...points.map((p) => mib(p.spaces[space] ?? 0))]);
  rows.push(["external", ...points.map((p) => mib(p.usage.external))], ["  array buffers", ...points.map((p) => mib(p.usage.arrayBuffers))]);
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const row of rows) console.log(`  ${row.map((cell, column) => (column === 0 ? cell.padEnd(widths[0]!) : cell.padStart(widths[column]!))).join(" | ")}`);
  console.log("  (MiB; every point after two full GCs)");
}

const points: Point[] = [point("node")];
const { Phronomy } = await import("../../host/index.js");
const { defineRefunds, suspendConversations } = await import("./workload.js");
points.push(point("import"));
const directory = await mkdtemp(join(tmpdir(), "phronomy-memory-"));
try {
  const env = await Phronomy.open({
    store: join(directory, "memory.db"),
    logger: { warn: () => undefined },
    ...(OFFLOAD === "inline" || OFFLOAD === "worker" ? { offloadPolicy: OFFLOAD } : {}),
  });
  const definition = defineRefunds(env);
  await definition.ready;
  await new Promise<void>((resolve) => {
    definition
      .conversation("warm")
      .start("refund me", {
        onEvent: (event) => {
          if (event.type === "approval_required") resolve();
        },
      })
      .result.catch(() => undefined);
  });
  await new Promise((resolve) => setTimeout(resolve, 1000));
  points.push(point("opened"));
  const began = performance.now();
  let peak = { rss: 0, heapTotal: 0, heapUsed: 0 };
  const sampler = setInterval(() => {
    const usage = process.memoryUsage();
    if (usage.rss > peak.rss) peak = usage;
  }, 20);
  await suspendConversations(definition, SUSPENDED, undefined, IN_FLIGHT);
  clearInterval(sampler);
  const seconds = (performance.now() - began) / 1000;
  console.log(
    `  peak during the suspends (sampled every 20 ms): RSS ${mib(peak.rss)}, main heap ${mib(peak.heapUsed)} used of ${mib(peak.heapTotal)} committed`,
  );
  points.push(point(`${SUSPENDED} suspended`));
  await new Promise((resolve) => setTimeout(resolve, 2000));
  points.push(point("2 s later"));
  console.log(
    `bench/e2e/memory-profile — ${SUSPENDED} suspended in ${seconds.toFixed(1)} s (${(SUSPENDED / seconds).toFixed(0)}/s, ${IN_FLIGHT} at a time), offload ${OFFLOAD ?? "adaptive"}, node ${process.version}`,
  );
  print(points);
  await env.close();
} finally {
  await rm(directory, { recursive: true, force: true });
}
