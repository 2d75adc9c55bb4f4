// The waits section of `npm run bench` (decision 0085; issue 28: "a
// million timers or keyed waits pending cost rows, not memory"): run in a
// child process of its own (bench/index.ts, `waits-child`) so that its
// memory figures are its own. Prints figures, asserts nothing.
//
//   1. Opens a SQLite store with default options (synchronous FULL) and
//      three definitions: `sleepers` (a timer due in a day), `payers` (a
//      `waitForEvent` keyed by the order its conversation names) and
//      `alarms` (a timer due at a time the bench sets, for the sweep);
//      measures the idle process (the floor of every per-wait figure).
//   2. Suspends BENCH_WAITS conversations (default 1,000,000), one per user,
//      even ones on a timer and odd ones on a keyed event wait, 1,000 in
//      flight (suspend-many.ts: suspends/s and CPU per suspend per slice,
//      RSS and live heap at 10,000, 100,000, 1,000,000).
//   3. RSS settled; the store's due reads over the pending timers.
//   4. A sample of BENCH_WAITS_SAMPLE (default 1,000) spread over the range:
//      half its timers fired now (`{ waitId, fire: true }`), half its keys
//      signalled (`env.signal`), each counted completed.
//   5. The due sweep at its due time: BENCH_WAITS_SAMPLE more conversations
//      on a timer due a few seconds after they are all suspended; how late
//      after that time the sweep had woken the last of them, and how many
//      completed.

import { join } from "node:path";
import { z } from "zod";
import { AgentRecord, ExecutionRecord } from "../../assembly/abi.js";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { Phronomy, timer, type DefinedAgent, type Environment } from "../../host/index.js";
import { completedOf, countDueRows, cpuMsPer, memoryLine, settled, suspendMany, type Suspension } from "./suspend-many.js";
import { defineDaySleepers, definePayers, paymentKey } from "./workload.js";

const WAITS = Number(process.env.BENCH_WAITS ?? 1_000_000);
const SAMPLE = Math.min(WAITS, Number(process.env.BENCH_WAITS_SAMPLE ?? 1_000));
const IN_FLIGHT = 1_000;
/** The sweep's sample falls due this long after its last suspension is
 * expected (at 200 suspends/s at least). */
const SWEEP_LEAD_MS = 5_000;

/** Conversation `index` waits on a timer when even, on its key when odd. */
const isTimer = (index: number): boolean => index % 2 === 0;

/** Timers due at `alarmAt` (set before the sample starts), and when the
 * model was called back after each fired (the sweep's lag). */
let alarmAt = 0;
const wokenAt: number[] = [];

function defineAlarms(env: Environment): DefinedAgent {
  const alarm = timer({ inputSchema: z.object({}), until: () => new Date(alarmAt) });
  const model = scriptedModel(({ messages }) => {
    if (messages.at(-1)?.role !== "tool") return { toolCalls: [{ toolName: "alarm", input: {} }] };
    wokenAt.push(Date.now());
    return { text: "woke up" };
  });
  return env.agent({ name: "alarms", model, tools: { alarm }, memoryWindow: 1 });
}

/** The host's typed arrays and the core's records that the pending waits
 * keep, each in bytes per wait (docs/decisions/0100): read from the
 * objects' private fields, as `timersSetOf` does. The core's bytes are its
 * records up to the high-water marks (what pages a wait touches). */
function bytesPerWaitOf(env: Environment, waits: number): string {
  type Arrays = Record<string, ArrayBufferView | ArrayBufferView[] | number | undefined>;
  const internals = env as unknown as {
    coordinator: {
      dormant: { ids: Arrays };
      lastReleases?: ArrayBufferView;
      settings: { core: { exports: { agentHighWater(): number; executionHighWater(): number } } };
    };
    conversations: { resting: Arrays };
  };
  // A typed array, or pages of them (slot-ids.ts, resting-conversations.ts).
  const sizeOf = (value: unknown): number =>
    ArrayBuffer.isView(value) ? value.byteLength : Array.isArray(value) ? value.reduce((sum: number, page: unknown) => sum + sizeOf(page), 0) : 0;
  const per = (bytes: number): string => (bytes / waits).toFixed(1);
  const ids = internals.coordinator.dormant.ids;
  const resting = internals.conversations.resting;
  const { exports } = internals.coordinator.settings.core;
  const core = exports.agentHighWater() * AgentRecord.Size + exports.executionHighWater() * ExecutionRecord.Size;
  const arenaUsed = typeof resting.used === "number" ? resting.used - (typeof resting.garbage === "number" ? resting.garbage : 0) : 0;
  const hostArrays =
    sizeOf(ids.pages)
    + sizeOf(ids.packed)
    + sizeOf(ids.table)
    + sizeOf(resting.arena)
    + sizeOf(resting.offsetPages)
    + sizeOf(resting.table)
    + sizeOf(internals.coordinator.lastReleases);
  return [
    `execution ids ${per(sizeOf(ids.pages))} + their flags ${per(sizeOf(ids.packed))} + their table ${per(sizeOf(ids.table))}`,
    `conversation arena ${per(sizeOf(resting.arena))} (records ${per(arenaUsed)}) + offsets ${per(sizeOf(resting.offsetPages))} + their table ${per(sizeOf(resting.table))}`,
    `release times ${per(sizeOf(internals.coordinator.lastReleases))}`,
    `= ${per(hostArrays)} B of the host's typed arrays; the core's records ${per(core)} B`,
  ].join(", ");
}

/** The timers the due sweep set so far (what the suspensions cost it). */
function timersSetOf(env: Environment): number {
  return (env as unknown as { dueSweep: { timersSet: number } }).dueSweep.timersSet;
}

