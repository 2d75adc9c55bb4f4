// `npm run bench:million`: a million conversations suspended for approval
// in one process (issue 26), on SQLite with default options. Prints
// figures, asserts nothing (docs/decisions/0066).
//
//   1. Opens the store, defines the named definition "support" (README's
//      shape: a conversation per user), and measures the idle process.
//   2. Suspends BENCH_SUSPENDED conversations (default 1,000,000), each a
//      conversation of its own, BENCH_IN_FLIGHT (default 1,000) starts at
//      once (suspend-many.ts: suspends/s per slice, memory at 10,000,
//      100,000 and 1,000,000).
//   3. Resumes BENCH_SAMPLE (default 1,000) of them, spread over the whole
//      range, and says how many completed.
//
//   BENCH_SUSPENDED=100000 npm run bench:million     (a quicker look)
//
// With BENCH_TIMERS=N (decision 0076) the N conversations each wait on a
// timer due in an hour instead of an approval. It prints the suspended
// rows with a due time the store holds, the due sweep's read of the next
// due time over them, and fires the sample now with { waitId, fire: true }.
// Timers and keyed event waits together are `BENCH_ONLY=waits npm run
// bench` (decision 0085).
//
//   BENCH_TIMERS=100000 npm run bench:million
//
// Runs on the compiled package (scripts/bench-compiled.mjs), as an
// application runs: under tsx every RSS figure carries tsx's loader
// threads (docs/decisions/0028).

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Phronomy, type DefinedAgent } from "../../host/index.js";
import { completedOf, countDueRows, memoryLine, settled, suspendMany, type Suspension } from "./suspend-many.js";
import { defineRefunds, defineSleepers } from "./workload.js";

const TIMERS = Number(process.env.BENCH_TIMERS ?? 0);
const SUSPENDED = TIMERS > 0 ? TIMERS : Number(process.env.BENCH_SUSPENDED ?? 1_000_000);
const WHAT = TIMERS > 0 ? "waiting on a timer due in an hour" : "suspended for approval";
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 1_000);
const SAMPLE = Math.min(SUSPENDED, Number(process.env.BENCH_SAMPLE ?? 1_000));

async function resumeSample(support: DefinedAgent, sampled: readonly Suspension[]): Promise<void> {
  const began = performance.now();
  const outcomes = await Promise.all(
    sampled.map(({ index, executionId, waitId }) =>
      support
        .conversation(`user-${index}`)
        .resume(executionId, TIMERS > 0 ? { waitId, fire: true } : { approvalId: waitId, approved: true })
        .result.then(
          (result) => result.outcome,
          (error: unknown) => `error ${(error as Error).message}`,
        ),
    ),
  );
  const seconds = (performance.now() - began) / 1000;
  console.log(`  resumed ${sampled.length.toLocaleString("en-US")} spread over the range in ${seconds.toFixed(2)} s: ${completedOf(outcomes)}`);
}

if ((globalThis as { gc?: () => void }).gc === undefined) console.log("  (run with node --expose-gc for figures after GC: npm run bench:million)");
const directory = await mkdtemp(join(tmpdir(), "phronomy-million-"));
try {
  console.log(`bench/e2e/million — ${SUSPENDED.toLocaleString("en-US")} conversations ${WHAT}, SQLite with default options, node ${process.version}`);
  const env = await Phronomy.open({ store: join(directory, "store.db"), logger: { warn: () => undefined } });
  const support = TIMERS > 0 ? defineSleepers(env) : defineRefunds(env);
  await support.ready;
  const idle = await settled();
  console.log(memoryLine("opened and idle, definition ready (settled)", idle, idle, 0));
  const stride = Math.max(1, Math.floor(SUSPENDED / SAMPLE));
  const sampled = await suspendMany(
    {
      count: SUSPENDED,
      inFlight: IN_FLIGHT,
      sampled: (index) => index % stride === 0 && index / stride < SAMPLE,
      start: (index, onEvent) => support.conversation(`user-${index}`).start("refund me", { onEvent }),
      each: "suspended conversation",
    },
    idle,
  );
  console.log(memoryLine(`${SUSPENDED.toLocaleString("en-US")} suspended, settled`, await settled(), idle, SUSPENDED));
  if (TIMERS > 0) await countDueRows(env, 2 * 3_600_000);
  await resumeSample(support, sampled);
  await env.close();
} finally {
  await rm(directory, { recursive: true, force: true });
}
