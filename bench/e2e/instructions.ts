// bench/e2e/instructions: machine instructions per run of the e2e "agent
// run" workload (`workload.ts`, SQLite, default settings), counted by
// valgrind's callgrind. Unlike wall-clock or CPU time, an instruction count
// barely moves with the machine's load, so two commits measured in one
// session compare to a fraction of a percent (issue 25: CPU per run must
// fall).
//
//   npm run bench:instructions                      # both shapes, 1,000 runs each
//   BENCH_RUNS=2000 BENCH_SHAPES=sequential npm run bench:instructions
//   BENCH_CALLGRIND_DIR=/tmp/cg npm run bench:instructions   # keeps the callgrind files
//
// Each shape runs in a process of its own under callgrind: a warm-up of
// WARM_UP_RUNS runs (the JIT compiles the hot path meanwhile), then the
// counted runs. Only the counted runs are counted: the process calls
// `os.loadavg()` just before them and `os.uptime()` just after, and
// callgrind zeroes its counters before the first (`--zero-before`) and
// writes them out before the second (`--dump-before`), so start-up,
// warm-up and close fall outside. `sequential` is one agent running one
// execution after another; `inflight` is 100 agents, each starting its
// next run as soon as its last one ended (bench/e2e's two loops).
// `conversation` and `conversation-inflight` are the same two loops in the
// shape the README shows: one agent defined by name, every run the first
// start of a NEW conversation (an end user's), so each run also registers
// the conversation, recovers it on first use, and lets it go afterwards.
// Instructions of every thread count (the store's worker too). Needs
// valgrind on the PATH; takes several minutes per shape.
//
// The measured process alone, for a CPU profile of the same runs
// (BENCH_SYNCHRONOUS=NORMAL leaves out the waits for fsync, which a
// sampling profile counts as time in SQLite):
//
//   npm run bench:instructions -- --instructions-child sequential 3000  # builds build/bench-dist
//   BENCH_SYNCHRONOUS=NORMAL node --cpu-prof --cpu-prof-dir=/tmp/prof \
//     build/bench-dist/bench/e2e/instructions.js --instructions-child sequential 3000
//   node scripts/profile-summary.mjs /tmp/prof/<file>.cpuprofile 3000

import { execFileSync, spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { loadavg, tmpdir, uptime } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Phronomy, type Agent, type DefinedAgent, type Environment } from "../../host/index.js";
import type { OffloadStatistics } from "../../host/store/offload.js";
import type { SqliteStore } from "../../host/store/sqlite-store.js";
import type { SynchronousMode } from "../../host/store/sqlite/schema.js";
import { IN_FLIGHT, defineAgents, defineConversations, defineDaySleepers, definePayers, defineRefunds, warmUp } from "./workload.js";

type RunShape = "sequential" | "inflight" | "conversation" | "conversation-inflight";
/** A suspension instead of a run (decision 0085): one conversation after
 * another started and suspended on its wait — an approval, a timer due in a
 * day, a keyed event wait — and left pending. */
type SuspendShape = "suspend-approval" | "suspend-timer" | "suspend-event";
type Shape = RunShape | SuspendShape;

/** The shapes counted by default. */
const SHAPES: readonly Shape[] = ["sequential", "inflight", "conversation", "conversation-inflight"];
/** Counted when BENCH_SHAPES names them. */
const SUSPEND_SHAPES: readonly SuspendShape[] = ["suspend-approval", "suspend-timer", "suspend-event"];

/** Runs before the counted ones, in the same shape (BENCH_WARM_UP, for a
 * quick check of this script). A thousand runs leave most of the JIT's
 * compilations of the hot path behind: runs 200 to 500 of a process still
 * cost half as much again, in TurboFan's work. */
const WARM_UP_RUNS = Number(process.env.BENCH_WARM_UP ?? 1_000);

/** What the child calls around the counted runs, for callgrind's
 * `--zero-before` and `--dump-before`: libuv functions Node calls only when
 * asked (`os.loadavg()`, `os.uptime()`; not the memory ones, which every
 * thread's start-up calls). */
const ZERO_BEFORE = "uv_loadavg";
const DUMP_BEFORE = "uv_uptime";

const CHILD_FLAG = "--instructions-child";

if (process.argv.includes(CHILD_FLAG)) await child();
else await driver();

