// A start that finds the store holding here a conversation the core
// records owned elsewhere (docs/decisions/0062, "Every retake asks the
// core"): p2 holds "c", stalls past its lease, and p1 takes it over; p2
// learns it lost "c" (its core records it owned elsewhere); p1 dies, and
// p2's tick takes "c" back. A start made at p2 in the store's turn, before
// the takeover reaches its loop, is answered as owned elsewhere; the host
// reads that the store holds it here, reports the retake
// (`ConversationRetaken(Retake)`), and the core — not an epoch check of the
// host's — says its recovery is due (`RecoveryDue(Retake)`). The start
// waits for that recovery and runs here, once. Two real environments on
// the simulated cluster store, on a fake clock.

import { expect, it, vi } from "vitest";
import { ConversationPhase, EffectKind, MessageKind, RecoveryCause, ResultCode } from "../../assembly/abi.js";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { Phronomy, type Environment, type Run } from "../../host/index.js";
import { Cluster } from "./cluster-store.js";
import { leaseMs, useSimulatedClock } from "./two-processes.js";

useSimulatedClock();

/** A process of the cluster with agent "c" defined by its id. */
async function openWithC(cluster: Cluster, owner: string) {
  const store = cluster.storeFor(owner);
  const environment = await Phronomy.open({ store, logger: { warn: () => undefined } });
  const model = scriptedModel(({ messages }) => ({ text: `answer to ${String(messages.filter((message) => message.role === "user").at(-1)?.content)}` }));
  const agent = environment.agent({ id: "c", instructions: "You help.", model });
  await environment.recovery("c");
  await vi.advanceTimersByTimeAsync(0);
  return { store, environment, agent };
}

function phaseOf(environment: Environment): number {
  return environment.core.conversation(environment.conversations.slotOf("c")!).phase;
}

/** The retakes `environment` reports, with the phase they found and what the core answered. */
function recordRetakes(environment: Environment) {
  const { coordinator, core } = environment;
  const retakes: { cause: number; phase: number; code: number; due: { kind: number; cause?: number }[] }[] = [];
  const apply = coordinator.apply.bind(coordinator);
  coordinator.apply = (kind, ...args) => {
    const phase = kind === MessageKind.ConversationRetaken ? phaseOf(environment) : 0;
    const code = apply(kind, ...args);
    if (kind === MessageKind.ConversationRetaken) {
      const due = core.effects().flatMap((effect) => (effect.kind === EffectKind.RecoveryDue ? [{ kind: effect.kind, cause: effect.cause }] : []));
      retakes.push({ cause: args[2] ?? 0, phase, code, due });
    }
    return code;
  };
  return retakes;
}

it("a start placed elsewhere that finds the store holding the conversation here reports a retake; the core asks for its recovery; the start runs here once", async () => {
  const cluster = new Cluster(leaseMs, true);
  const p2 = await openWithC(cluster, "p2");
  const p1 = await openWithC(cluster, "p1");
  expect(cluster.leases.get("c")).toMatchObject({ owner: "p2" });

  // p2 stalls past its lease; p1 takes "c" over; p2 comes back and learns it lost "c".
  p2.store.stalledUntil = Number.POSITIVE_INFINITY;
  await vi.advanceTimersByTimeAsync(leaseMs * 2);
  expect(cluster.leases.get("c")).toMatchObject({ owner: "p1" });
  p2.store.stalledUntil = 0;
  await vi.advanceTimersByTimeAsync(leaseMs);
  expect(phaseOf(p2.environment), "p2 records c owned elsewhere").toBe(ConversationPhase.OwnedElsewhere);

  // p1 dies; p2's tick takes "c" back, and a start is made at p2 in that turn.
  const retakes = recordRetakes(p2.environment);
  let during: Run | undefined;
  cluster.onTakeover = (agentId, _former, taker) => {
    if (agentId === "c" && taker === "p2") during = p2.agent.start("during", { onBusy: "enqueue" });
  };
  p1.store.kill();
  for (let waited = 0; during === undefined && waited < leaseMs * 3; waited += 50) await vi.advanceTimersByTimeAsync(50);
  expect(during, "p2 took c back").toBeDefined();
  await vi.advanceTimersByTimeAsync(1_000);
  await expect(during!.result).resolves.toMatchObject({ outcome: "completed", output: "answer to during" });
  expect(cluster.leases.get("c")).toMatchObject({ owner: "p2" });

  // The retake was reported while the core recorded "c" owned elsewhere,
  // and the core answered that its recovery is due.
  expect(retakes).toContainEqual({
    cause: RecoveryCause.Retake,
    phase: ConversationPhase.OwnedElsewhere,
    code: ResultCode.Ok,
    due: [{ kind: EffectKind.RecoveryDue, cause: RecoveryCause.Retake }],
  });
  expect(cluster.unfinished()).toEqual([]);
  await p2.environment.close();
});
