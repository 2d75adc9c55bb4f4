// Ids by slot and slots by id, without a JavaScript string or a Map entry
// per id (docs/decisions/0084). A million suspended executions each kept
// their id (a 36-character string, ≈56 B) and its Map entry (≈30 B) in the
// dormant index; here an id in the form `randomUUID()` gives — lowercase,
// canonical — is 16 bytes by slot (in pages of 1,024 slots: no copy and
// at most a page unused as the slots grow) and a bit by slot, found by id through an open-addressing table of slots (linear
// probing, at most three quarters full, deleted by shifting back: no
// tombstones; open-table.ts, docs/decisions/0100). Any other id (an
// idempotency key, a filed start's own) is kept as it is, in a Map: exact,
// and no cheaper than before.
//
// The string an id is read back as (`idAt`) is made anew each time: equal
// to the one added, not the same object.

import { grownLength, grownTable, homeIn, tableFull } from "./open-table.js";

const uuidForm = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const uuidBytes = 16;
/** Slots a page of ids holds (16 KiB). */
const pageSlots = 1024;
/** Where each byte's two hex digits sit in the canonical form. */
const hexAt = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
const hexDigits = "0123456789abcdef";

/** The value of one lowercase hex digit's char code. */
function nibble(code: number): number {
  return code <= 57 ? code - 48 : code - 87;
}

/** Packs a canonical lowercase UUID's 16 bytes into `into` at `at`. */
function pack(id: string, into: Uint8Array, at: number): void {
  for (let byte = 0; byte < uuidBytes; byte += 1) {
    const digit = hexAt[byte]!;
    into[at + byte] = (nibble(id.charCodeAt(digit)) << 4) | nibble(id.charCodeAt(digit + 1));
  }
}

function unpack(from: Uint8Array, at: number): string {
  let id = "";
  for (let byte = 0; byte < uuidBytes; byte += 1) {
    if (byte === 4 || byte === 6 || byte === 8 || byte === 10) id += "-";
    const value = from[at + byte]!;
    id += hexDigits[value >> 4]! + hexDigits[value & 15]!;
  }
  return id;
}

/** Mixes the 16 bytes at `at` into a 32-bit hash (ids given as keys need
 * not be random). */
function hashOf(bytes: Uint8Array, at: number): number {
  let hash = 0x811c9dc5;
  for (let byte = 0; byte < uuidBytes; byte += 1) hash = Math.imul(hash ^ bytes[at + byte]!, 0x01000193);
  hash ^= hash >>> 16;
  return Math.imul(hash, 0x85ebca6b) >>> 0;
}

export class SlotIds {
  /** Each slot's UUID bytes (valid where `packed` says so), by page of
   * `pageSlots` slots, allocated as the slots reach them. */
  private readonly pages: Uint8Array[] = [];
  /** Bit `slot % 32` of word `slot >> 5` is set where the slot holds a
   * packed UUID. */
  private packed = new Uint32Array(0);
  /** Slots the pages hold (and `packed`, at least). */
  private capacity = 0;
  /** Open addressing: slot + 1 of a packed id, 0 for empty. */
  private table = new Int32Array(16);
  private packedCount = 0;
  /** Ids not in the canonical UUID form, both ways. */
  private readonly otherSlots = new Map<string, number>();
  private readonly otherIds = new Map<number, string>();
  /** The probe's scratch: the packed form of an id looked up. */
  private readonly probe = new Uint8Array(uuidBytes);

  get size(): number {
    return this.packedCount + this.otherSlots.size;
  }

  /** Records `id` at `slot`; the slot must be free and the id new. */
  add(slot: number, id: string): void {
    if (this.idAt(slot) !== undefined) throw new Error(`slot ${slot} already holds id ${this.idAt(slot)}`);
    if (this.slotOf(id) !== undefined) throw new Error(`id ${id} is already at slot ${this.slotOf(id)}`);
    if (!uuidForm.test(id)) {
      this.otherSlots.set(id, slot);
      this.otherIds.set(slot, id);
      return;
    }
    this.reserve(slot);
    pack(id, this.pageOf(slot), this.atOf(slot));
    this.packed[slot >>> 5] = this.packed[slot >>> 5]! | (1 << (slot & 31));
    this.packedCount += 1;
    if (tableFull(this.packedCount, this.table.length)) this.rehash(grownTable(this.table.length));
    this.insert(slot);
  }

