// Conversations at rest, by agent slot, without an object each
// (docs/decisions/0092). A conversation whose execution was let go of
// (decision 0066) and which the core says is at rest (`conversationAtRest`:
// ready, unused, nothing queued) keeps no `Conversation` record: one
// record in a byte arena — its id's length, then its definition's index
// times two plus one if an execution of it was released here (each a
// LEB128 varint, one byte below 128; docs/decisions/0100), then that
// release time (a float64, 8 bytes) if there was one, then the id's UTF-8
// bytes — where its agent slot's offset points (offsets by page of 4,096
// slots), and the slot found by id through an open-addressing table
// (linear probing, at most three quarters full, deleted by shifting back:
// no tombstones; open-table.ts). Its generation is the core's; its use
// count is 0. For `user-123456` never released here: 13 bytes of arena,
// 4 of offset, 5.3–6.7 of table.
//
// The arena is pages of 16 KiB (docs/decisions/0111), allocated as the
// records reach them: no copy as it grows, at most a page unused (the
// first page starts at 1 KiB and doubles, for a coordinator with few
// conversations). A record does not cross a page: one that does not fit
// the last page's end starts the next (the end left unused: under a
// record's size, 4 bytes a page for `user-123456`); one longer than a
// page has a page of its own, of its length. An offset is the page's
// index times 16,384 plus the byte in it. Records are only added at the
// end: a record removed is garbage until half the records' bytes are,
// when the records kept are copied into fresh pages. The string an id is
// read back as (`idAt`) is made anew each time: equal to the one added,
// not the same object.

import { grownTable, homeIn, tableFull } from "./open-table.js";

/** Agent slots a page of offsets holds (16 KiB). */
const pageSlots = 4096;
/** Bytes of a page of the arena (a record longer has a page of its own);
 * an offset's page is its bits from the 15th up. */
const pageShift = 14;
const pageBytes = 1 << pageShift;
/** The first page's first length (doubled up to a page as it fills). */
const firstPageBytes = 1024;
/** Pages an offset plus one can address in 32 bits (4 GiB of records). */
const maxPages = 2 ** (32 - pageShift) - 1;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** A release time's 8 bytes, copied through these two views. */
const timeScratch = new Float64Array(1);
const timeBytes = new Uint8Array(timeScratch.buffer);

/** FNV-1a over `length` bytes of `bytes` from `at`, mixed (ids such as
 * `user-1`, `user-2` differ in their last byte only). */
function hashOf(bytes: Uint8Array, at: number, length: number): number {
  let hash = 0x811c9dc5;
  for (let index = at; index < at + length; index += 1) hash = Math.imul(hash ^ bytes[index]!, 0x01000193);
  hash ^= hash >>> 16;
  return Math.imul(hash, 0x85ebca6b) >>> 0;
}

/** Writes `value` as a LEB128 varint at `at`; returns where it ended. */
function writeVarint(into: Uint8Array, at: number, value: number): number {
  let rest = value;
  while (rest >= 0x80) {
    into[at++] = (rest & 0x7f) | 0x80;
    rest = Math.floor(rest / 0x80);
  }
  into[at++] = rest;
  return at;
}

/** The bytes `value` takes as a LEB128 varint. */
function varintLength(value: number): number {
  let length = 1;
  for (let rest = value; rest >= 0x80; rest = Math.floor(rest / 0x80)) length += 1;
  return length;
}

/** The bytes of the record at `at` of `page`: its two varints, its
 * release time if it has one, its id's bytes. */
function recordSize(page: Uint8Array, at: number): number {
  let end = at;
  let length = 0;
  for (let shift = 1; ; shift *= 0x80) {
    const byte = page[end++]!;
    length += (byte & 0x7f) * shift;
    if (byte < 0x80) break;
  }
  let kindTimesTwo = 0;
  for (let shift = 1; ; shift *= 0x80) {
    const byte = page[end++]!;
    kindTimesTwo += (byte & 0x7f) * shift;
    if (byte < 0x80) break;
  }
  return end - at + (kindTimesTwo % 2) * 8 + length;
}

