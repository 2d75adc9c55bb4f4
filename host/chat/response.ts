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

/** A Response streaming the chunks as server-sent events with their
 * positions as event ids. */
export function toUIMessageStreamResponse(
  stream: ReadableStream<ChatChunk>,
  init: { readonly status?: number; readonly headers?: Record<string, string>; readonly executionId?: string } = {},
): Response {
  const headers: Record<string, string> = { ...uiMessageStreamHeaders, ...init.headers };
  if (init.executionId !== undefined) headers[executionIdHeader] = init.executionId;
  return new Response(toServerSentEvents(stream).pipeThrough(new TextEncoderStream()), { status: init.status ?? 200, headers });
}

/** The chunks as SSE text: `id: <position>` and `data: <chunk>` per event. */
export function toServerSentEvents(stream: ReadableStream<ChatChunk>): ReadableStream<string> {
  return stream.pipeThrough(
    new TransformStream<ChatChunk, string>({
      transform(chunk, controller) {
        const { position, ...uiChunk } = chunk;
        controller.enqueue(`id: ${position}\ndata: ${JSON.stringify(uiChunk)}\n\n`);
      },
      flush(controller) {
        controller.enqueue("data: [DONE]\n\n");
      },
    }),
  );
}
