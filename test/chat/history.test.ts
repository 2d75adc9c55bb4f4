// `conversation.messages()` after a reload equals what the AI SDK's `Chat`
// (what `useChat` runs) built live through `chatRoutes` (decision 0073):
// reasoning, tool parts in every state — output, error, waiting for
// approval, approved, denied — and the stream's message metadata, so a
// page loaded from the history shows what it showed before the reload,
// and an approval loaded from it can still be answered.

import type { LanguageModelV4, LanguageModelV4StreamPart } from "@ai-sdk/provider";
import { lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage } from "ai";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { scriptedModel, type ScriptedTurn } from "../../host/agent/scripted-model.js";
import { chatRoutes, tool, type Environment } from "../../host/index.js";
import { openEnvironment, turnOf, waitFor } from "../runtime/helpers.js";
import { Chat, transportTo } from "../support/memory-chat.js";

let env: Environment | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

/** The scripted model, thinking aloud before every answer (streamed and whole). */
function reasoningModel(base: LanguageModelV4, reasoning: string): LanguageModelV4 {
  return {
    ...base,
    doGenerate: async (options) => {
      const result = await base.doGenerate(options);
      return { ...result, content: [{ type: "reasoning", text: reasoning }, ...result.content] };
    },
    doStream: async (options) => {
      const result = await base.doStream(options);
      const thinking: LanguageModelV4StreamPart[] = [
        { type: "reasoning-start", id: "r" },
        { type: "reasoning-delta", id: "r", delta: reasoning },
        { type: "reasoning-end", id: "r" },
      ];
      const reader = result.stream.getReader();
      const stream = new ReadableStream<LanguageModelV4StreamPart>({
        async pull(controller) {
          const next = await reader.read();
          if (next.done) return controller.close();
          controller.enqueue(next.value);
          if (next.value.type === "stream-start") for (const part of thinking) controller.enqueue(part);
        },
      });
      return { ...result, stream };
    },
  };
}

/** Waits until the chat's last message is the assistant's, finished with `outcome`. */
function finishedWith(chat: Chat, outcome: string): Promise<UIMessage> {
  return waitFor(async () => {
    const last = chat.messages.at(-1);
    return chat.status === "ready" && last?.role === "assistant" && (last.metadata as { outcome?: string } | undefined)?.outcome === outcome ? last : undefined;
  }, 20_000);
}

/** What a page shows: user messages by their ids (the client's own,
 * kept: decision 0081) and parts, assistant messages whole but for the
 * history's `at`. */
function shown(messages: readonly UIMessage[]): unknown[] {
  return JSON.parse(
    JSON.stringify(
      messages.map((message) => {
        if (message.role === "user") return { id: message.id, role: message.role, parts: message.parts };
        const { at: _at, ...metadata } = (message.metadata ?? {}) as Record<string, unknown>;
        return { ...message, metadata };
      }),
    ),
  ) as unknown[];
}

