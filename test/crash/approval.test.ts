// Human approval that survives restarts: an execution suspends for approval
// in process A, A is killed (SIGKILL) once the suspension is durable, and
// process B — this test, or another child — decides it from the store.
// Also a kill during the approval commit itself: before it (nothing was
// decided: the approval is still pending) and after it (phase `resuming`:
// the next process recovers it and finishes it).

import { afterEach, describe, expect, it } from "vitest";
import { Phronomy } from "../../host/index.js";
import {
  admittedIds,
  declinedAnswer,
  describeChild,
  expectedAnswer,
  runChild,
  startChild,
  type ChildConfig,
  type ChildLine,
  type KillSpec,
} from "./fixture.js";
import { auditKeys, barrierKeys, cleanUp, crashPaths, recordingLogger, reopen, within, type CrashPaths } from "./verify.js";

afterEach(cleanUp);

const ANSWER = expectedAnswer(1);

/** Process A: one run whose lookup needs approval, killed right after the
 * suspended terminal commit is durable. Returns its execution id. */
async function suspendInChild(paths: CrashPaths): Promise<string> {
  const child = await runChild({ store: paths.store, files: paths.files, approval: true, toolTurns: 1, kill: "after:terminalCommit#1" });
  const context = describeChild(child);
  expect(child.signal, context).toBe("SIGKILL");
  expect(child.lines.at(-1), context).toMatchObject({ type: "killing", point: "after:terminalCommit#1" });
  const admitted = admittedIds(child);
  expect(admitted, context).toHaveLength(1);
  return admitted[0]!;
}

/** A second child that decides the approval and is killed at `kill`. */
async function decideInChild(paths: CrashPaths, executionId: string, decision: NonNullable<ChildConfig["resume"]>, kill: KillSpec): Promise<void> {
  const child = await runChild({ store: paths.store, files: paths.files, approval: true, toolTurns: 1, mode: "resume", resume: decision, kill });
  const context = describeChild(child);
  expect(child.signal, context).toBe("SIGKILL");
  expect(child.lines[0], context).toMatchObject({ type: "recovered", report: [{ executionId, status: "suspended" }] });
  expect(child.lines.at(-1), context).toMatchObject({ type: "killing", point: kill });
}

