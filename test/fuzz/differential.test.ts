// Differential fuzzing: random message streams applied to the WebAssembly
// core and to the reference model must give identical result codes,
// identical effects and identical tables after every step, and the
// invariants must hold throughout.
//
// Four runs, each on streams of tens to hundreds of messages (their
// measured lengths are printed once):
// * the debug build and the release build, on the same streams;
// * streams of thousands of messages with `AttachWaiter` floods and
//   batches the size of the in-flight limit, on the smallest tables: the
//   waiter, in-flight, agent, execution and effect-buffer limits must each
//   be reached at least once;
// * cores and streams started next to the u32 wrap (owner tokens, sessions,
//   slot generations, revisions), which must each wrap at least once.
// The seed is printed, and fast-check names it in every failure; replay a
// run with FUZZ_SEED=<seed>. FUZZ_RUNS sets the streams of each build run
// (the other runs scale with it).

import fc from "fast-check";
import { isDeepStrictEqual } from "node:util";
import { describe, expect, it } from "vitest";
import { EffectKind, EffectLayout, ResultCode } from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { decodeEffectWords } from "../../host/core/effects.js";
import { loadCoreModule, type CoreBuild } from "../../host/core/load-core.js";
import type { CoreLimits, CoreSnapshot } from "../../host/core/machine.js";
import { ReferenceCore } from "../model/reference-core.js";
import { floodIntents, intents as intentStreams, limits, liveMessageKinds, retiredMessageKinds, wrapStarts, type WrapStart } from "./arbitraries.js";
import { differentialStep, type StepContext } from "./differential-step.js";
import { RevisionHistory } from "./invariants.js";
import { MessageStream, type Intent, type MessageStreamOptions } from "./message-stream.js";

const runs = Number(process.env.FUZZ_RUNS ?? 300);
const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 2_147_483_647);
// Ten flood streams at least: each reaches a given limit in 4 cases in 5 or
// more (measured: executions 77–82%, agents 84–86%, waiters 91–93%,
// in-flight 98%), so a run misses one for about 1 seed in 10 million; with
// 6 it was 1 in 15,000, and 1 in 300 before the streams answered their
// provider calls under pressure (message-stream.ts, `learnPressure`).
const floodRuns = Math.max(10, Math.round(runs / 30));
const wrapRuns = Math.max(20, Math.round(runs / 3));

console.log(`differential fuzzing: FUZZ_SEED=${seed} FUZZ_RUNS=${runs} (flood streams ${floodRuns}, wrap streams ${wrapRuns})`);

/** What a run saw, for the checks that it went where it should. */
class Coverage {
  readonly lengths: number[] = [];
  readonly acceptedKinds = new Set<number>();
  readonly codes = new Set<number>();
  readonly effectKinds = new Set<number>();
  longestEffects = 0;
  messages = 0;

  /** Lengths as min / p10 / median / mean / p90 / max. */
  describeLengths(): string {
    const sorted = [...this.lengths].sort((a, b) => a - b);
    const at = (fraction: number): number => sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))]!;
    const mean = sorted.reduce((sum, length) => sum + length, 0) / sorted.length;
    return `${sorted.length} streams, ${this.messages} messages; length min ${sorted[0]} p10 ${at(0.1)} median ${at(0.5)} mean ${mean.toFixed(1)} p90 ${at(0.9)} max ${sorted.at(-1)}`;
  }
}

/** Fast equality first, vitest's diff only for a disagreement: comparing
 * tables with `toEqual` on every step would cost more than the step. */
function agree(actual: unknown, expected: unknown, what: string): void {
  if (!isDeepStrictEqual(actual, expected)) expect(actual, what).toEqual(expected);
}

interface StreamSetup {
  readonly module: WebAssembly.Module;
  readonly limits: CoreLimits;
  readonly stream?: MessageStreamOptions;
  readonly wrap?: WrapStart;
  /** Called with the core's tables after every step. */
  readonly afterStep?: (tables: CoreSnapshot) => void;
}

