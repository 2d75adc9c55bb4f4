// A row taken over while another start of its conversation is being
// prepared here (sim seed 1653523994, docs/decisions/0137): two real
// environments on the simulated cluster store, on a fake clock. p1 holds
// the conversation and sends the preparation of its start S, which is
// slow; p1 stops renewing, p2 takes the conversation over, prepares X and
// dies (X active in the store). The conversation comes back to p1, whose
// takeover finds X's row while S, a start of another message, still holds
// the admission here. X's install used to be refused `AGENT_BUSY` and never
// tried again — X stayed active for ever (and S, placed again, could run
// beside it). Now the pass leaves the row as it leaves one whose own start
// is being prepared (`RecoveryFact.StartPreparingHere`): the conversation
// is held until S's preparation settled, then X is installed and run.

import { expect, it } from "vitest";
import { Cluster, type PendingWrite } from "./cluster-store.js";
import { advance, leaseMs, none, open, useSimulatedClock } from "./two-processes.js";

useSimulatedClock();

it("a row taken over while another start of its conversation is prepared here is recovered once that preparation settled", async () => {
  const cluster = new Cluster(leaseMs, false);
  const p1 = await open(cluster, "p1");
  const p2 = await open(cluster, "p2");
  // p1 holds the conversation (a run ended there).
  await advance(cluster, 0, none);
  const first = p1.agent.conversation("c").start("hello").result;
  await advance(cluster, 200, none);
  await expect(first).resolves.toMatchObject({ outcome: "completed" });
  // p1's start S: its preparation is slow.
  const p1Prepares = (write: PendingWrite): boolean => write.handle === p1.store && write.operation.type === "prepareExecution";
  const s = p1.agent.conversation("c").start("S").result;
  s.catch(() => undefined);
  await advance(cluster, 100, p1Prepares);
  const slow = cluster.pending.find(p1Prepares);
  expect(slow).toBeDefined();
  // p2 asks for the conversation (refused: p1 holds it; p2 takes it once
  // p1 stops renewing), then prepares X and dies before anything else of
  // X lands.
  const refused = p2.agent.conversation("c").start("hello from p2").result;
  await advance(cluster, 100, p1Prepares);
  await expect(refused).rejects.toMatchObject({ code: "AGENT_BUSY" });
  p1.store.stalledUntil = Date.now() + leaseMs * 2;
  await advance(cluster, leaseMs * 2, p1Prepares);
  expect(cluster.leases.get("c")?.owner).toBe("p2");
  const p2AfterPreparing = (write: PendingWrite): boolean => p1Prepares(write) || (write.handle === p2.store && write.operation.type !== "prepareExecution");
  const x = p2.agent.conversation("c").start("X");
  x.result.catch(() => undefined);
  await advance(cluster, 200, p2AfterPreparing);
  const xId = await x.executionId;
  expect(cluster.execution(xId)?.status).toBe("active");
  p2.store.kill();
  // The conversation comes back to p1 while S still holds its admission;
  // then S's preparation is answered (fenced: it was sent under the lapsed lease).
  await advance(cluster, leaseMs * 3, p1Prepares);
  expect(cluster.leases.get("c")?.owner).toBe("p1");
  slow!.settle("commit");
  await advance(cluster, leaseMs * 3, none);
  expect(cluster.execution(xId)?.status).toBe("terminal");
  expect(cluster.unfinished()).toEqual([]);
  // S was sent under the lapsed lease: its Run is told so, nothing written.
  await expect(s).rejects.toMatchObject({ code: "EXECUTION_REHYDRATION_REQUIRED" });
  await p1.environment.close();
});
