// The conversations at rest by agent slot (host/runtime/resting-conversations.ts,
// docs/decisions/0092): an id and a definition index per slot in a byte
// arena, the slot found by id through an open-addressing table. Checked
// against Maps over random adds and removes — ids of every length (one
// past a one-byte varint), non-ASCII ones, near-identical ones, kinds past
// 127, release times or none (docs/decisions/0100) — with the arena
// compacted on the way; the seed is printed (RESTING_SEED replays). And
// past 65,536 slots, where the table and the arrays grow by a quarter.

import { describe, expect, it } from "vitest";
import { RestingConversations } from "../../host/runtime/resting-conversations.js";

const seed = Number(process.env.RESTING_SEED ?? Date.now() % 2_147_483_647);

/** A small deterministic generator (mulberry32). */
function random(from: number): () => number {
  let state = from >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
}

function idFrom(next: () => number, slot: number, step: number): string {
  const shape = next();
  if (shape < 0.5) return `user-${Math.floor(next() * 1_000_000)}`;
  if (shape < 0.65) return `chat-${slot}-ü-${step}-会话`;
  if (shape < 0.75) return "x".repeat(100 + Math.floor(next() * 200)) + String(step);
  if (shape < 0.8) return "";
  return `c${step}`;
}

describe("RestingConversations", () => {
  it("answers as Maps over random adds and removes, its arena compacted on the way", () => {
    console.log(`RestingConversations seed ${seed} (RESTING_SEED=${seed} replays)`);
    const next = random(seed);
    const resting = new RestingConversations();
    const bySlot = new Map<number, { id: string; kind: number; releasedAt: number | undefined }>();
    const bySlotId = new Map<string, number>();
    const removed: string[] = [];
    for (let step = 0; step < 30_000; step += 1) {
      const slot = Math.floor(next() * 2_000);
      const held = bySlot.get(slot);
      if (held !== undefined && next() < 0.5) {
        expect(resting.remove(slot)).toBe(true);
        bySlot.delete(slot);
        bySlotId.delete(held.id);
        removed.push(held.id);
      } else if (held === undefined) {
        const id = idFrom(next, slot, step);
        if (bySlotId.has(id)) continue;
        const kind = next() < 0.9 ? Math.floor(next() * 4) : Math.floor(next() * 100_000);
        const releasedAt = next() < 0.6 ? undefined : next() * 1e9;
        resting.add(slot, id, kind, releasedAt);
        bySlot.set(slot, { id, kind, releasedAt });
        bySlotId.set(id, slot);
      }
      if (step % 997 === 0) {
        // Compared in bulk: one expect per check, not per id.
        const expected = [...bySlot].map(([at, { id, kind, releasedAt }]) => [at, id, kind, at, releasedAt]);
        expect([...bySlot].map(([at, { id }]) => [at, resting.idAt(at), resting.kindAt(at), resting.slotOf(id), resting.releasedAt(at)])).toEqual(expected);
        const gone = removed.slice(-50).filter((id) => !bySlotId.has(id));
        expect(gone.map((id) => resting.slotOf(id))).toEqual(gone.map(() => undefined));
        expect(resting.size).toBe(bySlot.size);
      }
    }
    expect([...resting.ids()].sort()).toEqual([...bySlotId.keys()].sort());
    expect(resting.remove(2_500)).toBe(false);
    expect(resting.idAt(2_500)).toBeUndefined();
  });

  it("holds 100,000 conversations past the quarter growth, with and without release times, and forgets a third", () => {
    const resting = new RestingConversations();
    const count = 100_000;
    const releasedAt = (slot: number): number | undefined => (slot % 5 === 0 ? slot * 1.5 + 0.25 : undefined);
    for (let slot = 0; slot < count; slot += 1) resting.add(slot, `user-${slot}`, slot % 3, releasedAt(slot));
    expect(resting.size).toBe(count);
    const notRemoved: number[] = [];
    for (let slot = 0; slot < count; slot += 3) if (!resting.remove(slot)) notRemoved.push(slot);
    expect(notRemoved).toEqual([]);
    const wrong: string[] = [];
    for (let slot = 0; slot < count; slot += 1) {
      const kept = slot % 3 !== 0;
      const seen = [resting.slotOf(`user-${slot}`), resting.idAt(slot), resting.kindAt(slot), resting.releasedAt(slot)];
      const expected = kept ? [slot, `user-${slot}`, slot % 3, releasedAt(slot)] : [undefined, undefined, undefined, undefined];
      if (JSON.stringify(seen) !== JSON.stringify(expected)) wrong.push(`${slot}: ${JSON.stringify(seen)}`);
    }
    expect(wrong.slice(0, 5)).toEqual([]);
    expect(resting.size).toBe(count - Math.ceil(count / 3));
    expect(resting.slotOf("user-100000")).toBeUndefined();
  });

  it("refuses a slot held, an id held and a definition index that is not a whole number, naming them", () => {
    const resting = new RestingConversations();
    resting.add(3, "user-1", 0);
    expect(() => resting.add(3, "user-2", 0)).toThrow('agent slot 3 already holds conversation "user-1" at rest');
    expect(() => resting.add(4, "user-1", 0)).toThrow('conversation "user-1" is already at rest in agent slot 3');
    expect(() => resting.add(5, "user-5", -1)).toThrow('the definition index of conversation "user-5" must be a whole number, 0 or more, got -1');
    expect(resting.size).toBe(1);
  });
});

