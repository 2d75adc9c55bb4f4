// bench/core: the cost of one control-message apply, and the core memory
// one live execution takes. Prints figures; asserts nothing (the machines
// are shared and noisy). Run with `npm run bench`.
//
// Timing uses a process.hrtime.bigint() loop over at least 10M applies of a
// recorded agent-run message mix, because benchmark libraries cannot time
// calls this short. The WebAssembly core and the reference model replay the
// same recording in the same process, alternating, and the best of several
// passes is reported for each.

import { AgentRecord, EffectLayout, ExecutionRecord, MessageKind as M, PreparationOutcome } from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import type { ControlMachine, CoreLimits } from "../../host/core/machine.js";
import { ReferenceCore } from "../../test/model/reference-core.js";
import { MESSAGES_PER_RUN, recordAgentRuns, WORDS_PER_MESSAGE } from "./agent-run-stream.js";

const AGENTS = 1_000;
const ROUNDS = 25;
const APPLIES_MIN = Number(process.env.BENCH_APPLIES ?? 10_000_000);
const PASSES = 5;
const LIMITS: CoreLimits = { agentsMax: AGENTS, executionsMax: AGENTS };

const module = await loadCoreModule("release");
const stream = recordAgentRuns(new ControlCore(module, LIMITS), AGENTS, ROUNDS);
const messages = stream.length / WORDS_PER_MESSAGE;
const replays = Math.ceil(APPLIES_MIN / messages);

/** Replays the recording `replays` times on fresh machines; returns ns per
 * apply (apply + reading the effect count, as the host does). */
function timeReplay(create: () => ControlMachine, readEffects: (machine: ControlMachine) => number): number {
  let total = 0n;
  let sink = 0;
  for (let replay = 0; replay < replays; replay += 1) {
    const machine = create();
    for (let agent = 0; agent < AGENTS; agent += 1) machine.apply(M.RegisterAgent, 0);
    const started = process.hrtime.bigint();
    for (let at = 0; at < stream.length; at += WORDS_PER_MESSAGE) {
      sink += machine.apply(stream[at]!, stream[at + 1], stream[at + 2], stream[at + 3], stream[at + 4], stream[at + 5], stream[at + 6], stream[at + 7]);
      sink += readEffects(machine);
    }
    total += process.hrtime.bigint() - started;
  }
  if (sink < 0) console.log(sink);
  return Number(total) / (replays * messages);
}

const wasmEffects = (machine: ControlMachine): number => (machine as ControlCore).effectCount;
const modelEffects = (machine: ControlMachine): number => machine.effectWords().length;

const wasmTimes: number[] = [];
const modelTimes: number[] = [];
for (let pass = 0; pass < PASSES; pass += 1) {
  wasmTimes.push(timeReplay(() => new ControlCore(module, LIMITS), wasmEffects));
  modelTimes.push(timeReplay(() => new ReferenceCore(LIMITS), modelEffects));
}
const wasmBest = Math.min(...wasmTimes);
const modelBest = Math.min(...modelTimes);

console.log(
  `bench/core — ${messages.toLocaleString()} recorded messages (${AGENTS} agents × ${ROUNDS} runs × ${MESSAGES_PER_RUN} messages), replayed ${replays}× per pass = ${(replays * messages).toLocaleString()} applies, best of ${PASSES} passes`,
);
console.log(`  wasm core        ${wasmBest.toFixed(1)} ns/apply   (passes: ${wasmTimes.map((t) => t.toFixed(1)).join(", ")})`);
console.log(`  reference model  ${modelBest.toFixed(1)} ns/apply   (passes: ${modelTimes.map((t) => t.toFixed(1)).join(", ")})`);
console.log(`  model / wasm     ${(modelBest / wasmBest).toFixed(2)}×`);

// -- memory per live execution ---------------------------------------------------

const LIVE = 1_000_000;
const big = new ControlCore(module, { agentsMax: LIVE, executionsMax: LIVE });
for (let agent = 0; agent < LIVE; agent += 1) {
  big.apply(M.RegisterAgent, 0);
  big.apply(M.Start, agent, 1, agent, 0);
  const token = big.effectWord(0, 2);
  big.apply(M.InitialPreparationReady, agent, 1, token, PreparationOutcome.Active, 1, 0, agent);
}
if (big.liveExecutions !== LIVE) throw new Error(`expected ${LIVE} live executions, have ${big.liveExecutions}`);
const bytes = big.memoryBytes;
console.log(`memory with ${LIVE.toLocaleString()} live executions (each on its own agent): ${(bytes / 2 ** 20).toFixed(1)} MiB of linear memory`);
console.log(
  `  ${(bytes / LIVE).toFixed(1)} bytes per live execution, all in (execution record ${ExecutionRecord.Size} B + its agent's record, its conversation's with it, ${AgentRecord.Size} B; the rest is the ${EffectLayout.FirstEffectOffset + EffectLayout.EffectsMax * EffectLayout.Words * 4} B effect buffer, static tables and page rounding)`,
);
