// bench/e2e/instructions: machine instructions per run of the e2e "agent
// run" workload (`workload.ts`, SQLite, default settings), counted by
// valgrind's callgrind. Unlike wall-clock or CPU time, an instruction count
// barely moves with the machine's load, so two commits measured in one
// session compare to a fraction of a percent (issue 25: CPU per run must
// fall).
//
//   npm run bench:instructions                      # 200 and 1,200 runs, both shapes
//   BENCH_RUNS=1000,3000 BENCH_SHAPES=sequential npm run bench:instructions
//   BENCH_CALLGRIND_DIR=/tmp/cg npm run bench:instructions   # keeps the callgrind files
//
// Each shape runs twice under callgrind, once per count in BENCH_RUNS,
// after the same warm-up; the difference of the two totals over the
// difference of the counts is the cost of one run, start-up, warm-up and
// JIT compilation of the first runs cancelling out. `sequential` is one
// agent running one execution after another; `inflight` is 100 agents,
// each starting its next run as soon as its last one ended (bench/e2e's
// two loops). Instructions of every thread count (the store's worker too).
// Needs valgrind on the PATH; takes a few minutes.
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
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Phronomy, type Agent } from "../../host/index.js";
import type { SynchronousMode } from "../../host/store/sqlite/schema.js";
import { IN_FLIGHT, defineAgents, warmUp } from "./workload.js";

type Shape = "sequential" | "inflight";

/** Warm-up rounds before the counted runs: each is one run per agent. */
const WARM_UP_ROUNDS = 20;

const CHILD_FLAG = "--instructions-child";

if (process.argv.includes(CHILD_FLAG)) await child();
else await driver();

/** Runs each shape under callgrind at both counts and prints per-run figures. */
async function driver(): Promise<void> {
  const counts = (process.env.BENCH_RUNS ?? "200,1200").split(",").map(Number);
  const shapes = (process.env.BENCH_SHAPES ?? "sequential,inflight").split(",") as Shape[];
  if (counts.length !== 2 || !counts.every((count) => Number.isInteger(count) && count >= 0) || counts[0]! >= counts[1]!) {
    throw new Error(`BENCH_RUNS must be two increasing run counts such as 200,1200, got ${process.env.BENCH_RUNS}`);
  }
  execFileSync("valgrind", ["--version"], { stdio: "ignore" });
  // BENCH_CALLGRIND_DIR keeps the callgrind files there, for callgrind_annotate.
  const kept = process.env.BENCH_CALLGRIND_DIR;
  const directory = kept ?? (await mkdtemp(join(tmpdir(), "phronomy-instructions-")));
  if (kept !== undefined) await mkdir(kept, { recursive: true });
  try {
    for (const shape of shapes) {
      const [low, high] = [await countInstructions(directory, shape, counts[0]!), await countInstructions(directory, shape, counts[1]!)];
      const perRun = (high - low) / (counts[1]! - counts[0]!);
      console.log(
        `${shape}: ${(perRun / 1e6).toFixed(3)} M instructions per run (${counts.join(" and ")} runs: ${(low / 1e9).toFixed(3)} and ${(high / 1e9).toFixed(3)} G in all)`,
      );
    }
  } finally {
    if (kept === undefined) await rm(directory, { recursive: true, force: true });
  }
}

/** Total instructions of one child process under callgrind. */
async function countInstructions(directory: string, shape: Shape, runs: number): Promise<number> {
  const output = join(directory, `callgrind.${shape}.${runs}.out`);
  const script = fileURLToPath(import.meta.url);
  const { status, stderr } = spawnSync(
    "valgrind",
    ["--tool=callgrind", "--trace-children=no", `--callgrind-out-file=${output}`, process.execPath, script, CHILD_FLAG, shape, String(runs)],
    { encoding: "utf8", stdio: ["ignore", "inherit", "pipe"] },
  );
  if (status !== 0) throw new Error(`callgrind of ${shape} × ${runs} ended with status ${status}: ${stderr.slice(-2000)}`);
  const totals = /^summary:\s+(\d+)/m.exec(await readFile(output, "utf8"));
  if (totals === null) throw new Error(`${output} holds no "summary:" line`);
  return Number(totals[1]);
}

/** The measured process: warm-up, then `runs` runs in the given shape. */
async function child(): Promise<void> {
  const [shape, runs] = process.argv.slice(process.argv.indexOf(CHILD_FLAG) + 1) as [Shape, string];
  const directory = await mkdtemp(join(tmpdir(), "phronomy-instructions-run-"));
  try {
    const synchronous = (process.env.BENCH_SYNCHRONOUS ?? "FULL") as SynchronousMode;
    const env = await Phronomy.open({ store: join(directory, "instructions.db"), synchronous, logger: { warn: () => undefined } });
    const agentCount = shape === "inflight" ? IN_FLIGHT : 1;
    const agents = await defineAgents(
      env,
      Array.from({ length: agentCount }, (_, index) => `agent-${index}`),
    );
    for (let round = 0; round < WARM_UP_ROUNDS; round += 1) await warmUp(agents);
    await runCount(agents, Number(runs));
    await env.close();
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
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
