// Callers left in a process whose conversation moved to another process
// (docs/decisions/0063, "Found and fixed" 3, 4 and 15): two real environments
// on the simulated cluster store, on a fake clock. When the store says the
// lease is lost (`leasesLost`), the start's Run of an execution suspended
// here, and the Run of a message queued here, follow their executions to
// the process that runs them now and settle with their real outcome —
// never pending for ever, never AGENT_BUSY for a message that then ran.

import { describe, expect, it, vi } from "vitest";
import { scriptedModel, type ScriptedTurn } from "../../host/agent/scripted-model.js";
import { Cluster } from "./cluster-store.js";
import { leaseMs, open, useSimulatedClock, type Process } from "./two-processes.js";

/** A model that asks for a refund (needs approval) on its first turn of a
 * conversation's first message, and answers text after a tool result. */
function refundingModel(gate?: Promise<void>) {
  return scriptedModel(async ({ messages }): Promise<ScriptedTurn> => {
    await gate;
    const afterTool = messages.some((message) => message.role === "tool");
    const asks = messages.filter((message) => message.role === "user").length === 1;
    return afterTool || !asks ? { text: "done" } : { toolCalls: [{ toolName: "refund", input: { orderId: "1" } }] };
  });
}

/** p1 holds conversation c; p2 asked for it (refused), so it takes the
 * lease over once p1 stops renewing past the lease. */
async function moveAway(first: Process, second: Process): Promise<void> {
  await expect(second.agent.conversation("c").start("hello from p2").result).rejects.toMatchObject({ code: "AGENT_BUSY" });
  first.store.stalledUntil = Date.now() + leaseMs * 2;
  await vi.advanceTimersByTimeAsync(leaseMs * 2 + leaseMs);
}

