// Answering waits from a chat page (host/chat/wait-answers.ts, decision
// 0080), through the AI SDK's own `Chat` (what `useChat` runs) over the
// shipped routes: a typed wait answered with `addToolOutput` on the call
// its `data-wait` part names — a value its schema refuses comes back as a
// typed 400 and leaves the wait pending, the good one runs the answer on —;
// an approval's reason kept when approved as when declined; a response in
// place of the tool (`addToolOutput` on a call waiting for approval).

import { lastAssistantMessageIsCompleteWithApprovalResponses, lastAssistantMessageIsCompleteWithToolCalls, type UIMessage } from "ai";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { chatRoutes, humanInput, tool, type Environment } from "../../host/index.js";
import { openEnvironment, turnOf, waitFor } from "../runtime/helpers.js";
import { Chat, transportTo } from "../support/memory-chat.js";

let env: Environment | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

/** Waits until the chat's last message is the assistant's, finished with `outcome`. */
function finishedWith(chat: Chat, outcome: string): Promise<UIMessage> {
  return waitFor(async () => {
    const last = chat.messages.at(-1);
    return chat.status === "ready" && last?.role === "assistant" && (last.metadata as { outcome?: string } | undefined)?.outcome === outcome ? last : undefined;
  }, 20_000);
}

function partOf(message: UIMessage, type: string): Record<string, unknown> | undefined {
  return message.parts.find((part) => part.type === type) as Record<string, unknown> | undefined;
}

/** The text of the tool results the model was shown in its last call. */
function toolResultsSeen(messages: readonly { role: string; results?: unknown }[]): string {
  return JSON.stringify(messages.filter((message) => message.role === "tool").map((message) => message.results));
}

