// A firing claimed, then claimed again by another process once its retry
// time passed (its first claimer slow), and both claimers settling it: the
// check shared by the SQLite and PostgreSQL stores' tests (docs/decisions/0135).

import { expect } from "vitest";
import type { Environment } from "../../host/index.js";
import { firingRetryMs, scheduledStartKey } from "../../host/runtime/schedule-sweep.js";
import type { ScheduleStore } from "../../host/store/schedule-records.js";
import { startExecutionIdOf } from "../../host/store/start-filing.js";

/** Claims the one-shot schedule's firing twice at the store and settles it
 * under each claim: the first claimer's settlement (refused, as a fenced
 * enqueue answers) applies nothing; the second claimer's does. */
export async function settleUnderEachClaim(env: Environment, scheduleId: string): Promise<void> {
  const store = env.store as unknown as ScheduleStore;
  const row = await store.getSchedule(scheduleId);
  const slot = row?.dueAt as number;
  const at = slot + 10;
  const [first] = await store.claimSchedules([
    { scheduleId, revision: row?.revision as number, firingSlotAt: slot, nextSlotAt: undefined, retryAt: at + firingRetryMs },
  ]);
  // Its retry time passed: another process claims the same firing again.
  const retried = at + firingRetryMs + 1;
  const [again] = await store.claimSchedules([
    { scheduleId, revision: first?.revision as number, firingSlotAt: slot, nextSlotAt: undefined, retryAt: retried + firingRetryMs },
  ]);
  expect(again).toMatchObject({ firingSlotAt: slot, revision: (first?.revision as number) + 1 });
  const late = {
    scheduleId,
    firingSlotAt: slot,
    outcome: "refused" as const,
    executionId: undefined,
    error: "EXECUTION_REHYDRATION_REQUIRED",
    at: retried + 5,
  };
  expect(await store.settleScheduleFiring({ ...late, revision: first?.revision as number })).toBe(false);
  expect(await env.schedule(scheduleId)).toMatchObject({ state: "active", firings: 0 });

  const keyed = startExecutionIdOf(row?.agentId as string, scheduledStartKey(scheduleId, slot));
  const settled = { scheduleId, firingSlotAt: slot, outcome: "queued" as const, executionId: keyed, error: undefined, at: retried + 6 };
  expect(await store.settleScheduleFiring({ ...settled, revision: again?.revision as number })).toBe(true);
  expect(await env.schedule(scheduleId)).toMatchObject({ state: "done", firings: 1, lastFiring: { slotAt: slot, outcome: "queued", executionId: keyed } });
}
