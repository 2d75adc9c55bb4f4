// Scheduled starts on the SQLite store, through the public API
// (docs/decisions/0078): a one-shot schedule fires once at its time; a
// recurring one at each slot (the sweep's clock moved, as time is injected
// in the core's tests); missed slots fire once; a restart after the due
// time fires once; cancel; run now; the busy policy's outcome recorded on
// the schedule; bad input refused with a typed error naming the field.

import { describe, expect, it } from "vitest";
import { Phronomy, type Environment, type Schedule } from "../../host/index.js";
import { startExecutionIdOf } from "../../host/store/start-filing.js";
import { scheduledStartKey } from "../../host/runtime/schedule-sweep.js";
import {
  agentRunModel,
  deferred,
  echoModel,
  lookupTool,
  openEnvironment,
  recordingLogger,
  temporaryStorePath,
  waitFor,
  type RecordedCall,
} from "../runtime/helpers.js";

/** Moves the environment's sweep clock to `at` and looks for due schedules. */
function sweepAt(env: Environment, at: number): void {
  const sweep = env.scheduling.sweep;
  if (sweep === undefined) throw new Error("this environment fires no schedules");
  sweep.clock = () => at;
  sweep.wake();
}

async function settledFirings(env: Environment, scheduleId: string, firings: number): Promise<Schedule> {
  return waitFor(async () => {
    const schedule = await env.schedule(scheduleId);
    return schedule !== undefined && schedule.firings >= firings ? schedule : undefined;
  });
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe("scheduled starts (SQLite)", () => {
  it("a one-shot schedule fires once, at its time, as an ordinary start of the conversation", async () => {
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: echoModel({ lookup: false }) });
    const at = new Date(Date.now() + 400);
    const schedule = await support.conversation("user-1").schedule("Check back on order 42", { at });
    expect(schedule).toMatchObject({ agentId: "user-1", definition: "support", state: "active", at: at.getTime(), nextRunAt: at.getTime(), firings: 0 });
    expect(await env.executions({ agentId: "user-1" })).toHaveLength(0);
    const fired = await settledFirings(env, schedule.scheduleId, 1);
    expect(fired).toMatchObject({ state: "done", nextRunAt: undefined, firings: 1, lastFiring: { outcome: "started", slotAt: at.getTime() } });
    expect(fired.lastFiring?.firedAt).toBeGreaterThanOrEqual(at.getTime());
    const executionId = startExecutionIdOf("user-1", scheduledStartKey(schedule.scheduleId, at.getTime()));
    expect(fired.lastFiring?.executionId).toBe(executionId);
    expect(await env.wait(executionId).result).toMatchObject({ outcome: "completed", output: "echo: Check back on order 42" });
    await pause(300);
    expect(await env.executions({ agentId: "user-1" })).toHaveLength(1);
  });

  it("a recurring schedule fires at each slot; slots missed while nothing ran fire once, and the next is after now", async () => {
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: echoModel({ lookup: false }) });
    const digest = await support.conversation("user-2").schedule("Daily digest", { cron: "*/5 * * * *" });
    const first = digest.nextRunAt as number;
    expect(first % 300_000).toBe(0);
    expect(first).toBeGreaterThan(Date.now());

    sweepAt(env, first + 1_000);
    const once = await settledFirings(env, digest.scheduleId, 1);
    expect(once).toMatchObject({ state: "active", nextRunAt: first + 300_000, lastFiring: { slotAt: first, outcome: "started" } });
    await env.wait(once.lastFiring?.executionId as string).result;

    sweepAt(env, first + 300_000);
    const twice = await settledFirings(env, digest.scheduleId, 2);
    expect(twice).toMatchObject({ nextRunAt: first + 600_000, lastFiring: { slotAt: first + 300_000 } });
    await env.wait(twice.lastFiring?.executionId as string).result;

    // Ten slots missed (nothing swept for fifty minutes): one firing, for the oldest, and the next slot after now.
    const late = first + 3_600_000 + 7_000;
    sweepAt(env, late);
    const caughtUp = await settledFirings(env, digest.scheduleId, 3);
    expect(caughtUp).toMatchObject({ nextRunAt: first + 3_900_000, lastFiring: { slotAt: first + 600_000 } });
    await env.wait(caughtUp.lastFiring?.executionId as string).result;
    sweepAt(env, late + 1_000);
    await pause(200);
    expect((await env.schedule(digest.scheduleId))?.firings).toBe(3);
    const executions = await env.executions({ agentId: "user-2" });
    expect(executions.map((row) => row.status)).toEqual(["terminal", "terminal", "terminal"]);
  });

  it("a restart after the due time fires the schedule once", async () => {
    const store = await temporaryStorePath();
    const first = await Phronomy.open({ store, logger: recordingLogger() });
    const at = Date.now() + 150;
    const made = await first
      .agent({ name: "support", model: echoModel({ lookup: false }) })
      .conversation("user-3")
      .schedule("Reminder", { at });
    await first.close();
    await pause(300);
    expect(Date.now()).toBeGreaterThan(at);
    const second = await Phronomy.open({ store, logger: recordingLogger() });
    try {
      second.agent({ name: "support", model: echoModel({ lookup: false }) });
      const fired = await settledFirings(second, made.scheduleId, 1);
      expect(fired).toMatchObject({ state: "done", firings: 1, lastFiring: { slotAt: at, outcome: "started" } });
      await second.wait(fired.lastFiring?.executionId as string).result;
      await pause(200);
      expect(await second.executions({ agentId: "user-3" })).toHaveLength(1);
    } finally {
      await second.close();
    }
  });

  it("a cancelled schedule does not fire; cancelling an unknown one is INVALID_INPUT", async () => {
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: echoModel({ lookup: false }) });
    const schedule = await support.conversation("user-4").schedule("Later", { at: Date.now() + 300 });
    const cancelled = await env.cancelSchedule(schedule.scheduleId);
    expect(cancelled).toMatchObject({ state: "cancelled", nextRunAt: undefined });
    await pause(600);
    expect(await env.executions({ agentId: "user-4" })).toHaveLength(0);
    expect((await env.schedule(schedule.scheduleId))?.firings).toBe(0);
    await expect(env.cancelSchedule("no-such-schedule")).rejects.toMatchObject({ code: "INVALID_INPUT", details: { reason: "not_found" } });
    await expect(env.runSchedule(schedule.scheduleId)).rejects.toMatchObject({ code: "INVALID_INPUT", details: { state: "cancelled" } });
  });

  it("run now fires at once and keeps the next slot; lists filter by conversation and state", async () => {
    const env = await openEnvironment();
    const support = env.agent({ name: "support", model: echoModel({ lookup: false }) });
    const daily = await support.conversation("user-5").schedule("Digest", { cron: "0 9 * * *" });
    const other = await support.conversation("user-6").schedule("Other", { at: Date.now() + 3_600_000 });
    const ran = await env.runSchedule(daily.scheduleId);
    expect(ran).toMatchObject({ state: "active", firings: 1, nextRunAt: daily.nextRunAt, lastFiring: { outcome: "started" } });
    expect(await env.wait(ran.lastFiring?.executionId as string).result).toMatchObject({ output: "echo: Digest" });
    expect((await env.schedules({ agentId: "user-5" })).map((schedule) => schedule.scheduleId)).toEqual([daily.scheduleId]);
    await env.cancelSchedule(other.scheduleId);
    expect((await env.schedules({ state: "cancelled" })).map((schedule) => schedule.scheduleId)).toEqual([other.scheduleId]);
    expect(await env.schedules({ definition: "support" })).toHaveLength(2);
    await expect(env.schedules({ status: "active" } as never)).rejects.toMatchObject({ code: "INVALID_INPUT" });
  });

  it("an agent defined by its id schedules its one conversation", async () => {
    const env = await openEnvironment();
    const agent = env.agent({ id: "reminders", model: echoModel({ lookup: false }) });
    const schedule = await agent.schedule("Water the plants", { at: Date.now() + 200 });
    expect(schedule).toMatchObject({ agentId: "reminders", definition: undefined });
    const fired = await settledFirings(env, schedule.scheduleId, 1);
    expect(await env.wait(fired.lastFiring?.executionId as string).result).toMatchObject({ output: "echo: Water the plants" });
  });

  it("a firing while the conversation is busy follows its busy policy, and the outcome is recorded on the schedule", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const calls: RecordedCall[] = [];
    const support = env.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool({ calls, gate: gate.promise }) } });
    const chat = support.conversation("user-7");
    const running = chat.start("Where is order 42?");
    await running.executionId;
    const refused = await chat.schedule("Reminder", { at: Date.now() });
    const queued = await chat.schedule("Queued reminder", { at: Date.now(), onBusy: "enqueue" });
    const refusedFired = await settledFirings(env, refused.scheduleId, 1);
    expect(refusedFired).toMatchObject({ state: "done", lastFiring: { outcome: "refused", error: "AGENT_BUSY", executionId: undefined } });
    const queuedFired = await settledFirings(env, queued.scheduleId, 1);
    expect(queuedFired).toMatchObject({ state: "done", lastFiring: { outcome: "queued" } });
    const queuedId = queuedFired.lastFiring?.executionId as string;
    expect((await env.execution(queuedId))?.status).toBe("queued");
    gate.resolve();
    await running.result;
    const ran = await waitFor(async () => {
      const row = await env.execution(queuedId);
      return row?.status === "terminal" ? row : undefined;
    });
    expect(ran.outcome).toBe("completed");
  });

  it("refuses a bad schedule with INVALID_INPUT naming what was wrong, storing nothing", async () => {
    const env = await openEnvironment();
    const chat = env.agent({ name: "support", model: echoModel({ lookup: false }) }).conversation("user-8");
    await expect(chat.schedule("x", { cron: "0 25 * * *" })).rejects.toMatchObject({ code: "INVALID_INPUT", details: { field: "hour" } });
    await expect(chat.schedule("x", { cron: "0 9 * *" })).rejects.toMatchObject({ code: "INVALID_INPUT", details: { field: "expression" } });
    await expect(chat.schedule("x", { cron: "0 0 30 2 *" })).rejects.toMatchObject({ code: "INVALID_INPUT", details: { field: "dayOfMonth" } });
    await expect(chat.schedule("x", { cron: "0 9 * * *", timezone: "Europe/Paris" })).rejects.toMatchObject({
      code: "INVALID_INPUT",
      details: { field: "timezone" },
    });
    await expect(chat.schedule("x", { at: new Date("not a date") })).rejects.toMatchObject({ code: "INVALID_INPUT", details: { field: "at" } });
    await expect(chat.schedule("x", {} as never)).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(chat.schedule("x", { at: Date.now(), cron: "* * * * *" })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(chat.schedule("x", { at: Date.now(), signal: new AbortController().signal } as never)).rejects.toThrow(/unknown option "signal"/);
    await expect(chat.schedule("x", { at: Date.now(), timeoutMs: -1 })).rejects.toThrow(/timeoutMs/);
    await expect(chat.schedule(42 as never, { at: Date.now() })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    expect(await env.schedules()).toEqual([]);
  });
});
