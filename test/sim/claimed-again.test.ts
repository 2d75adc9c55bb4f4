// A decision filed in the approval inbox and claimed again by a later
// owner (the whole-host simulation found it, seed 208738011; decision
// 0086): the later owner asks whether a former owner's claim already
// landed. It did only if the wait's `approval_decided` step names that
// decision (`filedAs`); an answer given elsewhere — here a value given at
// the owner — is not it, even though it too approved. Before, any approving
// step passed for it, so a filed value its schema refuses was marked
// applied and its filer told "completed". Real environments on the
// simulated cluster store, on a fake clock.

import { expect, it, vi } from "vitest";
import { z } from "zod";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { humanInput, Phronomy } from "../../host/index.js";
import { Cluster } from "./cluster-store.js";
import { advance, leaseMs, none, useSimulatedClock } from "./two-processes.js";

useSimulatedClock();

async function openAskingTwice(cluster: Cluster, owner: string) {
  // Asks for a date twice, then answers.
  const model = scriptedModel(({ messages }) =>
    messages.filter((message) => message.role === "tool").length < 2
      ? { toolCalls: [{ toolName: "askDate", input: { question: "When?" } }] }
      : { text: "booked" },
  );
  const askDate = humanInput({ inputSchema: z.object({ question: z.string() }), responseSchema: z.object({ date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/) }) });
  const environment = await Phronomy.open({ store: cluster.storeFor(owner), logger: { warn: () => undefined } });
  const agent = environment.agent({ id: "c", model, tools: { askDate } });
  await environment.recovery("c");
  await vi.advanceTimersByTimeAsync(0);
  return { environment, agent };
}

function pendingWait(cluster: Cluster, executionId: string): string {
  return (cluster.execution(executionId)?.approvalRequest as { approvalId: string }).approvalId;
}

function inboxRow(cluster: Cluster, decisionId: string): Record<string, unknown> | undefined {
  return cluster.connection.prepare("SELECT state, claims, error FROM approval_inbox WHERE decision_id = ?").get(decisionId);
}

it("a filed decision claimed again is applied only if its wait's step names it: another answer that approved is not it", async () => {
  const cluster = new Cluster(leaseMs);
  const p1 = await openAskingTwice(cluster, "p1");
  const run = p1.agent.start("book a delivery");
  run.result.catch(() => undefined);
  await advance(cluster, 100, none);
  const executionId = await run.executionId;
  const firstWait = pendingWait(cluster, executionId);

  // The first wait answered at the owner; the execution waits again.
  await advance(cluster, 0, none);
  const given = p1.agent.resume(executionId, { waitId: firstWait, value: { date: "2027-01-05" } });
  given.result.catch(() => undefined);
  await advance(cluster, 100, none);
  const secondWait = pendingWait(cluster, executionId);
  expect(secondWait).not.toBe(firstWait);

  // A value for the first wait, filed by another process and claimed by a
  // former owner that died before judging it: claimed once already.
  cluster.connection
    .prepare(
      `INSERT INTO approval_inbox (decision_id, execution_id, agent_id, approval_id, approved, reason, execution_revision, filed_by, filed_at, state, claimed_by, claims, kind, action)
       VALUES ('filed-1', ?, 'c', ?, 1, NULL, 1, 'p2', ?, 'claimed', 'p0@1', 1, 'approval', ?)`,
    )
    .run(executionId, firstWait, Date.now(), JSON.stringify({ given: { kind: "value", callId: null, payload: { date: "next week" } } }));

  // The lease tick's poll: p1 claims it again and judges it.
  await advance(cluster, leaseMs, none);
  expect(inboxRow(cluster, "filed-1")).toMatchObject({ state: "refused", claims: 2 });
  expect(JSON.parse(String(inboxRow(cluster, "filed-1")?.["error"]))).toMatchObject({ code: "APPROVAL_MISMATCH" });
  // The execution still waits on its second wait; nothing of the filed value was recorded.
  expect(cluster.execution(executionId)).toMatchObject({ status: "suspended" });
  expect(pendingWait(cluster, executionId)).toBe(secondWait);
  expect(
    JSON.stringify(
      cluster.connection
        .prepare("SELECT payload FROM steps JOIN executions ON executions.rowid = steps.execution_rowid WHERE execution_id = ?")
        .all(executionId),
    ),
  ).not.toContain("next week");

  // A claim that did land is still recognised: the second wait answered
  // through the inbox, its row left claimed, is judged applied when claimed again.
  const p2 = cluster.storeFor("p2");
  const filed = await p2.fileDecision({
    decisionId: "filed-2",
    executionId,
    agentId: "c",
    approvalId: secondWait,
    approved: true,
    reason: null,
    filedAt: Date.now(),
    action: { given: { kind: "value", callId: null, payload: { date: "2027-01-06" } } },
  });
  expect(filed.decisionId).toBe("filed-2");
  await advance(cluster, leaseMs, none);
  expect(inboxRow(cluster, "filed-2")).toMatchObject({ state: "applied" });
  const decided = cluster.connection
    .prepare(
      "SELECT json_extract(payload, '$.filedAs') AS filed_as FROM steps JOIN executions ON executions.rowid = steps.execution_rowid WHERE execution_id = ? AND kind = 'approval_decided' ORDER BY seq",
    )
    .all(executionId)
    .map((row) => row["filed_as"]);
  expect(decided).toEqual([null, "filed-2"]);
  cluster.connection.prepare("UPDATE approval_inbox SET state = 'claimed', claimed_by = 'p0@1' WHERE decision_id = 'filed-2'").run();
  await advance(cluster, leaseMs, none);
  expect(inboxRow(cluster, "filed-2")).toMatchObject({ state: "applied", claims: 2 });
  expect(cluster.execution(executionId)).toMatchObject({ status: "terminal", outcome: "completed" });
  await Promise.all([p1.environment.close(), p2.close()]);
});
