// An observer that attaches in the middle of a streamed model call
// (`env.wait`, and through it `env.stream` by id, a chat's GET resume)
// hears the call's start and its text so far first, then each delta as it
// comes (docs/decisions/0072): a watcher of a recovered execution, which
// can only attach by id, gets the answer as it streams.

import { describe, expect, it } from "vitest";
import type { ExecutionEvent } from "../../host/index.js";
import { streamOnlyModel } from "../support/stream-only-model.js";
import { deferred, openEnvironment, scriptedModel } from "./helpers.js";

const deltas = ["Order 42 ", "has shipped ", "and arrives ", "on Monday."];

/** The events of `events` up to and including the terminal one. */
async function collect(events: AsyncIterable<ExecutionEvent>): Promise<ExecutionEvent[]> {
  const heard: ExecutionEvent[] = [];
  for await (const event of events) heard.push(event);
  return heard;
}

describe("an observer attached during a streamed model call", () => {
  it("hears the call's start and the text so far as one delta, then every later delta", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const model = streamOnlyModel({ deltas, before: 2, gate: gate.promise });
    const firstTwo = deferred();
    let heard = 0;
    const run = env.agent({ id: "support", model }).start("Where is order 42?", {
      stream: true,
      onEvent: (event) => {
        if (event.type === "text_delta" && ++heard === 2) firstTwo.resolve();
      },
    });
    await firstTwo.promise;
    const observer = env.wait(await run.executionId);
    const events = collect(observer.events);
    // The observer is attached once it knows the id: the catch-up is in its events then.
    await observer.executionId;
    gate.resolve();
    const seen = await events;
    const types = seen.map((event) => event.type);
    expect(types.slice(0, 2)).toEqual(["model_call_started", "text_delta"]);
    const texts = seen.flatMap((event) => (event.type === "text_delta" ? [event.delta] : []));
    expect(texts[0]).toBe(deltas[0]! + deltas[1]!);
    expect(texts.slice(1)).toEqual(deltas.slice(2));
    expect(types.at(-1)).toBe("done");
    await expect(run.result).resolves.toMatchObject({ outcome: "completed", output: deltas.join("") });
  });

  it("of a run that does not stream: nothing is made up", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const called = deferred();
    const model = scriptedModel(async () => {
      called.resolve();
      await gate.promise;
      return { text: "Order 42 has shipped." };
    });
    const run = env.agent({ id: "support", model }).start("Where is order 42?");
    await called.promise;
    const observer = env.wait(await run.executionId);
    const events = collect(observer.events);
    await observer.executionId;
    gate.resolve();
    expect((await events).map((event) => event.type)).toEqual(["model_call_finished", "done"]);
  });
});
