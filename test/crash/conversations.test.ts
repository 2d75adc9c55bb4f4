// kill -9 with conversations (docs/decisions/0024): a child defines one
// agent by name ("support") and runs 20 of its conversations, 3 runs each,
// and is killed with runs in flight. A new environment defines "support"
// by name only — it never names a conversation — and the one scan at open
// finds every unfinished execution by the definition name stored with it:
// each admitted run completes with the right output, each tool effect
// exactly once.

import { afterEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import { generator, seedFrom } from "../support/seeded.js";
import { admittedIds, describeChild, expectedAnswer, runChild } from "./fixture.js";
import { auditKeys, barrierKeys, cleanUp, crashPaths, effectsByExecution, reopen, within } from "./verify.js";

afterEach(cleanUp);

const CONVERSATIONS = 20;
const RUNS = 3;
/** Kill points of one run (test/crash/random-kill.test.ts). */
const POINTS_PER_RUN = 14;

describe("kill -9 with conversations of one definition", () => {
  it("recovers every interrupted run by the definition's name alone; every admitted run completes, each effect once", async () => {
    const seed = seedFrom("CRASH_SEED");
    const total = CONVERSATIONS * RUNS * POINTS_PER_RUN;
    const point = 50 + Math.floor(generator(seed)() * (total - 100));
    console.log(`[crash] conversations: CRASH_SEED=${seed} kills at point #${point} of ${total}`);
    const paths = await crashPaths();
    const child = await runChild(
      { store: paths.store, files: paths.files, agents: CONVERSATIONS, runsPerAgent: RUNS, kill: `inflight:#${point}`, conversations: true },
      90_000,
    );
    const context = `CRASH_SEED=${seed}\n${describeChild(child)}`.slice(0, 4_000);
    expect(child.signal, context).toBe("SIGKILL");
    expect(
      child.lines.filter((line) => line.type === "failed"),
      context,
    ).toEqual([]);

    const before = await SqliteStore.open(paths.store);
    const unfinished = await before.unfinishedExecutions();
    await before.close();
    expect(unfinished.length, context).toBeGreaterThan(0);
    // The definition name is stored with each execution.
    expect(new Set(unfinished.map((row) => row.metadata.config?.["definition"]))).toEqual(new Set(["support"]));

    const { environment, report, logger } = await reopen(paths, { agents: CONVERSATIONS, conversations: true });
    const diagnosis = `${context}\nreport: ${JSON.stringify(report)}\nwarnings: ${logger.warnings.join("\n")}`;
    expect(
      report.filter((item) => item.status !== "continued"),
      diagnosis,
    ).toEqual([]);
    expect(report.map((item) => item.executionId).sort(), diagnosis).toEqual(unfinished.map((row) => row.executionId).sort());

    const rows = await environment.executions({ limit: 1_000 });
    const ids = rows.map((row) => row.executionId);
    for (const id of admittedIds(child)) expect(ids, diagnosis).toContain(id);
    const results = await within(Promise.all(ids.map((id) => environment.wait(id).result)), 60_000, "the waits");
    for (const result of results) expect(result.output).toBe(expectedAnswer(2));
    const audit = auditKeys(paths.files, await barrierKeys(environment, ids));
    expect(audit.problems, diagnosis).toEqual([]);
    const effects = effectsByExecution(paths.files);
    for (const id of ids)
      expect(
        effects
          .get(id)
          ?.map((effect) => effect.orderId)
          .sort(),
        `effects of ${id}`,
      ).toEqual(["42", "43"]);
  }, 180_000);
});
