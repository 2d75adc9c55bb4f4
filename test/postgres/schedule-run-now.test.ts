// "Run now" at one instant from two PostgreSQL processes on one schema
// (docs/decisions/0098): the slot a run now claims is the core's, read off
// the row (its last slot), and the claim is a compare-and-set on the row's
// revision, so the rule holds across processes — two runs now in the same
// millisecond, one after the other or together, fire once; the other is
// refused with INVALID_INPUT. The clock is held still (`Date.now`) for the
// runs now, as two clicks in one millisecond.

import { afterEach, describe, expect, it, vi } from "vitest";
import { Phronomy, type DefinedAgent, type Environment } from "../../host/index.js";
import { scheduledStartKey } from "../../host/runtime/schedule-sweep.js";
import { startExecutionIdOf } from "../../host/store/start-filing.js";
import { echoModel, recordingLogger, waitFor } from "../runtime/helpers.js";
import { atEnd, freshSchema, postgresUrl } from "./database.js";

afterEach(() => {
  vi.restoreAllMocks();
});

async function openAs(schema: string, instanceId: string): Promise<{ env: Environment; support: DefinedAgent<unknown> }> {
  const env = await Phronomy.open({ store: postgresUrl, logger: recordingLogger(), postgres: { schema, instanceId, leaseMs: 3_000 } });
  atEnd(() => env.close());
  return { env, support: env.agent({ name: "support", model: echoModel({ lookup: false }) }) };
}

async function executionsOf(env: Environment, agentId: string, count: number): Promise<void> {
  await waitFor(async () => {
    const rows = await env.executions({ agentId });
    return rows.length >= count && rows.every((row) => row.status === "terminal") ? true : undefined;
  }, 30_000);
}

describe("run now at one instant across processes (PostgreSQL)", () => {
  it("a run now in another process at the instant of the last firing is told it fired at this instant", async () => {
    const schema = freshSchema();
    const { env: a, support } = await openAs(schema, "run-now-a");
    const { env: b } = await openAs(schema, "run-now-b");
    const digest = await support.conversation("user-1").schedule("Digest", { cron: "0 9 * * *" });
    const instant = Date.now();
    vi.spyOn(Date, "now").mockReturnValue(instant);
    const first = await a.runSchedule(digest.scheduleId);
    const executionId = startExecutionIdOf("user-1", scheduledStartKey(digest.scheduleId, instant));
    expect(first).toMatchObject({ firings: 1, nextRunAt: digest.nextRunAt, lastFiring: { slotAt: instant, outcome: "started", executionId } });
    await expect(b.runSchedule(digest.scheduleId, { waitMs: 0 })).rejects.toMatchObject({
      code: "INVALID_INPUT",
      details: { scheduleId: digest.scheduleId, reason: "fired_this_instant", slotAt: instant },
    });
    vi.restoreAllMocks();
    await executionsOf(a, "user-1", 1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await b.schedule(digest.scheduleId)).toMatchObject({ firings: 1, lastFiring: { slotAt: instant } });
    expect(await a.executions({ agentId: "user-1" })).toHaveLength(1);
  });

  it("two processes asking to run the same schedule now at one instant: one firing, the other refused", async () => {
    const schema = freshSchema();
    const { env: a, support } = await openAs(schema, "run-now-c");
    const { env: b } = await openAs(schema, "run-now-d");
    const digest = await support.conversation("user-2").schedule("Digest", { cron: "0 9 * * *" });
    const instant = Date.now();
    vi.spyOn(Date, "now").mockReturnValue(instant);
    const answers = await Promise.allSettled([a.runSchedule(digest.scheduleId), b.runSchedule(digest.scheduleId)]);
    vi.restoreAllMocks();
    const fired = answers.filter((answer) => answer.status === "fulfilled");
    const refused = answers.filter((answer) => answer.status === "rejected");
    expect(fired).toHaveLength(1);
    expect(fired[0]?.value).toMatchObject({ firings: 1, lastFiring: { slotAt: instant, outcome: "started" } });
    expect(refused).toHaveLength(1);
    expect(refused[0]?.reason).toMatchObject({ code: "INVALID_INPUT" });
    await executionsOf(a, "user-2", 1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await a.schedule(digest.scheduleId)).toMatchObject({ firings: 1 });
    expect(await a.executions({ agentId: "user-2" })).toHaveLength(1);
  });
});
