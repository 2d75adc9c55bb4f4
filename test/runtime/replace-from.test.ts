// A start's `replaceFrom` (issue 27 item 3, docs/decisions/0070): the new
// execution replaces, in its conversation's memory, the named execution's
// turn and every later one, so regenerating an answer or editing a message
// does not leave the old turn beside the new one. Through the public API,
// on the embedded SQLite store (the store-conformance suite runs the
// operation on PostgreSQL and the simulated store too).

import type { UIMessage } from "ai";
import { afterEach, describe, expect, it } from "vitest";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { z } from "zod";
import { Phronomy, tool, type Environment } from "../../host/index.js";
import { openEnvironment, recordingLogger, temporaryStorePath } from "./helpers.js";

/** A message's text (an answer rebuilt from its timeline opens with a step-start part). */
function textOf(message: UIMessage): string {
  return message.parts.map((part) => (part.type === "text" ? part.text : "")).join("");
}

let env: Environment | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

/** A model that answers "answer N to: <last input>" and keeps every prompt it saw. */
function promptRecordingModel() {
  const prompts: { role: string; content: unknown }[][] = [];
  const model = scriptedModel(({ messages }) => {
    prompts.push(messages.map((message) => ({ role: message.role, content: "content" in message ? message.content : "text" in message ? message.text : "" })));
    const last = messages.at(-1);
    return { text: `answer ${prompts.length} to: ${last?.role === "user" ? String(last.content) : "?"}` };
  });
  return { model, prompts };
}

/** The user and assistant texts of a prompt, in order. */
function turnsOf(prompt: readonly { role: string; content: unknown }[]): string[] {
  return prompt.filter((message) => message.role !== "system").map((message) => `${message.role}: ${String(message.content)}`);
}

