// A crash during recovery: the run is killed once (first crash), the
// process that recovers it is killed at each kill point it reaches (second
// crash), and a third process — this test — must still finish it with the
// right output, each effect once, every repeat with the key of the
// original. The first crash runs once; each second crash starts from a
// copy of what it left behind.

import { afterEach, describe, expect, it } from "vitest";
import { describeChild, expectedAnswer, runChild, type KillSpec } from "./fixture.js";
import { auditKeys, barrierKeys, cleanUp, copyCrashPaths, crashPaths, effectsByExecution, reopen, within } from "./verify.js";

afterEach(cleanUp);

const ANSWER = expectedAnswer(2);

describe("crash during recovery: kill -9 the recovering process at each of its points", () => {
  it.each<{ first: KillSpec }>([{ first: "tool:#1" }, { first: "after:providerBarrier#1" }])(
    "first killed at $first, then the recovery killed at every point",
    async ({ first }) => {
      const crashed = await crashPaths();
      const firstChild = await runChild({ store: crashed.store, files: crashed.files, kill: first });
      expect(firstChild.signal, describeChild(firstChild)).toBe("SIGKILL");

      // The recovery undisturbed, traced: which points it reaches.
      const traced = await copyCrashPaths(crashed);
      const trace = await runChild({ store: traced.store, files: traced.files, mode: "recover", trace: true });
      expect(trace.code, describeChild(trace)).toBe(0);
      expect(
        trace.lines.find((line) => line.type === "settled"),
        describeChild(trace),
      ).toMatchObject({ outcome: "completed", output: ANSWER });
      const points = trace.lines.flatMap((line) => (line.type === "point" ? [line.point] : []));
      expect(points.length).toBeGreaterThan(2);

      for (let index = 1; index <= points.length; index += 1) {
        const paths = await copyCrashPaths(crashed);
        const second = await runChild({ store: paths.store, files: paths.files, mode: "recover", kill: `point:#${index}` });
        const context = `first crash ${first}, second crash at point #${index} (${points[index - 1] ?? "?"})\n${describeChild(second)}`;
        expect(second.signal, context).toBe("SIGKILL");
        expect(second.lines.at(-1), context).toMatchObject({ type: "killing", index });

        const { environment, report, logger } = await reopen(paths);
        const rows = await environment.executions({ limit: 1_000 });
        const diagnosis = `${context}\nrecovery report: ${JSON.stringify(report)}\nwarnings:\n${logger.warnings.join("\n")}`;
        expect(rows, diagnosis).toHaveLength(1);
        const executionId = rows[0]!.executionId;
        expect(
          report.filter((item) => item.status !== "continued"),
          diagnosis,
        ).toEqual([]);
        const result = await within(environment.wait(executionId).result, 30_000, `env.wait\n${diagnosis}`);
        expect(result, diagnosis).toMatchObject({ executionId, outcome: "completed", output: ANSWER });
        expect(await environment.execution(executionId), diagnosis).toMatchObject({ status: "terminal", outcome: "completed", output: ANSWER });
        const audit = auditKeys(paths.files, await barrierKeys(environment, [executionId]));
        expect(audit.problems, diagnosis).toEqual([]);
        expect(
          effectsByExecution(paths.files)
            .get(executionId)
            ?.map((effect) => effect.orderId)
            .sort(),
          diagnosis,
        ).toEqual(["42", "43"]);
        await environment.close();
      }
    },
    120_000,
  );
});
