// What one run costs on both sides of the wire, on PostgreSQL: bench/e2e's
// workload (a new conversation per run, `IN_FLIGHT` in flight, one process)
// for `BENCH_SECONDS` (default 5) in a fresh schema, then per run: the
// process's CPU (every thread), the CPU of the server backends this process
// is connected to (read from /proc: the server must run on this machine),
// the server's WAL bytes and records (`pg_stat_wal`: the whole server's,
// so give it a server nothing else uses), the executions table's updates
// and HOT updates, the buffers its tables and indexes read, round trips
// and statements (`postgres-profile.ts`); and how the runs' writes travel
// (docs/decisions/0114): groups per run and their mean size, the mean
// number of groups on their way, each group's wait for a pooled
// connection, the share of the span the process's event loop was busy,
// and the process's context switches per group (involuntary ones: another
// thread — often the backend the group's write woke — took its core).
// The counts barely move with the
// machine's load; CPU per run does (compare medians of rounds alternated
// between two commits, docs/decisions/0107 and 0108).
//
//   node --import tsx bench/e2e/postgres-server-cpu.ts [postgres://…]
//   BENCH_ROUNDS=3 BENCH_PG_TAKE_IDLE_HERE=1 …   # rounds; open with takeIdleHere
//   BENCH_PERF_RECORD=/tmp/server BENCH_PERF_HZ=2000 …  # `perf record` of the backends over the loop
//
// Linux only (the backends' CPU is /proc/<pid>/stat's utime + stime, in
// clock ticks: 10 ms each, so give the loop seconds).

import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync, readdirSync, readlinkSync } from "node:fs";
import pg from "pg";
import { Phronomy, type Environment } from "../../host/index.js";
import type { PostgresStore } from "../../host/store/postgres-store.js";
import { describeTally, openTally } from "./postgres-profile.js";
import { IN_FLIGHT, defineConversations, runConversationsFor, summarize } from "./workload.js";

const url = process.argv[2] ?? process.env.BENCH_POSTGRES ?? "postgres://postgres@127.0.0.1:5432/test";
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const rounds = Number(process.env.BENCH_ROUNDS ?? 1);
const takeIdleHere = process.env.BENCH_PG_TAKE_IDLE_HERE === "1";
/** The partition lease (`BENCH_LEASE_MS`; a slow server needs a long one). */
const leaseMs = process.env.BENCH_LEASE_MS === undefined ? undefined : Number(process.env.BENCH_LEASE_MS);
/** A file: `perf record` (cpu-clock, call graphs) of the backends over the loop. */
const perfOutput = process.env.BENCH_PERF_RECORD;
/** Clock ticks per second of /proc/<pid>/stat (USER_HZ: 100 on Linux). */
const ticksPerSecond = 100;

/** The local ports of this process's TCP sockets to `port`. */
function localPortsTo(port: number): Set<number> {
  const inodes = new Set<string>();
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      const socket = /^socket:\[(\d+)\]$/.exec(target);
      if (socket !== null) inodes.add(socket[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const ports = new Set<number>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10) continue;
      const local = Number.parseInt(fields[1]!.split(":")[1]!, 16);
      const remote = Number.parseInt(fields[2]!.split(":")[1]!, 16);
      if (remote === port && inodes.has(fields[9]!)) ports.add(local);
    }
  }
  return ports;
}

