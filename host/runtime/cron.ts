// A small cron parser for recurring schedules (docs/decisions/0078): the
// five classic fields — minute, hour, day of month, month, day of week —
// each `*`, a number, a range `a-b`, a step `*/n`, `a-b/n` or `a/n`, or a
// comma list of those; months and weekdays also by their English
// three-letter names. Times are in UTC.
//
// Rules kept here:
// * A bad expression is refused with InvalidInputError naming the field
//   (`details.field`) and what was wrong; nothing is guessed.
// * As in Vixie cron, when both the day of month and the day of week are
//   restricted (neither is `*`), a day matches when either matches.
// * `nextAfter` is bounded: it looks at most `cronSearchYearsMax` years
//   ahead, day by day, then hour and minute within a matching day; an
//   expression that never matches (`0 0 30 2 *`) answers undefined, and a
//   schedule refuses it when made.

import { InvalidInputError } from "../errors.js";

/** The fields in their order, with their ranges. */
const cronFields = [
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  { name: "dayOfMonth", min: 1, max: 31 },
  { name: "month", min: 1, max: 12 },
  { name: "dayOfWeek", min: 0, max: 7 },
] as const;

const monthNames = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const weekdayNames = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/** Longest expression taken: five fields of lists fit easily. */
export const cronLengthMax = 256;
/** How far ahead a next time is looked for: a leap day on a given weekday
 * (`0 0 29 2 1`) recurs within 28 years. */
export const cronSearchYearsMax = 28;

const minuteMs = 60_000;
const dayMs = 86_400_000;

/** A parsed expression: the allowed values of each field. */
export interface CronExpression {
  readonly source: string;
  readonly minutes: ReadonlySet<number>;
  readonly hours: ReadonlySet<number>;
  readonly daysOfMonth: ReadonlySet<number>;
  readonly months: ReadonlySet<number>;
  /** 0 = Sunday (7 is read as 0). */
  readonly daysOfWeek: ReadonlySet<number>;
  readonly dayOfMonthRestricted: boolean;
  readonly dayOfWeekRestricted: boolean;
}

/** Parses `expression`, or throws InvalidInputError naming the bad field. */
export function parseCron(expression: unknown, what = "cron"): CronExpression {
  if (typeof expression !== "string" || expression.trim().length === 0 || expression.length > cronLengthMax) {
    throw new InvalidInputError(
      `${what}: a cron expression must be a non-empty string of at most ${cronLengthMax} characters, got ${JSON.stringify(expression)?.slice(0, 80)}`,
      {
        details: { field: "expression" },
      },
    );
  }
  const parts = expression.trim().split(/\s+/);
  if (parts.length !== cronFields.length) {
    throw new InvalidInputError(
      `${what}: "${expression}" has ${parts.length} fields; a cron expression has 5: minute hour day-of-month month day-of-week (e.g. "0 9 * * *")`,
      { details: { field: "expression", fields: parts.length } },
    );
  }
  const sets = parts.map((part, index) => parseField(part, index, expression, what));
  const daysOfWeek = new Set([...(sets[4] as Set<number>)].map((day) => day % 7));
  return {
    source: parts.join(" "),
    minutes: sets[0] as Set<number>,
    hours: sets[1] as Set<number>,
    daysOfMonth: sets[2] as Set<number>,
    months: sets[3] as Set<number>,
    daysOfWeek,
    dayOfMonthRestricted: parts[2] !== "*",
    dayOfWeekRestricted: parts[4] !== "*",
  };
}

function parseField(text: string, index: number, expression: string, what: string): Set<number> {
  const field = cronFields[index] as (typeof cronFields)[number];
  const refuse = (why: string): never => {
    throw new InvalidInputError(
      `${what}: the ${field.name} field of "${expression}" ${why} (allowed: ${field.min}-${field.max}, *, a-b, */n, a-b/n, lists a,b)`,
      {
        details: { field: field.name, value: text },
      },
    );
  };
  const values = new Set<number>();
  for (const item of text.split(",")) {
    const [range, step, extra] = item.split("/");
    if (extra !== undefined || range === undefined || range.length === 0) refuse(`has a malformed item "${item}"`);
    const stepValue = step === undefined ? 1 : numberOf(step, undefined, refuse);
    if (stepValue < 1) refuse(`has a step of ${stepValue}; a step is at least 1`);
    const [low, high] = boundsOf(range as string, index, field, step !== undefined, refuse);
    if (low < field.min || high > field.max) refuse(`has ${low === high ? low : `${low}-${high}`}, outside ${field.min}-${field.max}`);
    if (low > high) refuse(`has the range ${low}-${high}, which runs backwards`);
    for (let value = low; value <= high; value += stepValue) values.add(value);
  }
  return values;
}

function boundsOf(
  range: string,
  index: number,
  field: { readonly min: number; readonly max: number },
  stepped: boolean,
  refuse: (why: string) => never,
): [number, number] {
  if (range === "*") return [field.min, field.max];
  const names = index === 3 ? monthNames : index === 4 ? weekdayNames : undefined;
  const offset = index === 3 ? 1 : 0;
  const ends = range.split("-");
  if (ends.length > 2) refuse(`has a malformed range "${range}"`);
  const low = numberOf(ends[0] as string, names, refuse, offset);
  // `a/n` runs from a to the field's end, as in Vixie cron.
  const high = ends.length === 2 ? numberOf(ends[1] as string, names, refuse, offset) : stepped ? field.max : low;
  return [low, high];
}

function numberOf(text: string, names: readonly string[] | undefined, refuse: (why: string) => never, offset = 0): number {
  if (/^\d{1,2}$/.test(text)) return Number(text);
  const named = names?.indexOf(text.toLowerCase()) ?? -1;
  if (named >= 0) return named + offset;
  return refuse(`has "${text}", which is not a number${names !== undefined ? " or a name" : ""}`);
}

/** The first time strictly after `afterMs` (epoch ms, UTC) that matches,
 * on a whole minute; undefined when none within `cronSearchYearsMax`. */
export function nextAfter(cron: CronExpression, afterMs: number): number | undefined {
  const start = Math.floor(afterMs / minuteMs) * minuteMs + minuteMs;
  let day = Math.floor(start / dayMs) * dayMs;
  const limit = day + cronSearchYearsMax * 366 * dayMs;
  for (; day < limit; day += dayMs) {
    if (!dayMatches(cron, new Date(day))) continue;
    const found = timeInDay(cron, day, Math.max(start, day));
    if (found !== undefined) return found;
  }
  return undefined;
}

function dayMatches(cron: CronExpression, date: Date): boolean {
  if (!cron.months.has(date.getUTCMonth() + 1)) return false;
  const byMonthDay = cron.daysOfMonth.has(date.getUTCDate());
  const byWeekday = cron.daysOfWeek.has(date.getUTCDay());
  if (cron.dayOfMonthRestricted && cron.dayOfWeekRestricted) return byMonthDay || byWeekday;
  return byMonthDay && byWeekday;
}

/** The first matching minute of the day starting at `dayStart`, at or after `fromMs`. */
function timeInDay(cron: CronExpression, dayStart: number, fromMs: number): number | undefined {
  for (let hour = 0; hour < 24; hour += 1) {
    if (!cron.hours.has(hour)) continue;
    for (let minute = 0; minute < 60; minute += 1) {
      if (!cron.minutes.has(minute)) continue;
      const at = dayStart + hour * 3_600_000 + minute * minuteMs;
      if (at >= fromMs) return at;
    }
  }
  return undefined;
}
