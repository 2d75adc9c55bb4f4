// Random kill: 200 runs, 50 in flight (50 agents, 4 runs each, one after
// the other), in a child killed with SIGKILL at a random kill point (any
// barrier, before or after, or inside a tool; the first from there on with
// a run surely in flight), or from outside once the child reached a random
// one of its kill points with runs in flight. Every kill lands with
// executions in flight: the store, read after the kill and before any
// recovery, must hold unfinished executions (a kill that hits nothing
// proves nothing). This process then reopens the store and every execution
// in it — every one the child reported admitted among them — must complete
// with the right output, each tool effect exactly once, every repeated tool
// call with its original key.
//
// The seed is printed; CRASH_SEED=<seed> replays the same kill point (the
// outside kill: the same point the kill is sent at).

import { afterEach, describe, expect, it } from "vitest";
import type { RecoveredExecution } from "../../host/runtime/recovery.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import { generator, seedFrom } from "../support/seeded.js";
import { admittedIds, describeChild, expectedAnswer, runChild, startChild, type ChildOutcome } from "./fixture.js";
import { auditKeys, barrierKeys, cleanUp, crashPaths, effectsByExecution, reopen, within, type CrashPaths } from "./verify.js";

afterEach(cleanUp);

const AGENTS = 50;
const RUNS_PER_AGENT = 4;
/** Kill points one run reaches: 6 operations before and after (the first
 * provider barrier rides with the preparation, decision 0014), 2 tools.
 * test/crash/matrix.test.ts checks the points of one run. */
const POINTS_PER_RUN = 14;
const TOTAL_POINTS = AGENTS * RUNS_PER_AGENT * POINTS_PER_RUN;
const ANSWER = expectedAnswer(2);
/** The outside kill is sent once the child printed this share of its kill
 * points at most: the rest of the workload (hundreds of milliseconds) keeps
 * executions in flight while the signal travels. */
const OUTSIDE_KILL_SHARE_MAX = 0.6;
/** The outside kill is sent at a point with at least this many runs
 * surely in flight. */
const OUTSIDE_KILL_IN_FLIGHT_MIN = 10;

describe("random kill -9 with 50 runs in flight", () => {
  it.each<"FULL" | "NORMAL">(["FULL", "NORMAL"])(
    "synchronous %s, killed at a random kill point: every admitted run completes after recovery; repeats carry their original key",
    async (synchronous) => {
      const seed = seedFrom("CRASH_SEED");
      const random = generator(seed);
      // Anywhere but the very first and last runs' points, so the kill always
      // happens with work in flight.
      const point = 50 + Math.floor(random() * (TOTAL_POINTS - 100));
      console.log(`[crash] random kill point (${synchronous}): CRASH_SEED=${seed} kills at point #${point} of ${TOTAL_POINTS}`);

      const paths = await crashPaths();
      const child = await runChild(
        {
          store: paths.store,
          files: paths.files,
          agents: AGENTS,
          runsPerAgent: RUNS_PER_AGENT,
          kill: `inflight:#${point}`,
          synchronous,
        },
        90_000,
      );
      const context = `CRASH_SEED=${seed}\n${describeChild(child)}`;
      expect(child.signal, context).toBe("SIGKILL");
      // At that point, or the first after it with a run surely in flight
      // (between two waves of runs nothing is: every run ended, the next not
      // yet prepared).
      expect(child.lines.at(-1), context).toMatchObject({ type: "killing", index: expect.any(Number) });
      expect((child.lines.at(-1) as { index: number }).index, context).toBeGreaterThanOrEqual(point);
      await recoverAndCheck(paths, child, context, { seed, synchronous, pointIndex: point });
    },
    180_000,
  );

  it("killed from outside at a random moment (possibly mid-commit in the store worker): the same holds", async () => {
    const seed = seedFrom("CRASH_SEED");
    const random = generator(seed ^ 0x5eed);
    // The kill is sent when the child reports reaching this point: the
    // moment is the child's progress, not a wall-clock delay that may come
    // after the last run ended.
    const point = 50 + Math.floor(random() * (TOTAL_POINTS * OUTSIDE_KILL_SHARE_MAX - 50));
    console.log(
      `[crash] random kill moment: CRASH_SEED=${seed} kills from outside once the child reached point #${point} of ${TOTAL_POINTS} (where the signal lands is timing)`,
    );

    const paths = await crashPaths();
    const running = startChild({ store: paths.store, files: paths.files, agents: AGENTS, runsPerAgent: RUNS_PER_AGENT, trace: true }, 90_000);
    // Sent with runs surely in flight: the signal lands a moment later, too
    // soon for that many to end.
    await within(
      running.waitForLine((line) => line.type === "point" && line.index >= point && line.inFlight >= OUTSIDE_KILL_IN_FLIGHT_MIN),
      60_000,
      `kill point #${point}`,
    );
    running.process.kill("SIGKILL");
    const child = await running.ended;
    const context = `CRASH_SEED=${seed} (outside, at point #${point})\n${describeChild(child)}`;
    expect(child.signal, context).toBe("SIGKILL");
    await recoverAndCheck(paths, child, context, { seed, sentAtPoint: point });
  }, 180_000);
});

