// The idle release and the queue head follow the core (docs/decisions/0062,
// issue 25 item 1): a conversation's entry is let go only when the core
// answers `ReleaseConversation` (no use, not pinned, nothing queued, no
// head starting, no admission held), and a queued message starts only when
// the core answers `StartHead` once the running execution's admission is
// released (`AdmissionReleased`). The core's effects are recorded by
// wrapping the environment's core: the host's own count and timing no
// longer decide either.

import { afterEach, describe, expect, it } from "vitest";
import { AdmissionSource, EffectKind, MessageKind as M, ResultCode } from "../../assembly/abi.js";
import type { Environment } from "../../host/index.js";
import { deferred, openEnvironment, scriptedModel, waitFor } from "./helpers.js";

/** What the core was told and answered, for one conversation's slot. */
interface Recorded {
  readonly events: string[];
  /** Called before each apply: may change its arguments (a fault). */
  rewrite?: (kind: number, args: number[]) => number[];
}

const NAMES: Readonly<Record<number, string>> = {
  [M.Start]: "Start",
  [M.Admit]: "Admit",
  [M.AdmissionReleased]: "AdmissionReleased",
  [M.PurgeAgent]: "PurgeAgent",
  [M.UseEnd]: "UseEnd",
  [M.SetPinned]: "SetPinned",
  [M.MessageLeft]: "MessageLeft",
};

/** Wraps the environment's core: records the messages named above (with
 * their answer) and the effects `StartHead`, `ReleaseConversation` and
 * `ReleaseExecution`, in the order they happened. */
function recordCore(env: Environment): Recorded {
  const core = env.coordinator.settings.core;
  const apply = core.apply.bind(core);
  const recorded: Recorded = { events: [] };
  core.apply = (kind: number, ...given: number[]): number => {
    const args = recorded.rewrite?.(kind, given) ?? given;
    const code = apply(kind, ...args);
    const name = NAMES[kind];
    if (name !== undefined) recorded.events.push(code === ResultCode.Ok ? name : `${name} refused`);
    for (const effect of code === ResultCode.Ok || kind === M.Admit ? core.effects() : []) {
      if (effect.kind === EffectKind.StartHead) recorded.events.push("→ StartHead");
      if (effect.kind === EffectKind.ReleaseConversation) recorded.events.push("→ ReleaseConversation");
      if (effect.kind === EffectKind.ReleaseExecution) recorded.events.push("→ ReleaseExecution");
    }
    return code;
  };
  return recorded;
}

/** Every gate made, opened after each test: a failed one still closes. */
const opened: (() => void)[] = [];
afterEach(() => {
  for (const open of opened.splice(0)) open();
});

/** A model whose n-th call waits for `gates[n]`, then answers "answer n". */
function gatedModel(gates: readonly { promise: Promise<void>; resolve: () => void }[]) {
  for (const gate of gates) opened.push(() => gate.resolve());
  let calls = 0;
  return scriptedModel(async () => {
    const call = calls++;
    await gates[call]?.promise;
    return { text: `answer ${call}` };
  });
}

/** Lets the loop run what is posted (and a little more). */
function settle(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 50));
}

function noDrift(env: Environment): void {
  expect(env.conversations.useDrift()).toEqual([]);
  expect(env.queues.countDrift()).toEqual([]);
}

