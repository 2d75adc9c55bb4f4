// What a chat client does with a UI message stream, for the chat tests:
// build the message the AI SDK's reader builds from a list of chunks, and
// read server-sent events off a response until told to stop.

import { readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";

/** The message the AI SDK's reader builds from `chunks`, as a plain copy. */
export async function messageOf(chunks: readonly UIMessageChunk[]): Promise<UIMessage> {
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  let last: UIMessage | undefined;
  for await (const state of readUIMessageStream({ stream, terminateOnError: true })) last = state;
  if (last === undefined) throw new Error(`messageOf: ${chunks.length} chunks built no message`);
  return structuredClone(last);
}

/** One server-sent event: its `id:` and `data:` lines, when present. */
export interface ServerSentEvent {
  readonly id: string | undefined;
  readonly data: string | undefined;
}

/**
 * Reads server-sent events off `response` until `stop` answers true for one
 * (the connection is then dropped) or the stream ends. A read that fails —
 * the server went away — ends the list as an end of stream would: the tests
 * that kill servers assert on what arrived before.
 */
export async function readServerSentEvents(response: Response, stop: (event: ServerSentEvent) => boolean = () => false): Promise<ServerSentEvent[]> {
  if (response.body === null) throw new Error(`readServerSentEvents: response ${response.status} has no body`);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const events: ServerSentEvent[] = [];
  let buffer = "";
  for (;;) {
    const next = await reader.read().catch(() => ({ done: true as const, value: undefined }));
    if (next.done) return events;
    buffer += next.value;
    let end: number;
    while ((end = buffer.indexOf("\n\n")) !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = { id: /^id: (.*)$/m.exec(block)?.[1], data: /^data: (.*)$/m.exec(block)?.[1] };
      events.push(event);
      if (stop(event)) {
        await reader.cancel().catch(() => undefined);
        return events;
      }
    }
  }
}
