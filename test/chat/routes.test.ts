// The shipped chat routes (host/chat/routes.ts), driven by the AI SDK's own
// client — `Chat` (what `useChat` runs) over `DefaultChatTransport` — whose
// `fetch` calls the handlers directly, as a fetch-style server would: a
// second message while an answer runs waits for it instead of failing, an
// attachment reaches the start, bad requests are typed JSON errors, and
// `handle` routes by method. The example server's tests
// (example-server.test.ts) run the same routes over node:http.

import { DefaultChatTransport, readUIMessageStream, type UIMessage } from "ai";
import { afterEach, describe, expect, it } from "vitest";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { chatRoutes, tool, toUIMessageStreamResponse, type ChatChunk, type Environment } from "../../host/index.js";
import { z } from "zod";
import { deferred, openEnvironment, waitFor } from "../runtime/helpers.js";
import { Chat, transportTo } from "../support/memory-chat.js";

let env: Environment | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

function textOf(message: UIMessage | undefined): string {
  return (message?.parts ?? []).map((part) => (part.type === "text" ? part.text : "")).join("");
}

describe("chatRoutes, through the AI SDK's Chat and DefaultChatTransport", () => {
  it("a second message sent while the first answer runs is answered after it (enqueue by default), not refused", async () => {
    env = await openEnvironment();
    const gate = deferred();
    let calls = 0;
    const model = scriptedModel(async ({ messages }) => {
      calls += 1;
      if (calls === 1) await gate.promise;
      const last = messages.at(-1);
      return { text: `answer to: ${last?.role === "user" ? last.content : "?"}` };
    });
    const routes = chatRoutes(env, env.agent({ name: "support", model }));
    const first = new Chat({ id: "chat-1", transport: transportTo(routes) });
    const second = new Chat({ id: "chat-1", transport: transportTo(routes) });
    const sentFirst = first.sendMessage({ text: "one" });
    await waitFor(async () => calls === 1 || undefined);
    const sentSecond = second.sendMessage({ text: "two" });
    await waitFor(async () => ((await env!.executions({ agentId: "chat-1", status: "queued" })).length === 1 ? true : undefined));
    gate.resolve();
    await Promise.all([sentFirst, sentSecond]);
    await waitFor(async () => (first.status === "ready" && second.status === "ready" ? true : undefined));
    expect(first.error).toBeUndefined();
    expect(second.error).toBeUndefined();
    expect(textOf(first.messages.at(-1))).toBe("answer to: one");
    expect(textOf(second.messages.at(-1))).toBe("answer to: two");
  });

  it("onBusy 'reject': the second message is a 409 AGENT_BUSY the chat shows as its error", async () => {
    env = await openEnvironment();
    const gate = deferred();
    const model = scriptedModel(async () => {
      await gate.promise;
      return { text: "done" };
    });
    const routes = chatRoutes(env, env.agent({ name: "support", model }), { onBusy: "reject" });
    const first = new Chat({ id: "chat-2", transport: transportTo(routes) });
    const sentFirst = first.sendMessage({ text: "one" });
    await waitFor(async () => ((await env!.executions({ agentId: "chat-2", status: "active" })).length === 1 ? true : undefined));
    const refused = await routes.post(
      new Request("http://chat.test/api/chat", {
        method: "POST",
        body: JSON.stringify({ id: "chat-2", messages: [{ id: "u2", role: "user", parts: [{ type: "text", text: "two" }] }] }),
      }),
    );
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ code: "AGENT_BUSY" });
    gate.resolve();
    await sentFirst;
  });

  it("an attachment (a file part) reaches the start as a file part by URL, in the order the page sent the parts", async () => {
    env = await openEnvironment();
    const routes = chatRoutes(env, env.agent({ name: "support", model: scriptedModel(() => ({ text: "A kettle." })) }));
    const chat = new Chat({ id: "chat-3", transport: transportTo(routes) });
    const dataUrl = `data:image/png;base64,${Buffer.from([0x89, 0x50, 0x4e, 0x47]).toString("base64")}`;
    await chat.sendMessage({ text: "What is this?", files: [{ type: "file", mediaType: "image/png", filename: "kettle.png", url: dataUrl }] });
    await waitFor(async () => (chat.status === "ready" ? true : undefined));
    expect(textOf(chat.messages.at(-1))).toBe("A kettle.");
    const [row] = await env.executions({ agentId: "chat-3" });
    expect(row?.input).toEqual({
      messages: [
        {
          role: "user",
          content: "What is this?",
          // `sendMessage({ text, files })` puts the files first; convertToModelMessages keeps that order.
          parts: [
            { type: "file", data: { type: "url", url: dataUrl }, mediaType: "image/png", filename: "kettle.png" },
            { type: "text", text: "What is this?" },
          ],
        },
      ],
    });
  });

  it("stop cancels the chat's running answer and the message queued behind it; nothing running is a 204", async () => {
    env = await openEnvironment();
    const gate = deferred();
    const model = scriptedModel(async () => {
      await gate.promise;
      return { text: "too late" };
    });
    const support = env.agent({ name: "support", model });
    const routes = chatRoutes(env, support);
    const first = support.conversation("chat-5").start("one", { onBusy: "enqueue" });
    const second = support.conversation("chat-5").start("two", { onBusy: "enqueue" });
    const [firstId, secondId] = await Promise.all([first.executionId, second.executionId]);
    await waitFor(async () => ((await env!.executions({ agentId: "chat-5", status: "active" })).length === 1 ? true : undefined));
    const stopped = await routes.handle(new Request("http://chat.test/api/chat/chat-5/stop", { method: "POST" }));
    expect(stopped.status).toBe(200);
    expect(((await stopped.json()) as { cancelled: string[] }).cancelled.sort()).toEqual([firstId, secondId].sort());
    await expect(first.result).rejects.toMatchObject({ code: "CANCELLED" });
    await expect(second.result).rejects.toMatchObject({ code: "CANCELLED" });
    gate.resolve();
    expect((await routes.stop(new Request("http://chat.test/api/chat/chat-5/stop", { method: "POST" }))).status, "nothing left").toBe(204);
  });

  it("authorize is asked before every action, and its Response refuses; another definition's chat is refused", async () => {
    env = await openEnvironment();
    const asked: string[] = [];
    const routes = chatRoutes(env, env.agent({ name: "support", model: scriptedModel(() => ({ text: "hi" })) }), {
      authorize: ({ chatId, request, action }) => {
        asked.push(`${action}:${chatId}`);
        if (request.headers.get("authorization") !== "Bearer ok") throw new Response("forbidden", { status: 403 });
      },
    });
    const gate = deferred();
    const other = env.agent({
      name: "billing",
      model: scriptedModel(async () => {
        await gate.promise;
        return { text: "bill" };
      }),
    });
    const billing = other.conversation("billing-1").start("hello");
    const billingId = await billing.executionId;
    const message = JSON.stringify({ id: "c-1", messages: [{ id: "u", role: "user", parts: [{ type: "text", text: "hi" }] }] });
    const approval = JSON.stringify({ id: "c-1", messages: [{ id: "a", role: "assistant", metadata: { executionId: "x" }, parts: [] }] });
    for (const request of [
      new Request("http://chat.test/api/chat", { method: "POST", body: message }),
      new Request("http://chat.test/api/chat/c-1/stream"),
      new Request("http://chat.test/api/chat/c-1/stop", { method: "POST" }),
    ]) {
      expect((await routes.handle(request)).status, `${request.method} ${request.url}`).toBe(403);
    }
    expect((await routes.handle(new Request("http://chat.test/api/chat", { method: "POST", body: approval }))).status).toBe(403);
    expect(asked).toEqual(["message:c-1", "resume:c-1", "stop:c-1", "approval:c-1"]);
    expect(await env.executions({ agentId: "c-1" }), "nothing started").toEqual([]);
    const ok = { authorization: "Bearer ok" };
    // billing-1 is the billing definition's chat: support's routes neither stop nor stream it.
    const foreign = await routes.handle(new Request("http://chat.test/api/chat/billing-1/stop", { method: "POST", headers: ok }));
    expect(foreign.status, "a chat of another definition").toBe(400);
    expect(await foreign.json()).toMatchObject({ code: "INVALID_INPUT" });
    const streamed = await routes.handle(new Request(`http://chat.test/api/chat/billing-1/stream?executionId=${billingId}`, { headers: ok }));
    expect(streamed.status).toBe(400);
    gate.resolve();
    await expect(billing.result).resolves.toMatchObject({ outcome: "completed" });
  });

  it("a chat id is decoded once: a router's decoded id is taken as it is, a path's malformed encoding is a 400", async () => {
    env = await openEnvironment();
    const routes = chatRoutes(env, env.agent({ name: "support", model: scriptedModel(() => ({ text: "hi" })) }));
    await env.agent({ name: "other", model: scriptedModel(() => ({ text: "x" })) });
    expect((await routes.resume(new Request("http://chat.test/api/chat/x/stream"), "%41")).status, "chat '%41' has nothing").toBe(204);
    const malformed = await routes.handle(new Request("http://chat.test/api/chat/100%/stream"));
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining("percent-encoding") });
  });

  it("malformed parts and a file part without url or mediaType are 400s, not 500s", async () => {
    env = await openEnvironment();
    const routes = chatRoutes(env, env.agent({ name: "support", model: scriptedModel(() => ({ text: "hi" })) }));
    for (const parts of [
      [null],
      [
        { type: "text", text: "hi" },
        { type: "file", url: "data:text/plain;base64,aGk=" },
      ],
    ]) {
      const answer = await routes.post(
        new Request("http://chat.test/api/chat", { method: "POST", body: JSON.stringify({ id: "c", messages: [{ id: "u", role: "user", parts }] }) }),
      );
      expect(answer.status, JSON.stringify(parts)).toBe(400);
      expect(await answer.json()).toMatchObject({ code: "INVALID_INPUT" });
    }
  });

  it("a reloaded page gets an answer waiting for approval replayed; a new message supersedes that approval", async () => {
    env = await openEnvironment();
    const refund = tool({ inputSchema: z.object({ orderId: z.string() }), needsApproval: () => true, execute: () => "refunded" });
    const model = scriptedModel(({ messages }) => {
      const last = messages.at(-1);
      if (last?.role === "user" && last.content === "refund 42") return { toolCalls: [{ toolName: "refund", input: { orderId: "42" } }] };
      return { text: last?.role === "user" ? `about: ${last.content}` : "done" };
    });
    const routes = chatRoutes(env, env.agent({ name: "support", model, tools: { refund } }));
    const chat = new Chat({ id: "chat-6", transport: transportTo(routes) });
    await chat.sendMessage({ text: "refund 42" });
    await waitFor(async () => (chat.status === "ready" ? true : undefined));
    const [suspended] = await env.executions({ agentId: "chat-6" });
    expect(suspended?.status).toBe("suspended");
    const replayed = await transportTo(routes).reconnectToStream({ chatId: "chat-6" });
    expect(replayed, "the waiting answer is replayed").not.toBeNull();
    let last: UIMessage | undefined;
    for await (const message of readUIMessageStream({ stream: replayed!, terminateOnError: true })) last = message;
    expect(last?.parts.some((part) => part.type === "tool-refund" && (part as { state?: string }).state === "approval-requested")).toBe(true);
    await chat.sendMessage({ text: "never mind" });
    await waitFor(async () => (chat.status === "ready" ? true : undefined), 10_000);
    expect(textOf(chat.messages.at(-1))).toBe("about: never mind");
    expect(await env.execution(suspended!.executionId)).toMatchObject({ status: "terminal", outcome: "failed" });
  });

  it("regenerate() and an edited message replace the answer in the agent's memory too: the model sees each turn once (decision 0070)", async () => {
    env = await openEnvironment();
    const prompts: string[][] = [];
    const model = scriptedModel(({ messages }) => {
      const turns = messages.filter((message) => message.role === "user" || message.role === "assistant");
      prompts.push(turns.map((message) => (message.role === "user" ? `user: ${message.content}` : `assistant: ${message.text}`)));
      const last = messages.at(-1);
      return { text: `answer ${prompts.length} to: ${last?.role === "user" ? last.content : "?"}` };
    });
    const support = env.agent({ name: "support", model });
    const routes = chatRoutes(env, support);
    const chat = new Chat({ id: "chat-7", transport: transportTo(routes) });
    const settled = () => waitFor(async () => (chat.status === "ready" ? true : undefined));
    await chat.sendMessage({ text: "one" });
    await settled();
    await chat.sendMessage({ text: "two" });
    await settled();

    await chat.regenerate();
    await settled();
    expect(chat.error).toBeUndefined();
    expect(prompts.at(-1), "the regenerated turn is in the prompt once").toEqual(["user: one", "assistant: answer 1 to: one", "user: two"]);
    expect(chat.messages.map(textOf)).toEqual(["one", "answer 1 to: one", "two", "answer 3 to: two"]);
    const memory = async () => (await support.conversation("chat-7").messages()).map((message) => textOf(message as UIMessage));
    expect(await memory(), "memory is what the page shows").toEqual(chat.messages.map(textOf));
    expect(chat.messages.at(-1)?.id, "the new answer's id is its execution's").toBe((await env.executions({ agentId: "chat-7", limit: 1 }))[0]?.executionId);

    // An edit of the first message: the page and memory keep only what comes before it, then the edit.
    await chat.sendMessage({ text: "uno", messageId: chat.messages[0]!.id });
    await settled();
    expect(prompts.at(-1)).toEqual(["user: uno"]);
    expect(chat.messages.map(textOf)).toEqual(["uno", "answer 4 to: uno"]);
    expect(await memory()).toEqual(chat.messages.map(textOf));

    // A page loaded from history regenerates an earlier answer by its id: that turn and every later one are replaced.
    await chat.sendMessage({ text: "dos" });
    await settled();
    const reloaded = new Chat({ id: "chat-7", transport: transportTo(routes), messages: (await support.conversation("chat-7").messages()) as UIMessage[] });
    await reloaded.regenerate({ messageId: reloaded.messages[1]!.id });
    await waitFor(async () => (reloaded.status === "ready" ? true : undefined));
    expect(prompts.at(-1)).toEqual(["user: uno"]);
    expect(reloaded.messages.map(textOf)).toEqual(["uno", "answer 6 to: uno"]);
    expect(await memory()).toEqual(reloaded.messages.map(textOf));
    // ... and edits a history message (its id the client's own, its execution in its metadata).
    await reloaded.sendMessage({ text: "tres" });
    await waitFor(async () => (reloaded.status === "ready" ? true : undefined));
    const loaded = await support.conversation("chat-7").messages();
    const edited = new Chat({ id: "chat-7", transport: transportTo(routes), messages: loaded as UIMessage[] });
    await edited.sendMessage({ text: "cuatro", messageId: loaded[2]!.id });
    await waitFor(async () => (edited.status === "ready" ? true : undefined));
    expect(prompts.at(-1)).toEqual(["user: uno", "assistant: answer 6 to: uno", "user: cuatro"]);
    expect(await memory()).toEqual(["uno", "answer 6 to: uno", "cuatro", "answer 8 to: cuatro"]);
  });

  it("a plain message never replaces; a regenerate whose history names an answer not in memory is a 400", async () => {
    env = await openEnvironment();
    const support = env.agent({ name: "support", model: scriptedModel(() => ({ text: "hi" })) });
    const routes = chatRoutes(env, support);
    await support.conversation("chat-8").start("one").result;
    const post = (body: unknown): Promise<Response> => routes.post(new Request("http://chat.test/api/chat", { method: "POST", body: JSON.stringify(body) }));
    // A client that sends only the last message (a partial history) adds a turn.
    const plain = await post({ id: "chat-8", messages: [{ id: "u", role: "user", parts: [{ type: "text", text: "two" }] }], trigger: "submit-message" });
    expect(plain.status).toBe(200);
    await plain.text();
    await waitFor(async () => ((await support.conversation("chat-8").messages()).length === 4 ? true : undefined));
    const unplaced = await post({
      id: "chat-8",
      messages: [
        { id: "gone", role: "assistant", parts: [{ type: "text", text: "old" }] },
        { id: "u", role: "user", parts: [{ type: "text", text: "again" }] },
      ],
      trigger: "regenerate-message",
    });
    expect(unplaced.status).toBe(400);
    expect(await unplaced.json()).toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining("gone") });
    const badTrigger = await post({ id: "chat-8", messages: [{ id: "u", role: "user", parts: [] }], trigger: 7 });
    expect(badTrigger.status).toBe(400);
    expect((await support.conversation("chat-8").messages()).length).toBe(4);
  });

  it("bad requests are typed JSON errors; handle routes by method; resume names the chat from the path", async () => {
    env = await openEnvironment();
    const routes = chatRoutes(env, env.agent({ name: "support", model: scriptedModel(() => ({ text: "hi" })) }));
    const post = (body: string): Promise<Response> => routes.handle(new Request("http://chat.test/api/chat", { method: "POST", body }));
    for (const [body, fragment] of [
      ["not json", "not JSON"],
      [JSON.stringify({ messages: [] }), '"id"'],
      [JSON.stringify({ id: "c", messages: [{ role: "user" }] }), '"messages"'],
      [JSON.stringify({ id: "c", messages: [{ id: "a", role: "assistant", parts: [] }] }), "without approval responses"],
    ] as const) {
      const answer = await post(body);
      expect(answer.status, body).toBe(400);
      expect(await answer.json()).toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining(fragment) });
    }
    expect((await routes.handle(new Request("http://chat.test/api/chat", { method: "PUT" }))).status).toBe(405);
    expect((await routes.handle(new Request("http://chat.test/api/chat/nobody/stream"))).status, "nothing to resume").toBe(204);
    const unnamed = await routes.resume(new Request("http://chat.test/api/chat"));
    expect(unnamed.status).toBe(400);
  });
});