/** Executions the store holds unfinished right after the kill, before any
 * recovery: the runs the kill interrupted. */
async function unfinishedAfterKill(paths: CrashPaths): Promise<number> {
  const store = await SqliteStore.open(paths.store);
  try {
    return (await store.unfinishedExecutions()).length;
  } finally {
    await store.close();
  }
}

/** Reopens the store the child left, waits for every execution in it and
 * checks outputs, effects and keys; prints the figures. */
async function recoverAndCheck(paths: CrashPaths, child: ChildOutcome, context: string, about: Record<string, unknown>): Promise<void> {
  const killing = child.lines.find((line) => line.type === "killing");
  const admitted = admittedIds(child);
  const settledBefore = new Set(child.lines.flatMap((line) => (line.type === "settled" ? [line.executionId] : [])));
  expect(
    child.lines.filter((line) => line.type === "failed"),
    context,
  ).toEqual([]);
  // Measured from the store, not from what the child printed (it may die
  // between a commit and its line).
  const inFlightAtKill = await unfinishedAfterKill(paths);
  expect(inFlightAtKill, `the kill hit no execution in flight\n${context.slice(0, 4_000)}`).toBeGreaterThan(0);

  const reopened = await reopen(paths, { agents: AGENTS });
  const { environment, logger } = reopened;
  const reports: RecoveredExecution[] = [...reopened.report];
  const rows = await environment.executions({ limit: 1_000 });
  const ids = rows.map((row) => row.executionId);
  const diagnosis = (): string =>
    `${context.slice(0, 4_000)}\nrecovery reports: ${JSON.stringify(reports.filter((item) => item.status !== "continued"))}\nwarnings:\n${logger.warnings.slice(0, 20).join("\n")}`;
  for (const id of admitted) expect(ids, `admitted execution ${id} is not in the store\n${diagnosis()}`).toContain(id);

  // Wait for every execution in the store; one not live yet (an agent
  // with two unfinished executions recovers them one at a time) is
  // retried after env.recover().
  const outputs = new Map<string, unknown>();
  let waiting = ids;
  for (let round = 0; waiting.length > 0 && round < 5; round += 1) {
    const settled = await within(Promise.allSettled(waiting.map((id) => environment.wait(id).result)), 60_000, `round ${round} of waits\n${diagnosis()}`);
    const retry: string[] = [];
    settled.forEach((outcome, index) => {
      const id = waiting[index]!;
      if (outcome.status === "fulfilled") outputs.set(id, outcome.value.output);
      else if ((outcome.reason as { code?: string }).code === "EXECUTION_REHYDRATION_REQUIRED") retry.push(id);
      else throw new Error(`execution ${id} ended with ${String(outcome.reason)}\n${diagnosis()}`);
    });
    waiting = retry;
    if (retry.length > 0) reports.push(...(await environment.recover()));
  }
  const recoveryMilliseconds = performance.now() - reopened.openedAt;
  expect(waiting, `executions never completed\n${diagnosis()}`).toEqual([]);

  for (const id of ids) expect(outputs.get(id), `output of ${id}`).toBe(ANSWER);
  const after = await environment.executions({ limit: 1_000 });
  const notCompleted = after.filter((row) => row.status !== "terminal" || row.outcome !== "completed");
  expect(
    notCompleted.map((row) => `${row.executionId} ${row.status}/${row.phase}/${row.outcome ?? ""}`),
    diagnosis(),
  ).toEqual([]);
  expect(
    reports.filter((item) => item.status === "needs_attention"),
    diagnosis(),
  ).toEqual([]);

  const audit = auditKeys(paths.files, await barrierKeys(environment, ids));
  expect(audit.problems, diagnosis()).toEqual([]);
  const effects = effectsByExecution(paths.files);
  for (const id of ids)
    expect(
      effects
        .get(id)
        ?.map((effect) => effect.orderId)
        .sort(),
      `effects of ${id}`,
    ).toEqual(["42", "43"]);
  expect(audit.effects).toBe(2 * ids.length);

  const recovered = reports.filter((item) => item.status === "continued").length;
  const figures = {
    ...about,
    killPoint: killing && "point" in killing ? killing.point : undefined,
    admittedBeforeKill: admitted.length,
    completedBeforeKill: settledBefore.size,
    inFlightAtKill,
    executionsInStore: ids.length,
    recovered,
    toolCalls: audit.calls,
    repeatedCalls: audit.repeats,
    repeatedKeys: audit.repeatedKeys.size,
    effects: audit.effects,
    recoveryMs: Math.round(recoveryMilliseconds),
    recoveryReportMs: Math.round(reopened.recoveryMilliseconds),
    childMs: child.milliseconds,
  };
  console.log(`[crash] random kill figures: ${JSON.stringify(figures)}`);
  expect(recovered).toBeLessThanOrEqual(AGENTS);
  // The kill happened with work durable in the store: admitted executions
  // (the child may die before printing an id whose prepare committed, so
  // the store is the judge, not the child's output).
  expect(ids.length, diagnosis()).toBeGreaterThan(0);
}
