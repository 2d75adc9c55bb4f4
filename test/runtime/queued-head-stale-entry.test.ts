// A queue head's retry scheduled under an agent entry that was let go
// since: the head whose preparation the store failed is started again
// after the core's backoff, with the entry it was queued under. If the
// message started another way meanwhile, ran, and the conversation's queue
// emptied, its entry was let go; a later start made a new one and queued
// a message behind a running execution. The retry then asked `Admit`
// under the stale entry: the core refused it, the new head's Run was told
// INVALID_INPUT and the head left the host's queue without the core
// being told (found by the whole-host simulation, seed 4081864365,
// docs/decisions/0063, 15).

import { expect, it } from "vitest";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { deferred, failingSecondPreparation, openEnvironment } from "./helpers.js";

it("a head's retry scheduled under an entry let go since starts the new head under its own entry", async () => {
  const env = await openEnvironment({ store: await failingSecondPreparation() });
  const gates = [deferred(), deferred(), deferred(), deferred(), deferred()];
  let calls = 0;
  const agent = env.agent({
    id: "c0",
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
  gates[0]!.resolve();
  await first.result;
  // The head's preparation failed: it is started again after the backoff.
  // A message queued meanwhile starts it at once; both run to their end.
  const third = agent.start("third");
  await third.executionId;
  gates[1]!.resolve();
  gates[2]!.resolve();
  await expect(second.result).resolves.toMatchObject({ outcome: "completed" });
  await expect(third.result).resolves.toMatchObject({ outcome: "completed" });
  // The conversation used again: one runs, one is queued behind it.
  const fourth = agent.start("fourth");
  await fourth.executionId;
  const fifth = agent.start("fifth");
  await fifth.executionId;
  const fifthResult = fifth.result.catch((error: unknown) => error);
  // The retry fires (the core's backoff: 250 ms).
  await new Promise((resolve) => setTimeout(resolve, 400));
  expect(env.queues.countDrift()).toEqual([]);
  gates[3]!.resolve();
  gates[4]!.resolve();
  await expect(fourth.result).resolves.toMatchObject({ outcome: "completed" });
  await expect(fifthResult).resolves.toMatchObject({ outcome: "completed", output: "answer 4" });
  expect(env.queues.countDrift()).toEqual([]);
}, 20_000);
