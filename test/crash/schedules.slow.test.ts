// A schedule firing killed with SIGKILL (docs/decisions/0078): the parent
// makes a one-shot schedule due now and closes; a child opens the store
// and its sweep fires the schedule, killed before its claim, after its
// claim committed, after the start was made but before the firing was
// settled, or after it was settled. A fresh environment then opens the
// store: the schedule has fired exactly once — one execution of the
// conversation, the one its slot's key names, completed — and is done.

import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { Phronomy } from "../../host/index.js";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { scheduledStartKey } from "../../host/runtime/schedule-sweep.js";
import { startExecutionIdOf } from "../../host/store/start-filing.js";
import { childNodeFlags } from "../support/node-flags.js";
import type { ScheduleChildConfig, ScheduleKillPoint } from "./schedule-child.js";
import { firingRetryMs } from "../../host/runtime/schedule-sweep.js";
import { atEnd, freshSchema, postgresUrl } from "../postgres/database.js";
import { cleanUp, crashPaths, recordingLogger } from "./verify.js";

afterEach(cleanUp);

const here = dirname(fileURLToPath(import.meta.url));

function runChild(config: ScheduleChildConfig): Promise<{ signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...childNodeFlags, "--import", "tsx", join(here, "schedule-child.ts"), JSON.stringify(config)], {
      cwd: join(here, "..", ".."),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (_code, signal) => {
      clearTimeout(timer);
      resolve({ signal, stdout, stderr });
    });
  });
}

const model = () => scriptedModel(() => ({ text: "digest sent" }));

describe("a schedule firing killed with SIGKILL fires exactly once", () => {
  it.each<ScheduleKillPoint>(["before-claim", "after-claim", "before-settle", "after-settle"])("killed %s", async (kill) => {
    const paths = await crashPaths();
    const maker = await Phronomy.open({ store: paths.store, logger: recordingLogger() });
    const at = Date.now();
    const made = await maker.agent({ name: "support", model: model() }).conversation("user-1").schedule("Send the digest", { at });
    await maker.close();

    const child = await runChild({ store: paths.store, kill });
    expect(child.signal, `${child.stdout}\n${child.stderr}`).toBe("SIGKILL");
    expect(child.stdout).toContain(`"point":"${kill}"`);

    const env = await Phronomy.open({ store: paths.store, logger: recordingLogger() });
    try {
      // Recovery of an execution the child left running comes first (the definition's `ready`).
      await env.agent({ name: "support", model: model() }).ready;
      const executionId = startExecutionIdOf("user-1", scheduledStartKey(made.scheduleId, at));
      const fired = await waitForFiring(env, made.scheduleId);
      expect(fired).toMatchObject({ state: "done", firings: 1, lastFiring: { slotAt: at, executionId, outcome: "started" } });
      const result = await env.wait(executionId).result;
      expect(result).toMatchObject({ outcome: "completed", output: "digest sent" });
      await new Promise((resolve) => setTimeout(resolve, 300));
      const rows = await env.executions({ agentId: "user-1" });
      expect(rows.map((row) => row.executionId)).toEqual([executionId]);
    } finally {
      await env.close();
    }
  });
});

async function waitForFiring(env: Awaited<ReturnType<typeof Phronomy.open>>, scheduleId: string) {
  const until = Date.now() + 60_000;
  for (;;) {
    const schedule = await env.schedule(scheduleId);
    if (schedule !== undefined && schedule.firings > 0) return schedule;
    if (Date.now() > until) throw new Error(`schedule ${scheduleId} did not fire: ${JSON.stringify(schedule)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("PostgreSQL: a process killed after its claim committed", () => {
  it("another process claims the firing after its retry time, takes the partition over, and runs it once", async () => {
    const schema = freshSchema();
    const leaseMs = 2_000;
    const open = (instanceId: string) => Phronomy.open({ store: postgresUrl, logger: recordingLogger(), postgres: { schema, instanceId, leaseMs } });
    const maker = await open("schedule-maker");
    const at = Date.now();
    const made = await maker.agent({ name: "support", model: model() }).conversation("user-pg").schedule("Send the digest", { at });
    await maker.close();

    const child = await runChild({ store: postgresUrl, kill: "after-claim", postgres: { schema, instanceId: "schedule-child", leaseMs } });
    expect(child.signal, `${child.stdout}\n${child.stderr}`).toBe("SIGKILL");
    const claimedAt = Date.now();

    const survivor = await open("schedule-survivor");
    atEnd(() => survivor.close());
    survivor.agent({ name: "support", model: model() });
    const executionId = startExecutionIdOf("user-pg", scheduledStartKey(made.scheduleId, at));
    const fired = await waitForFiring(survivor, made.scheduleId);
    expect(Date.now() - claimedAt).toBeGreaterThanOrEqual(firingRetryMs - 1_000);
    expect(fired).toMatchObject({ state: "done", firings: 1, lastFiring: { slotAt: at, executionId } });
    expect(await survivor.wait(executionId).result).toMatchObject({ outcome: "completed", output: "digest sent" });
    expect((await survivor.executions({ agentId: "user-pg" })).map((row) => row.executionId)).toEqual([executionId]);
  });
});