/** Runs one stream through a fresh core and model. */
function runStream(setup: StreamSetup, intents: readonly Intent[], coverage: Coverage): void {
  const wasm = new ControlCore(setup.module, setup.limits);
  const model = new ReferenceCore(setup.limits);
  if (setup.wrap) {
    const { ownerToken, session, generation } = setup.wrap;
    expect(wasm.seedCountersForTesting(ownerToken, session, generation)).toBe(ResultCode.Ok);
    expect(model.seedCountersForTesting(ownerToken, session, generation)).toBe(ResultCode.Ok);
  }
  const context: StepContext = {
    core: wasm,
    model,
    stream: new MessageStream(setup.stream),
    revisions: new RevisionHistory(),
    decode: decodeEffectWords,
    agree,
  };
  coverage.lengths.push(intents.length);
  for (const [index, next] of intents.entries()) {
    const { message, code, effects: emitted } = differentialStep(context, next, index);
    coverage.messages += 1;
    coverage.codes.add(code);
    for (const effect of emitted) coverage.effectKinds.add(effect.kind);
    if (code === ResultCode.Ok) coverage.acceptedKinds.add(message[0]);
    const effects = wasm.effectCount;
    agree(effects <= EffectLayout.EffectsLongestDecision, true, `${effects} effects at step ${index}, more than the longest decision writes`);
    coverage.longestEffects = Math.max(coverage.longestEffects, effects);
    setup.afterStep?.(wasm.snapshot());
  }
}

function expectEveryKindAccepted(coverage: Coverage): void {
  for (const kind of liveMessageKinds()) expect(coverage.acceptedKinds.has(kind), `message kind ${kind} was never accepted`).toBe(true);
  for (const kind of retiredMessageKinds) expect(coverage.acceptedKinds.has(kind), `retired message kind ${kind} was accepted`).toBe(false);
  // A decision sent again while its commit is under way followed it somewhere.
  expect(coverage.effectKinds.has(EffectKind.FollowResume), "FollowResume was never emitted").toBe(true);
  // A decision met an execution held for recovery, and the suspension being committed (decision 0065).
  expect(coverage.effectKinds.has(EffectKind.RecoverBeforeResume), "RecoverBeforeResume was never emitted").toBe(true);
  expect(coverage.effectKinds.has(EffectKind.AwaitSuspensionCommit), "AwaitSuspensionCommit was never emitted").toBe(true);
  // A conversation reported owned elsewhere with messages queued here.
  expect(coverage.effectKinds.has(EffectKind.FollowQueued), "FollowQueued was never emitted").toBe(true);
  // A head whose start ended was kept queued by the core, and one was taken by the process that prepared it.
  expect(coverage.effectKinds.has(EffectKind.HeadKept), "HeadKept was never emitted").toBe(true);
  expect(coverage.effectKinds.has(EffectKind.HeadTaken), "HeadTaken was never emitted").toBe(true);
  // A conversation reported owned elsewhere while its admission was held by a suspended or recovery-required execution.
  expect(coverage.effectKinds.has(EffectKind.FollowAdmitted), "FollowAdmitted was never emitted").toBe(true);
  // A retake on demand found an execution held for recovery (docs/decisions/0062, "By id").
  expect(coverage.effectKinds.has(EffectKind.RecoveryDue), "RecoveryDue was never emitted").toBe(true);
  // env.recover() of a conversation whose lease is not held here was refused.
  expect(coverage.codes.has(ResultCode.LeaseNotHeldHere), "no stream reached LeaseNotHeldHere").toBe(true);
}

