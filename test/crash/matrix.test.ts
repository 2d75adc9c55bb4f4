// The crash matrix: one execution of the support agent (model → tool →
// model → tool → model) in a child process on a real SQLite file, killed
// with SIGKILL before and after each of its barriers and inside each tool
// call; then a fresh environment in this process opens the same file,
// defines the same agent (recovery runs on definition) and must finish the
// execution: the right output, every effect exactly once, every repeated
// tool call with the key of the original, the durable row completed.

import { afterEach, describe, expect, it } from "vitest";
import type { PhaseName } from "../../host/store/records.js";
import { admittedIds, describeChild, expectedAnswer, readJsonLines, runChild, type ChildLine, type KeyLogEntry, type KillSpec } from "./fixture.js";
import { auditKeys, barrierKeys, cleanUp, crashPaths, effectsByExecution, reopen, within } from "./verify.js";

afterEach(cleanUp);

const ANSWER = expectedAnswer(2);

/** The order every kill point is reached in by one run (checked below).
 * The first provider barrier is written with the preparation (decision
 * 0014), so `providerBarrier#1` is the barrier after the first tool batch. */
const RUN_POINTS = [
  "before:prepareExecution#1",
  "after:prepareExecution#1",
  "before:toolBarrier#1",
  "after:toolBarrier#1",
  "tool:#1",
  "before:providerBarrier#1",
  "after:providerBarrier#1",
  "before:toolBarrier#2",
  "after:toolBarrier#2",
  "tool:#2",
  "before:providerBarrier#2",
  "after:providerBarrier#2",
  "before:terminalCommit#1",
  "after:terminalCommit#1",
] as const satisfies readonly KillSpec[];

interface Case {
  readonly kill: (typeof RUN_POINTS)[number];
  /** The durable phase recovery finds (SPEC §6.2); undefined: no execution
   * to recover (none written yet, or already terminal). */
  readonly phase: PhaseName | undefined;
  /** The order ids whose lookup must run again (its result was not durable). */
  readonly repeated: readonly string[];
}

// Results ride on the next barrier: a model answer or a tool result not yet
// carried by a barrier is lost with the process and the operation repeats.
const CASES: readonly Case[] = [
  { kill: "before:prepareExecution#1", phase: undefined, repeated: [] },
  { kill: "after:prepareExecution#1", phase: "calling_llm", repeated: [] },
  { kill: "before:toolBarrier#1", phase: "calling_llm", repeated: [] },
  { kill: "after:toolBarrier#1", phase: "dispatching_tools", repeated: [] },
  { kill: "tool:#1", phase: "dispatching_tools", repeated: ["42"] },
  { kill: "before:providerBarrier#1", phase: "dispatching_tools", repeated: ["42"] },
  { kill: "after:providerBarrier#1", phase: "calling_llm", repeated: [] },
  { kill: "before:toolBarrier#2", phase: "calling_llm", repeated: [] },
  { kill: "after:toolBarrier#2", phase: "dispatching_tools", repeated: [] },
  { kill: "tool:#2", phase: "dispatching_tools", repeated: ["43"] },
  { kill: "before:providerBarrier#2", phase: "dispatching_tools", repeated: ["43"] },
  { kill: "after:providerBarrier#2", phase: "calling_llm", repeated: [] },
  { kill: "before:terminalCommit#1", phase: "calling_llm", repeated: [] },
  { kill: "after:terminalCommit#1", phase: undefined, repeated: [] },
];

