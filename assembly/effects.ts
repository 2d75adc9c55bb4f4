// The effect buffer: what the host must carry out after an apply, in order.
// A count word, then up to `EffectLayout.EffectsMax` effects of five u32
// words `[kind, a, b, c, d]`. Each apply starts by clearing it.

import { EffectLayout } from "./abi";
import { effectBuffer } from "./memory-layout";

let effectCount: u32 = 0;

export function clearEffects(): void {
  effectCount = 0;
  store<u32>(effectBuffer, 0, EffectLayout.CountOffset);
}

/** Appends one effect. No decision writes more than five, so a full buffer
 * is a bug in the core, not a condition of the input. */
export function emit(kind: u32, a: u32 = 0, b: u32 = 0, c: u32 = 0, d: u32 = 0): void {
  assert(effectCount < <u32>EffectLayout.EffectsMax, "effect buffer overflow");
  const pointer = effectBuffer + EffectLayout.FirstEffectOffset + <usize>effectCount * EffectLayout.Words * 4;
  store<u32>(pointer, kind, 0);
  store<u32>(pointer, a, 4);
  store<u32>(pointer, b, 8);
  store<u32>(pointer, c, 12);
  store<u32>(pointer, d, 16);
  effectCount += 1;
  store<u32>(effectBuffer, effectCount, EffectLayout.CountOffset);
}
