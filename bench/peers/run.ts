// The peers of `npm run bench` (issue 26 part 4): LangGraph.js with its
// SQLite checkpointer, DBOS Transact on the local PostgreSQL, Restate's
// single-node server — each running bench/peers/workload.ts's workload in
// child processes, measured the way bench/index.ts measures Phronomy.
//
// The peers are installed on demand into bench/peers/node_modules (their
// own package.json and lock; the root install stays light) and only then
// loaded, by the children. BENCH_PEERS=langgraph,dbos,restate picks them
// (all by default); BENCH_PEERS_ROUNDS (default 1) the rounds of each.

import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Approvals, Loops, Restart } from "./workload.js";

export const peerNames = ["langgraph", "dbos", "restate"] as const;
export type PeerName = (typeof peerNames)[number];

export const peerTitles: Record<PeerName, string> = {
  // The durability its child sets (langgraph.ts, docs/decisions/0106).
  langgraph: `LangGraph (SQLite ${process.env.BENCH_LANGGRAPH_SYNCHRONOUS ?? "FULL"})`,
  dbos: "DBOS (PG)",
  restate: "Restate",
};

export interface PeerRound {
  loops?: Loops;
  /** LangGraph only: its loops at the checkpointer's shipped
   * `synchronous = NORMAL` (no fsync at a commit), beside `loops` at FULL. */
  shippedLoops?: Loops;
  approvals?: Approvals;
  restart?: Restart;
  error?: string;
}

export type PeerResults = Partial<Record<PeerName, PeerRound[]>>;

const here = dirname(fileURLToPath(import.meta.url));
/** The repository: npm runs the bench scripts from there. */
const root = process.cwd();
const peersSource = join(root, "bench", "peers");
const postgresUrl = process.env.BENCH_PEERS_POSTGRES ?? "postgresql://postgres@127.0.0.1:5432/test";
/** A child that said nothing for this long is hung. */
const childTimeoutMs = Number(process.env.BENCH_PEERS_TIMEOUT_MS ?? 300_000);

export function peersWanted(): PeerName[] {
  const given = process.env.BENCH_PEERS;
  if (given === undefined || given.trim() === "") return [...peerNames];
  const names = given.split(",").map((name) => name.trim());
  for (const name of names) if (!(peerNames as readonly string[]).includes(name)) throw new Error(`BENCH_PEERS: no peer "${name}" (${peerNames.join(", ")})`);
  return names as PeerName[];
}

/** `npm install --prefix bench/peers` unless its lock is installed already
 * (npm's own record, node_modules/.package-lock.json, newer than the lock). */
export function installPeers(): void {
  const installed = join(peersSource, "node_modules", ".package-lock.json");
  const lock = join(peersSource, "package-lock.json");
  if (existsSync(installed) && (!existsSync(lock) || statSync(installed).mtimeMs >= statSync(lock).mtimeMs)) return;
  console.log("  installing the peers (npm install --prefix bench/peers; once, cached in bench/peers/node_modules)…");
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const result = spawnSync(npm, ["install", "--prefix", peersSource, "--no-audit", "--no-fund", "--loglevel", "error"], { stdio: "inherit" });
  if (result.status !== 0) throw new Error(`npm install --prefix bench/peers exited ${result.status}`);
  // Compiled (scripts/bench-compiled.mjs), this file runs from a copy of
  // bench/: the peers resolve from there through a link.
  if (here !== peersSource) linkModules();
}

function linkModules(): void {
  const link = join(here, "node_modules");
  if (!existsSync(link)) {
    mkdirSync(here, { recursive: true });
    symlinkSync(join(peersSource, "node_modules"), link, "dir");
  }
}

/** This file's runner (`--import tsx` under tsx), for a peer's child. */
function peerArgs(peer: PeerName, args: readonly string[]): string[] {
  const extension = import.meta.url.endsWith(".ts") ? ".ts" : ".js";
  return [...process.execArgv.filter((argument) => !argument.startsWith("--cpu-prof")), "--expose-gc", join(here, `${peer}${extension}`), ...args];
}

interface Child {
  /** The last line it printed, once it exited 0. */
  readonly done: Promise<string>;
  /** Settles when it prints `line`. */
  said(line: string): Promise<void>;
  kill(): Promise<void>;
}

