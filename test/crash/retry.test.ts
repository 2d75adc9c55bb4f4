// A retry that survives kill -9 (docs/decisions/0026): an execution fails
// (MODEL_FAILED after its first lookup) in this process; a child retries
// it and is killed (SIGKILL) once the reopen is durable, at the new
// attempt's model barrier, or inside its next lookup; a fresh environment
// recovers attempt 2 to the answer. The first lookup never runs again, and
// every lookup key keeps exactly one effect.

import { afterEach, describe, expect, it } from "vitest";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { Phronomy } from "../../host/index.js";
import { AGENT_ID, SINGLE_INPUT, describeChild, expectedAnswer, idempotentLookup, orderIdOf, runChild, type KillSpec } from "./fixture.js";
import { auditKeys, cleanUp, crashPaths, recordingLogger, reopen, within, type CrashPaths } from "./verify.js";

afterEach(cleanUp);

/** Attempt 1, in this process: lookup(42), then the model fails. */
async function failedExecution(paths: CrashPaths): Promise<string> {
  const environment = await Phronomy.open({ store: paths.store, logger: recordingLogger() });
  try {
    const model = scriptedModel(({ turn }) =>
      turn === 0 ? { toolCalls: [{ toolName: "lookup", input: { orderId: orderIdOf(0) }, callId: "lookup-0-attempt-1" }] } : { error: "the provider is down" },
    );
    const agent = environment.agent({
      id: AGENT_ID,
      model,
      instructions: "You help customers with their orders.",
      tools: { lookup: idempotentLookup(paths.files) },
    });
    const run = agent.start(SINGLE_INPUT);
    const executionId = await run.executionId;
    await expect(run.result).rejects.toMatchObject({ code: "MODEL_FAILED" });
    return executionId;
  } finally {
    await environment.close();
  }
}

describe("retry across a kill -9", () => {
  for (const kill of ["after:reopenExecution#1", "after:providerBarrier#1", "tool:#1"] as const satisfies readonly KillSpec[]) {
    it(`killed at ${kill}, attempt 2 is recovered to the answer; the first lookup never runs again`, async () => {
      const paths = await crashPaths();
      const executionId = await failedExecution(paths);
      const child = await runChild({ store: paths.store, files: paths.files, mode: "retry", retry: { executionId }, kill });
      const context = describeChild(child);
      expect(child.signal, context).toBe("SIGKILL");
      expect(child.lines.at(-1), context).toMatchObject({ type: "killing", point: kill });

      const { environment, report } = await reopen(paths);
      expect(report, context).toEqual([expect.objectContaining({ executionId, status: "continued" })]);
      const result = await within(environment.wait(executionId).result, 20_000, `the recovered attempt 2 of ${executionId}`);
      expect(result).toMatchObject({ outcome: "completed", output: expectedAnswer(2) });
      const row = await environment.execution(executionId);
      expect(row).toMatchObject({ status: "terminal", outcome: "completed", metadata: { attempt: 2 } });
      const attempts = (await environment.timeline(executionId)).filter((step) => step.kind === "terminal").map((step) => step.attempt);
      expect(attempts).toEqual([1, 2]);
      const audit = auditKeys(paths.files);
      expect(audit.problems).toEqual([]);
      expect(audit.repeatedKeys.has(`${executionId}:lookup-0-attempt-1`), "the first lookup ran once").toBe(false);
    });
  }
});
