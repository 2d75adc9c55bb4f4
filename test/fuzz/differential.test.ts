// Differential fuzzing: random message streams applied to the WebAssembly
// core and to the reference model must give identical result codes,
// identical effects and identical tables after every step, and the
// invariants must hold throughout. The seed is printed; replay a failure
// with FUZZ_SEED=<seed>. FUZZ_RUNS raises the number of streams.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MessageKind, MessageKindLimit } from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { decodeEffectWords } from "../../host/core/effects.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import { ReferenceCore } from "../model/reference-core.js";
import { intents as intentStreams, limits } from "./arbitraries.js";
import { differentialStep } from "./differential-step.js";
import { RevisionHistory } from "./invariants.js";
import { MessageStream } from "./message-stream.js";

const runs = Number(process.env.FUZZ_RUNS ?? 20_000);
const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 2_147_483_647);

describe("the WebAssembly core against the reference model", () => {
  it(`agrees on ${runs} random message streams (seed ${seed})`, async () => {
    console.log(`differential fuzzing: FUZZ_SEED=${seed} FUZZ_RUNS=${runs}`);
    const module = await loadCoreModule("debug");
    const acceptedKinds = new Set<number>();
    fc.assert(
      fc.property(limits, intentStreams, (coreLimits, intents) => {
        const wasm = new ControlCore(module, coreLimits);
        const model = new ReferenceCore(coreLimits);
        const context = {
          core: wasm, model, stream: new MessageStream(), revisions: new RevisionHistory(), decode: decodeEffectWords,
          agree: (actual: unknown, expected: unknown, what: string) => expect(actual, what).toEqual(expected),
        };
        for (const [index, next] of intents.entries()) {
          const { message, code } = differentialStep(context, next, index);
          if (code === 0) acceptedKinds.add(message[0]);
        }
      }),
      { seed, numRuns: runs },
    );
    // The streams went deep: every message kind was accepted somewhere.
    if (runs >= 1_000) {
      for (let kind = MessageKind.RegisterAgent; kind < MessageKindLimit.End; kind += 1) {
        expect(acceptedKinds.has(kind), `message kind ${kind} was never accepted`).toBe(true);
      }
    }
  });
});
