// Which slot a due schedule fires and which comes after it
// (docs/decisions/0078): a pure function of the row and the time, shared by
// the sweep and "run now".
//
// Rules kept here:
// * Missed slots are coalesced: a schedule due while every process was down
//   fires once for its oldest missed slot (the key of that slot), and its
//   next slot is the first one after now — never once per missed slot.
// * A firing already claimed (pending) is claimed again for the same slot
//   and next slot: the same keyed start, run once.
// * A one-shot schedule has no next slot: once its firing settles it is done.

import { InvalidInputError } from "../errors.js";
import type { ScheduleClaim, ScheduleRow } from "../store/schedule-records.js";
import { nextAfter, parseCron } from "./cron.js";

/** The claim of a due row read at `now`; its firing may be claimed again at `retryAt`. */
export function claimOf(row: ScheduleRow, now: number, retryAt: number): ScheduleClaim {
  const base = { scheduleId: row.scheduleId, revision: row.revision, retryAt };
  if (row.firingSlotAt !== undefined) return { ...base, firingSlotAt: row.firingSlotAt, nextSlotAt: row.nextSlotAt };
  const slot = row.dueAt as number;
  return { ...base, firingSlotAt: slot, nextSlotAt: slotAfter(row, Math.max(now, slot)) };
}

/** "Run now": fires at `now`, keeping the schedule's next slot (a one-shot
 * schedule run now is done once it fired). Undefined while a firing is pending. */
export function claimNow(row: ScheduleRow, now: number, retryAt: number): ScheduleClaim | undefined {
  if (row.firingSlotAt !== undefined) return undefined;
  return { scheduleId: row.scheduleId, revision: row.revision, retryAt, firingSlotAt: now, nextSlotAt: row.cron === undefined ? undefined : row.dueAt };
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
