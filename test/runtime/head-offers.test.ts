// The queue head is offered by the core only (docs/decisions/0062, "The
// head is offered by the core only"): the host asks `Admit` for a queue
// head only after the core's `StartHead`. A message written is reported
// (`MessageWritten`), and a head whose preparation the store failed waits
// for the core's backoff (`RetryHeadAfter`), after which the host reports
// `HeadRetryDue` and the core offers it again. The core's messages and
// effects are recorded by wrapping the environment's core.

import { expect, it } from "vitest";
import { AdmissionSource, EffectKind, MessageKind as M, ResultCode } from "../../assembly/abi.js";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import type { Environment } from "../../host/index.js";
import { deferred, failingSecondPreparation, openEnvironment } from "./helpers.js";

interface Event {
  readonly name: string;
  readonly at: number;
}

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
    if (code === ResultCode.Ok && (kind === M.MessageWritten || kind === M.HeadRetryDue || kind === M.HeadSettled)) {
      note(kind === M.MessageWritten ? "MessageWritten" : kind === M.HeadRetryDue ? "HeadRetryDue" : "HeadSettled");
    }
    for (const effect of code === ResultCode.Ok ? core.effects() : []) {
      if (effect.kind === EffectKind.StartHead) note("→ StartHead");
      if (effect.kind === EffectKind.RetryHeadAfter) note(`→ RetryHeadAfter ${effect.delayMs}`);
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
  expect(events.map((event) => event.name)).toEqual(["MessageWritten"]);

  gates[0]!.resolve();
  gates[1]!.resolve();
  await expect(first.result).resolves.toMatchObject({ outcome: "completed", output: "answer 0" });
  // Its preparation failed (nothing written): the head again, offered
  // after the core's backoff, then it runs.
  await expect(second.result).resolves.toMatchObject({ outcome: "completed", output: "answer 1" });
  const names = events.map((event) => event.name);
  expect(names).toEqual([
    "MessageWritten",
    "→ StartHead",
    "Admit(head)",
    "HeadSettled",
    "→ RetryHeadAfter 250",
    "HeadRetryDue",
    "→ StartHead",
    "Admit(head)",
    "HeadSettled",
  ]);
  const asked = events.find((event) => event.name === "→ RetryHeadAfter 250")!.at;
  const due = events.find((event) => event.name === "HeadRetryDue")!.at;
  expect(due - asked).toBeGreaterThanOrEqual(245);
  expect(env.queues.countDrift()).toEqual([]);
  await env.close();
}, 20_000);
