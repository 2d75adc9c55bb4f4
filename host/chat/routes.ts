// The two HTTP routes `useChat` needs, as fetch-style handlers (a `Request`
// in, a `Response` out): Hono, Next.js route handlers, `Bun.serve`,
// `Deno.serve` and edge runtimes take them as they are (docs/decisions/0036,
// issue 27).
//
//   const chat = chatRoutes(env, support);
//   POST {api}                — what `DefaultChatTransport` sends: starts the
//                               answer to the last user message (its text and
//                               attachments), or decides the wait the last
//                               assistant message answered (an approval
//                               response, or a tool output for a typed
//                               wait: wait-answers.ts), and streams it.
//                               A `regenerate()` or an edited message replaces
//                               the answer it names and every later one, in
//                               the agent's memory too (`replaced-turn.ts`)
//   GET  {api}/{chatId}/stream — `useChat({ resume: true })`: the chat's
//                               running answer, from `?resumeAt=` or
//                               `Last-Event-ID`; 204 when nothing runs
//   POST {api}/{chatId}/stop  — cancels the chat's running answer and the
//                               messages queued behind it. `useChat`'s
//                               `stop()` only aborts its fetch, which the
//                               server cannot tell from a dropped
//                               connection (which must not cancel: the
//                               client resumes), so a stop button calls it
//
// Each chat is one conversation of the definition, its id the chat's id. A
// message sent while an answer runs waits behind it (`onBusy: "enqueue"`,
// the default here), so `useChat` never sees AGENT_BUSY for a quick second
// message. Errors are JSON `{ code, message }` with an HTTP status.

import { PhronomyError } from "../errors.js";
import type { Agent, AgentInput } from "../runtime/agent.js";
import type { StartOptions } from "../runtime/options.js";
import type { Run } from "../runtime/run.js";
import type { ExecutionListFilter, ExecutionRow } from "../store/records.js";
import type { ChatChunk, ChatMessageMetadata, StreamOptions } from "./chat-stream.js";
import { toUIMessageStreamResponse } from "./response.js";
import { answerOf, type AnsweringPart } from "./wait-answers.js";
import { isReplacing, replacedExecution, turnsOf } from "./replaced-turn.js";
import { journalRecordsKept } from "../store/prune.js";

/** What the routes use of the environment (`Environment` has it). */
export interface ChatRoutesEnvironment {
  /** `env.stream`: a Run or an execution as the UI message stream. */
  stream(target: Run<unknown> | string, options?: StreamOptions): Promise<ReadableStream<ChatChunk>>;
  /** `env.executions`: a chat's newest execution. */
  executions(filter: ExecutionListFilter): Promise<ExecutionRow[]>;
  /** `env.execution`: the row of the execution to resume. */
  execution(executionId: string): Promise<ExecutionRow | undefined>;
  /** `env.cancel`: a stopped answer. */
  cancel(executionId: string, options?: { readonly reason?: string }): Promise<unknown>;
}

/** The definition whose conversations are the chats (`env.agent({ name })`). */
export interface ChatRoutesAgent {
  /** The definition's name: a chat's executions of another definition are not its own. */
  readonly name?: string;
  /** The chat's conversation. */
  conversation(chatId: string): Agent<unknown>;
}

/** How the routes start answers. */
export interface ChatRoutesOptions {
  /** What a message does while the chat's previous answer runs: `enqueue`
   * (default: it is answered next), `interrupt` (the running answer is
   * cancelled) or `reject` (409 `AGENT_BUSY`). */
  readonly onBusy?: "enqueue" | "interrupt" | "reject";
  /** Called before every request touches a chat — a message, an approval
   * response, a resume, a stop: authenticate here and throw a `Response`
   * (401, 403, …) or a `PhronomyError` to refuse. */
  readonly authorize?: (context: ChatRequestContext) => void | Promise<void>;
  /** More options for each start (its metadata, a timeout, …), from the
   * request (after `authorize`). */
  readonly startOptions?: (context: { readonly chatId: string; readonly request: Request }) => StartOptions | Promise<StartOptions>;
}

/** What `authorize` is told of a request. */
export interface ChatRequestContext {
  readonly chatId: string;
  readonly request: Request;
  /** `message` (a new user message), `approval` (an approval response, a
   * response in place of a tool, or a typed wait's value), `resume` or
   * `stop`. */
  readonly action: "message" | "approval" | "resume" | "stop";
}