export async function waitsChild(directory: string): Promise<void> {
  if (!Number.isInteger(WAITS) || WAITS < 2) throw new Error(`BENCH_WAITS must be a whole number of waits, 2 or more, got ${process.env.BENCH_WAITS}`);
  console.log(
    `  ${WAITS.toLocaleString("en-US")} pending waits, one conversation each: half timers due in a day, half keyed event waits; SQLite FULL, default options, node ${process.version}`,
  );
  const env = await Phronomy.open({ store: join(directory, `waits-${process.pid}.db`), synchronous: "FULL", logger: { warn: () => undefined } });
  const sleepers = defineDaySleepers(env);
  const payers = definePayers(env);
  const alarms = defineAlarms(env);
  await Promise.all([sleepers.ready, payers.ready, alarms.ready]);
  const idle = await settled();
  console.log(memoryLine("opened and idle, definitions ready (settled): the floor", idle, idle, 0));
  const timersAtOpen = timersSetOf(env);
  // Pairs (a timer and a key) spread over the range: SAMPLE / 2 of them.
  const pairStride = Math.max(1, Math.floor(WAITS / SAMPLE));
  const sampled = await suspendMany(
    {
      count: WAITS,
      inFlight: IN_FLIGHT,
      sampled: (index) => Math.floor(index / 2) % pairStride === 0,
      start: (index, onEvent) => (isTimer(index) ? sleepers : payers).conversation(`user-${index}`).start(`pay order ${index}`, { onEvent }),
      each: "pending wait",
    },
    idle,
  );
  console.log(memoryLine(`${WAITS.toLocaleString("en-US")} pending, settled`, await settled(), idle, WAITS, "pending wait"));
  console.log(`  per pending wait, exactly: ${bytesPerWaitOf(env, WAITS)}`);
  console.log(`  the due sweep set its timer ${timersSetOf(env) - timersAtOpen} times over the ${WAITS.toLocaleString("en-US")} suspends`);
  await countDueRows(env, 2 * 24 * 3_600_000, 100);
  await answerSample(env, sleepers, sampled);
  await sweepSample(env, alarms);
  await env.close();
}

/** Fires the sample's timers now and signals its keys; counts them completed. */
async function answerSample(env: Environment, sleepers: DefinedAgent, sampled: readonly Suspension[]): Promise<void> {
  const began = performance.now();
  const cpu = process.cpuUsage();
  const outcome = (run: Promise<{ outcome: string }>): Promise<string> =>
    run.then(
      (result) => result.outcome,
      (error: unknown) => `error ${(error as Error).message}`,
    );
  const timers = sampled.filter(({ index }) => isTimer(index));
  const keyed = sampled.filter(({ index }) => !isTimer(index));
  const [fired, signalled] = await Promise.all([
    Promise.all(
      timers.map(({ index, executionId, waitId }) => outcome(sleepers.conversation(`user-${index}`).resume(executionId, { waitId, fire: true }).result)),
    ),
    Promise.all(
      keyed.map(({ index, key }) =>
        outcome(
          env.signal(key ?? paymentKey(String(index)), { paid: true }).then((sent) => {
            if (sent.status !== "resumed") throw new Error(`the signal for ${key} found no wait: ${sent.status}`);
            return env.wait(sent.executionId).result;
          }),
        ),
      ),
    ),
  ]);
  const seconds = (performance.now() - began) / 1000;
  console.log(
    `  answered ${sampled.length.toLocaleString("en-US")} spread over the range in ${seconds.toFixed(2)} s (CPU ${cpuMsPer(cpu, sampled.length)} ms each): ${timers.length} timers fired now, ${completedOf(fired)}; ${keyed.length} keys signalled, ${completedOf(signalled)}`,
  );
}

/** SAMPLE more conversations on a timer due `SWEEP_LEAD_MS` after they are
 * expected to be suspended; the due sweep fires them at that time. */
async function sweepSample(env: Environment, alarms: DefinedAgent): Promise<void> {
  alarmAt = Date.now() + SWEEP_LEAD_MS + SAMPLE * 5;
  wokenAt.length = 0;
  const suspended = await suspendMany(
    {
      count: SAMPLE,
      inFlight: IN_FLIGHT,
      sampled: () => true,
      start: (index, onEvent) => alarms.conversation(`alarm-${index}`).start("wake me", { onEvent }),
      each: "alarm",
      quiet: true,
    },
    process.memoryUsage(),
  );
  const allSuspendedAt = Date.now();
  const cpu = process.cpuUsage();
  // Until every alarm's model was called back, or a minute past the due time.
  while (wokenAt.length < SAMPLE && Date.now() < alarmAt + 60_000) await new Promise((resolve) => setTimeout(resolve, 20));
  const lastWoken = Math.max(...wokenAt);
  const outcomes = await Promise.all(
    suspended.map(({ executionId }) =>
      env.wait(executionId).result.then(
        (result) => result.outcome,
        (error: unknown) => `error ${(error as Error).message}`,
      ),
    ),
  );
  console.log(
    `  the due sweep: ${SAMPLE.toLocaleString("en-US")} timers due at one time among the pending (all suspended ${((alarmAt - allSuspendedAt) / 1000).toFixed(1)} s before it): ${wokenAt.length} woken, the first ${(Math.min(...wokenAt) - alarmAt).toFixed(0)} ms and the last ${(lastWoken - alarmAt).toFixed(0)} ms after the due time (CPU ${cpuMsPer(cpu, SAMPLE)} ms each); ${completedOf(outcomes)}`,
  );
}