/** A record read at an offset: its page, where its id's bytes begin in
 * it, their length, its kind, and where its release time is in the page
 * (0: it has none). */
interface ArenaRecord {
  page: Uint8Array;
  at: number;
  length: number;
  kind: number;
  releasedAt: number;
}

export class RestingConversations {
  /** The records, one after another, by page (none until the first). */
  private arena: Uint8Array[] = [];
  /** Bytes of the last page records took. */
  private fill = 0;
  /** Bytes of the records written (kept and garbage; not the pages' unused ends). */
  private used = 0;
  /** Bytes of records no conversation holds any more. */
  private garbage = 0;
  /** Each agent slot's record: its offset in the arena plus one; 0: the
   * slot holds no conversation at rest. By page of `pageSlots` slots,
   * allocated as the slots reach them: no copy as they grow, at most a
   * page unused. */
  private readonly offsetPages: Uint32Array[] = [];
  /** Open addressing: slot + 1 of a record, 0 for empty. */
  private table = new Int32Array(16);
  private count = 0;
  /** The probe's scratch: the UTF-8 form of an id looked up. */
  private probe = new Uint8Array(256);
  /** What `read` returns (one object, reused). */
  private readonly record: ArenaRecord = { page: new Uint8Array(0), at: 0, length: 0, kind: 0, releasedAt: 0 };

  get size(): number {
    return this.count;
  }

  /** Bytes the arena's pages hold (records, garbage, the pages' unused ends). */
  get arenaBytes(): number {
    let bytes = 0;
    for (const page of this.arena) bytes += page.length;
    return bytes;
  }

  /** Records the conversation `id` at rest in agent `slot`, of definition
   * `kind` (an index the caller keeps), an execution of it last released
   * here at `releasedAt` (`performance.now()`; undefined: none); the slot
   * must not be at rest already, and the id not held. */
  add(slot: number, id: string, kind: number, releasedAt?: number): void {
    if (this.has(slot)) throw new Error(`agent slot ${slot} already holds conversation "${this.idAt(slot)}" at rest`);
    const held = this.slotOf(id);
    if (held !== undefined) throw new Error(`conversation "${id}" is already at rest in agent slot ${held}`);
    if (!Number.isSafeInteger(kind * 2) || kind < 0)
      throw new Error(`the definition index of conversation "${id}" must be a whole number, 0 or more, got ${kind}`);
    this.reserve(slot);
    const length = this.encode(id);
    const released = releasedAt === undefined ? 0 : 1;
    const size = varintLength(length) + varintLength(kind * 2 + released) + released * 8 + length;
    if (!this.fits(size) && this.garbage > 0 && this.garbage * 2 >= this.used) this.compact();
    const offset = this.place(size);
    const page = this.arena[offset >>> pageShift]!;
    let at = writeVarint(page, writeVarint(page, offset & (pageBytes - 1), length), kind * 2 + released);
    if (releasedAt !== undefined) {
      timeScratch[0] = releasedAt;
      page.set(timeBytes, at);
      at += 8;
    }
    page.set(this.probe.subarray(0, length), at);
    this.setOffset(slot, offset + 1);
    this.used += size;
    this.count += 1;
    // A rehash inserts every slot with an offset, this one with them.
    if (tableFull(this.count, this.table.length)) this.rehash(grownTable(this.table.length));
    else this.insert(slot);
  }

  /** The agent slot of the conversation `id` at rest, if it is. */
  slotOf(id: string): number | undefined {
    if (this.count === 0) return undefined;
    const length = this.encode(id);
    const size = this.table.length;
    for (let at = homeIn(hashOf(this.probe, 0, length), size); ; at = at + 1 === size ? 0 : at + 1) {
      const held = this.table[at]!;
      if (held === 0) return undefined;
      if (this.equals(held - 1, length)) return held - 1;
    }
  }

