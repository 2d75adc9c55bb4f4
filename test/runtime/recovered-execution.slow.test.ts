// An execution recovered after a restart is the one the crashed process
// started, in what the application hears of it (issue 24, item 7): its
// events reach the agent definition's `onEvent` (not only `env.wait` and
// the store), and a start with `stream: true` is streamed again, its model
// call emitting `text_delta` events. The crash is real: a child process
// starts the run and kills itself with SIGKILL while the model is called.

import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { Phronomy, type ExecutionEvent } from "../../host/index.js";
import { runUntilKilled } from "../support/child-process.js";
import { recordingLogger, scriptedModel, temporaryStorePath } from "./helpers.js";

const childScript = fileURLToPath(new URL("./fixtures/recovery-child.ts", import.meta.url));

/** Runs the child on `store` until it kills itself; the execution it left. */
async function crashedStart(store: string): Promise<string> {
  return (await runUntilKilled<{ executionId: string }>(childScript, [store])).executionId;
}

describe("an execution recovered after a restart", () => {
  it("streams to the agent definition's onEvent: its progress, its text deltas (stream: true was kept) and done", async () => {
    const store = await temporaryStorePath();
    const executionId = await crashedStart(store);
    const answer = "Order 42 has shipped and arrives on Monday.";
    const events: ExecutionEvent[] = [];
    const env = await Phronomy.open({ store, logger: recordingLogger() });
    try {
      const agent = env.agent({
        id: "support",
        model: scriptedModel(() => ({ text: answer })),
        onEvent: (event) => {
          events.push(event);
        },
      });
      await agent.ready; // recovered, continuing
      await expect(env.wait(executionId).result).resolves.toMatchObject({ executionId, outcome: "completed", output: answer });
      expect(events.every((event) => event.executionId === executionId)).toBe(true);
      const types = events.map((event) => event.type);
      expect(types[0]).toBe("model_call_started");
      expect(types.at(-1)).toBe("done");
      const deltas = events.flatMap((event) => (event.type === "text_delta" ? [event.delta] : []));
      expect(deltas.length).toBeGreaterThan(1);
      expect(deltas.join("")).toBe(answer);
    } finally {
      await env.close();
    }
  });
});
