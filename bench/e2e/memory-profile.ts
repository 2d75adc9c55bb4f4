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
//   5. the same, 2 s later (V8 keeps what the burst grew: its young
//      generation shrinks only at rest, decision 0109; BENCH_LATER_S adds a
//      point after that).
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
//   BENCH_WORKER_HEAP=1 npm run bench:memory       (the store worker's V8 spaces too)
//   BENCH_LATER_S=10 npm run bench:memory          (one more point, 10 s after the last)
//
// BENCH_WORKER_HEAP reads the store worker's isolate through the inspector
// (`NodeWorker` domain: a `Runtime.evaluate` in the worker after two GCs
// there), since the package does not expose its worker. The inspector's
// sessions cost memory of their own (a few hundred KB in the worker), so
// the RSS figures of a run without it are the ones to quote.
//
// Runs on the compiled package (scripts/bench-compiled.mjs).

import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Session } from "node:inspector";
import { getHeapSpaceStatistics } from "node:v8";
import { memoryAfterGc } from "../memory.js";

const SUSPENDED = Number(process.env.BENCH_SUSPENDED ?? 10_000);
const OFFLOAD = process.env.BENCH_OFFLOAD;
/** Conversations started and not yet suspended at a time (all at once by
 * default, as `npm run bench` starts them on SQLite). */
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? SUSPENDED);

const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

/** The store worker's V8 spaces (committed), read through the inspector. */
class WorkerHeapProbe {
  private readonly session = new Session();
  private workerSession: string | undefined;
  private nextId = 1;
  private readonly replies = new Map<number, (value: unknown) => void>();

  constructor() {
    this.session.connect();
    this.session.on("NodeWorker.attachedToWorker", (message: { params: { sessionId: string } }) => {
      this.workerSession ??= message.params.sessionId;
    });
    this.session.on("NodeWorker.receivedMessageFromWorker", (message: { params: { message: string } }) => {
      const reply = JSON.parse(message.params.message) as { id?: number; result?: { result?: { value?: unknown } } };
      if (reply.id !== undefined) this.replies.get(reply.id)?.(reply.result?.result?.value);
    });
  }

  private post(method: string, params: object): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.session.post(method, params, (error, result) => (error ? reject(error) : resolve(result)));
    });
  }

  async attach(): Promise<void> {
    await this.post("NodeWorker.enable", { waitForDebuggerOnStart: false });
    for (let i = 0; i < 100 && this.workerSession === undefined; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  }

  /** The worker's spaces after two GCs there; undefined with no worker. */
  async spaces(): Promise<Record<string, number> | undefined> {
    if (this.workerSession === undefined) return undefined;
    const id = this.nextId++;
    const expression =
      'globalThis.gc?.(); globalThis.gc?.(); JSON.stringify(Object.fromEntries(process.getBuiltinModule("v8").getHeapSpaceStatistics().map((s) => [s.space_name, s.space_size])))';
    const value = new Promise<unknown>((resolve) => this.replies.set(id, resolve));
    await this.post("NodeWorker.sendMessageToWorker", {
      sessionId: this.workerSession,
      message: JSON.stringify({ id, method: "Runtime.evaluate", params: { expression, returnByValue: true } }),
    });
    // The store worker does not hold the event loop open (it is unref'd):
    // a timer does while the reply travels.
    const keepAlive = setInterval(() => undefined, 1000);
    const text = await value;
    clearInterval(keepAlive);
    this.replies.delete(id);
    return typeof text === "string" ? (JSON.parse(text) as Record<string, number>) : undefined;
  }
}
const workerProbe = process.env.BENCH_WORKER_HEAP ? new WorkerHeapProbe() : undefined;

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
  if (process.env.BENCH_MAPS) {
    for (const [name, rss] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 8)) console.log(`    ${mib(rss)} ${name}`);
    const arenas = mappings.filter((m) => m.inode === "0" && (m.name === "[heap]" || (m.start % 2 ** 26 === 0 && m.end - m.start <= 2 ** 26)));
    console.log(`    glibc arenas resident: ${arenas.map((m) => `${m.name === "[heap]" ? "[heap] " : ""}${mib(m.rss)}`).join(", ")}`);
  }
  return result;
}

interface Point {
  label: string;
  /** RSS read at once after the collection returned. */
  rightAfterGc: number;
  usage: NodeJS.MemoryUsage;
  spaces: Record<string, number>;
  /** The store worker's spaces, with BENCH_WORKER_HEAP. */
  workerSpaces: Record<string, number> | undefined;
  maps: Smaps | undefined;
}

async function point(label: string): Promise<Point> {
  if ((globalThis as { gc?: () => void }).gc === undefined) throw new Error("run with --expose-gc (npm run bench:memory does)");
  const workerSpaces = await workerProbe?.spaces();
  const usage = memoryAfterGc();
  const spaces: Record<string, number> = {};
  for (const space of getHeapSpaceStatistics()) spaces[space.space_name] = space.space_size;
  return { label, rightAfterGc: usage.rssRightAfterGc, usage, spaces, workerSpaces, maps: smaps() };
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
  if (points.some((p) => p.workerSpaces !== undefined)) {
    const total = (spaces: Record<string, number> | undefined) => (spaces ? mib(Object.values(spaces).reduce((a, b) => a + b, 0)) : "–");
    rows.push(["store worker heap committed", ...points.map((p) => total(p.workerSpaces))]);
    for (const space of Object.keys(points[0]!.spaces)) {
      if (points.some((p) => (p.workerSpaces?.[space] ?? 0) > 0))
        rows.push([`  ${space}`, ...points.map((p) => (p.workerSpaces ? mib(p.workerSpaces[space] ?? 0) : "–"))]);
    }
  }
  rows.push(["external", ...points.map((p) => mib(p.usage.external))], ["  array buffers", ...points.map((p) => mib(p.usage.arrayBuffers))]);
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const row of rows) console.log(`  ${row.map((cell, column) => (column === 0 ? cell.padEnd(widths[0]!) : cell.padStart(widths[column]!))).join(" | ")}`);
  console.log("  (MiB; every point after two full GCs)");
}

const points: Point[] = [await point("node")];
const { Phronomy } = await import("../../host/index.js");
const { defineRefunds, suspendConversations } = await import("./workload.js");
points.push(await point("import"));
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
  await workerProbe?.attach();
  points.push(await point("opened"));
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
  points.push(await point(`${SUSPENDED} suspended`));
  await new Promise((resolve) => setTimeout(resolve, 2000));
  points.push(await point("2 s later"));
  const later = Number(process.env.BENCH_LATER_S ?? 0);
  if (later > 0) {
    await new Promise((resolve) => setTimeout(resolve, later * 1000));
    points.push(await point(`${later + 2} s later`));
  }
  console.log(
    `bench/e2e/memory-profile — ${SUSPENDED} suspended in ${seconds.toFixed(1)} s (${(SUSPENDED / seconds).toFixed(0)}/s, ${IN_FLIGHT} at a time), offload ${OFFLOAD ?? "adaptive"}, node ${process.version}`,
  );
  print(points);
  await env.close();
} finally {
  await rm(directory, { recursive: true, force: true });
}
