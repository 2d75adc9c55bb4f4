// The compact id index of dormant executions (host/runtime/slot-ids.ts,
// docs/decisions/0084): ids by slot and slots by id without a string or a
// Map entry per UUID-form id. Checked against a pair of Maps — the index it
// replaced — over random adds and removes, with ids of both forms and
// colliding slots of the table; the seed is printed (SLOT_IDS_SEED replays).
// And 100,000 ids past the point where the arrays and the table grow by a
// quarter, not double (docs/decisions/0100).

import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { SlotIds } from "../../host/runtime/slot-ids.js";

const seed = Number(process.env.SLOT_IDS_SEED ?? Date.now() % 2_147_483_647);

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

function uuidFrom(next: () => number): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(next() * 16).toString(16)).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

describe("SlotIds", () => {
  it("answers as a pair of Maps over random adds and removes of UUID and other ids", () => {
    console.log(`SlotIds seed ${seed} (SLOT_IDS_SEED=${seed} replays)`);
    const next = random(seed);
    const ids = new SlotIds();
    const bySlot = new Map<number, string>();
    const bySlotId = new Map<string, number>();
    const removed: string[] = [];
    for (let step = 0; step < 40_000; step += 1) {
      const slot = Math.floor(next() * 3_000);
      const held = bySlot.get(slot);
      if (held !== undefined && next() < 0.5) {
        expect(ids.remove(slot)).toBe(true);
        bySlot.delete(slot);
        bySlotId.delete(held);
        removed.push(held);
      } else if (held === undefined) {
        const kind = next();
        // Mostly random UUIDs; some near-identical ones (keys need not be
        // random), uppercase ones and free-form keys kept as they are.
        const id =
          kind < 0.7
            ? uuidFrom(next)
            : kind < 0.8
              ? `00000000-0000-0000-0000-${slot.toString(16).padStart(12, "0")}`
              : kind < 0.9
                ? uuidFrom(next).toUpperCase()
                : `order-${slot}-${step}`;
        if (bySlotId.has(id)) continue;
        ids.add(slot, id);
        bySlot.set(slot, id);
        bySlotId.set(id, slot);
      }
      if (step % 97 === 0) {
        const probe = [...bySlot.keys()][Math.floor(next() * bySlot.size)];
        if (probe !== undefined) {
          expect(ids.idAt(probe)).toBe(bySlot.get(probe));
          expect(ids.slotOf(bySlot.get(probe)!)).toBe(probe);
        }
        const gone = removed[Math.floor(next() * removed.length)];
        if (gone !== undefined) expect(ids.slotOf(gone)).toBe(bySlotId.get(gone));
        expect(ids.size).toBe(bySlot.size);
      }
    }
    for (const [slot, id] of bySlot) {
      expect(ids.idAt(slot)).toBe(id);
      expect(ids.slotOf(id)).toBe(slot);
      expect(ids.has(id)).toBe(true);
    }
    expect(ids.slots().sort((a, b) => a - b)).toEqual([...bySlot.keys()].sort((a, b) => a - b));
    expect(ids.slotOf(randomUUID())).toBeUndefined();
    expect(ids.idAt(5_000_000)).toBeUndefined();
    expect(ids.remove(5_000_000)).toBe(false);
  });

  it("holds 100,000 ids past the quarter growth, added in a shuffled slot order, and forgets half", () => {
    const next = random(seed + 1);
    const count = 100_000;
    const order = Array.from({ length: count }, (_, slot) => slot);
    for (let at = count - 1; at > 0; at -= 1) {
      const other = Math.floor(next() * (at + 1));
      [order[at], order[other]] = [order[other]!, order[at]!];
    }
    const idOf = order.map(() => uuidFrom(next));
    const ids = new SlotIds();
    for (const slot of order) ids.add(slot, idOf[slot]!);
    expect(ids.size).toBe(count);
    const notRemoved: number[] = [];
    for (let slot = 1; slot < count; slot += 2) if (!ids.remove(slot)) notRemoved.push(slot);
    expect(notRemoved).toEqual([]);
    const wrong: string[] = [];
    for (let slot = 0; slot < count; slot += 1) {
      const kept = slot % 2 === 0;
      const seen = [ids.slotOf(idOf[slot]!), ids.idAt(slot)];
      const expected = kept ? [slot, idOf[slot]] : [undefined, undefined];
      if (JSON.stringify(seen) !== JSON.stringify(expected)) wrong.push(`${slot}: ${JSON.stringify(seen)}`);
    }
    expect(wrong.slice(0, 5)).toEqual([]);
    expect(ids.size).toBe(count / 2);
    expect(ids.slots()).toEqual(Array.from({ length: count / 2 }, (_, half) => half * 2));
    expect(ids.idAt(count)).toBeUndefined();
  });

  it("refuses a slot taken or an id held, naming them", () => {
    const ids = new SlotIds();
    const id = randomUUID();
    ids.add(7, id);
    expect(() => ids.add(7, randomUUID())).toThrow(`slot 7 already holds id ${id}`);
    expect(() => ids.add(8, id)).toThrow(`id ${id} is already at slot 7`);
    ids.add(8, "key-1");
    expect(() => ids.add(9, "key-1")).toThrow("id key-1 is already at slot 8");
  });
});
