// A filed start claimed at the epoch its holder still holds, judged again
// while that holder's admission window has lapsed (sim seeds 481327674 and
// 481327814 with homes; docs/decisions/0138). The start's enqueue at the
// holder failed (nothing written), so it was to be tried again a second
// later; by then the holder had missed a renewal — its admission window
// lapsed, its lease not yet expired — and was renewed afterwards at the
// same epoch. The applier asked the lease (`leaseOf`, the admission window)
// whether the claim's epoch was still held: no, so it left the claim for a
// later owner. But nobody claims again a start claimed at the epoch its
// holder still holds: the start stayed claimed for good and its filer was
// never told. A claim of an epoch still held here (`heldEpochOf`, renewed
// in time or not — PostgreSQL's `partitionHeldAt`) is this process's to
// finish: it is tried again, and runs.

import { expect, it } from "vitest";
import { Cluster, type PendingWrite } from "./cluster-store.js";
import { advance, leaseMs, none, open, useSimulatedClock } from "./two-processes.js";

useSimulatedClock();

it("a filed start whose write failed, judged again while its holder's admission window lapsed at an epoch still held, runs", async () => {
  const cluster = new Cluster(leaseMs, false);
  cluster.startInbox = true;
  const p1 = await open(cluster, "p1", undefined, true);
  const p2 = await open(cluster, "p2", undefined, true);
  // p1 runs a first start of "c"; its last write is held back: "c" stays busy there.
  const ends = (write: PendingWrite): boolean => write.handle === p1.store && write.operation.type === "terminalCommit";
  const first = p1.agent.conversation("c").start("one");
  await advance(cluster, 100, ends);
  const end = cluster.pending.find(ends);
  expect(end, "p1's first execution is ending").toBeDefined();
  const epoch = cluster.leases.get("c")!.epoch;
  expect(cluster.leases.get("c")).toMatchObject({ owner: "p1" });

  // A start of "c" at p2, to be queued: filed for p1, claimed there; its enqueue at p1 is held back.
  const writesHere = (write: PendingWrite): boolean => write.handle === p1.store && write.operation.type === "enqueueMessage";
  const held = (write: PendingWrite): boolean => ends(write) || writesHere(write);
  const second = p2.agent.conversation("c").start("two", { onBusy: "enqueue" });
  await advance(cluster, 100, held);
  const filedWrite = cluster.pending.find(writesHere);
  expect(filedWrite, "p1's enqueue of the filed start is in flight").toBeDefined();

  // p1 stops renewing; its last renewal at `renewed`: its admission window
  // lapses at renewed + 2500 ms, its lease at renewed + 3000 ms.
  const renewed = cluster.leases.get("c")!.expiresAt - leaseMs;
  p1.store.stalledUntil = renewed + leaseMs * 2;
  await advance(cluster, renewed + 1_700 - Date.now(), held);
  // The enqueue fails (nothing written): tried again a second later,
  // with the admission window lapsed and the lease still p1's at `epoch`.
  filedWrite!.settle("failed");
  await advance(cluster, 1_100, held);
  expect(Date.now()).toBeGreaterThan(renewed + 2_500);
  expect(p1.store.leaseOf("c")).toBeUndefined();
  expect(p1.store.heldEpochOf("c")).toBe(epoch);
  // p1 takes its lease again before it expired (the runtime's on-demand
  // acquire): at the same epoch, the claim's.
  p1.store.stalledUntil = 0;
  await expect(p1.store.acquireLease("c")).resolves.toMatchObject({ acquired: true, epoch });

  await advance(cluster, leaseMs * 2, none);
  expect(cluster.connection.prepare("SELECT state FROM sim_start_inbox").all()).toEqual([{ state: "applied" }]);
  await expect(first.result).resolves.toMatchObject({ outcome: "completed", output: "answer to one" });
  await expect(second.result).resolves.toMatchObject({ outcome: "completed", output: "answer to two" });
  await p1.environment.close();
  await p2.environment.close();
});