/** The routes, each a fetch handler. */
export interface ChatRoutes {
  /** POST {api}: a message or an approval response; streams the answer. */
  post(request: Request): Promise<Response>;
  /** GET {api}/{chatId}/stream: resumes the chat's running answer, or 204.
   * `chatId` as the router parsed it; without it, the path's segment
   * before `/stream`. */
  resume(request: Request, chatId?: string): Promise<Response>;
  /** POST {api}/{chatId}/stop: cancels the chat's running answer and its
   * queued messages; answers `{ cancelled: [executionId, …] }`, or 204
   * when nothing ran. `chatId` as for `resume`. */
  stop(request: Request, chatId?: string): Promise<Response>;
  /** All three, routed by method and path: POST …/stop to `stop`, another
   * POST to `post`, GET to `resume`. */
  handle(request: Request): Promise<Response>;
}

/** HTTP statuses of the errors a chat request can meet. */
const statusByCode: Readonly<Record<string, number>> = {
  INVALID_INPUT: 400,
  EXECUTION_NOT_FOUND: 404,
  AGENT_BUSY: 409,
  APPROVAL_MISMATCH: 409,
  AGENT_CLOSED: 409,
  QUEUE_FULL: 429,
  RUNTIME_SHUTDOWN: 503,
};

/** The routes of `agent`'s chats on `env`. */
export function chatRoutes(env: ChatRoutesEnvironment, agent: ChatRoutesAgent, options: ChatRoutesOptions = {}): ChatRoutes {
  const onBusy = options.onBusy ?? "enqueue";
  /** The chat's conversation, once the request may touch it (the
   * definition checks the id is its own). */
  const chatOf = async (chatId: string, request: Request, action: ChatRequestContext["action"]): Promise<Agent<unknown>> => {
    const chat = agent.conversation(chatId);
    await options.authorize?.({ chatId, request, action });
    return chat;
  };
  const post = (request: Request): Promise<Response> =>
    answered(async () => {
      const body = await chatRequestOf(request);
      const last = body.messages.at(-1);
      if (last?.role === "assistant") return decide(env, await chatOf(body.id, request, "approval"), last);
      if (last?.role !== "user") throw new PhronomyError("INVALID_INPUT", "the chat request's last message is neither the user's nor an approval response");
      const chat = await chatOf(body.id, request, "message");
      const extra = (await options.startOptions?.({ chatId: body.id, request })) ?? {};
      // A regenerate or an edit replaces the answer it names and every later
      // one, in memory too (docs/decisions/0070); one still running is
      // superseded, so it is interrupted rather than waited for.
      const replaceFrom = isReplacing(body) ? replacedExecution(body, turnsOf(await chat.messages({ limit: journalRecordsKept }))) : undefined;
      // A new message supersedes an approval still pending (as the AI SDK's
      // own conversion drops it): that answer is declined and cancelled
      // instead of holding the message behind it for good.
      const [latest] = await env.executions({ agentId: body.id, limit: 1 });
      const busy = latest?.status === "suspended" || replaceFrom !== undefined ? "interrupt" : onBusy;
      // The client's id of the message is kept, for the history (decision 0081).
      const messageId = typeof last.id === "string" && last.id.length > 0 ? { messageId: last.id } : {};
      const run = chat.start(inputOf(last), { onBusy: busy, ...extra, ...(replaceFrom !== undefined ? { replaceFrom } : {}), ...messageId, stream: true });
      const stream = await env.stream(run);
      return toUIMessageStreamResponse(stream, { executionId: await run.executionId });
    });
  const resume = (request: Request, chatId?: string): Promise<Response> =>
    answered(async () => {
      const url = new URL(request.url);
      const id = chatId ?? pathChatId(url, "stream");
      await chatOf(id, request, "resume");
      const resumeAt = url.searchParams.get("resumeAt") ?? request.headers.get("last-event-id");
      return resumeChat(env, agent.name, id, url.searchParams.get("executionId"), resumeAt);
    });
  const stop = (request: Request, chatId?: string): Promise<Response> =>
    answered(async () => {
      const id = chatId ?? pathChatId(new URL(request.url), "stop");
      await chatOf(id, request, "stop");
      return stopChat(env, agent.name, id);
    });
  return {
    post,
    resume,
    stop,
    handle: (request) => {
      if (request.method === "GET") return resume(request);
      if (request.method !== "POST") return Promise.resolve(new Response(null, { status: 405 }));
      return /\/stop\/?$/.test(new URL(request.url).pathname) ? stop(request) : post(request);
    },
  };
}

