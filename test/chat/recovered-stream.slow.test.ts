// A streamed answer recovered after a kill -9 streams again (issue 27 item
// 8, docs/decisions/0072): a child process starts a chat answer with
// `stream: true` (as chatRoutes does) and SIGKILLs itself while the model
// is called; the next process recovers it and calls the model streaming —
// and a watcher that attaches in the middle of that recovered call (a
// client's GET {api}/{chatId}/stream, or env.stream) gets the text so far
// at once and then each delta as the model sends it, not the whole answer
// in one piece when it is recorded.

import { fileURLToPath } from "node:url";
import type { UIMessageChunk } from "ai";
import { describe, expect, it } from "vitest";
import { chatRoutes, Phronomy, type ChatChunk } from "../../host/index.js";
import { runUntilKilled } from "../support/child-process.js";
import { streamOnlyModel } from "../support/stream-only-model.js";
import { messageOf } from "../support/ui-stream.js";
import { deferred, recordingLogger, temporaryStorePath } from "../runtime/helpers.js";

const childScript = fileURLToPath(new URL("./fixtures/chat-crash-child.ts", import.meta.url));

/** Runs the child on `store` until it kills itself; the answer it left. */
async function crashedAnswer(store: string): Promise<string> {
  return (await runUntilKilled<{ executionId: string }>(childScript, [store])).executionId;
}

/** The UI chunks of a server-sent event response, one by one. */
async function* sseChunks(response: Response): AsyncGenerator<UIMessageChunk> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const next = await reader.read();
    if (next.done) return;
    buffer += next.value;
    let end: number;
    while ((end = buffer.indexOf("\n\n")) !== -1) {
      const data = /^data: (.*)$/m.exec(buffer.slice(0, end))?.[1];
      buffer = buffer.slice(end + 2);
      if (data !== undefined && data !== "[DONE]") yield JSON.parse(data) as UIMessageChunk;
    }
  }
}

/** Reads `chunks` until the first text delta, opens `gate`, reads the rest. */
async function readAcrossGate(chunks: AsyncIterable<UIMessageChunk>, gate: () => void): Promise<UIMessageChunk[]> {
  const read: UIMessageChunk[] = [];
  for await (const chunk of chunks) {
    read.push(chunk);
    if (chunk.type === "text-delta" && read.filter((seen) => seen.type === "text-delta").length === 1) gate();
  }
  return read;
}

const deltas = ["Order 42 ", "has shipped ", "and arrives ", "on Monday."];
const answer = deltas.join("");

describe("a streamed answer recovered after kill -9", () => {
  it("streams the recovered model call to watchers that attach mid-call: GET {api}/{chatId}/stream and env.stream get the text so far, then each delta", async () => {
    const store = await temporaryStorePath();
    const executionId = await crashedAnswer(store);
    const gate = deferred();
    const firstDelta = deferred();
    const model = streamOnlyModel({ deltas, before: 1, gate: gate.promise });
    const env = await Phronomy.open({ store, logger: recordingLogger() });
    try {
      const support = env.agent({
        name: "support",
        model,
        // The listener of recovered executions: hears the recovered call's first delta.
        onEvent: (event) => {
          if (event.type === "text_delta") firstDelta.resolve();
        },
      });
      await firstDelta.promise;
      // Both watchers attach now, in the middle of the recovered call.
      const routes = chatRoutes(env, support);
      const resumed = await routes.resume(new Request("http://chat.test/api/chat/chat-1/stream"));
      expect(resumed.status).toBe(200);
      const streamed = await env.stream(executionId);
      let opened = 0;
      const open = (): void => {
        opened += 1;
        if (opened === 2) gate.resolve();
      };
      const [overHttp, inProcess] = await Promise.all([readAcrossGate(sseChunks(resumed), open), readAcrossGate(streamed as AsyncIterable<ChatChunk>, open)]);

      for (const chunks of [overHttp, inProcess]) {
        const context = chunks.map((chunk) => chunk.type).join(" ");
        const texts = chunks.flatMap((chunk) => (chunk.type === "text-delta" ? [chunk.delta] : []));
        expect(texts.length, context).toBeGreaterThan(1);
        expect(texts[0], "the text so far, at once").toBe(deltas[0]);
        expect(texts.join("")).toBe(answer);
        expect(chunks.at(-1), context).toMatchObject({ type: "finish", finishReason: "stop" });
        const message = await messageOf(chunks);
        expect(message.parts.filter((part) => part.type === "text")).toEqual([expect.objectContaining({ text: answer, state: "done" })]);
      }
      const replay: ChatChunk[] = [];
      for await (const chunk of await env.stream(executionId)) replay.push(chunk);
      expect(await messageOf(overHttp)).toEqual(await messageOf(replay));
      await expect(env.wait(executionId).result).resolves.toMatchObject({ outcome: "completed", output: answer });
    } finally {
      gate.resolve();
      await env.close();
    }
  }, 60_000);
});
