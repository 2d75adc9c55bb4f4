// Child agents across kill -9 (docs/decisions/0079): a process starts
// parents that each call a child agent, and is killed with SIGKILL at a
// seeded moment after a point of the run — a parent suspended (its child
// maybe not started), a child written (running), a child ended (its parent
// maybe not resumed), a parent ended. The next process recovers
// both: every parent completes once with its child's output, each with
// exactly one child, resumed by exactly one decision.

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { Phronomy, type Environment } from "../../host/index.js";
import { runUntilKilled } from "../support/child-process.js";
import { defineAgents, modelLatencyMs, parentOutput } from "./child-agents-fixture.js";
import { cleanUp, crashPaths, recordingLogger, within } from "./verify.js";

const here = dirname(fileURLToPath(import.meta.url));
const environments: Environment[] = [];

afterEach(async () => {
  for (const environment of environments.splice(0)) await environment.close().catch(() => undefined);
  await cleanUp();
});

/** Runs the child to its SIGKILL; returns the parents it started. */
async function startAndKill(store: string, parents: number, point: string, extraMs: number): Promise<string[]> {
  const line = await runUntilKilled<{ started: string[] }>(join(here, "child-agents-process.ts"), [store, String(parents), point, String(extraMs)]);
  return line.started;
}

/** A small seeded generator (mulberry32): the kill moments replay by seed. */
function randomOf(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
}

describe("child agents across kill -9", () => {
  const seed = Number(process.env["PHRONOMY_SEED"] ?? Date.now() % 1_000_000);
  const random = randomOf(seed);
  // Each point of a run, and a seeded moment after it (within a model call or two).
  const points = ["suspended", "child", "child-ended", "parent-ended"].map((point) => [point, Math.floor(random() * modelLatencyMs * 2)] as const);

  it.each(points)(
    `recovers parents and children killed after the store shows "%s", %i ms later (seed ${seed}: PHRONOMY_SEED=${seed} replays it)`,
    async (point, killAfterMs) => {
      const paths = await crashPaths();
      const parents = await startAndKill(paths.store, 4, point, killAfterMs);
      expect(parents).toHaveLength(4);

      const environment = await Phronomy.open({ store: paths.store, logger: recordingLogger() });
      environments.push(environment);
      // Where the kill left them (read before the definitions recover them), for the log.
      const left = (await environment.executions({})).map((row) => `${row.metadata.config?.["definition"] === "support" ? "parent" : "child"}:${row.status}`);
      console.log(`[child-agents crash] seed ${seed}, killed ${killAfterMs} ms after ${point}: ${left.sort().join(" ")}`);
      defineAgents(environment);
      for (const parentId of parents) {
        const row = await within(
          (async () => {
            for (;;) {
              const found = await environment.execution(parentId);
              if (found?.status === "terminal") return found;
              await new Promise((resolve) => setTimeout(resolve, 20));
            }
          })(),
          30_000,
          `parent ${parentId} to end (seed ${seed}, killed ${killAfterMs} ms after ${point})`,
        );
        expect(row, `seed ${seed}`).toMatchObject({ outcome: "completed", output: parentOutput });
        const decided = (await environment.timeline(parentId)).filter((step) => step.kind === "approval_decided");
        expect(decided, `seed ${seed}: resumed once`).toHaveLength(1);
        const tree = await environment.executionTree(parentId);
        expect(
          tree?.children.map((child) => child.execution.outcome),
          `seed ${seed}: one child, completed`,
        ).toEqual(["completed"]);
      }
    },
    120_000,
  );
});
