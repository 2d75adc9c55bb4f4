// The times of a schedule's claim (docs/decisions/0078, 0087): the core
// decides which slot a row fires and which comes after it
// (`scheduleClaimVerdict`, from the row's state as `ScheduleFact` bits);
// here the host reads those facts off the row and computes the times the
// verdict names (the cron arithmetic), for the sweep and "run now".
//
// Rules kept here: none of the policy. The verdicts say it — missed slots
// coalesced into one firing of the oldest, a pending firing claimed again
// for its slot, a one-shot schedule done once it fired — and this file
// only turns a verdict into the row's times.

import { ScheduleClaimVerdict, ScheduleFact } from "../../assembly/abi.js";
import { InvalidInputError } from "../errors.js";
import type { ScheduleClaim, ScheduleRow } from "../store/schedule-records.js";
import { nextAfter, parseCron } from "./cron.js";

/** The row's state as the core reads it, at `now`; `runNow` for
 * `env.runSchedule`, `ownerGone` on a single owner's first pass. */
export function scheduleFactsOf(row: ScheduleRow, now: number, asked: { readonly runNow: boolean; readonly ownerGone: boolean }): number {
  let facts = 0;
  if (row.firingSlotAt !== undefined) facts |= ScheduleFact.FiringPending;
  if (row.cron !== undefined) facts |= ScheduleFact.Recurring;
  if (row.dueAt !== undefined && row.dueAt <= now) facts |= ScheduleFact.Due;
  if (asked.runNow) facts |= ScheduleFact.RunNow;
  if (asked.ownerGone) facts |= ScheduleFact.OwnerGone;
  if (row.lastSlotAt !== undefined && row.lastSlotAt >= now) facts |= ScheduleFact.FiredThisInstant;
  return facts;
}

/** The claim the core's verdict names for a row read at `now`, its firing
 * claimable again at `retryAt`; undefined when the verdict claims nothing. */
export function claimOf(row: ScheduleRow, verdict: ScheduleClaimVerdict, now: number, retryAt: number): ScheduleClaim | undefined {
  const base = { scheduleId: row.scheduleId, revision: row.revision, retryAt };
  switch (verdict) {
    case ScheduleClaimVerdict.ClaimAgain:
      return { ...base, firingSlotAt: row.firingSlotAt as number, nextSlotAt: row.nextSlotAt };
    case ScheduleClaimVerdict.FireDueThenAfterNow:
      return { ...base, firingSlotAt: row.dueAt as number, nextSlotAt: slotAfter(row, Math.max(now, row.dueAt as number)) };
    case ScheduleClaimVerdict.FireDueOnce:
      return { ...base, firingSlotAt: row.dueAt as number, nextSlotAt: undefined };
    case ScheduleClaimVerdict.FireNowKeepNext:
      return { ...base, firingSlotAt: now, nextSlotAt: row.dueAt };
    case ScheduleClaimVerdict.FireNowOnce:
      return { ...base, firingSlotAt: now, nextSlotAt: undefined };
    default:
      return undefined;
  }
}

/** The first slot of a recurring schedule strictly after `afterMs`. */
export function slotAfter(row: Pick<ScheduleRow, "cron" | "scheduleId">, afterMs: number): number | undefined {
  if (row.cron === undefined) return undefined;
  return nextAfter(parseCron(row.cron), afterMs);
}

/** The first slot of a new schedule, or InvalidInputError when its cron never matches. */
export function firstSlotOf(cron: string, now: number, what: string): number {
  const first = nextAfter(parseCron(cron, what), now);
  if (first === undefined) {
    throw new InvalidInputError(`${what}: the cron expression "${cron}" matches no time in the next years (a day that does not exist, such as February 30)`, {
      details: { field: "dayOfMonth", value: cron },
    });
  }
  return first;
}