describe("approval across processes: suspended in a killed process, decided in another", () => {
  it("the pending approval is listed after the crash; approving it runs the tool once and completes", async () => {
    const paths = await crashPaths();
    const executionId = await suspendInChild(paths);

    const { environment, agents, report, logger } = await reopen(paths, { approval: true, toolTurns: 1 });
    expect(report).toEqual([expect.objectContaining({ executionId, status: "suspended" })]);
    const row = await environment.execution(executionId);
    expect(row).toMatchObject({ status: "suspended", outcome: "suspended" });

    const pending = await environment.pendingApprovals();
    expect(pending).toEqual([expect.objectContaining({ executionId, agentId: "support" })]);
    const request = pending[0]!.request;
    expect(request.toolCalls).toEqual([expect.objectContaining({ toolName: "lookup", input: { orderId: "42" } })]);
    expect(auditKeys(paths.files).calls, "the tool must not run before the decision").toBe(0);

    const result = await within(agents[0]!.resume(executionId, { approvalId: request.approvalId, approved: true }).result, 30_000, "the resume");
    expect(result).toMatchObject({ executionId, outcome: "completed", output: ANSWER });
    expect(await environment.execution(executionId)).toMatchObject({ status: "terminal", outcome: "completed", output: ANSWER });
    expect(await environment.pendingApprovals()).toEqual([]);

    const audit = auditKeys(paths.files, await barrierKeys(environment, [executionId]));
    expect(audit.problems).toEqual([]);
    expect({ calls: audit.calls, effects: audit.effects }).toEqual({ calls: 1, effects: 1 });
    const decided = (await environment.timeline(executionId)).filter((step) => step.kind === "approval_decided");
    expect(decided).toEqual([expect.objectContaining({ payload: expect.objectContaining({ approvalId: request.approvalId, approved: true }) })]);
    expect(logger.warnings).toEqual([]);
  }, 60_000);

  it("declining it after the crash: the tool never runs and the model is told", async () => {
    const paths = await crashPaths();
    const executionId = await suspendInChild(paths);

    const { environment, agents } = await reopen(paths, { approval: true, toolTurns: 1 });
    const [pending] = await environment.pendingApprovals();
    expect(pending?.executionId).toBe(executionId);
    const resumed = agents[0]!.resume(executionId, { approvalId: pending!.request.approvalId, approved: false, reason: "no lookups today" });
    const result = await within(resumed.result, 30_000, "the declining resume");
    expect(result).toMatchObject({ executionId, outcome: "completed", output: declinedAnswer("no lookups today") });
    expect(await environment.execution(executionId)).toMatchObject({ status: "terminal", outcome: "completed" });
    expect(auditKeys(paths.files).calls, "a declined tool never runs").toBe(0);
    expect(await environment.pendingApprovals()).toEqual([]);
  }, 60_000);

  it("killed after the approval commit (phase resuming): the next process recovers and finishes it, tool once", async () => {
    const paths = await crashPaths();
    const executionId = await suspendInChild(paths);
    await decideInChild(paths, executionId, { executionId, approved: true }, "after:approvalCommit#1");

    const { environment, report, logger } = await reopen(paths, { approval: true, toolTurns: 1 });
    const diagnosis = `recovery report: ${JSON.stringify(report)}\nwarnings:\n${logger.warnings.join("\n")}`;
    expect(report, diagnosis).toEqual([expect.objectContaining({ executionId, phase: "resuming", status: "continued", continuation: "framework_tools" })]);
    const result = await within(environment.wait(executionId).result, 30_000, `env.wait after the approval commit\n${diagnosis}`);
    expect(result, diagnosis).toMatchObject({ executionId, outcome: "completed", output: ANSWER });
    expect(await environment.pendingApprovals()).toEqual([]);

    const audit = auditKeys(paths.files, await barrierKeys(environment, [executionId]));
    expect(audit.problems, diagnosis).toEqual([]);
    expect({ calls: audit.calls, effects: audit.effects }, diagnosis).toEqual({ calls: 1, effects: 1 });
  }, 60_000);

  it("killed after a declining approval commit: recovery tells the model, the tool never runs", async () => {
    const paths = await crashPaths();
    const executionId = await suspendInChild(paths);
    await decideInChild(paths, executionId, { executionId, approved: false, reason: "too risky" }, "after:approvalCommit#1");

    const { environment, report, logger } = await reopen(paths, { approval: true, toolTurns: 1 });
    const diagnosis = `recovery report: ${JSON.stringify(report)}\nwarnings:\n${logger.warnings.join("\n")}`;
    expect(report, diagnosis).toEqual([expect.objectContaining({ executionId, phase: "resuming", status: "continued", continuation: "approval_rejection" })]);
    const result = await within(environment.wait(executionId).result, 30_000, `env.wait after the declining commit\n${diagnosis}`);
    expect(result, diagnosis).toMatchObject({ executionId, outcome: "completed", output: declinedAnswer("too risky") });
    expect(auditKeys(paths.files).calls, "a declined tool never runs").toBe(0);
  }, 60_000);

  it("killed before the approval commit: nothing was decided, the approval is still pending and resume works", async () => {
    const paths = await crashPaths();
    const executionId = await suspendInChild(paths);
    await decideInChild(paths, executionId, { executionId, approved: true }, "before:approvalCommit#1");

    const { environment, agents, report } = await reopen(paths, { approval: true, toolTurns: 1 });
    expect(report).toEqual([expect.objectContaining({ executionId, status: "suspended" })]);
    const [pending] = await environment.pendingApprovals();
    expect(pending?.executionId).toBe(executionId);
    expect(auditKeys(paths.files).calls).toBe(0);
    const result = await within(agents[0]!.resume(executionId, { approvalId: pending!.request.approvalId, approved: true }).result, 30_000, "the resume");
    expect(result).toMatchObject({ executionId, outcome: "completed", output: ANSWER });
    const audit = auditKeys(paths.files, await barrierKeys(environment, [executionId]));
    expect(audit.problems).toEqual([]);
    expect({ calls: audit.calls, effects: audit.effects }).toEqual({ calls: 1, effects: 1 });
  }, 60_000);

  it("one owner at a time: while A lives (suspended) another open is refused naming A; after kill -9 of A the approval is decided elsewhere", async () => {
    const paths = await crashPaths();
    const a = startChild({ store: paths.store, files: paths.files, approval: true, toolTurns: 1 });
    const suspended = (await within(
      a.waitForLine((line) => line.type === "suspended"),
      30_000,
      "process A suspending",
    )) as Extract<ChildLine, { type: "suspended" }>;
    await expect(Phronomy.open({ store: paths.store, logger: recordingLogger() })).rejects.toMatchObject({
      code: "STORE",
      message: expect.stringContaining(`process ${String(a.process.pid)}`),
    });
    a.process.kill("SIGKILL");
    const ended = await a.ended;
    expect(ended.signal, describeChild(ended)).toBe("SIGKILL");

    const { environment, agents, report } = await reopen(paths, { approval: true, toolTurns: 1 });
    expect(report).toEqual([expect.objectContaining({ executionId: suspended.executionId, status: "suspended" })]);
    const pending = await environment.pendingApprovals();
    expect(pending.map((item) => [item.executionId, item.request.approvalId])).toEqual([[suspended.executionId, suspended.approvalId]]);
    const result = await within(agents[0]!.resume(suspended.executionId, { approvalId: suspended.approvalId, approved: true }).result, 30_000, "the resume");
    expect(result).toMatchObject({ outcome: "completed", output: ANSWER });
    const audit = auditKeys(paths.files, await barrierKeys(environment, [suspended.executionId]));
    expect(audit.problems).toEqual([]);
    expect({ calls: audit.calls, effects: audit.effects }).toEqual({ calls: 1, effects: 1 });
  }, 60_000);

  it("two approvals across three processes: A suspends, B approves and suspends again, both killed; C approves and completes", async () => {
    const paths = await crashPaths();
    const a = await runChild({ store: paths.store, files: paths.files, approval: true, toolTurns: 2, kill: "after:terminalCommit#1" });
    expect(a.signal, describeChild(a)).toBe("SIGKILL");
    const [executionId] = admittedIds(a);
    const first = a.lines.find((line) => line.type === "suspended");
    expect(first, "the suspended event follows the durable terminal commit, which the kill came after").toBeUndefined();

    const b = startChild({
      store: paths.store,
      files: paths.files,
      approval: true,
      toolTurns: 2,
      mode: "resume",
      resume: { executionId: executionId!, approved: true },
    });
    const second = (await within(
      b.waitForLine((line) => line.type === "suspended"),
      30_000,
      "process B suspending again",
    )) as Extract<ChildLine, { type: "suspended" }>;
    b.process.kill("SIGKILL");
    const bEnded = await b.ended;
    expect(bEnded.signal, describeChild(bEnded)).toBe("SIGKILL");
    expect(second.executionId).toBe(executionId);
    expect(auditKeys(paths.files).calls, "B ran the first lookup once").toBe(1);

    const { environment, agents, report } = await reopen(paths, { approval: true, toolTurns: 2 });
    expect(report).toEqual([expect.objectContaining({ executionId, status: "suspended" })]);
    const pending = await environment.pendingApprovals();
    expect(pending).toHaveLength(1);
    expect(pending[0]!.request.approvalId).toBe(second.approvalId);
    expect(pending[0]!.request.toolCalls).toEqual([expect.objectContaining({ toolName: "lookup", input: { orderId: "43" } })]);
    const result = await within(agents[0]!.resume(executionId!, { approvalId: second.approvalId, approved: true }).result, 30_000, "the second resume");
    expect(result).toMatchObject({ executionId, outcome: "completed", output: expectedAnswer(2) });
    const audit = auditKeys(paths.files, await barrierKeys(environment, [executionId!]));
    expect(audit.problems).toEqual([]);
    expect({ calls: audit.calls, effects: audit.effects }).toEqual({ calls: 2, effects: 2 });
    const decided = (await environment.timeline(executionId!)).filter((step) => step.kind === "approval_decided");
    expect(decided).toHaveLength(2);
  }, 60_000);
});