describe("RestingConversations' arena in pages (docs/decisions/0111)", () => {
  /** Every slot's id, kind and release time read back, and found by id. */
  function readBack(resting: RestingConversations, held: Map<number, { id: string; kind: number; releasedAt?: number }>): unknown[] {
    return [...held].map(([slot, { id }]) => [slot, resting.idAt(slot), resting.kindAt(slot), resting.releasedAt(slot), resting.slotOf(id)]);
  }
  const expectedOf = (held: Map<number, { id: string; kind: number; releasedAt?: number }>): unknown[] =>
    [...held].map(([slot, { id, kind, releasedAt }]) => [slot, id, kind, releasedAt, slot]);

  it("starts the next page with a record that does not fit a page's end, and gives a record longer than a page its own", () => {
    const resting = new RestingConversations();
    const held = new Map<number, { id: string; kind: number; releasedAt?: number }>();
    // 2 bytes of varints + 1,000 of id: sixteen fill 16,032 of the first
    // page's 16,384 bytes; the seventeenth does not fit its end.
    for (let slot = 0; slot < 17; slot += 1) {
      const id = `${String(slot).padStart(2, "0")}`.padEnd(1000, "a");
      held.set(slot, { id, kind: 1, releasedAt: slot === 16 ? 0.5 : undefined });
      resting.add(slot, id, 1, slot === 16 ? 0.5 : undefined);
    }
    expect(resting.arenaBytes).toBe(2 * 16_384);
    // 40,000 bytes of id (3 + 2 bytes of varints, 8 of time): a page of
    // its own, of its length; the next
    // record starts a page after it.
    const long = "ü".repeat(20_000);
    resting.add(17, long, 300, 7.25);
    held.set(17, { id: long, kind: 300, releasedAt: 7.25 });
    expect(resting.arenaBytes).toBe(2 * 16_384 + 3 + 2 + 8 + 40_000);
    resting.add(18, "user-18", 0);
    held.set(18, { id: "user-18", kind: 0 });
    expect(resting.arenaBytes).toBe(3 * 16_384 + 3 + 2 + 8 + 40_000);
    expect(readBack(resting, held)).toEqual(expectedOf(held));
  });

  it("grows its first page by doubling from 1 KiB, then by a page at a time, no more than a page past its records", () => {
    const resting = new RestingConversations();
    resting.add(0, "user-0", 0);
    expect(resting.arenaBytes).toBe(1024);
    const lengths = new Set<number>();
    for (let slot = 1; slot < 300_000; slot += 1) {
      resting.add(slot, `user-${String(slot).padStart(6, "0")}`, 0);
      if (slot % 1000 === 0) lengths.add(resting.arenaBytes);
    }
    // 13 bytes a record, 1,260 to a page (4 bytes of its end unused).
    const pages = Math.ceil(300_000 / 1260);
    expect(resting.arenaBytes).toBe(pages * 16_384);
    expect([...lengths].every((bytes) => bytes % 16_384 === 0)).toBe(true);
    expect(resting.slotOf("user-299999")).toBe(299_999);
    expect(resting.idAt(123_456)).toBe("user-123456");
  });

  it("copies the records kept into fresh pages when half the records' bytes are garbage, and still finds them all", () => {
    const resting = new RestingConversations();
    const held = new Map<number, { id: string; kind: number; releasedAt?: number }>();
    for (let slot = 0; slot < 50_000; slot += 1) {
      const entry = { id: `user-${slot}`, kind: slot % 7, releasedAt: slot % 4 === 0 ? slot + 0.5 : undefined };
      resting.add(slot, entry.id, entry.kind, entry.releasedAt);
      held.set(slot, entry);
    }
    const before = resting.arenaBytes;
    for (let slot = 0; slot < 50_000; slot += 1) {
      if (slot % 5 === 0) continue;
      resting.remove(slot);
      held.delete(slot);
    }
    expect(resting.arenaBytes).toBe(before);
    // The next record that needs a page compacts: the 10,000 kept in
    // about a fifth of the pages.
    let slot = 50_000;
    const pagesBefore = before / 16_384;
    while (resting.arenaBytes >= before) {
      resting.add(slot, `next-${slot}`, 2);
      held.set(slot, { id: `next-${slot}`, kind: 2 });
      slot += 1;
    }
    expect(resting.arenaBytes / 16_384).toBeLessThan(pagesBefore / 4);
    expect(readBack(resting, held)).toEqual(expectedOf(held));
    expect(resting.slotOf("user-1")).toBeUndefined();
  });

  it("keeps one table entry per record through the table's growth: the slot added as it grew removed, its id is gone and the others found", () => {
    const resting = new RestingConversations();
    for (let slot = 0; slot < 5_000; slot += 1) resting.add(slot, `user-${slot}`, 0);
    // Remove every one, then add others in the same slots and take half
    // away again: an entry left behind would point at a slot emptied or
    // refilled, and the backward shift would misplace the entries after it.
    for (let slot = 0; slot < 5_000; slot += 1) resting.remove(slot);
    for (let slot = 0; slot < 5_000; slot += 1) resting.add(slot, `again-${slot}`, 0);
    for (let slot = 0; slot < 5_000; slot += 2) resting.remove(slot);
    const found = [];
    for (let slot = 0; slot < 5_000; slot += 1) found.push(resting.slotOf(`again-${slot}`) ?? -1);
    expect(found).toEqual(found.map((_, slot) => (slot % 2 === 0 ? -1 : slot)));
    expect((resting as unknown as { table: Int32Array }).table.filter((entry) => entry !== 0).length).toBe(2_500);
  });
});
