// `PhronomyChatTransport`: the AI SDK's chat transport (what `useChat` and
// `Chat` send messages through) for `chatRoutes`, which reconnects by
// itself (issue 27 item 8, docs/decisions/0072). It sends what the AI SDK's
// `DefaultChatTransport` sends, and reads the answer's server-sent events
// with their ids — each the position of its chunk (docs/decisions/0036).
// When the stream ends without a `finish` chunk (the connection dropped, a
// proxy cut it, the server restarted), it asks GET {api}/{chatId}/stream
// for the same answer (`executionId`, from the response's
// `x-phronomy-execution-id`) after the last position it saw (`resumeAt`),
// and goes on with the same message: the resumed stream's own `start` is
// dropped, and the server sends nothing at or before the position, so no
// chunk arrives twice.
//
// Rules kept here:
// * Bounded: at most `reconnectAttemptsMax` reconnects in a row that bring
//   nothing new; the first right away, then after `reconnectDelayMs`,
//   doubling up to `reconnectDelayMsMax`. A reconnect that brings a chunk
//   starts the count again. Past the bound the stream fails with
//   RUNTIME_SHUTDOWN (`details.reason: "connection_lost"`); the answer goes
//   on on the server, and `resumeStream()` reads it again later.
// * A refusal is not retried: a 4xx other than 408, 425 and 429 fails the
//   stream at once with the server's `{ code, message }`.
// * The caller's abort (useChat's `stop()`) ends everything at once with
//   the abort's reason, never a reconnect.
// * No `node:` import and no runtime import of `ai` (only its types): it
//   runs in browsers, and loads where `ai` is not installed.

import type { ChatRequestOptions, ChatTransport, HttpChatTransportInitOptions, UIMessage, UIMessageChunk } from "ai";
import { InvalidInputError, PhronomyError, type PhronomyErrorCode } from "../errors.js";
import { executionIdHeader } from "./response.js";
import { serverSentEvents } from "./server-sent-events.js";

/** What the transport takes: the AI SDK's `DefaultChatTransport` options
 * (`api`, `headers`, `body`, `credentials`, `fetch`, the request
 * preparers) and the reconnects' bounds. */
export type PhronomyChatTransportOptions<UI_MESSAGE extends UIMessage = UIMessage> = HttpChatTransportInitOptions<UI_MESSAGE> & {
  /** Reconnects in a row that bring nothing new before the stream fails
   * (default `reconnectAttemptsMaxDefault`, 8). */
  readonly reconnectAttemptsMax?: number;
  /** The wait before the second reconnect in a row, doubled for each next
   * one (default 250 ms); the first is made at once. */
  readonly reconnectDelayMs?: number;
  /** The longest wait between two reconnects (default 5,000 ms). */
  readonly reconnectDelayMsMax?: number;
};

/** Reconnects in a row without progress before a stream fails: with the
 * default delays about 18 s of trying, long enough for a server restart. */
export const reconnectAttemptsMaxDefault = 8;
const reconnectDelayMsDefault = 250;
const reconnectDelayMsMaxDefault = 5_000;
/** Bounds of the options, so a typo cannot make a client spin or sleep for days. */
const reconnectAttemptsMaxLimit = 1_000;
const reconnectDelayMsLimit = 600_000;

/** Statuses of a reconnect worth trying again: the server is starting,
 * overloaded or behind a proxy that gave up. */
const retryableStatuses: ReadonlySet<number> = new Set([408, 425, 429, 500, 502, 503, 504]);

type SendOptions<UI_MESSAGE extends UIMessage> = Parameters<ChatTransport<UI_MESSAGE>["sendMessages"]>[0];
type ReconnectOptions = Parameters<ChatTransport<UIMessage>["reconnectToStream"]>[0];

/** What a reconnect of one answer needs. */
interface Reconnect {
  readonly chatId: string;
  readonly request: ChatRequestOptions;
  readonly signal: AbortSignal;
}

/**
 * A chat transport for `chatRoutes` that reconnects by itself: an answer
 * whose stream is cut off goes on from where it was, in the same message,
 * no chunk twice. `useChat({ id, resume: true, transport: new
 * PhronomyChatTransport({ api: "/api/chat" }) })`.
 */
