// A new conversation moved to where its second start landed (`takeIdleHere`,
// docs/decisions/0101, 0112), on the simulated cluster store with its start
// inbox and homes: p1 takes the conversation's lease for its start, whose
// preparation is still in flight; p2's start of it finds it held by p1 with
// nothing written anywhere and moves it (its home: the lease at the next
// epoch), reports the retake as a move (`RecoveryCause.Moved`) and runs it.
// p1's preparation, committed after the move, is fenced and refused naming
// the home (`movedTo`); the core places that start again: filed for p2,
// which runs it after its own. Both starts complete; nothing runs at p1.

import { expect, it, vi } from "vitest";
import { MessageKind, RecoveryCause } from "../../assembly/abi.js";
import { homeOf } from "./cluster-homes.js";
import { Cluster } from "./cluster-store.js";
import { advance, leaseMs, none, open, useSimulatedClock } from "./two-processes.js";

useSimulatedClock();

it("a start at a process not holding a new conversation moves it there; the holder's start is placed again and runs there too", async () => {
  const cluster = new Cluster(leaseMs, false);
  cluster.startInbox = true;
  const p1 = await open(cluster, "p1", undefined, true);
  const p2 = await open(cluster, "p2", undefined, true);
  const causes: number[] = [];
  const apply = p2.environment.coordinator.apply.bind(p2.environment.coordinator);
  p2.environment.coordinator.apply = (kind, ...args) => {
    if (kind === MessageKind.ConversationRetaken) causes.push(args[2] ?? -1);
    return apply(kind, ...args);
  };
  const first = p1.agent.conversation("n").start("first", { onBusy: "enqueue" });
  await vi.advanceTimersByTimeAsync(0);
  const prepared = cluster.pending.find((write) => write.handle === p1.store && write.operation.type === "prepareExecution");
  expect(prepared, "p1's preparation is in flight").toBeDefined();
  expect(cluster.leases.get("n")).toMatchObject({ owner: "p1", epoch: 1 });

  const second = p2.agent.conversation("n").start("second", { onBusy: "enqueue" });
  // p2's own writes commit; p1's preparation is held back until the move is made.
  await advance(cluster, 100, (write) => write === prepared);
  expect(homeOf(cluster.connection, "n")).toEqual({ movedBy: "p2", epoch: 2 });
  expect(cluster.leases.get("n")).toMatchObject({ owner: "p2", epoch: 2 });
  expect(causes).toContain(RecoveryCause.Moved);

  await advance(cluster, 2_000, none);
  await expect(second.result).resolves.toMatchObject({ outcome: "completed", output: "answer to second" });
  await expect(first.result).resolves.toMatchObject({ outcome: "completed", output: "answer to first" });
  const rows = cluster.connection.prepare("SELECT execution_id FROM executions WHERE agent_id = 'n'").all();
  expect(rows).toHaveLength(2);
  // Every write of the conversation landed under p2's lease (the move's epoch).
  const writes = cluster.committed.filter((write) => write.agentId === "n" && write.fenceEpoch !== undefined);
  expect(writes.every((write) => write.owner === "p2" && write.fenceEpoch === 2)).toBe(true);
  await p1.environment.close();
  await p2.environment.close();
});
