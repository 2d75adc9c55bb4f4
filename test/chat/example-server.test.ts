// The example chat server (examples/chat-server.ts) through the AI SDK's
// own client transport, `DefaultChatTransport`, as `useChat` drives it:
// a POST streams the answer (text, a tool call with its input and output),
// a GET resumes a running answer (204 once it ended, as `resume: true`
// expects), an approval travels as the AI SDK's approval parts and its
// response, and bad ids and positions come back as typed HTTP errors.

import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses, readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import { afterEach, describe, expect, it } from "vitest";
import { startChatServer, type ChatServer } from "../../examples/chat-server.js";
import { temporaryStorePath, waitFor } from "../runtime/helpers.js";
import { readServerSentEvents } from "../support/ui-stream.js";
import { Chat } from "../support/memory-chat.js";

const servers: ChatServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

/** Paced so an answer runs long enough (≈0.5 s) for a second client to join it. */
async function server(pacingMs = 40): Promise<ChatServer> {
  const started = await startChatServer({ store: await temporaryStorePath(), pacingMs, lookupMs: 100 });
  servers.push(started);
  return started;
}

function userMessage(text: string): UIMessage {
  return { id: `user-${text.length}`, role: "user", parts: [{ type: "text", text }] };
}

async function finalMessage(stream: ReadableStream<UIMessageChunk>, message?: UIMessage): Promise<UIMessage> {
  let last: UIMessage | undefined;
  for await (const state of readUIMessageStream({ stream, ...(message ? { message } : {}), terminateOnError: true })) last = state;
  return structuredClone(last!);
}

function send(transport: DefaultChatTransport<UIMessage>, chatId: string, messages: UIMessage[]): Promise<ReadableStream<UIMessageChunk>> {
  return transport.sendMessages({ chatId, messages, trigger: "submit-message", messageId: undefined, abortSignal: undefined });
}

describe("the example chat server, through the AI SDK's DefaultChatTransport", () => {
  it("POST streams the answer; GET resumes it while it runs and answers 204 once it ended", async () => {
    const { url } = await server();
    const transport = new DefaultChatTransport<UIMessage>({ api: `${url}/api/chat` });
    const posted = await send(transport, "chat-1", [userMessage("Where is order 42?")]);
    // While it runs, a second client (a reloaded page) replays it from the start.
    const resumed = await transport.reconnectToStream({ chatId: "chat-1" });
    expect(resumed, "a running answer can be resumed").not.toBeNull();
    const [message, replayed] = await Promise.all([finalMessage(posted), finalMessage(resumed!)]);

    expect(message.parts).toEqual([
      { type: "step-start" },
      expect.objectContaining({ type: "text", text: "Let me look up order 42 for you.", state: "done" }),
      expect.objectContaining({
        type: "tool-lookupOrder",
        state: "output-available",
        input: { orderId: "42" },
        output: expect.objectContaining({ item: "blue kettle" }),
      }),
      { type: "step-start" },
      expect.objectContaining({ type: "text", text: "Your blue kettle (order 42) is out for delivery with PostNL.", state: "done" }),
    ]);
    expect(message.metadata).toMatchObject({ executionId: message.id, outcome: "completed" });
    expect(replayed).toEqual(message);
    expect(await transport.reconnectToStream({ chatId: "chat-1" }), "nothing to resume once it ended").toBeNull();
  });

  it("an approval: the tool part asks for it; the approval response, sent back, runs the tool and streams the rest", async () => {
    const { url, env } = await server();
    const transport = new DefaultChatTransport<UIMessage>({ api: `${url}/api/chat` });
    const question = userMessage("Please refund order 42");
    const suspended = await finalMessage(await send(transport, "chat-2", [question]));
    expect(suspended.metadata).toMatchObject({ outcome: "suspended" });
    const refund = suspended.parts.find((part) => part.type === "tool-issueRefund") as
      | { state: string; approval: { id: string; approved?: boolean } }
      | undefined;
    expect(refund).toMatchObject({ state: "approval-requested", input: { orderId: "42", amountCents: 3990 } });
    expect(await env.pendingApprovals()).toHaveLength(1);

    // What addToolApprovalResponse({ id, approved: true }) leaves in the message.
    const answered = structuredClone(suspended);
    const part = answered.parts.find((candidate) => candidate.type === "tool-issueRefund") as unknown as {
      state: string;
      approval: { id: string; approved?: boolean };
    };
    part.state = "approval-responded";
    part.approval = { ...part.approval, approved: true };
    const done = await finalMessage(await send(transport, "chat-2", [question, answered]), answered);
    expect(done.parts.filter((candidate) => candidate.type !== "step-start")).toEqual([
      expect.objectContaining({ type: "text", text: "Let me look up order 42 for you." }),
      expect.objectContaining({ type: "tool-lookupOrder", state: "output-available" }),
      expect.objectContaining({
        type: "tool-issueRefund",
        state: "output-available",
        output: expect.objectContaining({ refunded: true }),
        approval: expect.objectContaining({ approved: true }),
      }),
      expect.objectContaining({ type: "text", text: "Order 42 is refunded." }),
    ]);
    expect(done.metadata).toMatchObject({ outcome: "completed" });
    expect(await env.pendingApprovals()).toEqual([]);
  });

  it("a client that drops mid-text and reconnects to the same server gets the rest of the text live, before it is recorded", async () => {
    const { url } = await server(150);
    const posted = await fetch(`${url}/api/chat`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ id: "chat-5", messages: [userMessage("Where is order 42?")] }),
    });
    const executionId = posted.headers.get("x-phronomy-execution-id");
    const before = await readServerSentEvents(posted, (event) => (event.data ?? "").includes('"text-delta"'));
    const lastId = before.at(-1)!.id!;
    expect(lastId).toMatch(/^\d+\.t\d+$/);
    const resumed = await fetch(`${url}/api/chat/chat-5/stream?executionId=${executionId}`, { headers: { "Last-Event-ID": lastId } });
    const after = await readServerSentEvents(resumed, (event) => (event.data ?? "").includes('"text-end"'));
    const [barrier] = lastId.split(".");
    const deltas = after.filter((event) => (event.data ?? "").includes('"text-delta"'));
    expect(deltas.length, "the text went on").toBeGreaterThan(0);
    expect(deltas[0]!.id, "the first delta after the reconnect is streamed text of the same call").toMatch(new RegExp(`^${barrier}\\.t\\d+$`));
    const text = [...before, ...after]
      .filter((event) => (event.data ?? "").includes('"text-delta"'))
      .map((event) => (JSON.parse(event.data!) as { delta: string }).delta)
      .join("");
    expect(text).toBe("Let me look up order 42 for you.");
  });

  it("bad ids and positions are typed HTTP errors; an unknown chat has nothing to resume", async () => {
    const { url } = await server();
    const transport = new DefaultChatTransport<UIMessage>({ api: `${url}/api/chat` });
    const message = await finalMessage(await send(transport, "chat-3", [userMessage("Where is order 7?")]));
    expect(await transport.reconnectToStream({ chatId: "nobody" })).toBeNull();
    const malformed = await fetch(`${url}/api/chat/chat-3/stream?resumeAt=banana`);
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ code: "INVALID_INPUT" });
    const foreign = await fetch(`${url}/api/chat/chat-3/stream`, { headers: { "Last-Event-ID": "999.0" } });
    expect(foreign.status).toBe(400);
    const otherChat = await fetch(`${url}/api/chat/chat-other/stream?executionId=${message.id}&resumeAt=0`);
    expect(otherChat.status, "another chat's answer").toBe(404);
    const unknown = await fetch(`${url}/api/chat/chat-3/stream?executionId=no-such-execution&resumeAt=0`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ code: "EXECUTION_NOT_FOUND" });
    // A known position replays what follows it, with positions as SSE ids.
    const replay = await fetch(`${url}/api/chat/chat-3/stream?resumeAt=0`);
    const text = await replay.text();
    expect(text).toMatch(/^id: 0\ndata: \{"type":"start"/);
    expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
    expect(replay.headers.get("x-vercel-ai-ui-message-stream")).toBe("v1");
    expect(replay.headers.get("x-phronomy-execution-id")).toBe(message.id);
  });
});