/** Runs each shape under callgrind and prints its instructions per run. */
async function driver(): Promise<void> {
  const runs = Number(process.env.BENCH_RUNS ?? 1_000);
  const shapes = (process.env.BENCH_SHAPES ?? SHAPES.join(",")).split(",") as Shape[];
  const known: readonly Shape[] = [...SHAPES, ...SUSPEND_SHAPES];
  const unknown = shapes.filter((shape) => !known.includes(shape));
  if (unknown.length > 0) throw new Error(`BENCH_SHAPES: unknown ${unknown.join(", ")}; the shapes are ${known.join(", ")}`);
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`BENCH_RUNS must be a positive number of runs, got ${process.env.BENCH_RUNS}`);
  if (!Number.isInteger(WARM_UP_RUNS) || WARM_UP_RUNS < IN_FLIGHT)
    throw new Error(`BENCH_WARM_UP must be ${IN_FLIGHT} runs or more, got ${process.env.BENCH_WARM_UP}`);
  execFileSync("valgrind", ["--version"], { stdio: "ignore" });
  // BENCH_CALLGRIND_DIR keeps the callgrind files there, for callgrind_annotate.
  const kept = process.env.BENCH_CALLGRIND_DIR;
  const directory = kept ?? (await mkdtemp(join(tmpdir(), "phronomy-instructions-")));
  if (kept !== undefined) await mkdir(kept, { recursive: true });
  try {
    for (const shape of shapes) {
      const instructions = await countInstructions(directory, shape, runs);
      console.log(`${shape}: ${(instructions / runs / 1e6).toFixed(3)} M instructions per run (${runs} runs after ${WARM_UP_RUNS} of warm-up)`);
    }
  } finally {
    if (kept === undefined) await rm(directory, { recursive: true, force: true });
  }
}

/** Instructions of the counted runs of one child process under callgrind:
 * the one dump it wrote, before `DUMP_BEFORE` (`<output>.1`). */
async function countInstructions(directory: string, shape: Shape, runs: number): Promise<number> {
  const output = join(directory, `callgrind.${shape}.out`);
  const script = fileURLToPath(import.meta.url);
  // A kept directory may hold the files of an earlier count.
  for (const name of await readdir(directory)) if (name.startsWith(`callgrind.${shape}.out`)) await rm(join(directory, name));
  const { status, stderr } = spawnSync(
    "valgrind",
    [
      "--tool=callgrind",
      "--trace-children=no",
      `--callgrind-out-file=${output}`,
      `--zero-before=${ZERO_BEFORE}`,
      `--dump-before=${DUMP_BEFORE}`,
      process.execPath,
      // V8's own threads (concurrent compilation, concurrent marking) do
      // the same work at other moments from one process to the next: on
      // this thread, the count of the same commit repeats (it moved by
      // ±10% with them).
      "--single-threaded",
      script,
      CHILD_FLAG,
      shape,
      String(runs),
    ],
    { encoding: "utf8", stdio: ["ignore", "inherit", "pipe"] },
  );
  if (status !== 0) throw new Error(`callgrind of ${shape} × ${runs} ended with status ${status}: ${stderr.slice(-2000)}`);
  const dumps = (await readdir(directory)).filter((name) => name.startsWith(`callgrind.${shape}.out.`));
  if (dumps.length !== 1) throw new Error(`callgrind wrote ${dumps.length} dumps of ${shape} in ${directory}, expected the one of the counted runs`);
  const text = await readFile(join(directory, dumps[0]!), "utf8");
  const totals = /^summary:\s+(\d+)/m.exec(text);
  if (!text.includes(`--dump-before=${DUMP_BEFORE}`) || totals === null) throw new Error(`${dumps[0]} in ${directory} is not the dump of the counted runs`);
  return Number(totals[1]);
}

