// A write fenced at an epoch this process has lost, whose refusal comes
// back once it holds the conversation again at a later epoch
// (docs/decisions/0062, "Every retake asks the core"): the host reports
// the retake with its cause (`ConversationRetaken(FencedWrite)`) and the
// core, which knows the execution is held for recovery, answers
// `RecoveryDue(FencedWrite)`; the host no longer decides that on its own
// epoch compare. The simulated cluster store fences a write with the
// epoch held when it commits, so the race — taken back between the
// refusal and its report — is staged: p1's `heldEpochOf` answers one epoch
// past the refusal's for the first read after the write is refused (the
// real lease, p2's, answers every read after: the host's own check that
// the lease is still held at that epoch then stops the recovery).

import { expect, it, vi } from "vitest";
import { z } from "zod";
import { EffectKind, MessageKind, RecoveryCause, ResultCode } from "../../assembly/abi.js";
import { scriptedModel, type ScriptedTurn } from "../../host/agent/scripted-model.js";
import { Phronomy, tool } from "../../host/index.js";
import { Cluster } from "./cluster-store.js";
import { leaseMs, useSimulatedClock } from "./two-processes.js";

useSimulatedClock();

it("a write fenced at a lost epoch, the lease held again at a later one: the core is told the retake and answers RecoveryDue(FencedWrite)", async () => {
  const cluster = new Cluster(leaseMs, true);
  let release: () => void = () => undefined;
  const toolDone = new Promise<void>((resolve) => (release = resolve));
  const model = scriptedModel(
    ({ messages }): ScriptedTurn => (messages.at(-1)?.role === "tool" ? { text: "done" } : { toolCalls: [{ toolName: "slow", input: { n: 1 } }] }),
  );
  const slow = tool({ description: "Takes a while", inputSchema: z.object({ n: z.number() }), execute: async () => (await toolDone, "ok") });
  const open = async (owner: string, recover = true) => {
    const store = cluster.storeFor(owner);
    const environment = await Phronomy.open({ store, recover, logger: { warn: () => undefined } });
    const agent = environment.agent({ id: "c", instructions: "You help.", model, tools: { slow } });
    await environment.recovery("c");
    await vi.advanceTimersByTimeAsync(0);
    return { store, environment, agent };
  };
  const p1 = await open("p1");
  // p2 does not recover what it takes over: the row stays as p1 left it.
  const p2 = await open("p2", false);
  const run = p1.agent.start("go");
  run.result.catch(() => undefined);
  await vi.advanceTimersByTimeAsync(100);
  const epoch = cluster.leases.get("c")!.epoch;
  expect(cluster.leases.get("c")).toMatchObject({ owner: "p1" });

  // p1 stalls past its lease; p2 takes "c" over. Then the tool ends and
  // p1's write after it is refused by the fencing check at `epoch`.
  p1.store.stalledUntil = Number.POSITIVE_INFINITY;
  await vi.advanceTimersByTimeAsync(leaseMs * 2);
  expect(cluster.leases.get("c")).toMatchObject({ owner: "p2" });

  const { coordinator, core } = p1.environment;
  const retakes: { cause: number; code: number; due: number[] }[] = [];
  const recoveries: number[] = [];
  const apply = coordinator.apply.bind(coordinator);
  coordinator.apply = (kind, ...args) => {
    const code = apply(kind, ...args);
    if (kind === MessageKind.ConversationRetaken)
      retakes.push({ cause: args[2] ?? 0, code, due: core.effects().flatMap((effect) => (effect.kind === EffectKind.RecoveryDue ? [effect.cause] : [])) });
    if (kind === MessageKind.RecoveryRequested) recoveries.push(args[2] ?? 0);
    return code;
  };
  const heldEpochOf = p1.store.heldEpochOf.bind(p1.store);
  let staged = false;
  p1.store.heldEpochOf = (agentId) => {
    if (agentId !== "c" || staged) return heldEpochOf(agentId);
    staged = true;
    return epoch + 1;
  };
  release();
  // Refused by the fencing check at `epoch` (lease_lost), not a row moved on.
  await expect(run.result).rejects.toMatchObject({ code: "EXECUTION_REHYDRATION_REQUIRED", cause: { details: { reason: "lease_lost", epoch } } });
  await vi.advanceTimersByTimeAsync(100);

  expect(staged, "the refusal read the epoch held").toBe(true);
  expect(retakes).toEqual([{ cause: RecoveryCause.FencedWrite, code: ResultCode.Ok, due: [RecoveryCause.FencedWrite] }]);
  // The lease moved on (p2's): the host's check at the epoch stops the recovery.
  expect(recoveries).not.toContain(RecoveryCause.FencedWrite);
  await p1.environment.close();
  await p2.environment.close();
});