/** Waits until the chat's last message is the assistant's, finished with `outcome`. */
function finishedWith(chat: Chat, outcome: string): Promise<UIMessage> {
  return waitFor(async () => {
    const last = chat.messages.at(-1);
    return chat.status === "ready" && last?.role === "assistant" && (last.metadata as { outcome?: string } | undefined)?.outcome === outcome ? last : undefined;
  }, 20_000);
}

describe("the example chat server, through the AI SDK's Chat (what useChat runs)", () => {
  it("a question, an approval button pressed (addToolApprovalResponse), the answer; a reloaded page resumes a running answer", async () => {
    const { url } = await server();
    const transport = new DefaultChatTransport<UIMessage>({ api: `${url}/api/chat` });
    const chat = new Chat({ id: "chat-4", transport, sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses });
    await chat.sendMessage({ text: "Please refund order 42" });
    const suspended = await finishedWith(chat, "suspended");
    const refund = suspended.parts.find((part) => part.type === "tool-issueRefund") as { state: string; approval: { id: string } };
    expect(refund.state).toBe("approval-requested");

    await chat.addToolApprovalResponse({ id: refund.approval.id, approved: true });
    const done = await finishedWith(chat, "completed");
    expect(chat.messages.map((message) => message.role)).toEqual(["user", "assistant"]);
    expect(done.parts.filter((part) => part.type !== "step-start")).toEqual([
      expect.objectContaining({ type: "text", text: "Let me look up order 42 for you." }),
      expect.objectContaining({ type: "tool-lookupOrder", state: "output-available" }),
      expect.objectContaining({ type: "tool-issueRefund", state: "output-available", approval: expect.objectContaining({ approved: true }) }),
      expect.objectContaining({ type: "text", text: "Order 42 is refunded." }),
    ]);

    // Another question; while it runs, the page is reloaded: a new Chat
    // with the stored messages resumes (resume: true calls resumeStream).
    const sending = chat.sendMessage({ text: "Where is order 7?" });
    await waitFor(async () => (chat.messages.length === 4 ? true : undefined));
    const reloaded = new Chat({ id: "chat-4", transport, messages: chat.messages.slice(0, 3) });
    await reloaded.resumeStream();
    await sending;
    const [answer, resumed] = await Promise.all([finishedWith(chat, "completed"), finishedWith(reloaded, "completed")]);
    expect(answer.parts.at(-1)).toMatchObject({ type: "text", text: "Your teapot (order 7) is delivered with DHL." });
    expect(reloaded.messages.map((message) => message.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(resumed).toEqual(answer);
  });
});
