// A typed wait resumed twice (issue 28, "decided in the core"; decision
// 0075): while the first value's commit is held in the simulated store, a
// different value is refused (another decision under way) and the same
// value follows the first; once it lands the execution runs on with that
// value exactly once, and a value given afterwards — here or at another
// process of the cluster — changes nothing. And a value committed by a
// process killed before the call's result: the recorded batch carries the
// value, so the process taking the conversation over runs on with it (no
// code runs). A value refused by its schema changes nothing, given at
// the owner or filed by the process not holding the conversation (the
// simulated store keeps PostgreSQL's approval inbox, decision 0086: the
// owner refuses it and the filer is told so); the good value, filed, is
// then committed once. An answer racing a cancel (given at either process,
// in either order): one of them wins, and at most one answer is committed. Real environments on the
// simulated cluster store, on a fake clock.

import { expect, it, vi } from "vitest";
import { z } from "zod";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { humanInput, Phronomy, type Agent, type Environment } from "../../host/index.js";
import { Cluster, type ClusterStore, type PendingWrite } from "./cluster-store.js";
import { advance, leaseMs, none, useSimulatedClock } from "./two-processes.js";

useSimulatedClock();

const isDecision = (write: PendingWrite): boolean => write.operation.type === "approvalCommit";

async function openAsking(
  cluster: Cluster,
  owner: string,
  answers: unknown[],
): Promise<{ close(): Promise<void>; agent: Agent; store: ClusterStore; environment: Environment }> {
  const model = scriptedModel(({ messages }) => {
    const last = messages.at(-1);
    if (last?.role !== "tool") return { toolCalls: [{ toolName: "askDate", input: { question: "When?" } }] };
    answers.push(last.results[0]?.output);
    return { text: "booked" };
  });
  const askDate = humanInput({ inputSchema: z.object({ question: z.string() }), responseSchema: z.object({ date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/) }) });
  const store = cluster.storeFor(owner);
  const environment = await Phronomy.open({ store, logger: { warn: () => undefined } });
  const agent = environment.agent({ id: "c", model, tools: { askDate } });
  await environment.recovery("c");
  await vi.advanceTimersByTimeAsync(0);
  return { agent, store, environment, close: () => environment.close() };
}

it("a typed wait resumed twice: one value is taken, exactly once; a different one is refused, the same one follows", async () => {
  const cluster = new Cluster(leaseMs);
  const answers: unknown[] = [];
  const p1 = await openAsking(cluster, "p1", answers);
  const p2 = await openAsking(cluster, "p2", answers);
  const run = p1.agent.start("book a delivery");
  run.result.catch(() => undefined);
  await advance(cluster, 100, none);
  const executionId = await run.executionId;
  const request = cluster.execution(executionId)?.approvalRequest as { approvalId: string; kind: string };
  expect(request.kind).toBe("input");
  const waitId = request.approvalId;

  const first = p1.agent.resume(executionId, { waitId, value: { date: "2027-01-05" } });
  await advance(cluster, 50, isDecision);
  expect(cluster.pending.some(isDecision)).toBe(true);
  const other = p1.agent.resume(executionId, { waitId, value: { date: "2027-01-06" } });
  const same = p1.agent.resume(executionId, { waitId, value: { date: "2027-01-05" } });
  await expect(other.result).rejects.toMatchObject({ code: "APPROVAL_MISMATCH", details: { mismatch: "decision_in_progress" } });

  await advance(cluster, leaseMs, none);
  await expect(first.result).resolves.toMatchObject({ outcome: "completed", output: "booked" });
  await expect(same.result).resolves.toMatchObject({ outcome: "completed", output: "booked" });
  expect(answers).toEqual([{ date: "2027-01-05" }]);

  const late = p2.agent.resume(executionId, { waitId, value: { date: "2027-01-07" } });
  late.result.catch(() => undefined);
  await advance(cluster, leaseMs, none);
  await expect(late.result).rejects.toMatchObject({ code: "APPROVAL_MISMATCH" });
  expect(answers).toEqual([{ date: "2027-01-05" }]);
  await vi.advanceTimersByTimeAsync(0);
  await Promise.all([p1.close(), p2.close()]);
});

it("a typed wait's value committed, then its process killed before the call's result: the process taking over runs on with the value", async () => {
  const cluster = new Cluster(leaseMs);
  const answers: unknown[] = [];
  const p1 = await openAsking(cluster, "p1", answers);
  const p2 = await openAsking(cluster, "p2", answers);
  const run = p1.agent.start("book a delivery");
  run.result.catch(() => undefined);
  await advance(cluster, 100, none);
  const executionId = await run.executionId;
  const waitId = (cluster.execution(executionId)?.approvalRequest as { approvalId: string }).approvalId;
  const given = p1.agent.resume(executionId, { waitId, value: { date: "2027-01-05" } });
  given.result.catch(() => undefined);
  // The decision lands; nothing p1 writes after it does.
  await advance(cluster, 50, (write) => write.handle === p1.store && !isDecision(write));
  expect(cluster.execution(executionId)).toMatchObject({ status: "active", phase: "resuming" });
  expect(cluster.execution(executionId)?.metadata.toolBatch).toEqual([expect.objectContaining({ toolName: "askDate", response: { date: "2027-01-05" } })]);
  p1.store.kill();
  await advance(cluster, leaseMs * 4, none);
  expect(cluster.leases.get("c")?.owner).toBe("p2");
  expect(cluster.execution(executionId)).toMatchObject({ status: "terminal", outcome: "completed", output: "booked" });
  expect(answers).toEqual([{ date: "2027-01-05" }]);
  await p2.close();
});

