// A conversation's lease taken on demand (a first use's acquire, which the
// store reports as no takeover; docs/decisions/0062, "By id"): the host
// reports `ConversationRetaken` and the core decides whether a recovery is
// due — it answers `RecoveryDue(Retake)` only when an execution of the
// conversation is held for recovery here (test/core/by-id.test.ts walks
// that); with nothing held nothing is recovered beyond the first use's.
// A real environment on the simulated cluster store, on a fake clock.

import { expect, it, vi } from "vitest";
import { EffectKind, MessageKind, RecoveryCause, ResultCode } from "../../assembly/abi.js";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { Cluster } from "./cluster-store.js";
import { leaseMs, open, useSimulatedClock } from "./two-processes.js";

useSimulatedClock();

it("a first use that takes the lease reports ConversationRetaken; nothing held, the core asks for no recovery", async () => {
  const cluster = new Cluster(leaseMs, true);
  const p1 = await open(
    cluster,
    "p1",
    scriptedModel(() => ({ text: "hello" })),
  );
  const { coordinator, core } = p1.environment;
  const retaken: { code: number; effects: number[] }[] = [];
  const recoveries: number[] = [];
  const apply = coordinator.apply.bind(coordinator);
  coordinator.apply = (kind, ...args) => {
    const code = apply(kind, ...args);
    if (kind === MessageKind.ConversationRetaken) retaken.push({ code, effects: core.effects().map((effect) => effect.kind) });
    if (kind === MessageKind.RecoveryRequested) recoveries.push(args[2] ?? 0);
    return code;
  };
  const run = p1.agent.conversation("c").start("hi");
  await vi.advanceTimersByTimeAsync(500);
  await expect(run.result).resolves.toMatchObject({ outcome: "completed", output: "hello" });
  expect(cluster.leases.get("c")).toMatchObject({ owner: "p1" });
  expect(retaken).toEqual([{ code: ResultCode.Ok, effects: [] }]);
  expect(retaken.flatMap((item) => item.effects)).not.toContain(EffectKind.RecoveryDue);
  expect(recoveries).not.toContain(RecoveryCause.Retake);
  await p1.environment.close();
});
