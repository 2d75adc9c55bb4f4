// Timers survive kill -9 (docs/decisions/0076): the process waiting on a
// timer is killed (SIGKILL) once the wait is durable; a new process opens
// the store and fires the timer on time — or at once, when it opens after
// the due time passed. Nothing of the dead process's memory is needed: the
// due time is in the row, the sweep of the new process finds it.

import { execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { Phronomy, type Environment } from "../../host/index.js";
import { childNodeFlags } from "../support/node-flags.js";
import { sleeperDefinition } from "./timer-fixture.js";
import { cleanUp, crashPaths, recordingLogger } from "./verify.js";

afterEach(cleanUp);

const here = dirname(fileURLToPath(import.meta.url));
/** Slack for a timer firing late on a loaded machine. */
const lateMsMax = 3_000;

/** Runs the child until it killed itself; its line. */
function suspendInKilledChild(store: string, ms: number): Promise<{ executionId: string; dueAt: number }> {
  return new Promise((resolve, reject) => {
    const args = [...childNodeFlags, "--import", "tsx", join(here, "timer-child.ts"), JSON.stringify({ store, ms })];
    execFile(process.execPath, args, { cwd: join(here, "..", ".."), timeout: 60_000 }, (error, stdout, stderr) => {
      if (error?.signal !== "SIGKILL") return reject(new Error(`the child was not killed by SIGKILL (${String(error?.signal)}): ${stderr}`));
      try {
        resolve(JSON.parse(stdout.trim().split("\n").at(-1) ?? "") as { executionId: string; dueAt: number });
      } catch {
        reject(new Error(`the child printed no wait: ${stdout} ${stderr}`));
      }
    });
  });
}

async function endedOf(env: Environment, executionId: string) {
  for (let attempt = 0; attempt < 3_000; attempt += 1) {
    const row = await env.execution(executionId);
    if (row?.status === "terminal") return row;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`execution ${executionId} did not end`);
}

describe("a timer across kill -9", () => {
  it("the waiting process is killed; a new one fires the timer on time", async () => {
    const paths = await crashPaths();
    const { executionId, dueAt } = await suspendInKilledChild(paths.store, 4_000);
    expect(Date.now()).toBeLessThan(dueAt);
    const logger = recordingLogger();
    const env = await Phronomy.open({ store: paths.store, logger });
    try {
      env.agent(sleeperDefinition(4_000));
      const ended = await endedOf(env, executionId);
      expect(ended.outcome).toBe("completed");
      const { firedAt } = JSON.parse(String(ended.output)) as { firedAt: number };
      expect(firedAt).toBeGreaterThanOrEqual(dueAt);
      expect(firedAt - dueAt).toBeLessThan(lateMsMax);
      expect((await env.timeline(executionId)).filter((step) => step.kind === "approval_decided")).toHaveLength(1);
      expect(logger.warnings).toEqual([]);
    } finally {
      await env.close();
    }
  }, 60_000);

  it("a new process opened after the due time passed fires it at once", async () => {
    const paths = await crashPaths();
    const { executionId, dueAt } = await suspendInKilledChild(paths.store, 300);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, dueAt - Date.now()) + 500));
    const opened = Date.now();
    const env = await Phronomy.open({ store: paths.store, logger: recordingLogger() });
    try {
      env.agent(sleeperDefinition(300));
      const ended = await endedOf(env, executionId);
      const { firedAt } = JSON.parse(String(ended.output)) as { firedAt: number };
      expect(firedAt).toBeGreaterThan(dueAt);
      expect(firedAt - opened).toBeLessThan(lateMsMax);
    } finally {
      await env.close();
    }
  }, 60_000);
});
