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