/** The measured process: warm-up, then `runs` runs in the given shape. */
async function child(): Promise<void> {
  const [shape, runs] = process.argv.slice(process.argv.indexOf(CHILD_FLAG) + 1) as [Shape, string];
  const directory = await mkdtemp(join(tmpdir(), "phronomy-instructions-run-"));
  try {
    const synchronous = (process.env.BENCH_SYNCHRONOUS ?? "FULL") as SynchronousMode;
    const env = await Phronomy.open({ store: join(directory, "instructions.db"), synchronous, logger: { warn: () => undefined } });
    const run = await runnerOf(env, shape);
    await run(WARM_UP_RUNS);
    const before = offloadStatisticsOf(env);
    loadavg();
    await run(Number(runs));
    uptime();
    printGroups(before, offloadStatisticsOf(env), Number(runs));
    await env.close();
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

function offloadStatisticsOf(env: Environment): OffloadStatistics {
  return (env as unknown as { store: SqliteStore }).store.offloadStatistics;
}

/** How the counted runs' operations were grouped into transactions. At
 * 100 in flight that depends on timing (an operation joins the group
 * being formed, or waits for the next), and so does the count: compare
 * it between commits only with the groups alike. */
function printGroups(before: OffloadStatistics, after: OffloadStatistics, runs: number): void {
  const operations = after.submitted - before.submitted;
  const groups = after.inlineGroups - before.inlineGroups + (after.workerGroups - before.workerGroups);
  const inline = after.inlineGroups - before.inlineGroups;
  console.log(`${(operations / runs).toFixed(2)} store operations per run in ${(groups / runs).toFixed(2)} transactions (${inline} of ${groups} inline)`);
}

/** Runs `runs` runs of the shape (its workers one run at a time each). */
type Runner = (runs: number) => Promise<void>;

function runnerOf(env: Environment, shape: Shape): Promise<Runner> {
  if (shape === "conversation" || shape === "conversation-inflight") return conversationRuns(env, shape);
  if (shape === "sequential" || shape === "inflight") return agentRuns(env, shape);
  return suspensions(env, shape);
}

/** `suspend-*`: one definition by name, each "run" a new conversation
 * started and suspended on its wait, one after another; none is resumed. */
async function suspensions(env: Environment, shape: SuspendShape): Promise<Runner> {
  const definition = shape === "suspend-approval" ? defineRefunds(env) : shape === "suspend-timer" ? defineDaySleepers(env) : definePayers(env);
  await definition.ready;
  let next = 0;
  return async (runs) => {
    for (let counted = 0; counted < runs; counted += 1) {
      const index = next++;
      await new Promise<void>((resolve, reject) => {
        definition.conversation(`user-${index}`).start(`pay order ${index}`, {
          onEvent: (event) => {
            if (event.type === "approval_required") resolve();
            else if (event.type === "done" || event.type === "error") reject(new Error(`conversation user-${index} ended ${event.type} before its wait`));
          },
        });
      });
    }
  };
}

/** `sequential` / `inflight`: agents defined by id, warmed up by one run each. */
async function agentRuns(env: Environment, shape: "sequential" | "inflight"): Promise<Runner> {
  const agentCount = shape === "inflight" ? IN_FLIGHT : 1;
  const agents = await defineAgents(
    env,
    Array.from({ length: agentCount }, (_, index) => `agent-${index}`),
  );
  let warm = false;
  return async (runs) => {
    if (warm) return runCount(agents, runs);
    warm = true;
    await warmUp(agents);
    await runCount(agents, runs - agents.length);
  };
}

/** `conversation` / `conversation-inflight`: one definition by name, each
 * run on a conversation never used before (`user-0`, `user-1`, …). */
async function conversationRuns(env: Environment, shape: "conversation" | "conversation-inflight"): Promise<Runner> {
  const definition = defineConversations(env, "support");
  await definition.ready;
  const workers = shape === "conversation-inflight" ? IN_FLIGHT : 1;
  let next = 0;
  return (runs) => runConversations(definition, workers, runs, () => `user-${next++}`);
}

/** Exactly `runs` runs by `workers` loops, each on the conversation `id()` names. */
async function runConversations(definition: DefinedAgent, workers: number, runs: number, id: () => string): Promise<void> {
  let remaining = runs;
  const worker = async (): Promise<void> => {
    while (remaining > 0) {
      remaining -= 1;
      const conversation = id();
      const result = await definition.conversation(conversation).start("Where is order 42?").result;
      if (result.outcome !== "completed") throw new Error(`a run of conversation "${conversation}" ended ${result.outcome}`);
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
}

/** Exactly `runs` runs spread over the agents, each agent one at a time. */
async function runCount(agents: readonly Agent[], runs: number): Promise<void> {
  let remaining = runs;
  const worker = async (agent: Agent): Promise<void> => {
    while (remaining > 0) {
      remaining -= 1;
      const result = await agent.start("Where is order 42?").result;
      if (result.outcome !== "completed") throw new Error(`a run of agent "${agent.id}" ended ${result.outcome}`);
    }
  };
  await Promise.all(agents.map(worker));
}