/** Whether the execution belongs to the definition (the name its start
 * stored; a queued message's row may not say, and counts as its chat's). */
function ofDefinition(row: ExecutionRow, definition: string | undefined): boolean {
  const stored = row.metadata?.config?.["definition"];
  return definition === undefined || stored === undefined || stored === definition;
}

/** The chat id of a `{api}/{chatId}/{last}` path, decoded once (a router
 * that parsed it passes it decoded instead). */
function pathChatId(url: URL, last: "stream" | "stop"): string {
  const raw = new RegExp(`/([^/]+)/${last}/?$`).exec(url.pathname)?.[1];
  if (raw === undefined) throw new PhronomyError("INVALID_INPUT", `the request names no chat: {api}/{chatId}/${last}`);
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new PhronomyError("INVALID_INPUT", `the chat id in the path is not valid percent-encoding: ${raw}`);
  }
}

/** Cancels what the chat runs or has queued (not an answer waiting for approval). */
async function stopChat(env: ChatRoutesEnvironment, definition: string | undefined, chatId: string): Promise<Response> {
  const [running, queued] = await Promise.all([
    env.executions({ agentId: chatId, limit: 100 }),
    env.executions({ agentId: chatId, status: "queued", limit: 100 }),
  ]);
  const ids = [...running.filter((row) => row.status === "preparing" || row.status === "active"), ...queued]
    .filter((row) => ofDefinition(row, definition))
    .map((row) => row.executionId);
  if (ids.length === 0) return new Response(null, { status: 204 });
  const cancelled: string[] = [];
  await Promise.all(
    ids.map((executionId) =>
      env.cancel(executionId, { reason: "stopped by the user" }).then(
        () => cancelled.push(executionId),
        // Ended on its own meanwhile: nothing to stop.
        (error: unknown) => {
          if (!(error instanceof PhronomyError && (error.code === "EXECUTION_ENDED" || error.code === "EXECUTION_NOT_FOUND"))) throw error;
        },
      ),
    ),
  );
  return Response.json({ cancelled });
}

/** The chat's latest answer (or `executionId`'s), from `resumeAt` on. */
async function resumeChat(
  env: ChatRoutesEnvironment,
  definition: string | undefined,
  chatId: string,
  executionId: string | null,
  resumeAt: string | null,
): Promise<Response> {
  const latest = executionId === null ? (await env.executions({ agentId: chatId, limit: 1 }))[0] : undefined;
  if (executionId === null && (latest === undefined || !ofDefinition(latest, definition))) return new Response(null, { status: 204 });
  const id = executionId ?? (latest as ExecutionRow).executionId;
  const row = await env.execution(id);
  // An answer of another chat, or of another definition's, is not this chat's to stream.
  if (row !== undefined && (row.agentId !== chatId || !ofDefinition(row, definition))) {
    throw new PhronomyError("EXECUTION_NOT_FOUND", `chat ${chatId} has no answer ${id}`);
  }
  // useChat's `resume: true` asks on every page load: nothing to resume once
  // the answer ended. One waiting for approval is replayed to its end, so a
  // reloaded page shows the approval request again.
  if (resumeAt === null && (row === undefined || row.status === "terminal")) return new Response(null, { status: 204 });
  return toUIMessageStreamResponse(await env.stream(id, resumeAt === null ? {} : { resumeAt }), { executionId: id });
}

/** Decides the wait the last assistant message answered: an approval
 * (`addToolApprovalResponse`, or `addToolOutput` in place of the tool) or
 * a typed wait's value (`addToolOutput` on the call a `data-wait` asks). */
async function decide(env: ChatRoutesEnvironment, chat: Agent<unknown>, last: ChatRequestMessage): Promise<Response> {
  const metadata = last.metadata as ChatMessageMetadata | undefined;
  if (typeof metadata?.executionId !== "string") {
    throw new PhronomyError("INVALID_INPUT", "the last message is the assistant's without approval responses (it names no execution in its metadata)");
  }
  const run = chat.resume(metadata.executionId, answerOf(last.parts, await env.execution(metadata.executionId)));
  // The client holds the message up to the suspension: continue after it.
  const stream = await env.stream(run, typeof metadata.resumeAt === "string" ? { resumeAt: metadata.resumeAt } : {});
  return toUIMessageStreamResponse(stream, { executionId: metadata.executionId });
}

