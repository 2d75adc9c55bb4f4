// Scheduled starts on PostgreSQL with two processes on one schema
// (docs/decisions/0078): both sweep, both claim; every firing is claimed by
// exactly one (a compare-and-set per row) and runs once, wherever the
// conversation's partition is held (run here, or filed for its owner). A
// firing claimed by a process that died before starting it is claimed
// again once its retry time passed, and still runs once (its start keyed
// by its slot).

import { describe, expect, it } from "vitest";
import { Phronomy, type DefinedAgent, type Environment, type Schedule } from "../../host/index.js";
import type { ScheduleStore } from "../../host/store/schedule-records.js";
import { firingRetryMs } from "../../host/runtime/schedule-sweep.js";
import { echoModel, recordingLogger, waitFor } from "../runtime/helpers.js";
import { settleUnderEachClaim } from "../schedules/claimed-again.js";
import { atEnd, freshSchema, postgresUrl } from "./database.js";

async function openAs(schema: string, instanceId: string): Promise<{ env: Environment; support: DefinedAgent<unknown> }> {
  const env = await Phronomy.open({ store: postgresUrl, logger: recordingLogger(), postgres: { schema, instanceId, leaseMs: 3_000 } });
  atEnd(() => env.close());
  return { env, support: env.agent({ name: "support", model: echoModel({ lookup: false }) }) };
}

/** Records, per process, the firings its claims asked for and the ones they got. */
function recordClaims(env: Environment): { asked: string[]; got: string[] } {
  const store = env.store as unknown as ScheduleStore;
  const claim = store.claimSchedules.bind(store);
  const record = { asked: [] as string[], got: [] as string[] };
  store.claimSchedules = async (claims) => {
    record.asked.push(...claims.map((one) => `${one.scheduleId}@${one.firingSlotAt}`));
    const rows = await claim(claims);
    record.got.push(...rows.map((row) => `${row.scheduleId}@${row.firingSlotAt}`));
    return rows;
  };
  return record;
}

function sweepAt(env: Environment, at: number): void {
  const sweep = env.scheduling.sweep as NonNullable<Environment["scheduling"]["sweep"]>;
  sweep.clock = () => at;
  sweep.wake();
}

async function allFired(env: Environment, ids: readonly string[], firings: number): Promise<Schedule[]> {
  return waitFor(async () => {
    const schedules = await Promise.all(ids.map((id) => env.schedule(id)));
    return schedules.every((schedule) => schedule !== undefined && schedule.firings >= firings) ? (schedules as Schedule[]) : undefined;
  }, 60_000);
}

async function terminalExecutions(env: Environment, agentIds: readonly string[], count: number): Promise<void> {
  await waitFor(async () => {
    const rows = await env.executions({ limit: 1_000 });
    const mine = rows.filter((row) => agentIds.includes(row.agentId));
    return mine.length >= count && mine.every((row) => row.status === "terminal") ? true : undefined;
  }, 60_000);
}

describe("scheduled starts across processes (PostgreSQL)", () => {
  it("two processes sweeping the same due schedules: each firing is claimed once and runs once", async () => {
    const schema = freshSchema();
    const { env: a, support: inA } = await openAs(schema, "schedules-a");
    const { env: b, support: inB } = await openAs(schema, "schedules-b");
    const claimsOfA = recordClaims(a);
    const claimsOfB = recordClaims(b);
    const conversations = Array.from({ length: 12 }, (_, index) => `user-${index}`);
    const made: Schedule[] = [];
    for (const agentId of conversations) {
      // Made in either process; the due time is the sweeps' clock below.
      const support = made.length % 2 === 0 ? inA : inB;
      made.push(await support.conversation(agentId).schedule(`digest for ${agentId}`, { cron: "*/5 * * * *" }));
    }
    const slot = made[0]?.nextRunAt as number;
    expect(made.every((schedule) => schedule.nextRunAt === slot)).toBe(true);
    expect(slot).toBeGreaterThan(Date.now());

    sweepAt(a, slot + 1_000);
    sweepAt(b, slot + 1_000);
    const fired = await allFired(
      a,
      made.map((schedule) => schedule.scheduleId),
      1,
    );
    for (const schedule of fired) expect(schedule).toMatchObject({ firings: 1, nextRunAt: slot + 300_000, lastFiring: { slotAt: slot, outcome: "started" } });
    await terminalExecutions(a, conversations, conversations.length);

    // The next slot, both sweeping again.
    sweepAt(b, slot + 300_000);
    sweepAt(a, slot + 300_000);
    const again = await allFired(
      b,
      made.map((schedule) => schedule.scheduleId),
      2,
    );
    for (const schedule of again) expect(schedule).toMatchObject({ firings: 2, lastFiring: { slotAt: slot + 300_000 } });
    await terminalExecutions(a, conversations, conversations.length * 2);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const rows = (await a.executions({ limit: 1_000 })).filter((row) => conversations.includes(row.agentId));
    expect(rows).toHaveLength(conversations.length * 2);
    for (const agentId of conversations) expect(rows.filter((row) => row.agentId === agentId)).toHaveLength(2);
    // Every firing claimed by exactly one process, whichever asked.
    const got = [...claimsOfA.got, ...claimsOfB.got];
    expect(new Set(got).size).toBe(got.length);
    expect(got).toHaveLength(conversations.length * 2);
    console.log(`claims asked: a ${claimsOfA.asked.length}, b ${claimsOfB.asked.length}; got: a ${claimsOfA.got.length}, b ${claimsOfB.got.length}`);
  });

  it("a firing claimed by a process that died before starting it is claimed again after its retry time, and runs once", async () => {
    const schema = freshSchema();
    const { env: a, support } = await openAs(schema, "schedules-claimer");
    const made = await support.conversation("user-x").schedule("Reminder", { at: Date.now() + 3_600_000 });
    const store = a.store as unknown as ScheduleStore;
    // A claim as a process that died right after it committed would leave it.
    const row = await store.getSchedule(made.scheduleId);
    const slot = made.nextRunAt as number;
    const now = slot + 10;
    const [claimed] = await store.claimSchedules([
      { scheduleId: made.scheduleId, revision: row?.revision as number, firingSlotAt: slot, nextSlotAt: undefined, retryAt: now + firingRetryMs },
    ]);
    expect(claimed).toMatchObject({ firingSlotAt: slot, dueAt: now + firingRetryMs });

    const { env: b } = await openAs(schema, "schedules-survivor");
    sweepAt(b, now + 1_000); // before the retry time: not taken
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await b.schedule(made.scheduleId))?.firings).toBe(0);
    expect(await b.executions({ agentId: "user-x" })).toHaveLength(0);

    sweepAt(b, now + firingRetryMs + 1);
    const [fired] = await allFired(b, [made.scheduleId], 1);
    expect(fired).toMatchObject({ state: "done", firings: 1, lastFiring: { slotAt: slot, outcome: "started" } });
    await terminalExecutions(b, ["user-x"], 1);
    // Claimed again by the survivor (the firing's retry time passed again): the same keyed start, not a second run.
    expect(await b.executions({ agentId: "user-x" })).toHaveLength(1);
  });

  it("a firing claimed again is settled under the later claim only: the first claimer's settlement applies nothing (decision 0135)", async () => {
    const { env, support } = await openAs(freshSchema(), "schedules-settler");
    const made = await support.conversation("user-y").schedule("Reminder", { at: Date.now() + 3_600_000 });
    await settleUnderEachClaim(env, made.scheduleId);
  });
});
