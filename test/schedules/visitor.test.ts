// Schedules read by a visitor of a SQLite store beside its live owner
// (docs/decisions/0088): `env.schedules()` and `env.schedule(id)` answer
// from the visitor's read-only connection, as the owner's do; cancelling
// or running one is the owner's (a typed refusal naming the visitor).

import { describe, expect, it } from "vitest";
import { InvalidInputError, Phronomy } from "../../host/index.js";
import { echoModel, openEnvironment, recordingLogger } from "../runtime/helpers.js";

describe("schedules read by a SQLite visitor", () => {
  it("lists and reads the owner's schedules; cancel and run now are refused with a typed error", async () => {
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
      const cancel = visitor.cancelSchedule(daily.scheduleId);
      await expect(cancel).rejects.toBeInstanceOf(InvalidInputError);
      await expect(cancel).rejects.toMatchObject({ details: { reason: "visitor" } });
      await expect(visitor.runSchedule(daily.scheduleId)).rejects.toMatchObject({ details: { reason: "visitor" } });
      expect(await owner.schedule(daily.scheduleId)).toMatchObject({ state: "active", firings: 0 });
    } finally {
      await visitor.close();
    }
  });
});