function startChild(peer: PeerName, args: readonly string[], env: NodeJS.ProcessEnv = {}): Child {
  const child = spawn(process.execPath, peerArgs(peer, args), { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
  let output = "";
  let errors = "";
  const listeners: [string, () => void][] = [];
  child.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString();
    for (const [line, heard] of listeners) if (output.includes(line)) heard();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    errors = (errors + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const timer = setTimeout(() => child.kill("SIGKILL"), childTimeoutMs);
  void exited.then(() => clearTimeout(timer)); // exited never rejects
  const done = exited.then((code) => {
    if (code !== 0) throw new Error(`${peer} ${args[0]} exited ${code}: ${errors.trim().split("\n").slice(-6).join(" / ")}`);
    return output.trim().split("\n").at(-1) ?? "";
  });
  done.catch(() => undefined);
  return {
    done,
    said: (line) =>
      Promise.race([
        new Promise<void>((resolve) => listeners.push([line, resolve])),
        exited.then((code) => {
          throw new Error(`${peer} ${args[0]} exited (${code}) before "${line}": ${errors.trim().split("\n").slice(-6).join(" / ")}`);
        }),
      ]),
    kill: async () => {
      child.kill("SIGKILL");
      await exited;
    },
  };
}

async function childFigures<T>(peer: PeerName, args: readonly string[], env?: NodeJS.ProcessEnv): Promise<T> {
  return JSON.parse(await startChild(peer, args, env).done) as T;
}

/** kill -9 of a child with CRASH_IN_FLIGHT runs in their tools, then a new
 * child that recovers them and runs new ones until CRASH_TOTAL are done. */
async function crashAndRestart(peer: PeerName, args: readonly string[], env?: NodeJS.ProcessEnv): Promise<Restart> {
  const crashed = startChild(peer, ["crash", ...args], env);
  await crashed.said("in-flight");
  await crashed.kill();
  return childFigures<Restart>(peer, ["restart", ...args], env);
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0));
    });
  });
}

// -- the peers' rounds --------------------------------------------------------------

/** LangGraph's loops as the checkpointer ships (`synchronous = NORMAL`),
 * on databases of their own. */
async function shippedLoops(directory: string): Promise<Loops> {
  const shipped = join(directory, "shipped");
  mkdirSync(shipped);
  return childFigures<Loops>("langgraph", ["loops", shipped], { BENCH_LANGGRAPH_SYNCHRONOUS: "NORMAL" });
}

