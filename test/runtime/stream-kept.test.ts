// `stream: true` is kept with the execution (its durable config,
// `metadata.config.stream`) on every path that creates or reopens one, so
// whatever runs it next — a recovery, a retry, the queue's next head —
// calls the model streaming (docs/decisions/0056, 0072). A filed start on
// PostgreSQL: test/postgres/stream-kept.test.ts. A recovery after kill -9:
// test/chat/recovered-stream.slow.test.ts.

import { describe, expect, it } from "vitest";
import { deferred, openEnvironment, scriptedModel } from "./helpers.js";

describe("stream: true kept with the execution", () => {
  it("a start here, and a message queued behind it (onBusy: enqueue), store it; a start without it does not", async () => {
    const env = await openEnvironment();
    const gate = deferred();
    const model = scriptedModel(async ({ turn }) => {
      if (turn === 0) await gate.promise;
      return { text: "Order 42 has shipped and arrives on Monday." };
    });
    const agent = env.agent({ id: "support", model });
    const first = agent.start("Where is order 42?", { stream: true });
    const queued = agent.start("And order 43?", { stream: true, onBusy: "enqueue" });
    const [firstId, queuedId] = await Promise.all([first.executionId, queued.executionId]);
    expect((await env.execution(queuedId))?.status).toBe("queued");
    gate.resolve();
    const deltas: string[] = [];
    for await (const event of queued.events) if (event.type === "text_delta") deltas.push(event.delta);
    expect(deltas.length, "the queued message streamed when it ran").toBeGreaterThan(1);
    await first.result;
    const plain = await agent.start("And order 44?").executionId;
    await env.wait(plain).result;
    expect((await env.execution(firstId))?.metadata.config).toMatchObject({ stream: true });
    expect((await env.execution(queuedId))?.metadata.config).toMatchObject({ stream: true });
    expect((await env.execution(plain))?.metadata.config?.["stream"]).toBeUndefined();
  });

  it("a retry of a failed streamed execution streams its new attempt", async () => {
    const env = await openEnvironment();
    let calls = 0;
    const model = scriptedModel(() => {
      calls += 1;
      return calls === 1 ? { error: "the provider refused the request" } : { text: "Order 42 has shipped and arrives on Monday." };
    });
    const failed = env.agent({ id: "support", model, maxRetries: 0 }).start("Where is order 42?", { stream: true });
    await expect(failed.result).rejects.toMatchObject({ code: "MODEL_FAILED" });
    const deltas: string[] = [];
    const retried = env.retry(await failed.executionId, {
      onEvent: (event) => {
        if (event.type === "text_delta") deltas.push(event.delta);
      },
    });
    await expect(retried.result).resolves.toMatchObject({ outcome: "completed" });
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join("")).toBe("Order 42 has shipped and arrives on Monday.");
  });
});