interface ChatRequestPart extends AnsweringPart {
  readonly type: string;
  readonly text?: unknown;
  readonly url?: unknown;
  readonly mediaType?: unknown;
  readonly filename?: unknown;
}

interface ChatRequestMessage {
  readonly id?: unknown;
  readonly role: string;
  readonly metadata?: unknown;
  readonly parts: readonly ChatRequestPart[];
}

/** What `DefaultChatTransport` sends. */
interface ChatRequestBody {
  readonly id: string;
  readonly messages: ChatRequestMessage[];
  /** `submit-message` or `regenerate-message` (absent from other clients). */
  readonly trigger?: string | undefined;
  /** The message regenerated, or the user message edited. */
  readonly messageId?: string | undefined;
}

/** `{ id, messages, trigger?, messageId? }` as `DefaultChatTransport` sends it, checked. */
async function chatRequestOf(request: Request): Promise<ChatRequestBody> {
  let body: unknown;
  try {
    body = await request.json();
  } catch {
    throw new PhronomyError("INVALID_INPUT", "the chat request's body is not JSON");
  }
  if (!isRecord(body) || typeof body.id !== "string" || body.id.length === 0) {
    throw new PhronomyError("INVALID_INPUT", 'the chat request needs "id" (the chat\'s id) as a non-empty string');
  }
  const messages = body.messages;
  if (
    !Array.isArray(messages)
    || !messages.every(
      (message) =>
        isRecord(message)
        && typeof message.role === "string"
        && Array.isArray(message.parts)
        && message.parts.every((part) => isRecord(part) && typeof part.type === "string"),
    )
  ) {
    throw new PhronomyError(
      "INVALID_INPUT",
      'the chat request needs "messages" as UI messages (each with "role" and "parts", each part an object with "type")',
    );
  }
  for (const key of ["trigger", "messageId"] as const) {
    if (body[key] !== undefined && body[key] !== null && typeof body[key] !== "string") {
      throw new PhronomyError("INVALID_INPUT", `the chat request's "${key}" must be a string when given`);
    }
  }
  return {
    id: body.id,
    messages: messages as ChatRequestMessage[],
    trigger: typeof body.trigger === "string" ? body.trigger : undefined,
    messageId: typeof body.messageId === "string" ? body.messageId : undefined,
  };
}

/** The last user message as the start's input: its text, or its text and
 * attachments (file parts, by URL) as the parts of one user message, in
 * the order the page sent them (the AI SDK's `convertToModelMessages`
 * keeps it; `sendMessage({ text, files })` puts the files first). */
function inputOf(message: ChatRequestMessage): AgentInput {
  const shown = message.parts.filter((part) => (part.type === "text" && typeof part.text === "string") || part.type === "file");
  if (!shown.some((part) => part.type === "file")) return shown.map((part) => part.text as string).join("");
  return shown
    .filter((part) => part.type === "file" || (part.text as string).length > 0)
    .map((part) => {
      if (part.type === "text") return { type: "text" as const, text: part.text as string };
      if (typeof part.url !== "string" || typeof part.mediaType !== "string") {
        throw new PhronomyError("INVALID_INPUT", 'a file part of the chat request needs "url" and "mediaType" as strings');
      }
      return {
        type: "file" as const,
        data: { type: "url" as const, url: part.url },
        mediaType: part.mediaType,
        ...(typeof part.filename === "string" ? { filename: part.filename } : {}),
      };
    }) as AgentInput;
}

/** The handler's answer, or its error as JSON with the code's status. */
async function answered(handler: () => Promise<Response>): Promise<Response> {
  try {
    return await handler();
  } catch (error) {
    // `authorize` may refuse with a Response of its own (401, 403, …).
    if (error instanceof Response) return error;
    const code = error instanceof PhronomyError ? error.code : "INTERNAL";
    const message = error instanceof Error ? error.message : String(error);
    return Response.json({ code, message }, { status: statusByCode[code] ?? 500 });
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
