// Server-sent events read off a response body, for the chat transport
// (transport.ts): each event's `id` (a chat stream's chunk position,
// docs/decisions/0036) and `data`. The AI SDK's own reader drops the ids,
// which a client needs to resume where it was.
//
// Rules kept here (the HTML standard's event stream format, as much of it
// as a UI message stream uses): lines end with LF, CRLF or CR; a blank line
// ends an event; `:` starts a comment (the keep-alive); `data` lines are
// joined with LF; one space after the colon is dropped; an event without
// data is not one. No `node:` import: this runs in browsers.

import { InvalidInputError } from "../errors.js";

/** One event: its `id:` field (the last one given so far) and its data. */
export interface ServerSentEvent {
  readonly id: string | undefined;
  readonly data: string;
}

/** The longest line kept while waiting for its end: a chunk of a UI
 * message stream is a line of JSON, and a tool output can be large, but a
 * line longer than this is not a chat stream. */
export const eventLineLengthMax = 16 * 1024 * 1024;

/** The events of `body`, in order, until it ends; its reader is released
 * (the body cancelled) when the caller stops early. */
export async function* serverSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const parser = new EventParser();
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done) return;
      yield* parser.push(next.value);
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

class EventParser {
  private buffer = "";
  private lastId: string | undefined;
  private data: string[] = [];
  /** The buffer ended with CR: an LF that starts the next piece belongs to it. */
  private afterCarriageReturn = false;

  /** The events completed by `text`. */
  push(text: string): ServerSentEvent[] {
    let piece = text;
    if (this.afterCarriageReturn && piece.startsWith("\n")) piece = piece.slice(1);
    this.afterCarriageReturn = piece.endsWith("\r");
    this.buffer += piece;
    const lines = this.buffer.split(/\r\n|\r|\n/);
    this.buffer = lines.pop() ?? "";
    if (this.buffer.length > eventLineLengthMax) {
      throw new InvalidInputError(`a server-sent event line is longer than ${eventLineLengthMax} characters: the response is not a chat stream`);
    }
    const events: ServerSentEvent[] = [];
    for (const line of lines) {
      const event = this.line(line);
      if (event !== undefined) events.push(event);
    }
    return events;
  }

  private line(line: string): ServerSentEvent | undefined {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.data.push(value);
    else if (field === "id" && !value.includes("\0")) this.lastId = value;
    return undefined;
  }

  private dispatch(): ServerSentEvent | undefined {
    if (this.data.length === 0) return undefined;
    const event = { id: this.lastId, data: this.data.join("\n") };
    this.data = [];
    return event;
  }
}