/** CPU ticks (user + system) of a process, 0 when it is gone. */
function cpuTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/** The server pids of this process's connections (but `admin`'s own). */
async function backendsOfThisProcess(admin: pg.Client, port: number): Promise<number[]> {
  const ports = [...localPortsTo(port)];
  const own = (await admin.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
  const rows = await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE client_port = ANY($1::integer[]) AND pid <> $2", [ports, own]);
  return rows.rows.map((row) => row.pid);
}

/** The server's WAL so far, and the executions table's updates (all, and
 * HOT) in the schema (the statistics lag by up to a second: read after a pause). */
async function walAndRows(
  admin: pg.Client,
  schema: string,
): Promise<{ walBytes: number; walRecords: number; updates: number; hotUpdates: number; heapBlocks: number; indexBlocks: number }> {
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const wal = (await admin.query<{ wal_bytes: string; wal_records: string }>("SELECT wal_bytes, wal_records FROM pg_stat_wal")).rows[0]!;
  const rows = (
    await admin.query<{ n_tup_upd: string; n_tup_hot_upd: string }>(
      "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'executions'",
      [schema],
    )
  ).rows[0];
  const blocks = (
    await admin.query<{ heap: string | null; index: string | null }>(
      "SELECT sum(heap_blks_hit + heap_blks_read) AS heap, sum(coalesce(idx_blks_hit, 0) + coalesce(idx_blks_read, 0)) AS index FROM pg_statio_user_tables WHERE schemaname = $1",
      [schema],
    )
  ).rows[0];
  return {
    walBytes: Number(wal.wal_bytes),
    walRecords: Number(wal.wal_records),
    updates: Number(rows?.n_tup_upd ?? 0),
    hotUpdates: Number(rows?.n_tup_hot_upd ?? 0),
    heapBlocks: Number(blocks?.heap ?? 0),
    indexBlocks: Number(blocks?.index ?? 0),
  };
}

/** The process's context switches so far: voluntary (it waited), and
 * involuntary (its core was taken from it). */
function contextSwitches(): { voluntary: number; involuntary: number } {
  const status = readFileSync("/proc/self/status", "utf8");
  const count = (name: string) => Number(new RegExp(`\\n${name}:\\s+(\\d+)`).exec(status)?.[1] ?? Number.NaN);
  return { voluntary: count("voluntary_ctxt_switches"), involuntary: count("nonvoluntary_ctxt_switches") };
}

/** How the runs' writes travelled over a span (`GroupCommit.figures`). */
function describeGroups(
  env: Environment,
  before: PostgresStore["groups"]["figures"],
  runs: number,
  spanMs: number,
  busy: number,
  switches: { voluntary: number; involuntary: number },
): string {
  const after = (env as unknown as { store: PostgresStore }).store.groups.figures;
  const groups = after.groups - before.groups;
  return `groups: ${(groups / runs).toFixed(3)} per run of ${((after.statements - before.statements) / groups).toFixed(1)} statements sent as ${((after.sent - before.sent) / groups).toFixed(1)} (calls folded, decision 0130), ${((after.inFlightMs - before.inFlightMs) / spanMs).toFixed(2)} on their way on average, ${((after.connectingMs - before.connectingMs) / groups).toFixed(2)} ms each waiting for a connection; event loop busy ${(busy * 100).toFixed(0)}% of the span; context switches per group ${(switches.voluntary / groups).toFixed(2)} voluntary, ${(switches.involuntary / groups).toFixed(2)} involuntary`;
}

async function main(): Promise<void> {
  const port = Number(new URL(url).port || 5432);
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const loadBefore = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  console.log(
    `postgres-server-cpu: ${IN_FLIGHT} in flight, a new conversation per run, ${seconds}s × ${rounds} rounds${takeIdleHere ? ", takeIdleHere" : ""}; load ${loadBefore}`,
  );
  try {
    for (let round = 1; round <= rounds; round += 1) {
      const schema = `phronomy_cpu_${randomBytes(4).toString("hex")}`;
      const env = await Phronomy.open({
        store: url,
        postgres: { schema, ...(takeIdleHere ? { takeIdleHere } : {}), ...(leaseMs === undefined ? {} : { leaseMs }) },
        logger: { warn: () => undefined },
      });
      try {
        const definition = defineConversations(env, "cpu");
        await runConversationsFor(definition, "warm", IN_FLIGHT, 1);
        const backendsBefore = await backendsOfThisProcess(admin, port);
        const ticksBefore = new Map(backendsBefore.map((pid) => [pid, cpuTicks(pid)]));
        const walBefore = await walAndRows(admin, schema);
        const cpuBefore = process.cpuUsage();
        const perf =
          perfOutput === undefined
            ? undefined
            : spawn(
                "perf",
                ["record", "-e", "cpu-clock", "-F", process.env.BENCH_PERF_HZ ?? "499", "-g", "-o", `${perfOutput}.${round}`, "-p", backendsBefore.join(",")],
                { stdio: "ignore" },
              );
        const tally = openTally();
        const groupsBefore = { ...(env as unknown as { store: PostgresStore }).store.groups.figures };
        const switchesBefore = contextSwitches();
        const eventLoopBefore = performance.eventLoopUtilization();
        const spanBegan = performance.now();
        const figures = await runConversationsFor(definition, "cpu", IN_FLIGHT, seconds);
        const spanMs = performance.now() - spanBegan;
        const busy = performance.eventLoopUtilization(eventLoopBefore).utilization;
        const switchesAfter = contextSwitches();
        tally.stop();
        if (perf !== undefined) {
          perf.kill("SIGINT");
          await new Promise((resolve) => perf.once("exit", resolve));
        }
        const cpu = process.cpuUsage(cpuBefore);
        const backendsAfter = await backendsOfThisProcess(admin, port);
        const walAfter = await walAndRows(admin, schema);
        let serverTicks = 0;
        for (const pid of new Set([...backendsBefore, ...backendsAfter])) serverTicks += cpuTicks(pid) - (ticksBefore.get(pid) ?? 0);
        const summary = summarize(figures);
        const perRun = (micros: number) => (micros / figures.runs).toFixed(0);
        const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
        console.log(
          `  round ${round}: ${summary.runsPerSecond.toFixed(0)} runs/s, p50 ${summary.p50.toFixed(0)} ms; CPU per run: process ${perRun(cpu.user + cpu.system)} µs (system ${perRun(cpu.system)}), server ${perRun((serverTicks * 1_000_000) / ticksPerSecond)} µs (${backendsAfter.length} backends); load ${load}`,
        );
        console.log(
          `    per run: ${((walAfter.walBytes - walBefore.walBytes) / figures.runs).toFixed(0)} B of WAL in ${((walAfter.walRecords - walBefore.walRecords) / figures.runs).toFixed(1)} records (the whole server's), execution row updates ${((walAfter.updates - walBefore.updates) / figures.runs).toFixed(2)} of which in place (HOT) ${((walAfter.hotUpdates - walBefore.hotUpdates) / figures.runs).toFixed(2)}; buffers read: tables ${((walAfter.heapBlocks - walBefore.heapBlocks) / figures.runs).toFixed(0)}, indexes ${((walAfter.indexBlocks - walBefore.indexBlocks) / figures.runs).toFixed(0)}`,
        );
        console.log(`    ${describeTally(tally.tally, figures.runs)}`);
        const switches = { voluntary: switchesAfter.voluntary - switchesBefore.voluntary, involuntary: switchesAfter.involuntary - switchesBefore.involuntary };
        console.log(`    ${describeGroups(env, groupsBefore, figures.runs, spanMs, busy, switches)}`);
      } finally {
        await env.close();
        await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      }
    }
  } finally {
    await admin.end();
  }
}

await main();