export class PhronomyChatTransport<UI_MESSAGE extends UIMessage = UIMessage> implements ChatTransport<UI_MESSAGE> {
  /** `reconnectToStream` replays the running answer from its start. */
  readonly resumeStreamIsReplay = true;
  private readonly api: string;
  private readonly attemptsMax: number;
  private readonly delayMs: number;
  private readonly delayMsMax: number;

  constructor(private readonly options: PhronomyChatTransportOptions<UI_MESSAGE> = {}) {
    this.api = options.api ?? "/api/chat";
    this.attemptsMax = bounded(options.reconnectAttemptsMax, reconnectAttemptsMaxDefault, 0, reconnectAttemptsMaxLimit, "reconnectAttemptsMax");
    this.delayMs = bounded(options.reconnectDelayMs, reconnectDelayMsDefault, 0, reconnectDelayMsLimit, "reconnectDelayMs");
    this.delayMsMax = bounded(options.reconnectDelayMsMax, reconnectDelayMsMaxDefault, 0, reconnectDelayMsLimit, "reconnectDelayMsMax");
  }

  /** POST {api}: a message or an approval response; the answer's stream,
   * reconnected until its `finish`. */
  async sendMessages(request: SendOptions<UI_MESSAGE>): Promise<ReadableStream<UIMessageChunk>> {
    const { abortSignal, ...options } = request;
    const control = linkedAbort(abortSignal);
    const { body, headers, credentials } = await this.resolved();
    const prepared = await this.options.prepareSendMessagesRequest?.({
      api: this.api,
      id: options.chatId,
      messages: options.messages,
      body: { ...body, ...options.body },
      headers: { ...headers, ...headersOf(options.headers) },
      credentials,
      requestMetadata: options.metadata,
      trigger: options.trigger,
      messageId: options.messageId,
    });
    const api = prepared?.api ?? this.api;
    const sent =
      prepared?.body !== undefined
        ? prepared.body
        : { ...body, ...options.body, id: options.chatId, messages: options.messages, trigger: options.trigger, messageId: options.messageId };
    const response = await this.fetch(api, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(prepared?.headers !== undefined ? headersOf(prepared.headers) : { ...headers, ...headersOf(options.headers) }),
      },
      body: JSON.stringify(sent),
      credentials: prepared?.credentials ?? credentials,
      signal: control.signal,
    });
    await checked(response, api);
    return streamOf(this.answer(response, { chatId: options.chatId, request: options, signal: control.signal }), control);
  }

  /** GET {api}/{chatId}/stream: the chat's running answer from its start
   * (null when nothing runs), reconnected until its `finish`. */
  async reconnectToStream(request: ReconnectOptions): Promise<ReadableStream<UIMessageChunk> | null> {
    const { abortSignal, ...options } = request;
    const control = linkedAbort(abortSignal);
    const reconnect: Reconnect = { chatId: options.chatId, request: options, signal: control.signal };
    const { url, init } = await this.resumeRequest(reconnect, undefined, undefined);
    const response = await this.fetch(url, init);
    if (response.status === 204) return null;
    await checked(response, url);
    return streamOf(this.answer(response, reconnect), control);
  }

  /** The answer's chunks: `first`'s, then each reconnect's, until `finish`. */
  private async *answer(first: Response, reconnect: Reconnect): AsyncGenerator<UIMessageChunk> {
    const { signal } = reconnect;
    const executionId = first.headers.get(executionIdHeader) ?? undefined;
    let response: Response | undefined = first;
    let position: string | undefined;
    let started = false;
    /** Reconnects in a row that brought nothing new. */
    let failures = 0;
    let lastFailure: unknown;
    let reconnected = false;
    while (response !== undefined) {
      let progressed = false;
      try {
        for await (const event of serverSentEvents(response.body!)) {
          if (event.data === "[DONE]") continue;
          const chunk = chunkOf(event.data);
          if (event.id !== undefined) position = event.id;
          // Each stream opens with `start`; the message has one already.
          if (chunk.type === "start" && started) continue;
          started ||= chunk.type === "start";
          progressed = true;
          yield chunk;
          if (chunk.type === "finish") return;
        }
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        if (error instanceof PhronomyError) throw error;
        lastFailure = error; // the connection dropped: reconnect
      }
      if (signal.aborted) throw signal.reason;
      if (progressed) failures = 0;
      else if (reconnected) failures += 1;
      reconnected = true;
      response = undefined;
      while (response === undefined) {
        if (failures >= this.attemptsMax) throw connectionLost(reconnect.chatId, executionId, position, failures, lastFailure);
        await sleep(this.delayBefore(failures), signal);
        const { url, init } = await this.resumeRequest(reconnect, executionId, position ?? "0");
        const answered = await this.fetch(url, init).catch((error: unknown) => {
          if (signal.aborted) throw signal.reason;
          lastFailure = error;
          return undefined;
        });
        if (answered?.status === 204) return; // the chat has no answer to resume
        if (answered?.ok === true && answered.body !== null) response = answered;
        else if (answered !== undefined && !retryableStatuses.has(answered.status)) await checked(answered, url);
        else {
          if (answered !== undefined) lastFailure = await refusalOf(answered, url);
          failures += 1;
        }
      }
    }
  }

  /** The wait before a reconnect, after `failures` in a row brought nothing. */
  private delayBefore(failures: number): number {
    return failures === 0 ? 0 : Math.min(this.delayMs * 2 ** (failures - 1), this.delayMsMax);
  }

  /** GET {api}/{chatId}/stream as `DefaultChatTransport` asks it, with the
   * answer and the position to resume after when they are known. */
  private async resumeRequest(
    reconnect: Reconnect,
    executionId: string | undefined,
    resumeAt: string | undefined,
  ): Promise<{ url: string; init: RequestInit }> {
    const { chatId, request } = reconnect;
    const { body, headers, credentials } = await this.resolved();
    const prepared = await this.options.prepareReconnectToStreamRequest?.({
      api: this.api,
      id: chatId,
      body: { ...body, ...request.body },
      headers: { ...headers, ...headersOf(request.headers) },
      credentials,
      requestMetadata: request.metadata,
    });
    const base = prepared?.api ?? streamPathOf(this.api, chatId);
    const query = [
      ...(executionId !== undefined ? [`executionId=${encodeURIComponent(executionId)}`] : []),
      ...(resumeAt !== undefined ? [`resumeAt=${encodeURIComponent(resumeAt)}`] : []),
    ].join("&");
    const url = query.length === 0 ? base : `${base}${base.includes("?") ? "&" : "?"}${query}`;
    const sentHeaders = prepared?.headers !== undefined ? headersOf(prepared.headers) : { ...headers, ...headersOf(request.headers) };
    return { url, init: { method: "GET", headers: sentHeaders, credentials: prepared?.credentials ?? credentials, signal: reconnect.signal } };
  }

  /** The transport's own body, headers and credentials (each may be a function or a promise). */
  private async resolved(): Promise<{ body: object | undefined; headers: Record<string, string>; credentials: RequestInit["credentials"] }> {
    const [body, headers, credentials] = await Promise.all([resolve(this.options.body), resolve(this.options.headers), resolve(this.options.credentials)]);
    return { body, headers: headersOf(headers), credentials };
  }

  private fetch(url: string, init: RequestInit): Promise<Response> {
    return (this.options.fetch ?? globalThis.fetch)(url, init);
  }
}

