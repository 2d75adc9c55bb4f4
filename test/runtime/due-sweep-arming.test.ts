// The due sweep's one timer (docs/decisions/0076, 0085): a wait due no
// sooner than the timer fires — its due time, or the rescan a minute
// ahead — leaves the timer as it is, so a suspension costs the sweep one
// comparison, not a timer set; a nearer due time sets it again. Every
// wait still fires, whatever order their due times were committed in.
// Reaches inside for the one count (`DueSweep.timersSet`).

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { timer, type DefinedAgent, type Environment } from "../../host/index.js";
import type { DueSweep } from "../../host/runtime/due-sweep.js";
import { openEnvironment, scriptedModel, waitFor } from "./helpers.js";

const pause = timer({ inputSchema: z.object({ ms: z.number().int().min(0) }), until: ({ ms }) => ms });

/** Each conversation's first message is how long its timer waits. */
function sleepers(env: Environment): DefinedAgent {
  const model = scriptedModel(({ messages }) => {
    const last = messages.at(-1);
    if (last?.role === "tool") return { text: "woke up" };
    return { toolCalls: [{ toolName: "pause", input: { ms: Number(last?.role === "user" ? last.content : 0) } }] };
  });
  return env.agent({ name: "sleepers", model, tools: { pause } });
}

function sweepOf(env: Environment): DueSweep {
  return (env as unknown as { dueSweep: DueSweep }).dueSweep;
}

/** Starts conversation `id` on a timer of `ms` and waits until it suspended. */
async function suspend(definition: DefinedAgent, id: string, ms: number): Promise<{ id: string; executionId: string; waitId: string }> {
  return new Promise((resolve, reject) => {
    definition.conversation(id).start(String(ms), {
      onEvent: (event) => {
        if (event.type === "approval_required") resolve({ id, executionId: event.executionId, waitId: event.request.approvalId });
        else if (event.type === "error" || event.type === "done") reject(new Error(`${id} ended ${event.type} before its timer`));
      },
    });
  });
}

describe("the due sweep's timer", () => {
  it("is not set again for waits due after it fires; is set once for each nearer due time; every wait fires once", async () => {
    const env = await openEnvironment();
    const definition = sleepers(env);
    const sweep = sweepOf(env);
    // The sweep's first read at open arms the rescan.
    await waitFor(async () => (sweep.timersSet > 0 ? true : undefined));
    const atOpen = sweep.timersSet;
    for (let index = 0; index < 20; index += 1) await suspend(definition, `hour-${index}`, 3_600_000 + index);
    expect(sweep.timersSet).toBe(atOpen);
    // Nearer each time (all within the rescan's minute): set for each.
    const descending = [];
    for (const ms of [50_000, 45_000, 40_000]) descending.push(await suspend(definition, `near-${ms}`, ms));
    expect(sweep.timersSet).toBe(atOpen + 3);
    // Later than the timer armed: not set.
    const ascending = [];
    for (const ms of [55_000, 58_000]) ascending.push(await suspend(definition, `later-${ms}`, ms));
    expect(sweep.timersSet).toBe(atOpen + 3);
    // Fired now, each once (the sweep's own firing at the due time: the next test).
    const outcomes = await Promise.all(
      [...descending, ...ascending].map(({ id, executionId, waitId }) => definition.conversation(id).resume(executionId, { waitId, fire: true }).result),
    );
    expect(outcomes.map((result) => result.outcome)).toEqual(Array(5).fill("completed"));
    expect((await env.pendingApprovals()).filter((pending) => pending.kind === "timer")).toHaveLength(20);
    await env.close();
  }, 60_000);

  it("fires a wait committed due after the one armed (not armed for it) at its own time, once the first fired", async () => {
    const env = await openEnvironment();
    const definition = sleepers(env);
    const sweep = sweepOf(env);
    await waitFor(async () => (sweep.timersSet > 0 ? true : undefined));
    // Far enough apart that the first is not due before the second is committed.
    const first = await suspend(definition, "first", 5_000);
    const setForFirst = sweep.timersSet;
    const second = await suspend(definition, "second", 10_000);
    // The second is due after the first: no timer set for it when it was committed.
    const setForSecond = sweep.timersSet - setForFirst;
    const ended = await Promise.all(
      [first, second].map(({ executionId }) =>
        waitFor(async () => {
          const row = await env.execution(executionId);
          return row?.status === "terminal" ? row : undefined;
        }),
      ),
    );
    expect(setForSecond).toBe(0);
    expect(ended.map((row) => row.outcome)).toEqual(["completed", "completed"]);
    await env.close();
  }, 60_000);
});