  slotOf(id: string): number | undefined {
    if (!uuidForm.test(id)) return this.otherSlots.get(id);
    pack(id, this.probe, 0);
    const size = this.table.length;
    for (let at = homeIn(hashOf(this.probe, 0), size); ; at = at + 1 === size ? 0 : at + 1) {
      const held = this.table[at]!;
      if (held === 0) return undefined;
      if (this.equals(held - 1)) return held - 1;
    }
  }

  has(id: string): boolean {
    return this.slotOf(id) !== undefined;
  }

  idAt(slot: number): string | undefined {
    if (this.isPacked(slot)) return unpack(this.pageOf(slot), this.atOf(slot));
    return this.otherIds.get(slot);
  }

  private isPacked(slot: number): boolean {
    return slot >= 0 && slot < this.capacity && ((this.packed[slot >>> 5]! >>> (slot & 31)) & 1) === 1;
  }

  /** Forgets the id at `slot`; false when it held none. */
  remove(slot: number): boolean {
    const other = this.otherIds.get(slot);
    if (other !== undefined) {
      this.otherIds.delete(slot);
      this.otherSlots.delete(other);
      return true;
    }
    if (!this.isPacked(slot)) return false;
    const size = this.table.length;
    const step = (at: number): number => (at + 1 === size ? 0 : at + 1);
    let at = this.homeOf(slot, size);
    while (this.table[at] !== slot + 1) at = step(at);
    // Backward-shift deletion: each later entry of the run moves into the
    // hole if its home is not between the hole and it.
    let hole = at;
    for (let next = step(hole); this.table[next] !== 0; next = step(next)) {
      const home = this.homeOf(this.table[next]! - 1, size);
      const stays = hole <= next ? hole < home && home <= next : hole < home || home <= next;
      if (stays) continue;
      this.table[hole] = this.table[next]!;
      hole = next;
    }
    this.table[hole] = 0;
    this.packed[slot >>> 5] = this.packed[slot >>> 5]! & ~(1 << (slot & 31));
    this.packedCount -= 1;
    return true;
  }

  /** Every slot holding an id. */
  slots(): number[] {
    const found = [...this.otherIds.keys()];
    for (let slot = 0; slot < this.capacity; slot += 1) if (this.isPacked(slot)) found.push(slot);
    return found;
  }

  private equals(slot: number): boolean {
    const page = this.pageOf(slot);
    const at = this.atOf(slot);
    for (let byte = 0; byte < uuidBytes; byte += 1) if (page[at + byte] !== this.probe[byte]) return false;
    return true;
  }

  private pageOf(slot: number): Uint8Array {
    return this.pages[Math.floor(slot / pageSlots)]!;
  }

  private atOf(slot: number): number {
    return (slot % pageSlots) * uuidBytes;
  }

  private homeOf(slot: number, size: number): number {
    return homeIn(hashOf(this.pageOf(slot), this.atOf(slot)), size);
  }

  private insert(slot: number): void {
    const size = this.table.length;
    let at = this.homeOf(slot, size);
    while (this.table[at] !== 0) at = at + 1 === size ? 0 : at + 1;
    this.table[at] = slot + 1;
  }

  private rehash(capacity: number): void {
    const old = this.table;
    this.table = new Int32Array(capacity);
    for (const held of old) if (held !== 0) this.insert(held - 1);
  }

  /** Room for `slot`: the pages up to its own, and its bit (the bits grow
   * as open-table.ts says). */
  private reserve(slot: number): void {
    if (slot < this.capacity) return;
    while (this.pages.length * pageSlots <= slot) this.pages.push(new Uint8Array(pageSlots * uuidBytes));
    const capacity = this.pages.length * pageSlots;
    if (capacity > this.packed.length * 32) {
      const packed = new Uint32Array(grownLength(this.packed.length, capacity / 32, pageSlots / 32));
      packed.set(this.packed);
      this.packed = packed;
    }
    this.capacity = capacity;
  }
}
