// "Run now" at one instant, through the public API on SQLite
// (docs/decisions/0098): a schedule's slot is settled once, so two runs now
// in the same millisecond fire once and the second is told it fired at this
// instant; a run now at the instant its next slot is due fires that slot,
// which the sweep then does not fire again. The clock is held still
// (`Date.now`) for the runs now, as two clicks in one millisecond.

import { afterEach, describe, expect, it, vi } from "vitest";
import type { Environment } from "../../host/index.js";
import { scheduledStartKey } from "../../host/runtime/schedule-sweep.js";
import { startExecutionIdOf } from "../../host/store/start-filing.js";
import { echoModel, openEnvironment, waitFor } from "../runtime/helpers.js";

afterEach(() => {
  vi.restoreAllMocks();
});

/** Holds `Date.now` at `at` (the runtime's clock for a run now). */
function holdClockAt(at: number): void {
  vi.spyOn(Date, "now").mockReturnValue(at);
}

async function withSupport(): Promise<{ env: Environment; support: ReturnType<Environment["agent"]> }> {
  const env = await openEnvironment();
  return { env, support: env.agent({ name: "support", model: echoModel({ lookup: false }) }) };
}

describe("run now at one instant (SQLite)", () => {
  it("two runs now in the same millisecond fire once; the second is told it fired at this instant", async () => {
    const { env, support } = await withSupport();
    const digest = await support.conversation("user-1").schedule("Digest", { cron: "0 9 * * *" });
    const instant = Date.now();
    holdClockAt(instant);
    const first = await env.runSchedule(digest.scheduleId);
    const executionId = startExecutionIdOf("user-1", scheduledStartKey(digest.scheduleId, instant));
    expect(first).toMatchObject({ firings: 1, nextRunAt: digest.nextRunAt, lastFiring: { slotAt: instant, outcome: "started", executionId } });
    await expect(env.runSchedule(digest.scheduleId)).rejects.toMatchObject({
      code: "INVALID_INPUT",
      message: expect.stringContaining("fired at this instant already"),
      details: { scheduleId: digest.scheduleId, state: "active", reason: "fired_this_instant", slotAt: instant },
    });
    vi.restoreAllMocks();
    expect(await env.schedule(digest.scheduleId)).toMatchObject({ firings: 1, lastFiring: { slotAt: instant } });
    expect(await env.wait(executionId).result).toMatchObject({ output: "echo: Digest" });

    // A run now a millisecond on is another click: it fires.
    holdClockAt(instant + 1);
    const again = await env.runSchedule(digest.scheduleId);
    vi.restoreAllMocks();
    expect(again).toMatchObject({ firings: 2, nextRunAt: digest.nextRunAt, lastFiring: { slotAt: instant + 1, outcome: "started" } });
    await env.wait(again.lastFiring?.executionId as string).result;
    expect(await env.executions({ agentId: "user-1" })).toHaveLength(2);
  });

  it("two runs now asked together at one instant: one firing, the other refused with INVALID_INPUT", async () => {
    const { env, support } = await withSupport();
    const reminder = await support.conversation("user-2").schedule("Reminder", { at: Date.now() + 3_600_000 });
    const instant = Date.now();
    holdClockAt(instant);
    const answers = await Promise.allSettled([env.runSchedule(reminder.scheduleId), env.runSchedule(reminder.scheduleId)]);
    vi.restoreAllMocks();
    const fired = answers.filter((answer) => answer.status === "fulfilled");
    const refused = answers.filter((answer) => answer.status === "rejected");
    expect(fired).toHaveLength(1);
    expect(fired[0]?.value).toMatchObject({ state: "done", firings: 1, lastFiring: { slotAt: instant, outcome: "started" } });
    expect(refused).toHaveLength(1);
    expect(refused[0]?.reason).toMatchObject({ code: "INVALID_INPUT" });
    await env.wait(fired[0]?.value.lastFiring?.executionId as string).result;
    expect(await env.executions({ agentId: "user-2" })).toHaveLength(1);
  });

  it("a run now at the instant its next slot is due fires that slot, and the sweep does not fire it again", async () => {
    const { env, support } = await withSupport();
    const digest = await support.conversation("user-3").schedule("Digest", { cron: "*/5 * * * *" });
    const slot = digest.nextRunAt as number;
    holdClockAt(slot);
    const ran = await env.runSchedule(digest.scheduleId);
    vi.restoreAllMocks();
    expect(ran).toMatchObject({ firings: 1, nextRunAt: slot + 300_000, lastFiring: { slotAt: slot, outcome: "started" } });
    const sweep = env.scheduling.sweep as NonNullable<Environment["scheduling"]["sweep"]>;
    sweep.clock = () => slot + 1_000;
    sweep.wake();
    // The sweep's pass reads the row (nothing due until the next slot) and arms its timer.
    await waitFor(async () => ((await env.schedule(digest.scheduleId))?.firings === 1 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await env.schedule(digest.scheduleId)).toMatchObject({ firings: 1, nextRunAt: slot + 300_000, lastFiring: { slotAt: slot } });
    await env.wait(ran.lastFiring?.executionId as string).result;
    expect(await env.executions({ agentId: "user-3" })).toHaveLength(1);
  });
});