async function langgraphRound(): Promise<PeerRound> {
  const directory = mkdtempSync(join(tmpdir(), "phronomy-peers-langgraph-"));
  try {
    return {
      loops: await childFigures<Loops>("langgraph", ["loops", directory]),
      shippedLoops: await shippedLoops(directory),
      approvals: await childFigures<Approvals>("langgraph", ["approvals", directory]),
      restart: await crashAndRestart("langgraph", [directory]),
    };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

let schemas = 0;
async function dbosRound(): Promise<PeerRound> {
  // Loaded here, not at the top: bench/index.ts imports this file, and its
  // SQLite children would carry pg's RSS in their memory figures.
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  const made: string[] = [];
  const schema = () => {
    const name = `phronomy_peers_dbos_${process.pid}_${schemas++}`;
    made.push(name);
    return name;
  };
  try {
    return {
      loops: await childFigures<Loops>("dbos", ["loops", schema()], { BENCH_PEERS_POSTGRES: postgresUrl }),
      approvals: await childFigures<Approvals>("dbos", ["approvals", schema()], { BENCH_PEERS_POSTGRES: postgresUrl }),
      restart: await crashAndRestart("dbos", [schema()], { BENCH_PEERS_POSTGRES: postgresUrl }),
    };
  } finally {
    for (const name of made) await client.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`).catch(() => undefined);
    await client.end();
  }
}

interface RestateServer {
  readonly env: NodeJS.ProcessEnv;
  stop(): Promise<void>;
}

/** The server binary of @restatedev/restate-server (its platform package). */
function restateBinary(): string {
  const binary = join(peersSource, "node_modules", "@restatedev", `restate-server-${process.platform}-${process.arch}`, "bin", "restate-server");
  if (!existsSync(binary)) throw new Error(`no Restate server for ${process.platform}-${process.arch} at ${binary}`);
  return binary;
}

/** A fresh single-node server in a temporary directory on free ports,
 * ready when its admin API answers. */
async function startRestate(): Promise<RestateServer> {
  const directory = mkdtempSync(join(tmpdir(), "phronomy-peers-restate-"));
  const [ingressPort, adminPort, nodePort, endpointPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const server = spawn(restateBinary(), ["--no-logo", "--base-dir", join(directory, "data")], {
    stdio: ["ignore", "ignore", "pipe"],
    env: {
      ...process.env,
      RESTATE_LISTEN_MODE: "tcp",
      RESTATE_NODE_NAME: "bench",
      RESTATE_DISABLE_TELEMETRY: "true",
      RESTATE_LOG_FILTER: "error",
      RESTATE_INGRESS__BIND_ADDRESS: `127.0.0.1:${ingressPort}`,
      RESTATE_ADMIN__BIND_ADDRESS: `127.0.0.1:${adminPort}`,
      RESTATE_BIND_ADDRESS: `127.0.0.1:${nodePort}`,
      RESTATE_ADVERTISED_ADDRESS: `http://127.0.0.1:${nodePort}`,
    },
  });
  let errors = "";
  server.stderr.on("data", (chunk: Buffer) => {
    errors = (errors + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => server.once("exit", () => resolve()));
  const stop = async () => {
    server.kill("SIGKILL");
    await exited;
    rmSync(directory, { recursive: true, force: true });
  };
  const admin = `http://127.0.0.1:${adminPort}`;
  const ingress = `http://127.0.0.1:${ingressPort}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ready = await Promise.all([fetch(`${admin}/health`), fetch(`${ingress}/restate/health`)]).then(
      (answers) => answers.every((answer) => answer.ok),
      () => false,
    );
    if (ready) break;
    if (server.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`the Restate server did not start: ${errors.trim().split("\n").slice(-6).join(" / ")}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    env: {
      RESTATE_BENCH_INGRESS: ingress,
      RESTATE_BENCH_ADMIN: admin,
      RESTATE_BENCH_ENDPOINT_PORT: String(endpointPort),
      RESTATE_BENCH_SERVER_PID: String(server.pid),
    },
    stop,
  };
}

/** A fresh server for each measurement, so none carries another's journal. */
async function withRestate<T>(measure: (env: NodeJS.ProcessEnv) => Promise<T>): Promise<T> {
  const server = await startRestate();
  try {
    return await measure(server.env);
  } finally {
    await server.stop();
  }
}

async function restateRound(): Promise<PeerRound> {
  return {
    loops: await withRestate((env) => childFigures<Loops>("restate", ["loops"], env)),
    approvals: await withRestate((env) => childFigures<Approvals>("restate", ["approvals"], env)),
    restart: await withRestate((env) => crashAndRestart("restate", [], env)),
  };
}

const rounds: Record<PeerName, () => Promise<PeerRound>> = { langgraph: langgraphRound, dbos: dbosRound, restate: restateRound };

/** Every wanted peer, `count` rounds each; a peer that fails says why in
 * its round instead of ending the bench. */
export async function measurePeers(count: number, log: (line: string) => void = console.log): Promise<PeerResults> {
  installPeers();
  if (here !== peersSource) linkModules();
  const results: PeerResults = {};
  for (const peer of peersWanted()) {
    const list: PeerRound[] = [];
    for (let index = 0; index < count; index += 1) {
      const began = performance.now();
      let round: PeerRound;
      try {
        round = await rounds[peer]();
      } catch (error) {
        round = { error: error instanceof Error ? error.message : String(error) };
      }
      list.push(round);
      log(`  ${peerTitles[peer]} round ${index + 1} (${((performance.now() - began) / 1000).toFixed(0)} s): ${describePeerRound(round)}`);
    }
    results[peer] = list;
  }
  return results;
}

export function describePeerRound(round: PeerRound): string {
  if (round.error !== undefined) return `failed: ${round.error}`;
  const parts: string[] = [];
  if (round.loops)
    parts.push(
      `sequential ${round.loops.sequential.runsPerSecond.toFixed(0)} runs/s, 100 in flight ${round.loops.inFlight.runsPerSecond.toFixed(0)} runs/s (p99 ${round.loops.inFlight.p99.toFixed(0)} ms)`,
    );
  if (round.approvals)
    parts.push(
      `suspends ${round.approvals.suspendsPerSecond.toFixed(0)}/s, resumes ${round.approvals.resumesPerSecond.toFixed(0)}/s, RSS suspended ${round.approvals.rssSuspended.toFixed(0)} MB${
        round.approvals.serverRssSuspended === undefined ? "" : ` (server ${round.approvals.serverRssSuspended.toFixed(0)} MB)`
      }`,
    );
  if (round.restart) parts.push(`kill -9 → all done ${round.restart.seconds.toFixed(2)} s`);
  return parts.join("; ");
}