describe("keep-alive", () => {
  it("a silent stream sends SSE comments, which the AI SDK's client ignores", async () => {
    const gate = deferred();
    const chunks: ChatChunk[] = [
      { type: "start", messageId: "m", position: "0" },
      { type: "text-start", id: "t", position: "1" },
      { type: "text-delta", id: "t", delta: "hi", position: "2" },
      { type: "text-end", id: "t", position: "3" },
      { type: "finish", position: "4" },
    ];
    const stream = new ReadableStream<ChatChunk>({
      async start(controller) {
        controller.enqueue(chunks[0]!);
        await gate.promise;
        for (const chunk of chunks.slice(1)) controller.enqueue(chunk);
        controller.close();
      },
    });
    const response = toUIMessageStreamResponse(stream, { keepAliveMs: 20 });
    const [forText, forClient] = response.body!.tee();
    setTimeout(() => gate.resolve(), 150);
    const text = await new Response(forText).text();
    expect(text).toContain(": keep-alive\n\n");
    expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
    const transport = new DefaultChatTransport<UIMessage>({
      api: "http://chat.test/api/chat",
      fetch: (async () => new Response(forClient, { headers: response.headers })) as typeof fetch,
    });
    const uiChunks = await transport.sendMessages({ chatId: "c", messages: [], trigger: "submit-message", messageId: undefined, abortSignal: undefined });
    let last: UIMessage | undefined;
    for await (const message of readUIMessageStream({ stream: uiChunks, terminateOnError: true })) last = message;
    expect(textOf(last)).toBe("hi");
  });
});