describe("conversation.messages() equals the live chat", () => {
  it("reasoning, tool outputs and errors, an approval requested, approved and denied: the same parts after a reload", async () => {
    env = await openEnvironment();
    const lookup = tool({ inputSchema: z.object({ orderId: z.string() }), execute: ({ orderId }) => ({ orderId, status: "shipped" }) });
    const audit = tool({
      inputSchema: z.object({ orderId: z.string() }),
      execute: () => {
        throw new Error("the audit log is offline");
      },
    });
    const refund = tool({ inputSchema: z.object({ orderId: z.string() }), needsApproval: () => true, execute: ({ orderId }) => ({ refunded: orderId }) });
    const base = scriptedModel(({ messages }): ScriptedTurn => {
      const asked = [...messages].reverse().find((message) => message.role === "user");
      const orderId = asked?.role === "user" && asked.content.includes("43") ? "43" : "42";
      const turn = turnOf(messages);
      if (turn === 0) {
        return {
          text: `Looking at order ${orderId}.`,
          toolCalls: [
            { toolName: "lookup", input: { orderId } },
            { toolName: "audit", input: { orderId } },
          ],
        };
      }
      if (turn === 1) return { toolCalls: [{ toolName: "refund", input: { orderId } }] };
      const last = messages.at(-1);
      const declined = last?.role === "tool" && last.results.some((result) => result.isError);
      return { text: declined ? `Order ${orderId} is not refunded.` : `Order ${orderId} is refunded.` };
    });
    const support = env.agent({ name: "support", model: reasoningModel(base, "The customer wants money back."), tools: { lookup, audit, refund } });
    const routes = chatRoutes(env, support);
    const chat = new Chat({ id: "chat-h", transport: transportTo(routes), sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses });
    const conversation = support.conversation("chat-h");

    await chat.sendMessage({ text: "Refund order 42" });
    const waiting = await finishedWith(chat, "suspended");
    expect(waiting.parts.some((part) => part.type === "tool-refund" && (part as { state: string }).state === "approval-requested")).toBe(true);
    expect(shown(await conversation.messages()), "waiting for approval").toEqual(shown(chat.messages));

    // A page reloaded now answers the approval from the history it loaded.
    const reloaded = new Chat({
      id: "chat-h",
      transport: transportTo(routes),
      messages: await conversation.messages(),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    });
    const request = reloaded.messages.at(-1)!.parts.find((part) => part.type === "tool-refund") as { approval: { id: string } };
    await reloaded.addToolApprovalResponse({ id: request.approval.id, approved: true });
    await finishedWith(reloaded, "completed");

    await reloaded.sendMessage({ text: "Refund order 43 too" });
    const second = await finishedWith(reloaded, "suspended");
    const secondRequest = second.parts.find((part) => part.type === "tool-refund") as { approval: { id: string } };
    await reloaded.addToolApprovalResponse({ id: secondRequest.approval.id, approved: false, reason: "over the limit" });
    const denied = await finishedWith(reloaded, "completed");

    const states = denied.parts.filter((part) => part.type.startsWith("tool-")).map((part) => (part as { state: string }).state);
    expect(states).toEqual(["output-available", "output-error", "output-denied"]);
    expect(denied.parts.filter((part) => part.type === "reasoning")).toHaveLength(3);
    expect(reloaded.messages.map((message) => message.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(shown(await conversation.messages()), "after both answers").toEqual(shown(reloaded.messages));
  });
});

describe("user messages come back as the page sent them (decision 0081)", () => {
  it("the client's ids and attachments, after a reload with resume; an edit of a reloaded message replaces its turn; pruned, the memory's text under <id>:user", async () => {
    env = await openEnvironment();
    // The files of the prompt's last user message, counted as the provider gets them.
    const base = scriptedModel(() => ({ text: "Seen." }));
    let seen = 0;
    const model: LanguageModelV4 = {
      ...base,
      doStream: (options) => {
        const last = options.prompt.findLast((message) => message.role === "user");
        seen = Array.isArray(last?.content) ? last.content.filter((part) => part.type === "file").length : 0;
        return base.doStream(options);
      },
    };
    const support = env.agent({ name: "support", model });
    const routes = chatRoutes(env, support);
    const conversation = support.conversation("chat-u");
    const chat = new Chat({ id: "chat-u", transport: transportTo(routes) });
    const ready = (on: Chat) => waitFor(async () => (on.status === "ready" && on.messages.at(-1)?.role === "assistant" ? true : undefined));
    const png = `data:image/png;base64,${Buffer.from([0x89, 0x50, 0x4e, 0x47]).toString("base64")}`;
    const note = `data:text/plain;base64,${Buffer.from("hello kettle").toString("base64")}`;
    await chat.sendMessage({
      text: "What are these?",
      files: [
        { type: "file", mediaType: "image/png", filename: "kettle.png", url: png },
        { type: "file", mediaType: "text/plain", filename: "note.txt", url: note },
      ],
    });
    await ready(chat);
    expect(seen).toBe(2);
    await chat.sendMessage({ text: "Thanks" });
    await ready(chat);
    expect(chat.messages.map(textOfMessage)).toEqual(["What are these?", "Seen.", "Thanks", "Seen."]);
    const userMessages = (messages: readonly UIMessage[]) =>
      messages.filter((message) => message.role === "user").map((message) => ({ id: message.id, parts: message.parts }));

    // A page loaded again: useChat's `resume: true` asks for a running answer (none), the history shows what was sent.
    const loaded = await conversation.messages();
    expect(userMessages(loaded)).toEqual(userMessages(chat.messages));
    expect(loaded[0]!.parts.map((part) => part.type)).toEqual(["file", "file", "text"]);
    const reloaded = new Chat({ id: "chat-u", transport: transportTo(routes), messages: loaded as UIMessage[] });
    await reloaded.resumeStream();
    expect(reloaded.status).toBe("ready");
    expect(shown(reloaded.messages)).toEqual(shown(chat.messages));

    // An edit of the reloaded first message, by the client's id: its turn and the later one are replaced.
    const firstId = chat.messages[0]!.id;
    await reloaded.sendMessage({ text: "What is this one?", files: [{ type: "file", mediaType: "image/png", url: png }], messageId: firstId });
    await ready(reloaded);
    expect(seen).toBe(1);
    expect(reloaded.messages.map(textOfMessage)).toEqual(["What is this one?", "Seen."]);
    const edited = await conversation.messages();
    expect(edited.map((message) => message.id)).toEqual(reloaded.messages.map((message) => message.id));
    expect(userMessages(edited)).toEqual(userMessages(reloaded.messages));
    expect(edited[0]!.id).toBe(firstId);

    // Retention pruned the executions: the memory's text stays, under `<executionId>:user`.
    await env.prune({ olderThanMs: 0 });
    const pruned = await conversation.messages();
    const executionId = (edited[0]!.metadata as { executionId: string }).executionId;
    expect(pruned[0]).toMatchObject({ id: `${executionId}:user`, role: "user", parts: [{ type: "text", text: "What is this one?" }] });
  });

  it("a start's messageId is checked: a non-string or an empty one is INVALID_INPUT naming it", async () => {
    env = await openEnvironment();
    const support = env.agent({ name: "support", model: scriptedModel(() => ({ text: "hi" })) });
    for (const messageId of ["", 7]) {
      const run = support.conversation("chat-v").start("hello", { messageId: messageId as string });
      await expect(run.result).rejects.toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining('"messageId"') });
    }
    await support.conversation("chat-v").start("hello", { messageId: "m-1" }).result;
    expect((await support.conversation("chat-v").messages())[0]!.id).toBe("m-1");
  });
});

function textOfMessage(message: UIMessage): string {
  return message.parts.map((part) => (part.type === "text" ? part.text : "")).join("");
}
