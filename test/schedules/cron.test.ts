// The cron parser of recurring schedules (host/runtime/cron.ts,
// docs/decisions/0078): the five fields with ranges, steps, lists and
// names; the next time after a given one, in UTC; a bad expression refused
// naming its field. The randomized case prints its seed.

import { describe, expect, it } from "vitest";
import { cronSearchYearsMax, nextAfter, parseCron } from "../../host/runtime/cron.js";
import { generator, seedFrom } from "../support/seeded.js";

const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number | undefined): string | undefined => (ms === undefined ? undefined : new Date(ms).toISOString());

describe("parseCron", () => {
  it("reads numbers, ranges, steps, lists and names", () => {
    const cron = parseCron("0,30 9-17/4 */10 jan-mar,DEC mon-fri");
    expect([...cron.minutes]).toEqual([0, 30]);
    expect([...cron.hours]).toEqual([9, 13, 17]);
    expect([...cron.daysOfMonth]).toEqual([1, 11, 21, 31]);
    expect([...cron.months]).toEqual([1, 2, 3, 12]);
    expect([...cron.daysOfWeek].sort()).toEqual([1, 2, 3, 4, 5]);
    expect([...parseCron("5/20 * * * 7").minutes]).toEqual([5, 25, 45]);
    expect([...parseCron("* * * * 7").daysOfWeek]).toEqual([0]);
  });

  it.each([
    ["61 * * * *", "minute"],
    ["* 24 * * *", "hour"],
    ["* * 0 * *", "dayOfMonth"],
    ["* * * 13 *", "month"],
    ["* * * * 8", "dayOfWeek"],
    ["*/0 * * * *", "minute"],
    ["5-1 * * * *", "minute"],
    ["* * * foo *", "month"],
    ["1,,2 * * * *", "minute"],
    ["* * *", "expression"],
    ["", "expression"],
  ])("refuses %j with INVALID_INPUT naming the field %s", (expression, field) => {
    let thrown: unknown;
    try {
      parseCron(expression);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ code: "INVALID_INPUT", details: { field } });
    expect((thrown as Error).message).toContain(field);
  });
});

describe("nextAfter", () => {
  it("finds the next slot strictly after the time, on a whole minute", () => {
    expect(iso(nextAfter(parseCron("0 9 * * *"), at("2026-12-06T08:59:30Z")))).toBe("2026-12-06T09:00:00.000Z");
    expect(iso(nextAfter(parseCron("0 9 * * *"), at("2026-12-06T09:00:00Z")))).toBe("2026-12-07T09:00:00.000Z");
    expect(iso(nextAfter(parseCron("*/15 * * * *"), at("2026-12-31T23:50:00Z")))).toBe("2027-01-01T00:00:00.000Z");
    expect(iso(nextAfter(parseCron("0 0 29 2 *"), at("2026-03-01T00:00:00Z")))).toBe("2028-02-29T00:00:00.000Z");
    expect(nextAfter(parseCron("0 0 30 2 *"), at("2026-03-01T00:00:00Z"))).toBeUndefined();
  });

  it("with both days restricted, a day matches either (as Vixie cron)", () => {
    // 2026-12-06 is a Sunday: the 13th or any Friday.
    const cron = parseCron("0 12 13 * fri");
    expect(iso(nextAfter(cron, at("2026-12-06T00:00:00Z")))).toBe("2026-12-11T12:00:00.000Z");
    expect(iso(nextAfter(cron, at("2026-12-11T12:00:00Z")))).toBe("2026-12-13T12:00:00.000Z");
  });

  it("agrees with a minute-by-minute scan on random expressions", () => {
    const seed = seedFrom("CRON_SEED");
    console.log(`cron random seed ${seed} (CRON_SEED=${seed} replays it)`);
    const random = generator(seed);
    const pick = (min: number, max: number): number => min + Math.floor(random() * (max - min + 1));
    const field = (min: number, max: number): string => {
      const kind = pick(0, 3);
      if (kind === 0) return "*";
      if (kind === 1) return `*/${pick(1, Math.max(1, Math.floor((max - min) / 2)))}`;
      const low = pick(min, max);
      if (kind === 2) return `${low}-${pick(low, max)}`;
      return `${low},${pick(min, max)}`;
    };
    for (let round = 0; round < 40; round += 1) {
      const expression = [field(0, 59), field(0, 23), field(1, 28), field(1, 12), field(0, 6)].join(" ");
      const cron = parseCron(expression);
      const from = at("2026-01-01T00:00:00Z") + pick(0, 365) * 86_400_000 + pick(0, 86_399) * 1_000;
      const found = nextAfter(cron, from);
      let scan = Math.floor(from / 60_000) * 60_000 + 60_000;
      const limit = from + 2 * 366 * 86_400_000;
      while (scan < limit && !matches(cron, scan)) scan += 60_000;
      expect(found, `seed ${seed}, "${expression}" after ${iso(from)}`).toBe(scan < limit ? scan : found);
      if (found !== undefined) expect(matches(cron, found)).toBe(true);
    }
    expect(cronSearchYearsMax).toBeGreaterThanOrEqual(28);
  });
});

function matches(cron: ReturnType<typeof parseCron>, ms: number): boolean {
  const date = new Date(ms);
  const byMonthDay = cron.daysOfMonth.has(date.getUTCDate());
  const byWeekday = cron.daysOfWeek.has(date.getUTCDay());
  const day = cron.dayOfMonthRestricted && cron.dayOfWeekRestricted ? byMonthDay || byWeekday : byMonthDay && byWeekday;
  return cron.minutes.has(date.getUTCMinutes()) && cron.hours.has(date.getUTCHours()) && cron.months.has(date.getUTCMonth() + 1) && day;
}