describe("the idle release follows the core", () => {
  it("a queued message keeps the conversation; its head starts once the running execution's admission is released; it goes after the last use", async () => {
    const env = await openEnvironment();
    const recorded = recordCore(env);
    const gates = [deferred(), deferred()];
    // A conversation of a named agent: let go when idle (an agent defined
    // by id keeps its entry while defined).
    const agent = env.agent({ name: "chat", model: gatedModel(gates), onBusy: "enqueue" }).conversation("c");
    const first = agent.start("first");
    await first.executionId;
    const second = agent.start("second");
    await second.executionId;
    await settle();
    noDrift(env);
    expect(env.conversations.liveCount).toBe(1);
    recorded.events.length = 0;

    gates[0]!.resolve();
    await expect(first.result).resolves.toMatchObject({ outcome: "completed", output: "answer 0" });
    await waitFor(async () => (recorded.events.includes("Start") ? true : undefined));
    // The head started on the core's StartHead, answered to the
    // AdmissionReleased that followed the first execution's release.
    const released = recorded.events.indexOf("→ ReleaseExecution");
    const startHead = recorded.events.indexOf("→ StartHead");
    expect(released).toBeGreaterThanOrEqual(0);
    expect(recorded.events.slice(released, startHead + 1)).toEqual(["→ ReleaseExecution", "AdmissionReleased", "→ StartHead"]);
    expect(recorded.events.slice(startHead + 1, startHead + 3)).toEqual(["Admit", "Start"]);
    // Not let go while the message was queued or its head starting.
    expect(recorded.events).not.toContain("→ ReleaseConversation");
    expect(env.conversations.liveCount).toBe(1);
    noDrift(env);

    gates[1]!.resolve();
    await expect(second.result).resolves.toMatchObject({ outcome: "completed", output: "answer 1" });
    await waitFor(async () => (env.conversations.liveCount === 0 ? true : undefined));
    // Let go once the core said it is idle: after the last release, by
    // PurgeAgent, once.
    const idle = recorded.events.indexOf("→ ReleaseConversation");
    expect(idle).toBeGreaterThan(recorded.events.lastIndexOf("→ ReleaseExecution"));
    expect(recorded.events.slice(idle + 1).filter((event) => event.startsWith("PurgeAgent"))).toEqual(["PurgeAgent"]);
    expect(recorded.events.slice(0, idle).filter((event) => event.startsWith("PurgeAgent"))).toEqual([]);
    noDrift(env);
  });

  it("a conversation pinned in the core stays after its last use, and goes when the pin is lifted", async () => {
    const env = await openEnvironment();
    const recorded = recordCore(env);
    const gate = deferred();
    const agent = env.agent({ id: "pinned", model: gatedModel([gate]) });
    const run = agent.start("hello");
    await run.executionId;
    const entry = env.coordinator.agentEntries().find((candidate) => candidate.id === "pinned")!;
    const onLoop = (body: () => void): Promise<void> =>
      new Promise((resolve) => {
        env.loop.post(() => {
          body();
          resolve();
        });
      });
    await onLoop(() => env.coordinator.apply(M.SetPinned, entry.slot, entry.generation, 1));
    gate.resolve();
    await expect(run.result).resolves.toMatchObject({ outcome: "completed" });
    await settle();
    // Idle by the host's count (no use, nothing queued, no execution), but
    // pinned in the core: no ReleaseConversation, so it stays.
    expect(recorded.events).not.toContain("→ ReleaseConversation");
    expect(recorded.events).not.toContain("PurgeAgent");
    expect(env.conversations.liveCount).toBe(1);
    expect(env.coordinator.settings.core.conversation(entry.slot).users).toBe(0);
    noDrift(env);

    await onLoop(() => env.coordinator.apply(M.SetPinned, entry.slot, entry.generation, 0));
    await waitFor(async () => (env.conversations.liveCount === 0 ? true : undefined));
    expect(recorded.events.slice(recorded.events.indexOf("SetPinned", recorded.events.indexOf("SetPinned") + 1))).toEqual([
      "SetPinned",
      "→ ReleaseConversation",
      "PurgeAgent",
    ]);
  });

  it("agent.release() lifts the pin: refused while an execution runs, the conversation then goes when it ends", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const agent = env.agent({ id: "r", model: gatedModel([gate]) });
    const run = agent.start("hello");
    await run.executionId;
    const entry = env.coordinator.agentEntries().find((candidate) => candidate.id === "r")!;
    env.loop.post(() => env.coordinator.apply(M.SetPinned, entry.slot, entry.generation, 1));
    await expect(agent.release()).rejects.toMatchObject({ code: "AGENT_BUSY" });
    gate.resolve();
    await expect(run.result).resolves.toMatchObject({ outcome: "completed" });
    await waitFor(async () => (env.conversations.liveCount === 0 ? true : undefined));
    noDrift(env);
  });

  it("agent.release() right after a start: the core refuses it (in use, or its admission held), and the conversation goes once the start ended", async () => {
    const env = await openEnvironment();
    const [warm, gate] = [deferred(), deferred()];
    warm.resolve();
    const agent = env.agent({ id: "in-use", model: gatedModel([warm, gate]) });
    await expect(agent.start("warm up").result).resolves.toMatchObject({ outcome: "completed" });
    const entry = env.coordinator.agentEntries().find((candidate) => candidate.id === "in-use")!;
    env.loop.post(() => env.coordinator.apply(M.SetPinned, entry.slot, entry.generation, 1));
    // The start's use is counted (UseBegin posted) before the release asks
    // PurgeAgent: whichever the core answers, the release lifted the pin.
    const run = agent.start("hello");
    await expect(agent.release()).rejects.toMatchObject({ code: "AGENT_BUSY" });
    gate.resolve();
    await expect(run.result).resolves.toMatchObject({ outcome: "completed" });
    await waitFor(async () => (env.conversations.liveCount === 0 ? true : undefined));
    noDrift(env);
  });

  it("a queue head whose Admit the core refuses leaves the queue counted out: the next message runs and the conversation goes", async () => {
    const env = await openEnvironment();
    const recorded = recordCore(env);
    const gates = [deferred(), deferred()];
    const agent = env.agent({ name: "chat", model: gatedModel(gates), onBusy: "enqueue" }).conversation("refused");
    const first = agent.start("first");
    await first.executionId;
    const second = agent.start("second");
    await second.executionId;
    const third = agent.start("third");
    await third.executionId;
    await settle();
    noDrift(env);
    // The first head's Admit is malformed (a busy policy out of range): the
    // core refuses it outright with FailRequest, as it would a stale one.
    let faults = 0;
    recorded.rewrite = (kind, args) => {
      if (kind !== M.Admit || args[3] !== AdmissionSource.QueueHead || faults > 0) return args;
      faults += 1;
      return [args[0]!, args[1]!, args[2]!, args[3]!, 99, args[5]!];
    };
    recorded.events.length = 0;
    gates[0]!.resolve();
    await expect(first.result).resolves.toMatchObject({ outcome: "completed" });
    await expect(second.result).rejects.toMatchObject({ code: "INTERNAL" });
    expect(faults).toBe(1);
    // Counted out at once: the core's count is the host queue's.
    await settle();
    noDrift(env);
    expect(recorded.events).toContain("Admit refused");
    expect(recorded.events[recorded.events.indexOf("Admit refused") + 1]).toBe("MessageLeft");
    gates[1]!.resolve();
    await expect(third.result).resolves.toMatchObject({ outcome: "completed", output: "answer 1" });
    await waitFor(async () => (env.conversations.liveCount === 0 ? true : undefined));
    noDrift(env);
  });
});
