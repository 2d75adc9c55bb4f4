// Conversations at rest, by agent slot, without an object each
// (docs/decisions/0092). A conversation whose execution was let go of
// (decision 0066) and which the core says is at rest (`conversationAtRest`:
// ready, unused, nothing queued) keeps no `Conversation` record: only its
// id, as UTF-8 bytes in one arena, and the index of its definition, both
// by its agent slot, and the slot found by id through an open-addressing
// table (linear probing, at most three quarters full, deleted by shifting
// back: no tombstones). Its generation is the core's; its use count is 0.
//
// The arena only grows at its end: an id removed leaves its bytes as
// garbage until half the arena is garbage, when the ids kept are copied
// into a fresh one. The string an id is read back as (`idAt`) is made
// anew each time: equal to the one added, not the same object.

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** FNV-1a over `length` bytes of `bytes` from `at`, mixed (ids such as
 * `user-1`, `user-2` differ in their last byte only). */
function hashOf(bytes: Uint8Array, at: number, length: number): number {
  let hash = 0x811c9dc5;
  for (let index = at; index < at + length; index += 1) hash = Math.imul(hash ^ bytes[index]!, 0x01000193);
  hash ^= hash >>> 16;
  return Math.imul(hash, 0x85ebca6b) >>> 0;
}

/** A typed array `array` grown to hold index `needed`, doubling. */
function grown<T extends Int32Array | Uint32Array | Uint8Array>(array: T, needed: number, make: (length: number) => T): T {
  if (needed < array.length) return array;
  let length = Math.max(16, array.length);
  while (length <= needed) length *= 2;
  const larger = make(length);
  larger.set(array);
  return larger;
}

export class RestingConversations {
  /** The ids' UTF-8 bytes, one after another. */
  private arena = new Uint8Array(1024);
  /** Bytes of the arena in use (kept and garbage). */
  private used = 0;
  /** Bytes of the arena no id holds any more. */
  private garbage = 0;
  /** Each slot's id: where its bytes begin in the arena. */
  private offsets = new Uint32Array(0);
  /** Each slot's id length in bytes, plus one; 0: the slot is not at rest here. */
  private lengths = new Uint32Array(0);
  /** Each slot's definition, as an index the caller keeps. */
  private kinds = new Uint32Array(0);
  /** Open addressing: slot + 1 of an id, 0 for empty. */
  private table = new Int32Array(16);
  private count = 0;
  /** The probe's scratch: the UTF-8 form of an id looked up. */
  private probe = new Uint8Array(256);

  get size(): number {
    return this.count;
  }

  /** Records the conversation `id` at rest in agent `slot`, of definition
   * `kind`; the slot must not be at rest already, and the id not held. */
  add(slot: number, id: string, kind: number): void {
    if (this.has(slot)) throw new Error(`agent slot ${slot} already holds conversation "${this.idAt(slot)}" at rest`);
    if (this.slotOf(id) !== undefined) throw new Error(`conversation "${id}" is already at rest in agent slot ${this.slotOf(id)}`);
    this.reserve(slot);
    const length = this.encode(id);
    if (this.used + length > this.arena.length) this.makeRoom(length);
    this.arena.set(this.probe.subarray(0, length), this.used);
    this.offsets[slot] = this.used;
    this.lengths[slot] = length + 1;
    this.kinds[slot] = kind;
    this.used += length;
    this.count += 1;
    if (this.count * 4 > this.table.length * 3) this.rehash(this.table.length * 2);
    this.insert(slot);
  }

  /** The agent slot of the conversation `id` at rest, if it is. */
  slotOf(id: string): number | undefined {
    if (this.count === 0) return undefined;
    const length = this.encode(id);
    const mask = this.table.length - 1;
    for (let at = hashOf(this.probe, 0, length) & mask; ; at = (at + 1) & mask) {
      const held = this.table[at]!;
      if (held === 0) return undefined;
      if (this.equals(held - 1, length)) return held - 1;
    }
  }