describe("start({ replaceFrom })", () => {
  it("regenerating the second turn: the model sees one copy of it, messages() shows the replaced history, and a reopened store keeps it", async () => {
    const path = await temporaryStorePath();
    env = await Phronomy.open({ store: path, logger: recordingLogger() });
    const { model, prompts } = promptRecordingModel();
    let chat = env.agent({ name: "support", model }).conversation("user-1");
    const first = await chat.start("hello").result;
    const second = await chat.start("where is my order?").result;
    const regenerated = await chat.start("where is my order?", { replaceFrom: second.executionId }).result;

    expect(turnsOf(prompts.at(-1)!), "memory before the replaced turn, then the new input once").toEqual([
      "user: hello",
      "assistant: answer 1 to: hello",
      "user: where is my order?",
    ]);
    const expected = [
      { id: `${first.executionId}:user`, role: "user", text: "hello" },
      { id: first.executionId, role: "assistant", text: "answer 1 to: hello" },
      { id: `${regenerated.executionId}:user`, role: "user", text: "where is my order?" },
      { id: regenerated.executionId, role: "assistant", text: "answer 3 to: where is my order?" },
    ];
    const shown = async () =>
      (await chat.messages()).map((message) => ({
        id: message.id,
        role: message.role,
        text: textOf(message),
      }));
    expect(await shown()).toEqual(expected);
    // The replaced execution stays in the store (its timeline, its
    // answer); only the memory the model is prompted with lost it.
    expect((await env.execution(second.executionId))?.status).toBe("terminal");
    expect((await env.execution(regenerated.executionId))?.metadata.config?.["replaceFrom"]).toBe(second.executionId);

    await env.close();
    env = await Phronomy.open({ store: path, logger: recordingLogger() });
    chat = env.agent({ name: "support", model }).conversation("user-1");
    expect(await shown(), "the cut is durable").toEqual(expected);
    await chat.start("thanks").result;
    expect(turnsOf(prompts.at(-1)!)).toEqual([
      "user: hello",
      "assistant: answer 1 to: hello",
      "user: where is my order?",
      "assistant: answer 3 to: where is my order?",
      "user: thanks",
    ]);
  });

  it("editing the first message drops every later turn; the conversation goes on from the edit", async () => {
    env = await openEnvironment();
    const { model, prompts } = promptRecordingModel();
    const chat = env.agent({ name: "support", model }).conversation("user-2");
    const first = await chat.start("hello").result;
    await chat.start("second").result;
    await chat.start("third").result;
    const edited = await chat.start("hi there", { replaceFrom: first.executionId }).result;
    expect(turnsOf(prompts.at(-1)!)).toEqual(["user: hi there"]);
    expect((await chat.messages()).map((message) => message.id)).toEqual([`${edited.executionId}:user`, edited.executionId]);
  });

  it("refuses, leaving memory as it was: an unknown execution, another conversation's, a malformed id (one not ended: the store-conformance suite)", async () => {
    env = await openEnvironment();
    const { model } = promptRecordingModel();
    const definition = env.agent({ name: "support", model });
    const chat = definition.conversation("user-3");
    const other = definition.conversation("user-4");
    await chat.start("hello").result;
    const elsewhere = await other.start("hi").result;
    const before = await chat.messages();

    await expect(chat.start("x", { replaceFrom: "no-such-execution" }).result).rejects.toMatchObject({
      code: "EXECUTION_NOT_FOUND",
      details: { reason: "replace_unknown", replaceFrom: "no-such-execution" },
    });
    await expect(chat.start("x", { replaceFrom: elsewhere.executionId }).result).rejects.toMatchObject({
      code: "INVALID_INPUT",
      message: expect.stringContaining('belongs to conversation "user-4"'),
      details: { reason: "replace_other_conversation" },
    });
    for (const replaceFrom of ["", 42, "x".repeat(201)]) {
      await expect(chat.start("x", { replaceFrom: replaceFrom as string }).result, String(replaceFrom)).rejects.toMatchObject({
        code: "INVALID_INPUT",
        message: expect.stringContaining('"replaceFrom"'),
      });
    }
    expect(await chat.messages(), "refusals write nothing").toEqual(before);
    expect(await other.messages()).toHaveLength(2);
  });

  it('replacing the answer still waiting for approval: refused AGENT_BUSY by default; with onBusy: "interrupt" it is cancelled, then cut from memory', async () => {
    env = await openEnvironment();
    const model = scriptedModel(({ messages }) => {
      const last = messages.at(-1);
      if (last?.role === "user" && last.content === "slow") return { toolCalls: [{ toolName: "wait", input: {} }] };
      return { text: `ok: ${last?.role === "user" ? String(last.content) : "tool"}` };
    });
    const wait = tool({ description: "waits for approval", inputSchema: z.object({}), needsApproval: true, execute: async () => "done" });
    const chat = env.agent({ name: "support", model, tools: { wait } }).conversation("user-5");
    await chat.start("hello").result;
    const slow = chat.start("slow");
    const slowId = await slow.executionId;
    await expect.poll(async () => (await env!.execution(slowId))?.status).toBe("suspended");
    await expect(chat.start("fast", { replaceFrom: slowId }).result).rejects.toMatchObject({ code: "AGENT_BUSY" });
    const result = await chat.start("fast", { replaceFrom: slowId, onBusy: "interrupt" }).result;
    await expect(slow.result).rejects.toMatchObject({ code: "CANCELLED" });
    const texts = (await chat.messages()).map((message) => `${message.role}: ${textOf(message)}`);
    expect(texts).toEqual(["user: hello", "assistant: ok: hello", "user: fast", "assistant: ok: fast"]);
    expect((await chat.messages()).at(-1)?.id).toBe(result.executionId);
  });
  it("a failed execution whose turn was replaced is not retried (RETRY_REFUSED, replaced), and the retry writes nothing", async () => {
    env = await openEnvironment();
    const failing = { on: true };
    const model = scriptedModel(({ messages }) => {
      const last = messages.at(-1);
      if (failing.on) return { error: "the provider is down" };
      return { text: `ok: ${last?.role === "user" ? String(last.content) : "?"}` };
    });
    const chat = env.agent({ name: "support", model, maxRetries: 0 }).conversation("user-6");
    const failed = chat.start("hello");
    const failedId = await failed.executionId;
    await expect(failed.result).rejects.toMatchObject({ code: "MODEL_FAILED" });
    failing.on = false;
    await chat.start("hello again", { replaceFrom: failedId }).result;
    const before = { row: await env.execution(failedId), memory: await chat.messages() };
    await expect(env.retry(failedId).result).rejects.toMatchObject({ code: "RETRY_REFUSED", details: { reason: "replaced" } });
    expect({ row: await env.execution(failedId), memory: await chat.messages() }).toEqual(before);
    expect(before.memory.map((message) => textOf(message))).toEqual(["hello again", "ok: hello again"]);
  });
});