/** The answers committed to the execution's waits. */
function decisionsOf(cluster: Cluster, executionId: string): unknown[] {
  return cluster.connection
    .prepare(
      "SELECT payload FROM steps JOIN executions ON executions.rowid = steps.execution_rowid WHERE execution_id = ? AND kind = 'approval_decided' ORDER BY seq",
    )
    .all(executionId)
    .map((row) => JSON.parse(String(row["payload"])));
}

/** p1 and p2 on one cluster, p1 holding "c" with an execution waiting for a date. */
async function waitingAtP1(answers: unknown[]) {
  const cluster = new Cluster(leaseMs);
  const p1 = await openAsking(cluster, "p1", answers);
  const p2 = await openAsking(cluster, "p2", answers);
  const run = p1.agent.start("book a delivery");
  run.result.catch(() => undefined);
  await advance(cluster, 100, none);
  const executionId = await run.executionId;
  const waitId = (cluster.execution(executionId)?.approvalRequest as { approvalId: string }).approvalId;
  expect(cluster.leases.get("c")?.owner).toBe("p1");
  return { cluster, p1, p2, executionId, waitId };
}

it("a value refused by its schema changes nothing, given at the owner or filed from the other process; the good one, filed, is committed once", async () => {
  const answers: unknown[] = [];
  const { cluster, p1, p2, executionId, waitId } = await waitingAtP1(answers);
  const refused = p1.agent.resume(executionId, { waitId, value: { date: "next week" } });
  refused.result.catch(() => undefined);
  await advance(cluster, leaseMs, none);
  const elsewhere = p2.agent.resume(executionId, { waitId, value: { date: "the week after" } });
  elsewhere.result.catch(() => undefined);
  await advance(cluster, leaseMs, none);
  await expect(refused.result).rejects.toMatchObject({ code: "INVALID_INPUT", details: { paths: [["date"]] } });
  await expect(elsewhere.result).rejects.toMatchObject({ code: "INVALID_INPUT" });
  expect(cluster.execution(executionId)).toMatchObject({ status: "suspended" });
  expect(decisionsOf(cluster, executionId)).toEqual([]);
  const steps = JSON.stringify(
    cluster.connection.prepare("SELECT payload FROM steps JOIN executions ON executions.rowid = steps.execution_rowid WHERE execution_id = ?").all(executionId),
  );
  expect(steps).not.toContain("next week");
  expect(steps).not.toContain("the week after");

  const given = p2.agent.resume(executionId, { waitId, value: { date: "2027-01-05" }, decidedBy: "ana" });
  given.result.catch(() => undefined);
  await advance(cluster, leaseMs, none);
  await expect(given.result).resolves.toMatchObject({ outcome: "completed", output: "booked" });
  expect(answers).toEqual([{ date: "2027-01-05" }]);
  expect(decisionsOf(cluster, executionId)).toEqual([expect.objectContaining({ decidedBy: "ana", action: expect.objectContaining({ kind: "value" }) })]);
  await vi.advanceTimersByTimeAsync(0);
  await Promise.all([p1.close(), p2.close()]);
});

for (const order of ["answer first", "cancel first"] as const) {
  for (const canceller of ["p1", "p2"] as const) {
    it(`an answer racing a cancel (${order}, the cancel at ${canceller}): one wins, at most one answer is committed`, async () => {
      const answers: unknown[] = [];
      const { cluster, p1, p2, executionId, waitId } = await waitingAtP1(answers);
      const outcomeOf = (settling: Promise<{ outcome: string }>): Promise<string> =>
        settling.then(
          (result) => result.outcome,
          (error: { code?: string }) => String(error.code),
        );
      const answer = (): Promise<string> => outcomeOf(p1.agent.resume(executionId, { waitId, value: { date: "2027-01-05" } }).result);
      const cancel = (): Promise<string> => outcomeOf((canceller === "p1" ? p1 : p2).environment.cancel(executionId, { reason: "racing" }));
      let answered: Promise<string>;
      let cancelled: Promise<string>;
      if (order === "answer first") {
        answered = answer();
        cancelled = cancel();
      } else {
        cancelled = cancel();
        answered = answer();
      }
      await advance(cluster, leaseMs * 2, none);
      const [answerEnd, cancelEnd] = await Promise.all([answered, cancelled]);
      const row = cluster.execution(executionId);
      const decisions = decisionsOf(cluster, executionId);
      expect(row?.status, `answer → ${answerEnd}, cancel → ${cancelEnd}`).toBe("terminal");
      expect(decisions.length).toBeLessThanOrEqual(1);
      expect(answers.length).toBeLessThanOrEqual(decisions.length);
      if (row?.outcome === "completed") {
        // The answer won and ran to its end before the cancel took.
        expect(answerEnd).toBe("completed");
        expect(answers).toEqual([{ date: "2027-01-05" }]);
      } else {
        expect(row?.error).toMatchObject({ code: "CANCELLED" });
        expect(answerEnd).not.toBe("completed");
      }
      await vi.advanceTimersByTimeAsync(0);
      await Promise.all([p1.close(), p2.close()]);
    });
  }
}