  /** Whether agent `slot` holds a conversation at rest here. */
  has(slot: number): boolean {
    return slot >= 0 && slot < this.slotsHeld() && this.offsetOf(slot) !== 0;
  }

  idAt(slot: number): string | undefined {
    if (!this.has(slot)) return undefined;
    const { page, at, length } = this.read(slot);
    let id = "";
    for (let index = at; index < at + length; index += 1) {
      const byte = page[index]!;
      if (byte >= 0x80) return decoder.decode(page.subarray(at, at + length));
      id += String.fromCharCode(byte);
    }
    return id;
  }

  kindAt(slot: number): number | undefined {
    return this.has(slot) ? this.read(slot).kind : undefined;
  }

  /** When an execution of the conversation at rest in `slot` was last
   * released here, as `add` was given it; undefined when none was (or the
   * slot holds none at rest). */
  releasedAt(slot: number): number | undefined {
    if (!this.has(slot)) return undefined;
    const { page, releasedAt: at } = this.read(slot);
    if (at === 0) return undefined;
    timeBytes.set(page.subarray(at, at + 8));
    return timeScratch[0];
  }

  /** The ids at rest (for the listing of the conversations here). */
  *ids(): Iterable<string> {
    for (let slot = 0; slot < this.slotsHeld(); slot += 1) if (this.offsetOf(slot) !== 0) yield this.idAt(slot) as string;
  }

  /** Forgets the conversation at `slot`; false when it held none. */
  remove(slot: number): boolean {
    if (!this.has(slot)) return false;
    const size = this.table.length;
    const step = (at: number): number => (at + 1 === size ? 0 : at + 1);
    let at = this.homeOf(slot);
    while (this.table[at] !== slot + 1) at = step(at);
    // Backward-shift deletion: each later entry of the run moves into the
    // hole if its home is not between the hole and it.
    let hole = at;
    for (let next = step(hole); this.table[next] !== 0; next = step(next)) {
      const home = this.homeOf(this.table[next]! - 1);
      const stays = hole <= next ? hole < home && home <= next : hole < home || home <= next;
      if (stays) continue;
      this.table[hole] = this.table[next]!;
      hole = next;
    }
    this.table[hole] = 0;
    const record = this.read(slot);
    this.garbage += record.at + record.length - ((this.offsetOf(slot) - 1) & (pageBytes - 1));
    this.setOffset(slot, 0);
    this.count -= 1;
    return true;
  }

  /** The record of `slot` (which holds one): the shared `record` object. */
  private read(slot: number): ArenaRecord {
    const offset = this.offsetOf(slot) - 1;
    const arena = this.arena[offset >>> pageShift]!;
    let at = offset & (pageBytes - 1);
    let length = 0;
    for (let shift = 1; ; shift *= 0x80) {
      const byte = arena[at++]!;
      length += (byte & 0x7f) * shift;
      if (byte < 0x80) break;
    }
    let kindTimesTwo = 0;
    for (let shift = 1; ; shift *= 0x80) {
      const byte = arena[at++]!;
      kindTimesTwo += (byte & 0x7f) * shift;
      if (byte < 0x80) break;
    }
    const record = this.record;
    record.page = arena;
    const released = kindTimesTwo % 2;
    record.releasedAt = released === 1 ? at : 0;
    record.at = at + released * 8;
    record.length = length;
    record.kind = (kindTimesTwo - released) / 2;
    return record;
  }

  /** Writes `id`'s UTF-8 bytes into the probe; returns their length. An
   * ASCII id (the usual `user-123`) is copied by char code: the encoder's
   * call costs more than the copy. */
  private encode(id: string): number {
    // Three bytes at most per UTF-16 unit.
    if (id.length * 3 > this.probe.length) this.probe = new Uint8Array(id.length * 3);
    const probe = this.probe;
    for (let index = 0; index < id.length; index += 1) {
      const code = id.charCodeAt(index);
      if (code >= 0x80) return encoder.encodeInto(id, probe).written;
      probe[index] = code;
    }
    return id.length;
  }

