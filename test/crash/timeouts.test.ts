// A recovered execution honours its durable budget (docs/decisions/0016):
// a real child process starts a run with a timeout and a model that never
// answers, and is killed with SIGKILL once the run is admitted; the next
// process recovers it and the run ends TIMEOUT on what its budget has
// left — the running time accrued durably is spent, the time the process
// was down is not.

import Database from "better-sqlite3";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import type { LanguageModelV4 } from "@ai-sdk/provider";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { Phronomy, TimeoutError, type Environment } from "../../host/index.js";
import { runUntilKilled } from "../support/child-process.js";
import { cleanUp, crashPaths, recordingLogger, within } from "./verify.js";

const here = dirname(fileURLToPath(import.meta.url));
const environments: Environment[] = [];

afterEach(async () => {
  for (const environment of environments.splice(0)) await environment.close().catch(() => undefined);
  await cleanUp();
});

/** Runs the child to its SIGKILL; returns the id of the run it left. */
async function startAndKill(store: string, timeoutMs: number, where: "agent" | "start" | "recover"): Promise<string> {
  const line = await runUntilKilled<{ executionId: string }>(join(here, "timeout-child.ts"), [store, String(timeoutMs), where]);
  return line.executionId;
}

/** Never answers; settles only when its call is aborted. */
function hangingModel(): LanguageModelV4 {
  return {
    specificationVersion: "v4",
    provider: "test",
    modelId: "hanging",
    supportedUrls: {},
    doGenerate: (options) => new Promise((_, reject) => options.abortSignal?.addEventListener("abort", () => reject(options.abortSignal?.reason))),
    doStream: () => Promise.reject(new Error("not streamed")),
  };
}

async function reopen(store: string, model: LanguageModelV4) {
  const environment = await Phronomy.open({ store, logger: recordingLogger() });
  environments.push(environment);
  environment.agent({ id: "support", model });
  const report = await environment.recovery("support");
  return { environment, report };
}

describe("a recovered execution's timeout", () => {
  it("killed with SIGKILL mid-run, the agent's timeoutMs is durable: the recovered run of a hanging model ends TIMEOUT", async () => {
    const { store } = await crashPaths();
    const executionId = await startAndKill(store, 1_000, "agent");
    // The agent is defined again without any timeout: the budget comes from the store.
    const { environment, report } = await reopen(store, hangingModel());
    expect(report).toEqual([expect.objectContaining({ executionId, status: "continued", continuation: "recall_model" })]);
    const error = await within(environment.wait(executionId).result, 20_000, "the recovered run of a hanging model").then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error).toMatchObject({ code: "TIMEOUT", details: { timeoutMs: 1_000 } });
    const row = await environment.execution(executionId);
    expect(row).toMatchObject({ status: "terminal", outcome: "failed", error: { code: "TIMEOUT" }, metadata: { config: { timeoutMs: 1_000 } } });
    // The recovered session's barrier moved the running stretch's start onto this process's clock.
    expect(row?.metadata.runningSince).toEqual(expect.any(Number));
  }, 60_000);

  it("the running time accrued before the crash is spent: a run that had used its whole budget times out on recovery instead of answering", async () => {
    const { store } = await crashPaths();
    const executionId = await startAndKill(store, 60_000, "start");
    // As if its last barrier had been written two minutes into the run.
    const side = new Database(store);
    side.prepare("UPDATE executions SET created_at = updated_at - 120000 WHERE execution_id = ?").run(executionId);
    side.close();
    // A model that would answer at once on a fresh budget.
    const model = scriptedModel([{ text: "Order 42 has shipped." }], { latencyMs: 200 });
    const { environment, report } = await reopen(store, model);
    expect(report).toEqual([expect.objectContaining({ executionId, status: "continued" })]);
    const error = await within(environment.wait(executionId).result, 20_000, "the recovered run").then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(TimeoutError);
    expect(await environment.execution(executionId)).toMatchObject({ outcome: "failed", error: { code: "TIMEOUT" } });
    expect(model.turnsServed, "no answer is taken once the budget is spent").toBe(0);
  }, 60_000);

  it("the time a process was down is never spent, across two crashes: the second recovery still has the budget", async () => {
    const { store } = await crashPaths();
    const executionId = await startAndKill(store, 60_000, "start");
    // As if the first crash had happened two minutes ago: the run had used
    // nothing of its budget, and was down for two minutes since.
    const side = new Database(store);
    side.prepare("UPDATE executions SET created_at = created_at - 120000, updated_at = updated_at - 120000 WHERE execution_id = ?").run(executionId);
    side.close();
    // A second process recovers it (its first barrier moves the running
    // stretch's start onto its clock) and is killed in turn.
    expect(await startAndKill(store, 0, "recover")).toBe(executionId);
    // Counted from the row's creation, the two minutes of downtime would
    // spend the 60 s budget; counted as running time, nearly all of it is left.
    const model = scriptedModel([{ text: "Order 42 has shipped." }]);
    const { environment, report } = await reopen(store, model);
    expect(report).toEqual([expect.objectContaining({ executionId, status: "continued" })]);
    await expect(within(environment.wait(executionId).result, 20_000, "the twice recovered run")).resolves.toMatchObject({
      outcome: "completed",
      output: "Order 42 has shipped.",
    });
  }, 60_000);
});
