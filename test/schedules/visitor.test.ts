// Schedules of a SQLite store from a visitor beside its live owner
// (docs/decisions/0088, 0097): `env.schedules()` and `env.schedule(id)`
// answer from the visitor's read-only connection, as the owner's do; a
// cancel is one compare-and-set on the schedule's row; a run now is claimed
// due at once for the owner, whose sweep starts it (keyed by the slot
// claimed), and the visitor answers with the schedule once it is settled.

import { describe, expect, it } from "vitest";
import { InvalidInputError, Phronomy } from "../../host/index.js";
import { echoModel, openEnvironment, recordingLogger } from "../runtime/helpers.js";

describe("schedules from a SQLite visitor", () => {
  it("lists and reads the owner's schedules, cancels one, and runs one now in the owner, once", async () => {
    const owner = await openEnvironment();
    const support = owner.agent({ name: "support", model: echoModel({ lookup: false }) });
    const daily = await support.conversation("user-1").schedule("Daily digest", { cron: "0 9 * * *" });
    const later = await support.conversation("user-2").schedule("Check back", { at: new Date(Date.now() + 3_600_000) });
    await owner.cancelSchedule(later.scheduleId);
    const visitor = await Phronomy.open({ store: owner.store.path, visitor: true, logger: recordingLogger() });
    try {
      expect(visitor.visitor).toBe(true);
      const listed = await visitor.schedules();
      expect(listed.map((schedule) => schedule.scheduleId).sort()).toEqual([daily.scheduleId, later.scheduleId].sort());
      expect(await visitor.schedules({ state: "active" })).toEqual([await owner.schedule(daily.scheduleId)]);
      expect(await visitor.schedule(daily.scheduleId)).toMatchObject({ cron: "0 9 * * *", state: "active", definition: "support", agentId: "user-1" });
      expect(await visitor.schedule("no-such-schedule")).toBeUndefined();
      await expect(visitor.schedules({ state: "sleeping" as never })).rejects.toBeInstanceOf(InvalidInputError);
      await expect(visitor.runSchedule(daily.scheduleId, { waitMs: -1 })).rejects.toMatchObject({ details: { field: "waitMs" } });
      await expect(visitor.runSchedule(later.scheduleId)).rejects.toMatchObject({ details: { state: "cancelled" } });

      const fired = await visitor.runSchedule(daily.scheduleId);
      expect(fired).toMatchObject({ state: "active", firings: 1, firingSlotAt: undefined, lastFiring: { outcome: "started" } });
      const executionId = fired.lastFiring?.executionId as string;
      expect((await owner.executions({ agentId: "user-1" })).map((row) => row.executionId)).toEqual([executionId]);
      await expect(owner.wait(executionId).result).resolves.toMatchObject({ outcome: "completed", output: "echo: Daily digest" });
      expect(fired.nextRunAt).toBe(daily.nextRunAt);

      const cancelled = await visitor.cancelSchedule(daily.scheduleId);
      expect(cancelled).toMatchObject({ state: "cancelled", nextRunAt: undefined });
      expect(await owner.schedule(daily.scheduleId)).toMatchObject({ state: "cancelled", firings: 1 });
      await expect(visitor.cancelSchedule("no-such-schedule")).rejects.toMatchObject({ details: { reason: "not_found" } });
    } finally {
      await visitor.close();
      await owner.close();
    }
  });

  it("a run now the owner cannot start (it does not define the agent) stays claimed; the owner that defines it starts it once", async () => {
    const first = await openEnvironment();
    const schedule = await first
      .agent({ name: "support", model: echoModel({ lookup: false }) })
      .conversation("user-1")
      .schedule("Daily digest", { cron: "0 9 * * *" });
    const path = first.store.path as string;
    await first.close();
    const owner = await Phronomy.open({ store: path, logger: recordingLogger() });
    const visitor = await Phronomy.open({ store: path, visitor: true, logger: recordingLogger() });
    try {
      const claimed = await visitor.runSchedule(schedule.scheduleId, { waitMs: 300 });
      expect(claimed).toMatchObject({ state: "active", firings: 0, lastFiring: undefined });
      expect(claimed.firingSlotAt).toEqual(expect.any(Number));
      await expect(visitor.runSchedule(schedule.scheduleId, { waitMs: 0 })).rejects.toMatchObject({ details: { state: "firing" } });
      owner.agent({ name: "support", model: echoModel({ lookup: false }) });
      for (let round = 0; (await owner.schedule(schedule.scheduleId))?.firings !== 1; round++) {
        expect(round).toBeLessThan(200);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      const settled = await owner.schedule(schedule.scheduleId);
      expect(settled).toMatchObject({ firings: 1, firingSlotAt: undefined, lastFiring: { slotAt: claimed.firingSlotAt, outcome: "started" } });
      expect(await owner.executions({ agentId: "user-1" })).toHaveLength(1);
    } finally {
      await visitor.close();
      await owner.close();
    }
  });
});