describe("the WebAssembly core against the reference model", () => {
  const builds: CoreBuild[] = ["debug", "release"];
  for (const build of builds) {
    it(`agrees on ${runs} deep random message streams, ${build} build (seed ${seed})`, async () => {
      const module = await loadCoreModule(build);
      const coverage = new Coverage();
      fc.assert(
        fc.property(limits, intentStreams, (coreLimits, intents) => {
          runStream({ module, limits: coreLimits }, intents, coverage);
        }),
        { seed, numRuns: runs },
      );
      console.log(`differential fuzzing, ${build} build: ${coverage.describeLengths()}`);
      // The streams went deep: every message kind was accepted somewhere.
      if (runs >= 100) expectEveryKindAccepted(coverage);
    });
  }

  it(`reaches the waiter, in-flight, table and effect limits on ${floodRuns} flood streams (seed ${seed})`, async () => {
    const module = await loadCoreModule("release");
    const coverage = new Coverage();
    // One agent more than executions: a second start finds the table full.
    const smallest = fc.integer({ min: 1, max: 2 }).map((executionsMax) => ({ agentsMax: executionsMax + 1, executionsMax }));
    const limits = [
      [ResultCode.WaitersFull, "WaitersFull"],
      [ResultCode.InFlightFull, "InFlightFull"],
      [ResultCode.AgentsFull, "AgentsFull"],
      [ResultCode.ExecutionsFull, "ExecutionsFull"],
    ] as const;
    const reachedAll = (): boolean => limits.every(([code]) => coverage.codes.has(code)) && coverage.longestEffects === EffectLayout.EffectsLongestDecision;
    // The longest decision (a recovery ending ready with its queue read and
    // its inbox drained) needs a rare order of messages: a seed that misses
    // it goes on with the next seed, as the reference-core walks do, so the
    // check does not depend on the seed drawn (FUZZ_SEED=11 missed it).
    let streamsSeed = seed;
    for (let round = 0; round < 40 && (round === 0 || !reachedAll()); round += 1, streamsSeed += 1) {
      fc.assert(
        fc.property(smallest, floodIntents, (coreLimits, intents) => {
          runStream({ module, limits: coreLimits, stream: { pressure: true } }, intents, coverage);
        }),
        { seed: streamsSeed, numRuns: floodRuns },
      );
    }
    console.log(
      `differential fuzzing, floods (seeds ${seed}–${streamsSeed - 1}): ${coverage.describeLengths()}; longest apply ${coverage.longestEffects} effects`,
    );
    for (const [code, name] of limits) expect(coverage.codes.has(code), `no stream reached ${name}`).toBe(true);
    expect(coverage.longestEffects, "no stream reached the longest decision").toBe(EffectLayout.EffectsLongestDecision);
  });

  it(`agrees next to the u32 wrap on ${wrapRuns} streams, and every counter wraps (seed ${seed})`, async () => {
    const module = await loadCoreModule("debug");
    const coverage = new Coverage();
    const wrapped = { ownerToken: false, session: false, generation: false, revision: false };
    fc.assert(
      fc.property(limits, wrapStarts, intentStreams, (coreLimits, wrap, intents) => {
        // A counter that wrapped is below where it started (it skips 0).
        const afterStep = (tables: CoreSnapshot): void => {
          wrapped.ownerToken ||= tables.nextOwnerToken < wrap.ownerToken;
          wrapped.session ||= tables.nextSession < wrap.session;
          wrapped.generation ||= [...tables.agents, ...tables.executions].some((record) => record.generation < wrap.generation);
          wrapped.revision ||= tables.executions.some((record) => record.agentSlotPlusOne !== 0 && record.revision <= wrap.revision);
        };
        runStream({ module, limits: coreLimits, wrap, stream: { firstRevision: wrap.revision }, afterStep }, intents, coverage);
      }),
      { seed, numRuns: wrapRuns },
    );
    console.log(`differential fuzzing, near the wrap: ${coverage.describeLengths()}; wrapped ${JSON.stringify(wrapped)}`);
    expect(wrapped).toEqual({ ownerToken: true, session: true, generation: true, revision: true });
  });
});
