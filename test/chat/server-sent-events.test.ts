// The server-sent event reader of the chat transport
// (host/chat/server-sent-events.ts): events with their ids, however the
// bytes are split, with LF, CRLF or CR line ends; comments (the
// keep-alive) and events without data skipped; multi-line data joined; an
// id kept until the next one. Seeded: SSE_SPLIT_SEED replays the splits.

import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../../host/index.js";
import { eventLineLengthMax, serverSentEvents, type ServerSentEvent } from "../../host/chat/server-sent-events.js";
import { generator, seedFrom } from "../support/seeded.js";

/** `text` as a body delivered in the given pieces. */
function bodyOf(pieces: readonly string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    start(controller) {
      for (const piece of pieces) controller.enqueue(encoder.encode(piece));
      controller.close();
    },
  });
}

async function eventsOf(pieces: readonly string[]): Promise<ServerSentEvent[]> {
  const events: ServerSentEvent[] = [];
  for await (const event of serverSentEvents(bodyOf(pieces))) events.push(event);
  return events;
}

const stream = [
  ": keep-alive",
  "",
  "id: 0",
  'data: {"type":"start"}',
  "",
  "id: 3.t12",
  'data: {"type":"text-delta","delta":"é, 42"}',
  "",
  "event: ignored",
  "",
  "data: line one",
  "data:line two",
  "",
  "id: 4",
  "data: [DONE]",
  "",
];

const expected: ServerSentEvent[] = [
  { id: "0", data: '{"type":"start"}' },
  { id: "3.t12", data: '{"type":"text-delta","delta":"é, 42"}' },
  { id: "3.t12", data: "line one\nline two" },
  { id: "4", data: "[DONE]" },
];

describe("serverSentEvents", () => {
  for (const [name, end] of [
    ["LF", "\n"],
    ["CRLF", "\r\n"],
    ["CR", "\r"],
  ] as const) {
    it(`reads events with ${name} line ends, whole and split at every character`, async () => {
      const text = stream.map((line) => line + end).join("");
      expect(await eventsOf([text])).toEqual(expected);
      expect(await eventsOf([...text])).toEqual(expected);
    });
  }

  it("reads events split at random places", async () => {
    const seed = seedFrom("SSE_SPLIT_SEED");
    console.log(`[server-sent events] seed ${seed} (SSE_SPLIT_SEED=${seed} replays it)`);
    const random = generator(seed);
    for (let round = 0; round < 50; round += 1) {
      // One kind of line end per stream: "\r" then "\n" is one CRLF, not two ends.
      const end = (["\n", "\r\n", "\r"] as const)[Math.floor(random() * 3)]!;
      const text = stream.map((line) => line + end).join("");
      const pieces: string[] = [];
      for (let at = 0; at < text.length; ) {
        const length = 1 + Math.floor(random() * 12);
        pieces.push(text.slice(at, at + length));
        at += length;
      }
      expect(await eventsOf(pieces), `seed ${seed}, round ${round}`).toEqual(expected);
    }
  });

  it("an event cut off before its blank line is not one", async () => {
    expect(await eventsOf(['id: 1\ndata: {"type":"start"}\n\nid: 2\ndata: {"type":"text-'])).toEqual([{ id: "1", data: '{"type":"start"}' }]);
  });

  it("a line longer than eventLineLengthMax is refused with INVALID_INPUT", async () => {
    await expect(eventsOf([`data: ${"x".repeat(eventLineLengthMax + 1)}`])).rejects.toThrow(InvalidInputError);
  });
});
