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

/** What a page shows: user messages by their parts (their ids are the
 * client's own), assistant messages whole but for the history's `at`. */
function shown(messages: readonly UIMessage[]): unknown[] {
  return JSON.parse(
    JSON.stringify(
      messages.map((message) => {
        if (message.role === "user") return { role: message.role, parts: message.parts };
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