describe("a caller whose conversation moved to another process", () => {
  useSimulatedClock();

  it("follows an execution suspended here and ended at the process that took the conversation over", async () => {
    const cluster = new Cluster(leaseMs, true);
    const first = await open(cluster, "p1", refundingModel());
    const second = await open(cluster, "p2", refundingModel());
    const events: string[] = [];
    const run = first.agent.conversation("c").start("refund order 1", { onEvent: (event) => void events.push(event.type) });
    const executionId = await run.executionId;
    await vi.advanceTimersByTimeAsync(100);
    expect(cluster.execution(executionId)?.status).toBe("suspended");
    await moveAway(first, second);
    expect(cluster.leases.get("c")?.owner).toBe("p2");
    const approvalId = (cluster.execution(executionId)?.approvalRequest as { approvalId: string }).approvalId;
    const resumed = second.agent.conversation("c").resume(executionId, { approvalId, approved: true });
    await vi.advanceTimersByTimeAsync(leaseMs);
    await expect(resumed.result).resolves.toMatchObject({ outcome: "completed", output: "done" });
    await vi.advanceTimersByTimeAsync(leaseMs);
    await expect(run.result).resolves.toMatchObject({ executionId, outcome: "completed", output: "done" });
    // The start's events ended with its suspension (docs/decisions/0018).
    expect(events.at(-1)).toBe("approval_required");
    await Promise.all([first.environment.close(), second.environment.close()]);
  });

  it("follows an execution that suspended here after its lease was given up, and ended at the process that took it", async () => {
    const cluster = new Cluster(leaseMs, true);
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => {
      answer = resolve;
    });
    const first = await open(cluster, "p1", refundingModel(answered));
    const second = await open(cluster, "p2", refundingModel());
    const run = first.agent.conversation("c").start("refund order 1");
    // Settled while p2 still holds the conversation: not only once p1
    // takes it back (its recovery then lets the stale suspension go).
    let holderWhenSettled: string | undefined;
    void run.result.finally(() => (holderWhenSettled = cluster.leases.get("c")?.owner));
    const executionId = await run.executionId;
    // A partition move while the model call runs; the suspension still
    // lands (nobody took the lease yet) — and nothing tells the caller.
    expect(first.store.giveUpLease()).toBe("c");
    await vi.advanceTimersByTimeAsync(10);
    answer();
    await vi.advanceTimersByTimeAsync(100);
    expect(cluster.execution(executionId)?.status).toBe("suspended");
    await second.agent.conversation("c").start("hello from p2", { onBusy: "enqueue" }).executionId;
    expect(cluster.leases.get("c")?.owner).toBe("p2");
    await vi.advanceTimersByTimeAsync(leaseMs);
    const approvalId = (cluster.execution(executionId)?.approvalRequest as { approvalId: string }).approvalId;
    await expect(second.agent.conversation("c").resume(executionId, { approvalId, approved: true }).result).resolves.toMatchObject({ outcome: "completed" });
    await vi.advanceTimersByTimeAsync(leaseMs);
    await expect(run.result).resolves.toMatchObject({ executionId, outcome: "completed", output: "done" });
    expect(holderWhenSettled).toBe("p2");
    await Promise.all([first.environment.close(), second.environment.close()]);
  });

  it("follows a message queued here to the process that ran it, instead of telling it AGENT_BUSY", async () => {
    const cluster = new Cluster(leaseMs, true);
    const first = await open(cluster, "p1", refundingModel());
    const second = await open(cluster, "p2", refundingModel());
    const suspended = first.agent.conversation("c").start("refund order 1");
    const suspendedId = await suspended.executionId;
    await vi.advanceTimersByTimeAsync(100);
    const queued = first.agent.conversation("c").start("and then?", { onBusy: "enqueue" });
    const queuedId = await queued.executionId;
    await vi.advanceTimersByTimeAsync(100);
    await moveAway(first, second);
    const approvalId = (cluster.execution(suspendedId)?.approvalRequest as { approvalId: string }).approvalId;
    await second.agent.conversation("c").resume(suspendedId, { approvalId, approved: true }).result;
    await vi.advanceTimersByTimeAsync(leaseMs * 2);
    expect(cluster.execution(queuedId)).toMatchObject({ status: "terminal", outcome: "completed" });
    await expect(queued.result).resolves.toMatchObject({ executionId: queuedId, outcome: "completed", output: "done" });
    await expect(suspended.result).resolves.toMatchObject({ executionId: suspendedId, outcome: "completed" });
    await Promise.all([first.environment.close(), second.environment.close()]);
  });

  it("follows a keyed start to the message queued under its key by the process that took the conversation, read here after the move", async () => {
    const cluster = new Cluster(leaseMs, true);
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => {
      answer = resolve;
    });
    const first = await open(cluster, "p1", refundingModel(answered));
    const second = await open(cluster, "p2", refundingModel());
    const run = first.agent.conversation("c").start("refund order 1");
    const executionId = await run.executionId;
    const refused = second.agent.conversation("c").start("hello from p2").result;
    await vi.advanceTimersByTimeAsync(100);
    await expect(refused).rejects.toMatchObject({ code: "AGENT_BUSY" });
    // p1 loses its connection while the model answers: its suspension is
    // not written (the execution held for recovery here); p2 takes c over
    // and runs the execution to the same suspension.
    first.store.disconnectedUntil = Date.now() + leaseMs * 3;
    answer();
    await vi.advanceTimersByTimeAsync(leaseMs * 4);
    expect(cluster.leases.get("c")?.owner).toBe("p2");
    expect(cluster.execution(executionId)?.status).toBe("suspended");
    // p2 queues a keyed message behind it.
    const queued = second.agent.conversation("c").start("and then?", { onBusy: "enqueue", idempotencyKey: "k" });
    const queuedId = await queued.executionId;
    await vi.advanceTimersByTimeAsync(100);
    // A decision at p1 recovers what p1 held first — and reads c's queue,
    // c held at p2 — then is refused (p1 does not hold c).
    const approvalId = (cluster.execution(executionId)?.approvalRequest as { approvalId: string }).approvalId;
    const refusedDecision = first.agent.conversation("c").resume(executionId, { approvalId, approved: true }).result;
    await vi.advanceTimersByTimeAsync(100);
    await expect(refusedDecision).rejects.toMatchObject({ code: "EXECUTION_REHYDRATION_REQUIRED" });
    // A start with the same key at p1 follows that message to its end at p2.
    const again = first.agent.conversation("c").start("and then?", { onBusy: "enqueue", idempotencyKey: "k" });
    let againSettled = false;
    void again.result.then(
      () => (againSettled = true),
      () => (againSettled = true),
    );
    await vi.advanceTimersByTimeAsync(100);
    await second.agent.conversation("c").resume(executionId, { approvalId, approved: true }).result;
    await vi.advanceTimersByTimeAsync(leaseMs * 2);
    expect(cluster.execution(queuedId)).toMatchObject({ status: "terminal", outcome: "completed" });
    // It used to follow the message read here, under a waiter of p1's own
    // that only a run here settles: never.
    expect(againSettled).toBe(true);
    await expect(queued.result).resolves.toMatchObject({ executionId: queuedId, outcome: "completed", output: "done" });
    await expect(again.result).resolves.toMatchObject({ executionId: queuedId, outcome: "completed", output: "done" });
    await Promise.all([first.environment.close(), second.environment.close()]);
  });
});
