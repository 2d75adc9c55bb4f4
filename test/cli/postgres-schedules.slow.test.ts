// `phronomy schedules` on a PostgreSQL store (decision 0088): a command is
// one more process of the store (no visitor), reading schedules an
// application made and acting on them through `env.runSchedule` and
// `env.cancelSchedule`. It takes no share of the partitions, so a run-now
// is claimed for a process that fires schedules, and the command says so.

import { afterAll, describe, expect, it } from "vitest";
import { Phronomy } from "../../host/index.js";
import { scriptedModel } from "../../host/testing.js";
import { postgresUrl, withClient } from "../postgres/database.js";
import { recordingLogger } from "../runtime/helpers.js";
import { cli, describeResult, errorLines, jsonOf } from "./helpers.js";

const schema = `phronomy_cli_schedules_${process.pid}_${Date.now().toString(36)}`;
afterAll(async () => {
  await withClient((client) => client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
});

describe("phronomy schedules on PostgreSQL", () => {
  it("lists, shows, claims a run now and cancels", async () => {
    const store = `${postgresUrl}?schema=${schema}`;
    const environment = await Phronomy.open({ store, logger: recordingLogger() });
    let scheduleId: string;
    try {
      const support = environment.agent({ name: "support", model: scriptedModel(() => ({ text: "ok" })) });
      scheduleId = (await support.conversation("user-1").schedule("Daily digest", { cron: "30 6 * * 1-5" })).scheduleId;
    } finally {
      await environment.close();
    }
    const listed = await cli(["schedules", "--store", store, "--json"]);
    expect(listed.code, describeResult(listed)).toBe(0);
    expect(jsonOf(listed).schedules).toEqual([expect.objectContaining({ scheduleId, cron: "30 6 * * 1-5", state: "active", definition: "support" })]);
    expect((await cli(["schedules", "show", scheduleId, "--store", store])).stdout).toContain('cron "30 6 * * 1-5" UTC');
    const ran = await cli(["schedules", "run", scheduleId, "--store", store, "--wait", "0"]);
    expect(ran.code, describeResult(ran)).toBe(0);
    expect(ran.stdout).toContain(`claimed schedule ${scheduleId} to fire now`);
    const cancelled = await cli(["schedules", "cancel", scheduleId, "--store", store, "--json"]);
    expect(cancelled.code, describeResult(cancelled)).toBe(0);
    expect(jsonOf(cancelled).schedule).toMatchObject({ scheduleId, state: "cancelled", nextRunAt: null });
    const missing = await cli(["schedules", "show", "no-such-schedule", "--store", store]);
    expect(errorLines(missing)[0]).toContain("[SCHEDULE_NOT_FOUND]");
  });

  it("a run now from a second process is started once by the process that fires schedules; a cancel lands at once", async () => {
    const store = `${postgresUrl}?schema=${schema}_live`;
    const environment = await Phronomy.open({ store, logger: recordingLogger() });
    try {
      const support = environment.agent({ name: "support", model: scriptedModel(() => ({ text: "digest sent" })) });
      const { scheduleId } = await support.conversation("user-1").schedule("Daily digest", { cron: "30 6 * * 1-5" });
      const began = Date.now();
      const ran = await cli(["schedules", "run", scheduleId, "--store", store, "--json"]);
      expect(ran.code, describeResult(ran)).toBe(0);
      const fired = jsonOf(ran).schedule;
      expect(fired).toMatchObject({ scheduleId, state: "active", firings: 1, firingSlotAt: null, lastFiring: { outcome: "started" } });
      const executions = await environment.executions({ agentId: "user-1" });
      expect(executions.map((row) => row.executionId)).toEqual([fired.lastFiring.executionId]);
      await expect(environment.wait(fired.lastFiring.executionId).result).resolves.toMatchObject({ outcome: "completed", output: "digest sent" });
      // Told by a notification, not found by the sweep's idle timer (a minute).
      expect(Date.now() - began).toBeLessThan(30_000);
      const cancelled = await cli(["schedules", "cancel", scheduleId, "--store", store]);
      expect(cancelled.code, describeResult(cancelled)).toBe(0);
      expect(await environment.schedule(scheduleId)).toMatchObject({ state: "cancelled", firings: 1 });
    } finally {
      await environment.close();
      await withClient((client) => client.query(`DROP SCHEMA IF EXISTS ${schema}_live CASCADE`));
    }
  });
});
