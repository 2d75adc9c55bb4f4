// The fuzzer's random inputs, shared by the differential test
// (`differential.test.ts`, under vitest on the sources) and the package
// harness (`test/package/fuzz.ts`, on the packed package under Node, Deno
// and Bun): with the same seed both generate the same streams, so a failure
// seen under one runtime replays under vitest with FUZZ_SEED.
//
// Lengths are set explicitly: left to its default size, fast-check keeps
// `fc.array` "small" whatever `maxLength` says (streams of 1–12 messages,
// mean 6.4, with `maxLength: 120`). `size: "max"` spreads them over the
// whole range.

import fc from "fast-check";
import { Limit, MessageKind, MessageKindLimit } from "../../assembly/abi.js";
import type { CoreLimits } from "../../host/core/machine.js";
import type { Intent } from "./message-stream.js";

export const intent: fc.Arbitrary<Intent> = fc.record({
  kind: fc.nat({ max: 1_000 }),
  pick: fc.nat({ max: 1_000 }),
  variant: fc.nat({ max: 10_000 }),
  noise: fc.nat({ max: 100_000 }),
});

/** Tables small enough that the agent and execution limits are met often. */
export const limits: fc.Arbitrary<CoreLimits> = fc.record({
  agentsMax: fc.integer({ min: 1, max: 4 }),
  executionsMax: fc.integer({ min: 1, max: 3 }),
});

/** Stream lengths of the deep runs: long enough for several executions to
 * live their whole lives (start, barriers, approval, recovery) and to pile
 * up stale and duplicate results; short enough that a shrunk failure is
 * readable. Measured with `size: "max"`: median ≈ 205, mean ≈ 200. */
export const streamLengthMin = 20;
export const streamLengthMax = 400;

export const intents: fc.Arbitrary<Intent[]> = fc.array(intent, {
  minLength: streamLengthMin,
  maxLength: streamLengthMax,
  size: "max",
});

/** Streams long enough for an `AttachWaiter` flood (`WaitersMax` + 2
 * messages) and the messages around it. */
export const floodIntents: fc.Arbitrary<Intent[]> = fc.array(intent, {
  minLength: Limit.WaitersMax + 200,
  maxLength: Limit.WaitersMax + 1_200,
  size: "max",
});

/** Where a run near the u32 wrap starts its counters: owner tokens,
 * sessions and first slot generations within a dozen steps of 2^32,
 * revisions within sixty (a stream writes more revisions than it mints
 * sessions). Close enough that about 3 streams in 10 wrap each counter
 * (measured over 1,000): from 40 and 300 steps away about 1 in 8 did, so
 * a run of 100 streams missed a wrap for about 1 seed in 100,000. */
export interface WrapStart {
  readonly ownerToken: number;
  readonly session: number;
  readonly generation: number;
  readonly revision: number;
}

const nearWrap = (distance: number): fc.Arbitrary<number> => fc.integer({ min: 2 ** 32 - distance, max: 2 ** 32 - 1 });

export const wrapStarts: fc.Arbitrary<WrapStart> = fc.record({
  ownerToken: nearWrap(12),
  session: nearWrap(12),
  generation: nearWrap(6),
  revision: nearWrap(60),
});

/** Message kinds retired from the ABI (docs/decisions/0022): never
 * accepted, so coverage checks leave them out. */
export const retiredMessageKinds: readonly number[] = [16, 17];

/** Kinds never assigned (25–27: set aside during issue 12, which needed
 * none of them): unknown to the core, left out like the retired ones. */
export const unassignedMessageKinds: readonly number[] = [25, 26, 27];

/** Every message kind the core decides (the retired ones left out). */
export function liveMessageKinds(): number[] {
  const kinds: number[] = [];
  for (let kind: number = MessageKind.RegisterAgent; kind < MessageKindLimit.End; kind += 1) {
    if (!retiredMessageKinds.includes(kind) && !unassignedMessageKinds.includes(kind)) kinds.push(kind);
  }
  return kinds;
}