  /** Whether agent `slot` holds a conversation at rest here. */
  has(slot: number): boolean {
    return slot < this.lengths.length && this.lengths[slot] !== 0;
  }

  idAt(slot: number): string | undefined {
    if (!this.has(slot)) return undefined;
    const at = this.offsets[slot]!;
    return decoder.decode(this.arena.subarray(at, at + this.lengths[slot]! - 1));
  }

  kindAt(slot: number): number | undefined {
    return this.has(slot) ? this.kinds[slot] : undefined;
  }

  /** The ids at rest (for the listing of the conversations here). */
  *ids(): Iterable<string> {
    for (let slot = 0; slot < this.lengths.length; slot += 1) if (this.lengths[slot] !== 0) yield this.idAt(slot) as string;
  }

  /** Forgets the conversation at `slot`; false when it held none. */
  remove(slot: number): boolean {
    if (!this.has(slot)) return false;
    const mask = this.table.length - 1;
    let at = this.homeOf(slot) & mask;
    while (this.table[at] !== slot + 1) at = (at + 1) & mask;
    // Backward-shift deletion: each later entry of the run moves into the
    // hole if its home is not between the hole and it.
    let hole = at;
    for (let next = (hole + 1) & mask; this.table[next] !== 0; next = (next + 1) & mask) {
      const home = this.homeOf(this.table[next]! - 1) & mask;
      const stays = hole <= next ? hole < home && home <= next : hole < home || home <= next;
      if (stays) continue;
      this.table[hole] = this.table[next]!;
      hole = next;
    }
    this.table[hole] = 0;
    this.garbage += this.lengths[slot]! - 1;
    this.lengths[slot] = 0;
    this.count -= 1;
    return true;
  }

  /** Writes `id`'s UTF-8 bytes into the probe; returns their length. */
  private encode(id: string): number {
    // Three bytes at most per UTF-16 unit.
    if (id.length * 3 > this.probe.length) this.probe = new Uint8Array(id.length * 3);
    return encoder.encodeInto(id, this.probe).written;
  }

  private homeOf(slot: number): number {
    return hashOf(this.arena, this.offsets[slot]!, this.lengths[slot]! - 1);
  }

  private equals(slot: number, length: number): boolean {
    if (this.lengths[slot] !== length + 1) return false;
    const at = this.offsets[slot]!;
    for (let byte = 0; byte < length; byte += 1) if (this.arena[at + byte] !== this.probe[byte]) return false;
    return true;
  }

  private insert(slot: number): void {
    const mask = this.table.length - 1;
    let at = this.homeOf(slot) & mask;
    while (this.table[at] !== 0) at = (at + 1) & mask;
    this.table[at] = slot + 1;
  }

  private rehash(length: number): void {
    this.table = new Int32Array(length);
    for (let slot = 0; slot < this.lengths.length; slot += 1) if (this.lengths[slot] !== 0) this.insert(slot);
  }

  private reserve(slot: number): void {
    this.offsets = grown(this.offsets, slot, (length) => new Uint32Array(length));
    this.lengths = grown(this.lengths, slot, (length) => new Uint32Array(length));
    this.kinds = grown(this.kinds, slot, (length) => new Uint32Array(length));
  }

  /** Room for `length` more bytes: the ids kept copied into a fresh arena
   * when half of it is garbage, else the arena doubled. */
  private makeRoom(length: number): void {
    const kept = this.used - this.garbage;
    let size = this.arena.length;
    if (this.garbage * 2 < this.used) size *= 2;
    while (kept + length > size) size *= 2;
    const fresh = new Uint8Array(size);
    let at = 0;
    for (let slot = 0; slot < this.lengths.length; slot += 1) {
      const plusOne = this.lengths[slot]!;
      if (plusOne === 0) continue;
      const from = this.offsets[slot]!;
      fresh.set(this.arena.subarray(from, from + plusOne - 1), at);
      this.offsets[slot] = at;
      at += plusOne - 1;
    }
    this.arena = fresh;
    this.used = at;
    this.garbage = 0;
  }
}