  /** The home of `slot`'s record in the table. */
  private homeOf(slot: number): number {
    const { page, at, length } = this.read(slot);
    return homeIn(hashOf(page, at, length), this.table.length);
  }

  private equals(slot: number, length: number): boolean {
    const record = this.read(slot);
    if (record.length !== length) return false;
    const { page, at } = record;
    for (let byte = 0; byte < length; byte += 1) if (page[at + byte] !== this.probe[byte]) return false;
    return true;
  }

  private insert(slot: number): void {
    const size = this.table.length;
    let at = this.homeOf(slot);
    while (this.table[at] !== 0) at = at + 1 === size ? 0 : at + 1;
    this.table[at] = slot + 1;
  }

  private rehash(length: number): void {
    this.table = new Int32Array(length);
    for (let slot = 0; slot < this.slotsHeld(); slot += 1) if (this.offsetOf(slot) !== 0) this.insert(slot);
  }

  /** The agent slots the offset pages hold. */
  private slotsHeld(): number {
    return this.offsetPages.length * pageSlots;
  }

  /** `slot`'s offset plus one (0: none); the slot must be held. */
  private offsetOf(slot: number): number {
    return this.offsetPages[Math.floor(slot / pageSlots)]![slot % pageSlots]!;
  }

  private setOffset(slot: number, value: number): void {
    this.offsetPages[Math.floor(slot / pageSlots)]![slot % pageSlots] = value;
  }

  /** The offset pages up to `slot`'s (the agent slots are dense from 0:
   * their high-water mark). */
  private reserve(slot: number): void {
    while (this.slotsHeld() <= slot) this.offsetPages.push(new Uint32Array(pageSlots));
  }

  /** Whether `size` more bytes fit the last page as it is. */
  private fits(size: number): boolean {
    const last = this.arena.length - 1;
    return last >= 0 && this.fill + size <= this.arena[last]!.length;
  }

  /** Takes `size` bytes for a record; returns its offset. At the last
   * page's end if they fit it (the first page doubled up to a page if
   * that is what it takes), else at a new page's start: a page, or one of
   * the record's length when it is longer. */
  private place(size: number): number {
    const last = this.arena.length - 1;
    if (last >= 0) {
      const page = this.arena[last]!;
      if (this.fill + size > page.length && page.length < pageBytes && this.fill + size <= pageBytes) {
        let length = page.length;
        while (length < this.fill + size) length *= 2;
        const grown = new Uint8Array(length);
        grown.set(page.subarray(0, this.fill));
        this.arena[last] = grown;
      }
      if (this.fill + size <= this.arena[last]!.length) {
        const offset = last * pageBytes + this.fill;
        this.fill += size;
        return offset;
      }
    }
    if (this.arena.length >= maxPages) throw new Error(`the conversations at rest fill the arena's ${maxPages} pages`);
    let length = this.arena.length === 0 ? firstPageBytes : pageBytes;
    while (length < size && length < pageBytes) length *= 2;
    this.arena.push(new Uint8Array(Math.max(length, size)));
    this.fill = size;
    return (this.arena.length - 1) * pageBytes;
  }

  /** The records kept copied into fresh pages, in slot order (half the
   * records' bytes or more are garbage). */
  private compact(): void {
    const old = this.arena;
    this.arena = [];
    this.fill = 0;
    let used = 0;
    for (let slot = 0; slot < this.slotsHeld(); slot += 1) {
      if (this.offsetOf(slot) === 0) continue;
      const from = this.offsetOf(slot) - 1;
      const page = old[from >>> pageShift]!;
      const start = from & (pageBytes - 1);
      const size = recordSize(page, start);
      const offset = this.place(size);
      this.arena[offset >>> pageShift]!.set(page.subarray(start, start + size), offset & (pageBytes - 1));
      this.setOffset(slot, offset + 1);
      used += size;
    }
    this.used = used;
    this.garbage = 0;
  }
}
