// Differential fuzzing against the packed package, under any runtime: the
// core is the one the installed "phronomy" package ships (its release
// `core.wasm` and its compiled facade, found through the package's own
// entry), the oracle is the reference model of `test/model/`, and the
// streams, arbitraries and invariants are those of `test/fuzz/` — the same
// check as `test/fuzz/differential.test.ts`, without vitest, so that
// Node, Deno and Bun can run it. runtimes.test.ts compiles it to plain
// JavaScript inside the temporary project that installed the tarball.
//
//   <runtime> fuzz.js <runs> <seed>
//
// Prints `FUZZ <json>` on success; a disagreement throws with the seed, the
// shrunk stream and the step (replay it with FUZZ_SEED under vitest too:
// the arbitraries are shared, so the streams are the same).

import fc from "fast-check";
import { isDeepStrictEqual } from "node:util";
import process from "node:process";
import type { ControlCore } from "../../host/core/control-core.js";
import type { decodeEffectWords as DecodeEffectWords } from "../../host/core/effects.js";
import type { loadCoreModule as LoadCoreModule } from "../../host/core/load-core.js";
import { ReferenceCore } from "../model/reference-core.js";
import { intents as intentStreams, limits, liveMessageKinds } from "../fuzz/arbitraries.js";
import { differentialStep } from "../fuzz/differential-step.js";
import { RevisionHistory } from "../fuzz/invariants.js";
import { MessageStream } from "../fuzz/message-stream.js";

const runs = Number(process.argv[2] ?? 2_000);
const seed = Number(process.argv[3] ?? Date.now() % 2_147_483_647);

// The package's core, by file: the exports map keeps these modules private,
// so they are found beside the package's main entry.
const entry = import.meta.resolve("phronomy");
const { ControlCore: PackagedCore } = (await import(new URL("./core/control-core.js", entry).href)) as { ControlCore: typeof ControlCore };
const { decodeEffectWords } = (await import(new URL("./core/effects.js", entry).href)) as { decodeEffectWords: typeof DecodeEffectWords };
const { loadCoreModule, coreWasmUrl } = (await import(new URL("./core/load-core.js", entry).href)) as {
  loadCoreModule: typeof LoadCoreModule;
  coreWasmUrl: (build: "release") => URL;
};

/** Throws with `what` and both values unless they are deeply equal. */
function agree(actual: unknown, expected: unknown, what: string): void {
  if (!isDeepStrictEqual(withoutUndefined(actual), withoutUndefined(expected))) {
    throw new Error(`${what}: the core gave ${JSON.stringify(actual)}, the reference model ${JSON.stringify(expected)}`);
  }
}

/** Like vitest's toEqual, a property holding undefined counts as absent. */
function withoutUndefined(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value ?? null)) as unknown;
}

const started = performance.now();
const module = await loadCoreModule("release");
const acceptedKinds = new Set<number>();
let messages = 0;
fc.assert(
  fc.property(limits, intentStreams, (coreLimits, intents) => {
    const wasm = new PackagedCore(module, coreLimits);
    const model = new ReferenceCore(coreLimits);
    const context = { core: wasm, model, stream: new MessageStream(), revisions: new RevisionHistory(), decode: decodeEffectWords, agree };
    for (const [index, next] of intents.entries()) {
      const { message, code } = differentialStep(context, next, index);
      if (code === 0) acceptedKinds.add(message[0]);
      messages += 1;
    }
  }),
  { seed, numRuns: runs },
);
// Streams are deep (tens to hundreds of messages, test/fuzz/arbitraries.ts):
// a few hundred reach every kind the core decides.
if (runs >= 200) {
  for (const kind of liveMessageKinds()) {
    if (!acceptedKinds.has(kind)) throw new Error(`message kind ${kind} was never accepted in ${runs} streams (seed ${seed})`);
  }
}
console.log(
  `FUZZ ${JSON.stringify({ runs, seed, messages, acceptedKinds: acceptedKinds.size, core: coreWasmUrl("release").pathname, ms: Math.round(performance.now() - started) })}`,
);
