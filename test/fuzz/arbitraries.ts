// The fuzzer's random inputs, shared by the differential test
// (`differential.test.ts`, under vitest on the sources) and the package
// harness (`test/package/fuzz.ts`, on the packed package under Node, Deno
// and Bun): with the same seed both generate the same streams, so a failure
// seen under one runtime replays under vitest with FUZZ_SEED.

import fc from "fast-check";
import type { CoreLimits } from "../../host/core/machine.js";
import type { Intent } from "./message-stream.js";

export const intent: fc.Arbitrary<Intent> = fc.record({
  kind: fc.nat({ max: 1_000 }),
  pick: fc.nat({ max: 1_000 }),
  variant: fc.nat({ max: 10_000 }),
  noise: fc.nat({ max: 100_000 }),
});

export const limits: fc.Arbitrary<CoreLimits> = fc.record({
  agentsMax: fc.integer({ min: 1, max: 4 }),
  executionsMax: fc.integer({ min: 1, max: 3 }),
});

/** Longest stream: long enough to reach every message kind, short enough
 * that a shrunk failure is readable. */
export const streamLengthMax = 120;

export const intents: fc.Arbitrary<Intent[]> = fc.array(intent, { minLength: 1, maxLength: streamLengthMax });
