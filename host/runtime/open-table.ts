// Sizes shared by the host's by-slot arrays and open-addressing tables
// (slot-ids.ts, resting-conversations.ts; docs/decisions/0100): a million
// waits pending keep these, so their slack is per-wait memory too.
//
// * An array grows by doubling while small, by a quarter past
//   `quarterPast` elements: at most a quarter of it unused, not half.
// * A table is at most three quarters full, as before, and grows the same
//   way: past the threshold it is 60–75 % full, where doubling left it
//   37.5–75 % full (4 bytes an entry: 5.3–6.7 B per id, not 5.3–10.7 B).
//   Its length is any whole number, not a power of two: an id's home is
//   its 32-bit hash scaled to the length (hash × length / 2³²), and a
//   probe wraps at the length.

/** Past this many elements an array or a table grows by a quarter. */
export const quarterPast = 65_536;

/** The length to grow an array of `length` to, to hold at least `needed`. */
export function grownLength(length: number, needed: number, least = 16): number {
  let grown = Math.max(least, length);
  while (grown < needed) grown = grown < quarterPast ? grown * 2 : grown + (grown >> 2);
  return grown;
}

/** Whether a table of `length` holding `count` entries is past three quarters full. */
export function tableFull(count: number, length: number): boolean {
  return count * 4 > length * 3;
}

/** The length a full table of `length` grows to. */
export function grownTable(length: number): number {
  return length < quarterPast ? length * 2 : length + (length >> 2);
}

/** The home of a 32-bit `hash` in a table of `length` (its high bits, scaled). */
export function homeIn(hash: number, length: number): number {
  return Math.floor((hash * length) / 4294967296);
}