describe("answering waits from the chat routes, through the AI SDK's Chat", () => {
  it("a typed wait: a value its schema refuses is a 400 INVALID_INPUT and the wait stays pending; the good value runs the answer on", async () => {
    env = await openEnvironment();
    const askDate = humanInput({
      description: "Asks for a delivery date",
      inputSchema: z.object({ question: z.string() }),
      responseSchema: z.object({ date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/) }),
    });
    let seen = "";
    const model = scriptedModel(({ messages }) => {
      if (turnOf(messages) === 0) return { toolCalls: [{ toolName: "askDate", input: { question: "When?" } }] };
      seen = toolResultsSeen(messages);
      return { text: "Booked." };
    });
    const routes = chatRoutes(env, env.agent({ name: "booking", model, tools: { askDate } }));
    const chat = new Chat({ id: "wait-1", transport: transportTo(routes), sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls });
    await chat.sendMessage({ text: "Book a delivery" });
    const suspended = await finishedWith(chat, "suspended");
    const wait = partOf(suspended, "data-wait") as { data: { waitId: string; toolCallId: string; responseSchema: unknown } };
    expect(wait.data.responseSchema).toMatchObject({ type: "object", properties: { date: { type: "string" } } });
    expect(partOf(suspended, "tool-askDate")).toMatchObject({ state: "input-available", toolCallId: wait.data.toolCallId });

    await chat.addToolOutput({ tool: "askDate", toolCallId: wait.data.toolCallId, output: { date: "next Tuesday" } });
    await waitFor(async () => (chat.status === "error" ? true : undefined));
    expect(chat.error?.message).toContain("INVALID_INPUT");
    expect(chat.error?.message).toContain("failed its schema");
    const [pending] = await env.pendingApprovals();
    expect(pending, "a refused value changes nothing").toMatchObject({ kind: "input", request: { approvalId: wait.data.waitId } });

    await chat.addToolOutput({ tool: "askDate", toolCallId: wait.data.toolCallId, output: { date: "2027-01-05" } });
    const done = await finishedWith(chat, "completed");
    expect(chat.error).toBeUndefined();
    expect(chat.messages.map((message) => message.role)).toEqual(["user", "assistant"]);
    expect(partOf(done, "tool-askDate")).toMatchObject({ state: "output-available", output: { date: "2027-01-05" } });
    expect(done.parts.at(-1)).toMatchObject({ type: "text", text: "Booked." });
    expect(seen).toContain("2027-01-05");
    expect(await env.pendingApprovals()).toEqual([]);
    const timeline = await env.timeline(pending!.executionId);
    expect(timeline.filter((step) => step.kind === "approval_decided")).toHaveLength(1);
  });

  it("a typed wait answered with an error (addToolOutput output-error) is a 400 that says to give a value", async () => {
    env = await openEnvironment();
    const askDate = humanInput({ inputSchema: z.object({ question: z.string() }), responseSchema: z.object({ date: z.string() }) });
    const model = scriptedModel(() => ({ toolCalls: [{ toolName: "askDate", input: { question: "When?" } }] }));
    const routes = chatRoutes(env, env.agent({ name: "booking", model, tools: { askDate } }));
    const chat = new Chat({ id: "wait-2", transport: transportTo(routes), sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls });
    await chat.sendMessage({ text: "Book a delivery" });
    const suspended = await finishedWith(chat, "suspended");
    const wait = partOf(suspended, "data-wait") as { data: { toolCallId: string } };
    await chat.addToolOutput({ tool: "askDate", toolCallId: wait.data.toolCallId, state: "output-error", errorText: "no idea" });
    await waitFor(async () => (chat.status === "error" ? true : undefined));
    expect(chat.error?.message).toContain("is answered with a value");
    expect(await env.pendingApprovals()).toHaveLength(1);
  });

  it("an approval's reason is recorded when approved and told to the model when declined", async () => {
    env = await openEnvironment();
    const refund = tool({ inputSchema: z.object({ orderId: z.string() }), needsApproval: () => true, execute: () => ({ refunded: true }) });
    let seen = "";
    const model = scriptedModel(({ messages }) => {
      if (turnOf(messages) === 0) return { toolCalls: [{ toolName: "refund", input: { orderId: "42" } }] };
      seen = toolResultsSeen(messages);
      return { text: "done" };
    });
    const routes = chatRoutes(env, env.agent({ name: "support", model, tools: { refund } }));
    for (const [chatId, approved, reason] of [
      ["approve-1", true, "photo of the damage checked"],
      ["decline-1", false, "the order was never paid"],
    ] as const) {
      const chat = new Chat({ id: chatId, transport: transportTo(routes), sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses });
      await chat.sendMessage({ text: "Refund order 42" });
      const suspended = await finishedWith(chat, "suspended");
      const part = partOf(suspended, "tool-refund") as { approval: { id: string } };
      await chat.addToolApprovalResponse({ id: part.approval.id, approved, reason });
      await finishedWith(chat, "completed");
      const executionId = (suspended.metadata as { executionId: string }).executionId;
      const decided = (await env.timeline(executionId)).find((step) => step.kind === "approval_decided");
      expect(decided?.payload, chatId).toMatchObject({ approved, reason });
      if (!approved) expect(seen).toContain(reason);
    }
  });

  it("addToolOutput on a call waiting for approval answers in place of the tool: it does not run, the model sees the response", async () => {
    env = await openEnvironment();
    const runs: string[] = [];
    const refund = tool({
      inputSchema: z.object({ orderId: z.string() }),
      needsApproval: () => true,
      execute: ({ orderId }) => {
        runs.push(orderId);
        return { refunded: true, note: "by the tool" };
      },
    });
    let seen = "";
    const model = scriptedModel(({ messages }) => {
      if (turnOf(messages) === 0) return { toolCalls: [{ toolName: "refund", input: { orderId: "42" } }] };
      seen = toolResultsSeen(messages);
      return { text: "done" };
    });
    const routes = chatRoutes(env, env.agent({ name: "support", model, tools: { refund } }));
    const chat = new Chat({ id: "respond-1", transport: transportTo(routes), sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls });
    await chat.sendMessage({ text: "Refund order 42" });
    const suspended = await finishedWith(chat, "suspended");
    const part = partOf(suspended, "tool-refund") as { toolCallId: string; state: string };
    expect(part.state).toBe("approval-requested");

    await chat.addToolOutput({ tool: "refund", toolCallId: part.toolCallId, output: { refunded: false, note: "refunded by hand at the desk" } });
    const done = await finishedWith(chat, "completed");
    expect(runs, "the tool never ran").toEqual([]);
    expect(partOf(done, "tool-refund")).toMatchObject({ state: "output-available", output: { refunded: false, note: "refunded by hand at the desk" } });
    expect(seen).toContain("refunded by hand at the desk");
  });
});
