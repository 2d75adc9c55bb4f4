// Seeds for randomized tests that run real processes: the seed comes from
// an environment variable when given (to replay a run), otherwise at
// random; the test prints it. mulberry32 is small and good enough to pick a
// victim, a moment or a kill point.

/** A generator of numbers in [0, 1) from `seed`. */
export function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** The seed named by `variable` (a non-negative integer), or a random one. */
export function seedFrom(variable: string): number {
  const given = process.env[variable];
  if (given !== undefined && given !== "") {
    const seed = Number(given);
    if (!Number.isInteger(seed) || seed < 0) throw new Error(`${variable} must be a non-negative integer, got ${given}`);
    return seed;
  }
  return Math.floor(Math.random() * 4_294_967_296);
}
