// A client that keeps losing its connection (docs/decisions/0036): at
// random moments — after a random number of chunks, or after a random
// pause — it leaves and reconnects with the position of the last chunk it
// saw, by id, while the execution streams text and runs tools. Stitched
// together, its chunks carry no position twice, in order, and the AI SDK's
// reader builds the same message as a replay. Seeded: CHAT_RECONNECT_SEED
// replays a run, CHAT_RECONNECT_RUNS runs more.

import { describe, expect, it } from "vitest";
import type { ChatChunk } from "../../host/index.js";
import { comparePositions, parsePosition } from "../../host/chat/positions.js";
import { lookupTool, openEnvironment, scriptedModel, turnOf } from "../runtime/helpers.js";
import { generator, seedFrom } from "../support/seeded.js";
import { messageOf } from "../support/ui-stream.js";

const runs = Number(process.env["CHAT_RECONNECT_RUNS"] ?? 3);

/** Reads until `count` chunks, `pauseMs` or the end; returns them and whether it ended. */
async function readFor(stream: ReadableStream<ChatChunk>, count: number, pauseMs: number): Promise<{ chunks: ChatChunk[]; ended: boolean }> {
  const reader = stream.getReader();
  const chunks: ChatChunk[] = [];
  const deadline = new Promise<"pause">((resolve) => setTimeout(() => resolve("pause"), pauseMs));
  for (;;) {
    const next = await Promise.race([reader.read(), deadline]);
    if (next === "pause") break;
    if (next.done) return { chunks, ended: true };
    chunks.push(next.value);
    if (chunks.length >= count) break;
  }
  await reader.cancel();
  return { chunks, ended: false };
}

describe("a client that keeps reconnecting", () => {
  for (let round = 0; round < runs; round += 1) {
    it(`round ${round}: no chunk twice, none missing`, async () => {
      const seed = seedFrom("CHAT_RECONNECT_SEED") + round;
      console.log(`[chat reconnects] seed ${seed} (CHAT_RECONNECT_SEED=${seed} replays it)`);
      const random = generator(seed);
      const env = await openEnvironment();
      const model = scriptedModel(
        ({ messages }) => {
          const turn = turnOf(messages);
          if (turn < 3)
            return { text: `Step ${turn}: looking up order 4${turn}, one moment please.`, toolCalls: [{ toolName: "lookup", input: { orderId: `4${turn}` } }] };
          return { text: "All three orders have shipped and arrive this week." };
        },
        { latencyMs: 40 },
      );
      const run = env.agent({ id: "support", model, tools: { lookup: lookupTool() } }).start("Where are my orders?", { stream: true });

      const seen: ChatChunk[] = [];
      let stream = await env.stream(run);
      let reconnects = 0;
      for (;;) {
        const { chunks, ended } = await readFor(stream, 1 + Math.floor(random() * 6), Math.floor(random() * 120));
        seen.push(...(seen.length === 0 ? chunks : chunks.filter((chunk) => chunk.type !== "start")));
        if (ended) break;
        reconnects += 1;
        const last = seen.at(-1)?.position;
        stream = await env.stream(await run.executionId, last === undefined ? {} : { resumeAt: last });
      }
      const context = `seed ${seed}, ${reconnects} reconnects: ${seen.map((chunk) => `${chunk.type}@${chunk.position}`).join(" ")}`;
      if (process.env["CHAT_DEBUG"]) console.log(context);
      expect(seen.at(-1), context).toMatchObject({ type: "finish", finishReason: "stop" });
      const positioned = seen.filter((chunk) => chunk.type !== "start");
      for (let index = 1; index < positioned.length; index += 1) {
        const order = comparePositions(parsePosition(positioned[index - 1]!.position, "x"), parsePosition(positioned[index]!.position, "x"));
        // Equal only for an adjustment at the client's text position (text-end, reset-step).
        expect(order, context).toBeLessThanOrEqual(0);
      }
      const replay: ChatChunk[] = [];
      for await (const chunk of await env.stream(await run.executionId)) replay.push(chunk);
      expect(await messageOf(seen), context).toEqual(await messageOf(replay));
    });
  }
});
