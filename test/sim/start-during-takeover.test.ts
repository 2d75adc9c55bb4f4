// A start made while its conversation's takeover is being recovered waits
// for the core (docs/decisions/0062, "One way back in"): two real
// environments on the simulated cluster store, on a fake clock. p1 holds
// conversation "c" with an execution suspended there and dies; p2, which
// asked for "c", takes its lease over and recovers it. A start made at p2
// while that recovery's read is held is answered `WaitUntilReady` by the
// core and waits — no host gate, no refusal — then, once the core opens the
// conversation again, goes behind the recovered execution and runs exactly
// once, after it.

import { expect, it } from "vitest";
import { ConversationPhase, RecoveryCause } from "../../assembly/abi.js";
import type { Environment } from "../../host/index.js";
import { Cluster } from "./cluster-store.js";
import { advance, leaseMs, none, open, useSimulatedClock } from "./two-processes.js";

useSimulatedClock();

/** The core's record of conversation `agentId` at this process. */
function conversationRecord(environment: Environment, agentId: string) {
  const slot = environment.conversations.slotOf(agentId);
  expect(slot, `conversation "${agentId}" live`).toBeDefined();
  return environment.core.conversation(slot!);
}

it("a start made while the takeover's recovery runs waits for the core to open the conversation, then runs once, after the recovered execution", async () => {
  const cluster = new Cluster(leaseMs, false);
  const p1 = await open(cluster, "p1");
  const p2 = await open(cluster, "p2");
  // p1 holds "c": an execution suspended there, waiting for approval.
  const suspended = p1.agent.conversation("c").start("refund order 1");
  suspended.result.catch(() => undefined);
  await advance(cluster, 400, none);
  const suspendedId = await suspended.executionId;
  expect(cluster.execution(suspendedId)?.status).toBe("suspended");
  // p2 asks for "c" (refused: p1 holds it, and this store files no starts).
  const refused = p2.agent.conversation("c").start("hello from p2").result;
  await advance(cluster, 100, none);
  await expect(refused).rejects.toMatchObject({ code: "AGENT_BUSY" });

  // p2's recovery of the takeover reads the unfinished rows: held until released.
  let releaseScan!: () => void;
  let scanCaught = false;
  const scanReleased = new Promise<void>((resolve) => {
    releaseScan = resolve;
  });
  const unfinished = p2.store.unfinishedExecutions.bind(p2.store);
  p2.store.unfinishedExecutions = async () => {
    scanCaught = true;
    await scanReleased;
    return unfinished();
  };
  p1.store.kill();
  for (let waited = 0; !scanCaught && waited < leaseMs * 4; waited += 100) await advance(cluster, 100, none);
  expect(scanCaught).toBe(true);
  expect(cluster.leases.get("c")?.owner).toBe("p2");
  const recovering = conversationRecord(p2.environment, "c");
  expect(recovering.phase).toBe(ConversationPhase.Recovering);
  expect(recovering.cause).toBe(RecoveryCause.LeaseTakeover);

  const during = p2.agent.conversation("c").start("during", { onBusy: "enqueue" });
  let known = false;
  void during.executionId.then(() => {
    known = true;
  });
  await advance(cluster, 200, none);
  // The core answered wait: nothing admitted or queued, nothing refused.
  expect(known).toBe(false);
  expect(p2.environment.queues.waitingStarts()).toBe(1);

  releaseScan();
  await advance(cluster, 400, none);
  const duringId = await during.executionId;
  expect(p2.environment.queues.waitingStarts()).toBe(0);
  expect(conversationRecord(p2.environment, "c").phase).toBe(ConversationPhase.Ready);
  // Behind the recovered execution, which holds the admission (suspended).
  expect(cluster.execution(duringId)).toBeUndefined();

  const approvalId = (cluster.execution(suspendedId)?.approvalRequest as { approvalId: string }).approvalId;
  const resumed = p2.agent.conversation("c").resume(suspendedId, { approvalId, approved: true }).result;
  await advance(cluster, 1_000, none);
  await expect(resumed).resolves.toMatchObject({ outcome: "completed" });
  await expect(during.result).resolves.toMatchObject({ executionId: duringId, outcome: "completed", output: "answer to during" });
  const executions = await p2.environment.executions({ agentId: "c" });
  expect(executions.map((row) => row.executionId).sort()).toEqual([suspendedId, duringId].sort());
  expect(cluster.unfinished()).toEqual([]);
  await p2.environment.close();
});
