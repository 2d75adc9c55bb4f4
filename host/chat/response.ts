// A chat stream as an HTTP response in the AI SDK's UI message stream
// protocol (server-sent events, `data: <chunk JSON>`, `data: [DONE]` at the
// end, its `x-vercel-ai-ui-message-stream: v1` header), which `useChat` and
// the AI SDK's `DefaultChatTransport` read. Each event also carries its
// chunk's position as its SSE `id`, so an `EventSource` — or any client
// that keeps the last id — reconnects with `Last-Event-ID` and continues
// after it (docs/decisions/0036). The chunk JSON itself is the AI SDK's, the
// position left out.
//
// The headers are those of the AI SDK's `UI_MESSAGE_STREAM_HEADERS`,
// written out here: `ai` is an optional peer of this package, and this
// module must load without it.

import type { ChatChunk } from "./chat-stream.js";

/** The headers of a UI message stream response (the AI SDK's `UI_MESSAGE_STREAM_HEADERS`). */
export const uiMessageStreamHeaders: Readonly<Record<string, string>> = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-vercel-ai-ui-message-stream": "v1",
  "x-accel-buffering": "no",
};

/** The header naming the execution a streamed response belongs to. */
export const executionIdHeader = "x-phronomy-execution-id";

/** How long a stream may be silent before a keep-alive comment is sent:
 * proxies and load balancers close idle connections (often at 30–60 s),
 * and an answer can wait that long on a slow tool. */
export const keepAliveMs = 15_000;

/** A Response streaming the chunks as server-sent events with their
 * positions as event ids; a silent stream sends a comment every
 * `keepAliveMs` (0: never), which SSE clients ignore. */
export function toUIMessageStreamResponse(
  stream: ReadableStream<ChatChunk>,
  init: { readonly status?: number; readonly headers?: Record<string, string>; readonly executionId?: string; readonly keepAliveMs?: number } = {},
): Response {
  const headers: Record<string, string> = { ...uiMessageStreamHeaders, ...init.headers };
  if (init.executionId !== undefined) headers[executionIdHeader] = init.executionId;
  const events = toServerSentEvents(stream, init.keepAliveMs === undefined ? {} : { keepAliveMs: init.keepAliveMs });
  return new Response(events.pipeThrough(new TextEncoderStream()), { status: init.status ?? 200, headers });
}

/** The chunks as SSE text: `id: <position>` and `data: <chunk>` per event,
 * and `: keep-alive` after `keepAliveMs` of silence. */
export function toServerSentEvents(stream: ReadableStream<ChatChunk>, options: { readonly keepAliveMs?: number } = {}): ReadableStream<string> {
  const every = options.keepAliveMs ?? keepAliveMs;
  let timer: ReturnType<typeof setInterval> | undefined;
  let lastSent = Date.now();
  const stop = (): void => {
    if (timer !== undefined) clearInterval(timer);
    timer = undefined;
  };
  return stream.pipeThrough(
    new TransformStream<ChatChunk, string>({
      start(controller) {
        if (!(every > 0)) return;
        // Ticks twice per period, so no silence outlasts it by more than half.
        timer = setInterval(() => {
          if (Date.now() - lastSent < every / 2) return;
          lastSent = Date.now();
          try {
            controller.enqueue(": keep-alive\n\n");
          } catch {
            stop(); // the client left: the stream is cancelled
          }
        }, every / 2);
        // A stream held open by a client does not hold the process open.
        (timer as { unref?: () => void }).unref?.();
      },
      transform(chunk, controller) {
        lastSent = Date.now();
        const { position, ...uiChunk } = chunk;
        controller.enqueue(`id: ${position}\ndata: ${JSON.stringify(uiChunk)}\n\n`);
      },
      flush(controller) {
        stop();
        controller.enqueue("data: [DONE]\n\n");
      },
    }),
  );
}