/** `{api}/{chatId}/stream`, the route `chatRoutes` resumes on. */
function streamPathOf(api: string, chatId: string): string {
  if (chatId === "." || chatId === "..") throw new InvalidInputError(`chat id "${chatId}" cannot name a path segment: use another chat id`);
  const query = api.indexOf("?");
  const path = query === -1 ? api : api.slice(0, query);
  return `${path.replace(/\/+$/, "")}/${encodeURIComponent(chatId)}/stream${query === -1 ? "" : api.slice(query)}`;
}

function chunkOf(data: string): UIMessageChunk {
  let chunk: unknown;
  try {
    chunk = JSON.parse(data);
  } catch {
    throw new InvalidInputError(`the chat stream sent an event that is not JSON: ${data.slice(0, 80)}`);
  }
  if (typeof chunk !== "object" || chunk === null || typeof (chunk as { type?: unknown }).type !== "string") {
    throw new InvalidInputError(`the chat stream sent an event that is not a UI message chunk: ${data.slice(0, 80)}`);
  }
  return chunk as UIMessageChunk;
}

/** Throws the server's refusal unless `response` is a stream to read. */
async function checked(response: Response, url: string): Promise<void> {
  if (!response.ok) throw await refusalOf(response, url);
  if (response.body === null) throw new PhronomyError("INTERNAL", `the chat server answered ${url} with an empty body`, { details: { url } });
}

