// `conversation.messages()` (issue 27): the chat as the AI SDK's UI
// messages, from the conversation's memory — each execution's input and
// answer — which outlives its executions when retention prunes them; while
// an execution is stored, its answer has the parts its chat stream gave.

import { afterEach, describe, expect, it } from "vitest";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import type { ChatChunk, Environment } from "../../host/index.js";
import { messageOf } from "../support/ui-stream.js";
import { deferred, openEnvironment } from "./helpers.js";

let env: Environment | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

describe("conversation.messages()", () => {
  it("user and assistant messages, oldest first, the assistant's id its execution's; still there once the executions are pruned", async () => {
    env = await openEnvironment();
    const model = scriptedModel(({ messages }) => {
      const last = messages.at(-1);
      return { text: `you said: ${last?.role === "user" ? last.content : "?"}` };
    });
    const chat = env.agent({ name: "support", model }).conversation("user-1");
    const first = await chat.start("hello").result;
    const second = await chat.start("where is my order?").result;
    const expected = [
      {
        id: `${first.executionId}:user`,
        role: "user",
        parts: [{ type: "text", text: "hello" }],
        metadata: { executionId: first.executionId, at: expect.any(Number) },
      },
      {
        id: first.executionId,
        role: "assistant",
        parts: [{ type: "text", text: "you said: hello" }],
        metadata: { executionId: first.executionId, at: expect.any(Number) },
      },
      {
        id: `${second.executionId}:user`,
        role: "user",
        parts: [{ type: "text", text: "where is my order?" }],
        metadata: { executionId: second.executionId, at: expect.any(Number) },
      },
      {
        id: second.executionId,
        role: "assistant",
        parts: [{ type: "text", text: "you said: where is my order?" }],
        metadata: { executionId: second.executionId, at: expect.any(Number) },
      },
    ];
    // While their executions are stored, answers are rebuilt from their
    // timelines: the parts and metadata their chat streams gave.
    const streamed = expected.map((message) =>
      message.role === "user"
        ? message
        : {
            ...message,
            parts: [{ type: "step-start" }, { type: "text", text: message.parts[0]!.text, state: "done" }],
            metadata: {
              ...message.metadata,
              outcome: "completed",
              resumeAt: expect.any(String),
              usage: expect.objectContaining({ totalTokens: expect.any(Number) }),
            },
          },
    );
    expect(await chat.messages()).toEqual(streamed);
    expect(await chat.messages({ limit: 2 })).toEqual(streamed.slice(2));

    const pruned = await env.prune({ olderThanMs: 0 });
    expect(pruned.executions).toBe(2);
    expect(await env.execution(first.executionId)).toBeUndefined();
    expect(await chat.messages(), "the memory outlives its executions").toEqual(expected);
  });

  it("an answer that waited in the queue is rebuilt as its stream shows it (its queued mark, step 0, is no part)", async () => {
    env = await openEnvironment();
    const gate = deferred();
    const model = scriptedModel(async ({ messages }) => {
      const last = messages.at(-1);
      if (last?.role === "user" && last.content === "one") await gate.promise;
      return { text: `you said: ${last?.role === "user" ? last.content : "?"}` };
    });
    const chat = env.agent({ name: "support", model, onBusy: "enqueue" }).conversation("user-q");
    const first = chat.start("one");
    await first.executionId;
    const second = chat.start("two");
    const secondId = await second.executionId;
    await expect.poll(async () => (await env!.execution(secondId))?.status).toBe("queued");
    gate.resolve();
    await Promise.all([first.result, second.result]);
    expect((await env.timeline(secondId))[0]).toMatchObject({ seq: 0, kind: "queued" });
    const history = await chat.messages();
    expect(history.map((message) => message.role)).toEqual(["user", "assistant", "user", "assistant"]);
    const chunks: ChatChunk[] = [];
    for await (const chunk of await env.stream(secondId)) chunks.push(chunk);
    const replayed = await messageOf(chunks);
    const { at: _at, ...metadata } = history[3]!.metadata!;
    expect({ ...history[3]!, metadata }).toEqual(replayed);
  });

  it("a conversation with nothing yet has no messages; a bad limit is refused naming it", async () => {
    env = await openEnvironment();
    const chat = env.agent({ name: "support", model: scriptedModel(() => ({ text: "hi" })) }).conversation("nobody");
    expect(await chat.messages()).toEqual([]);
    for (const limit of [0, 1.5, 1_001, Number.NaN]) {
      await expect(chat.messages({ limit }), String(limit)).rejects.toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining("limit") });
    }
  });
});
