// The queue head is offered by the core only (docs/decisions/0062, "The
// head is offered by the core only"): the host asks `Admit` for a queue
// head only after the core's `StartHead`. A message written is reported
// (`MessageWritten`), and a head whose preparation the store failed waits
// for the core's backoff (`RetryHeadAfter`), after which the host reports
// `HeadRetryDue` and the core offers it again. What becomes of a head whose
// preparation failed is the core's too ("A failed head is the core's to
// place"): the host reports the store's answer and the ownership it read
// (`HeadSettled`), and carries out the core's `HeadKept`. The core's
// messages and effects are recorded by wrapping the environment's core.

import { expect, it } from "vitest";
import { AdmissionSource, EffectKind, HeadOutcome, HoldCause, MessageKind as M, Ownership, ResultCode } from "../../assembly/abi.js";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import type { Environment } from "../../host/index.js";
import { deferred, failingSecondPreparation, openEnvironment, waitFor } from "./helpers.js";

interface Event {
  readonly name: string;
  readonly at: number;
}

const HEAD_OUTCOMES: Record<number, string> = {
  [HeadOutcome.Left]: "left",
  [HeadOutcome.StoreFailed]: "store failed",
  [HeadOutcome.NotNow]: "not now",
  [HeadOutcome.ExecutionExists]: "execution exists",
  [HeadOutcome.Refused]: "refused",
};
const OWNERS: Record<number, string> = { [Ownership.None]: "-", [Ownership.Here]: "here", [Ownership.Elsewhere]: "elsewhere" };

/** Records the queue's messages to the core and its `StartHead` and
 * `RetryHeadAfter` effects, in the order they happened. */
function recordHeads(env: Environment): Event[] {
  const core = env.coordinator.settings.core;
  const apply = core.apply.bind(core);
  const events: Event[] = [];
  const note = (name: string): void => void events.push({ name, at: performance.now() });
  core.apply = (kind: number, ...args: number[]): number => {
    const code = apply(kind, ...args);
    if (kind === M.Admit && args[3] === AdmissionSource.QueueHead) note("Admit(head)");
    if (code === ResultCode.Ok && (kind === M.MessageWritten || kind === M.HeadRetryDue)) note(kind === M.MessageWritten ? "MessageWritten" : "HeadRetryDue");
    if (code === ResultCode.Ok && kind === M.HeadSettled) note(`HeadSettled(${HEAD_OUTCOMES[args[2]!]}, ${OWNERS[args[3]!]})`);
    if (code === ResultCode.Ok && kind === M.RecoveryFinished) note("RecoveryFinished");
    for (const effect of code === ResultCode.Ok ? core.effects() : []) {
      if (effect.kind === EffectKind.StartHead) note("→ StartHead");
      if (effect.kind === EffectKind.RetryHeadAfter) note(`→ RetryHeadAfter ${effect.delayMs}`);
      if (effect.kind === EffectKind.HeadKept) note("→ HeadKept");
    }
    return code;
  };
  return events;
}

it("offers a head only on the core's StartHead: after it is written, and after the backoff of a head the store failed", async () => {
  const env = await openEnvironment({ store: await failingSecondPreparation() });
  const events = recordHeads(env);
  const gates = [deferred(), deferred()];
  let calls = 0;
  const agent = env.agent({
    id: "heads",
    model: scriptedModel(async () => {
      const call = calls++;
      await gates[call]?.promise;
      return { text: `answer ${call}` };
    }),
    onBusy: "enqueue",
  });
  const first = agent.start("first");
  await first.executionId;
  const second = agent.start("second");
  await second.executionId;
  // Written behind the running execution: told, and nothing offered.
  const queueEvents = (): string[] => events.map((event) => event.name).filter((name) => name !== "RecoveryFinished");
  expect(queueEvents()).toEqual(["MessageWritten"]);

  gates[0]!.resolve();
  gates[1]!.resolve();
  await expect(first.result).resolves.toMatchObject({ outcome: "completed", output: "answer 0" });
  // Its preparation failed (nothing written): the head again, offered
  // after the core's backoff, then it runs.
  await expect(second.result).resolves.toMatchObject({ outcome: "completed", output: "answer 1" });
  const names = queueEvents();
  expect(names).toEqual([
    "MessageWritten",
    "→ StartHead",
    "Admit(head)",
    "HeadSettled(store failed, here)",
    "→ HeadKept",
    "→ RetryHeadAfter 250",
    "HeadRetryDue",
    "→ StartHead",
    "Admit(head)",
    "HeadSettled(left, -)",
  ]);
  const asked = events.find((event) => event.name === "→ RetryHeadAfter 250")!.at;
  const due = events.find((event) => event.name === "HeadRetryDue")!.at;
  expect(due - asked).toBeGreaterThanOrEqual(245);
  expect(env.queues.countDrift()).toEqual([]);
  await env.close();
}, 20_000);

it("keeps a head the store failed while the core holds the conversation, with no timer: the recovery's end offers it", async () => {
  // The conversation is held (a write of it failed) while the head's
  // preparation is in flight: told to the core in the turn the store is
  // asked, before the store fails the preparation.
  let holdNow: (() => void) | undefined;
  const store = await failingSecondPreparation(() => holdNow?.());
  const env = await openEnvironment({ store });
  const events = recordHeads(env);
  const gate = deferred();
  let calls = 0;
  const agent = env.agent({
    id: "held-heads",
    model: scriptedModel(async () => {
      if (calls++ === 0) await gate.promise;
      return { text: `answer ${calls - 1}` };
    }),
    onBusy: "enqueue",
  });
  const first = agent.start("first");
  await first.executionId;
  const second = agent.start("second");
  await second.executionId;
  holdNow = () => {
    const entry = env.coordinator.agentEntries().find((candidate) => candidate.id === "held-heads")!;
    env.coordinator.apply(M.ConversationHeld, entry.slot, entry.generation, HoldCause.StoreFault);
  };
  gate.resolve();
  await expect(first.result).resolves.toMatchObject({ outcome: "completed", output: "answer 0" });
  await waitFor(async () => (events.some((event) => event.name === "→ HeadKept") ? true : undefined));
  // Kept, counted queued again, and no backoff of its own: a retry while
  // held would be answered nothing. Its Run waits (on SQLite a hold waits
  // for env.recover()); the recovery that ends the hold offers it.
  await new Promise((resolve) => setTimeout(resolve, 400));
  expect(events.map((event) => event.name).filter((name) => name.startsWith("→ RetryHeadAfter") || name === "HeadRetryDue")).toEqual([]);
  expect(env.queues.countDrift()).toEqual([]);
  await env.recover();
  await expect(second.result).resolves.toMatchObject({ outcome: "completed", output: "answer 1" });
  const names = events.map((event) => event.name);
  const settled = names.indexOf("HeadSettled(store failed, here)");
  expect(names.slice(settled, settled + 2)).toEqual(["HeadSettled(store failed, here)", "→ HeadKept"]);
  expect(names.filter((name) => name.startsWith("→ RetryHeadAfter") || name === "HeadRetryDue")).toEqual([]);
  const offered = names.indexOf("→ StartHead", settled);
  expect(names.slice(settled, offered)).toContain("RecoveryFinished");
  expect(names.slice(offered)).toEqual(["→ StartHead", "Admit(head)", "HeadSettled(left, -)"]);
  expect(env.queues.countDrift()).toEqual([]);
  await env.close();
}, 20_000);