/** The server's `{ code, message }` (as `chatRoutes` answers errors) as a PhronomyError. */
async function refusalOf(response: Response, url: string): Promise<PhronomyError> {
  const text = await response.text().catch(() => "");
  let answer: { code?: unknown; message?: unknown } = {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === "object" && parsed !== null) answer = parsed as typeof answer;
  } catch {
    // Not JSON: the status and the text say what happened.
  }
  const code = typeof answer.code === "string" && /^[A-Z_]{1,64}$/.test(answer.code) ? (answer.code as PhronomyErrorCode) : "INTERNAL";
  const message = typeof answer.message === "string" ? answer.message : `the chat server answered ${url} with ${response.status}: ${text.slice(0, 200)}`;
  return new PhronomyError(code, message, { details: { status: response.status, url } });
}

function connectionLost(chatId: string, executionId: string | undefined, position: string | undefined, attempts: number, cause: unknown): PhronomyError {
  const answer = executionId === undefined ? "its answer" : `answer ${executionId}`;
  return new PhronomyError(
    "RUNTIME_SHUTDOWN",
    `the stream of chat ${chatId} (${answer}) was cut off and ${attempts} reconnects in a row brought nothing; the answer goes on on the server: resume it later (useChat's resumeStream())`,
    { ...(executionId !== undefined ? { executionId } : {}), cause, details: { reason: "connection_lost", chatId, attempts, position: position ?? null } },
  );
}

/** The chunks as a stream; cancelling it aborts the request under way. */
function streamOf(chunks: AsyncGenerator<UIMessageChunk>, control: AbortController): ReadableStream<UIMessageChunk> {
  return new ReadableStream<UIMessageChunk>({
    async pull(controller) {
      try {
        const next = await chunks.next();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      } catch (error) {
        controller.error(error);
      }
    },
    async cancel() {
      control.abort();
      await chunks.return(undefined).catch(() => undefined);
    },
  });
}

/** A controller aborted with `signal` (the caller's), or by the stream's cancel. */
function linkedAbort(signal: AbortSignal | undefined): AbortController {
  const control = new AbortController();
  if (signal?.aborted) control.abort(signal.reason);
  else signal?.addEventListener("abort", () => control.abort(signal.reason), { once: true });
  return control;
}

function sleep(milliseconds: number, signal: AbortSignal): Promise<void> {
  if (milliseconds === 0) return signal.aborted ? Promise.reject(signal.reason) : Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", aborted);
      resolve();
    }, milliseconds);
    function aborted(): void {
      clearTimeout(timer);
      reject(signal.reason);
    }
    signal.addEventListener("abort", aborted, { once: true });
  });
}

async function resolve<T>(value: T | PromiseLike<T> | (() => T | PromiseLike<T>) | undefined): Promise<T | undefined> {
  return typeof value === "function" ? (value as () => T | PromiseLike<T>)() : value;
}

function headersOf(headers: Record<string, string> | Headers | undefined): Record<string, string> {
  if (headers === undefined) return {};
  if (headers instanceof Headers) return Object.fromEntries(headers.entries());
  return { ...headers };
}

function bounded(value: number | undefined, fallback: number, min: number, max: number, name: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidInputError(`PhronomyChatTransport: "${name}" must be an integer from ${min} to ${max}, got ${String(value)}`);
  }
  return value;
}
