// `env.recover()` in a process where a conversation is live but its lease
// is another process's (docs/decisions/0062, "By id"): the core refuses the
// recovery (`RecoveryRequested(RecoverCalled)` with
// `RecoveryFact.LeaseNotHeldHere` is dropped `LeaseNotHeldHere`), so
// nothing of it is reported or installed here, the core still records it
// owned elsewhere (never told owned here), and its holder keeps running
// it. Two real environments on the simulated cluster store, on a fake clock.

import { expect, it, vi } from "vitest";
import { ConversationPhase, MessageKind, ResultCode } from "../../assembly/abi.js";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { Phronomy, type Environment } from "../../host/index.js";
import { Cluster } from "./cluster-store.js";
import { leaseMs, useSimulatedClock } from "./two-processes.js";

useSimulatedClock();

/** A process of the cluster with agent "c" defined by its id (it keeps
 * the lease while defined, or asks for it until it can take it). */
async function openWithC(cluster: Cluster, owner: string) {
  const store = cluster.storeFor(owner);
  const environment = await Phronomy.open({ store, logger: { warn: () => undefined } });
  const agent = environment.agent({ id: "c", instructions: "You help.", model: scriptedModel(() => ({ text: "hello" })) });
  await environment.recovery("c");
  await vi.advanceTimersByTimeAsync(0);
  return { store, environment, agent };
}

function phaseOf(environment: Environment): number | undefined {
  const slot = environment.conversations.slotOf("c");
  return slot === undefined ? undefined : environment.core.conversation(slot).phase;
}

it("is refused by the core for a conversation whose lease another process holds: nothing reported, still owned elsewhere, its holder runs it", async () => {
  const cluster = new Cluster(leaseMs, true);
  const p1 = await openWithC(cluster, "p1");
  const p2 = await openWithC(cluster, "p2");
  expect(cluster.leases.get("c")).toMatchObject({ owner: "p1" });
  expect(phaseOf(p2.environment)).toBe(ConversationPhase.OwnedElsewhere);

  const applied: number[][] = [];
  const apply = p2.environment.coordinator.apply.bind(p2.environment.coordinator);
  p2.environment.coordinator.apply = (kind, ...args) => {
    const code = apply(kind, ...args);
    if (kind === MessageKind.RecoveryRequested || kind === MessageKind.ConversationOwned) applied.push([kind, code, args[2] ?? 0]);
    return code;
  };
  const report = p2.environment.recover();
  await vi.advanceTimersByTimeAsync(100);
  expect((await report).filter((item) => item.agentId === "c")).toEqual([]);
  // Asked, and refused by the core; never told owned here.
  expect(applied).toContainEqual([MessageKind.RecoveryRequested, ResultCode.LeaseNotHeldHere, 3]);
  expect(applied.filter(([kind]) => kind === MessageKind.ConversationOwned)).toEqual([]);
  expect(phaseOf(p2.environment)).toBe(ConversationPhase.OwnedElsewhere);

  const run = p1.agent.start("hi");
  await vi.advanceTimersByTimeAsync(500);
  await expect(run.result).resolves.toMatchObject({ outcome: "completed", output: "hello" });
  expect(cluster.leases.get("c")).toMatchObject({ owner: "p1" });
  await p2.environment.close();
  await p1.environment.close();
});