describe("crash matrix: kill -9 at every barrier of one run, then recover in another process", () => {
  it("one run reaches the kill points in the order the matrix assumes", async () => {
    const paths = await crashPaths();
    const child = await runChild({ store: paths.store, files: paths.files, trace: true });
    expect(child.code, describeChild(child)).toBe(0);
    const points = child.lines.flatMap((line) => (line.type === "point" ? [line.point] : []));
    expect(points).toEqual(RUN_POINTS);
    expect(child.lines.find((line) => line.type === "settled")).toMatchObject({ outcome: "completed", output: ANSWER });
    expect(CASES.map((item) => item.kill)).toEqual(RUN_POINTS);
  });

  it.each(CASES)(
    "killed at $kill: recovery finishes the run, each effect once",
    async ({ kill, phase, repeated }) => {
      const paths = await crashPaths();
      const child = await runChild({ store: paths.store, files: paths.files, kill });
      const context = describeChild(child);
      expect(child.signal, context).toBe("SIGKILL");
      expect(child.lines.at(-1), context).toMatchObject({ type: "killing", point: kill } satisfies Partial<ChildLine>);
      const admitted = admittedIds(child);

      const { environment, report, logger } = await reopen(paths);
      const rows = await environment.executions({ limit: 1_000 });
      const diagnosis = `${context}\nrecovery report: ${JSON.stringify(report)}\nwarnings:\n${logger.warnings.join("\n")}`;

      if (kill === "before:prepareExecution#1") {
        // Nothing was admitted, nothing was written, nothing ran.
        expect(admitted, diagnosis).toEqual([]);
        expect(rows, diagnosis).toEqual([]);
        expect(report, diagnosis).toEqual([]);
        expect(auditKeys(paths.files).calls).toBe(0);
        return;
      }

      // Exactly one execution; whatever the child printed is that one.
      expect(rows, diagnosis).toHaveLength(1);
      const executionId = rows[0]!.executionId;
      for (const id of admitted) expect(id, diagnosis).toBe(executionId);

      if (phase === undefined) {
        expect(report, diagnosis).toEqual([]);
      } else {
        expect(report, diagnosis).toEqual([expect.objectContaining({ executionId, phase, status: "continued" })]);
      }

      const result = await within(environment.wait(executionId).result, 30_000, `env.wait(${executionId}) after ${kill}\n${diagnosis}`);
      expect(result, diagnosis).toMatchObject({ executionId, outcome: "completed", output: ANSWER });

      const row = await environment.execution(executionId);
      expect(row, diagnosis).toMatchObject({ status: "terminal", phase: "terminal", outcome: "completed", output: ANSWER });

      const audit = auditKeys(paths.files, await barrierKeys(environment, [executionId]));
      expect(audit.problems, diagnosis).toEqual([]);
      expect(
        effectsByExecution(paths.files)
          .get(executionId)
          ?.map((effect) => effect.orderId)
          .sort(),
      ).toEqual(["42", "43"]);
      const repeatedOrders = readRepeatedOrders(audit.repeatedKeys, paths.files);
      expect({ repeats: audit.repeats, repeatedOrders }, diagnosis).toEqual({ repeats: repeated.length, repeatedOrders: [...repeated] });
      expect(
        logger.warnings.filter((warning) => !warning.includes("requires recovery")),
        diagnosis,
      ).toEqual([]);
    },
    60_000,
  );

  it("with { recover: false } nothing runs until env.recover(); then the run finishes", async () => {
    const paths = await crashPaths();
    const child = await runChild({ store: paths.store, files: paths.files, kill: "tool:#1" });
    expect(child.signal, describeChild(child)).toBe("SIGKILL");
    const [executionId] = admittedIds(child);

    const { environment, report } = await reopen(paths, { recover: false });
    expect(report).toEqual([]);
    await expect(environment.wait(executionId!).result).rejects.toMatchObject({ code: "EXECUTION_REHYDRATION_REQUIRED" });
    expect(await environment.execution(executionId!)).toMatchObject({ status: "active", phase: "dispatching_tools" });
    expect(auditKeys(paths.files).calls, "only the child's call").toBe(1);

    const recovered = await environment.recover();
    expect(recovered).toEqual([expect.objectContaining({ executionId, phase: "dispatching_tools", status: "continued" })]);
    const result = await within(environment.wait(executionId!).result, 30_000, "env.wait after env.recover()");
    expect(result).toMatchObject({ outcome: "completed", output: ANSWER });
    const audit = auditKeys(paths.files, await barrierKeys(environment, [executionId!]));
    expect(audit.problems).toEqual([]);
    expect({ calls: audit.calls, repeats: audit.repeats, effects: audit.effects }).toEqual({ calls: 3, repeats: 1, effects: 2 });
  }, 60_000);
});

/** The order ids of the keys called more than once. */
function readRepeatedOrders(repeatedKeys: Map<string, number>, files: { keyLog: string }): string[] {
  const orders = new Set<string>();
  for (const entry of readJsonLines<KeyLogEntry>(files.keyLog)) if (repeatedKeys.has(entry.key)) orders.add(entry.orderId);
  return [...orders].sort();
}
