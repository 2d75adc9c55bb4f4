// Chat streams on PostgreSQL (docs/decisions/0036, 0073): an environment that
// does not hold the agent's lease streams an execution another one runs,
// by tailing the durable timeline, and a client that left mid-run resumes
// there at its last position and gets exactly the rest; another
// environment's `messages()` gives each answer as its stream showed it.

import { describe, expect, it } from "vitest";
import { Phronomy, type ChatChunk, type Environment } from "../../host/index.js";
import { deferred, lookupTool, recordingLogger, scriptedModel, turnOf } from "../runtime/helpers.js";
import { messageOf } from "../support/ui-stream.js";
import { atEnd, freshSchemaUrl } from "./database.js";

async function openOn(url: string): Promise<Environment> {
  const environment = await Phronomy.open({ store: url, logger: recordingLogger() });
  atEnd(() => environment.close());
  return environment;
}

describe("a chat stream on PostgreSQL, served by an environment that does not run the execution", () => {
  it("tails the timeline; a client that left while the tool ran resumes at its last position", async () => {
    const url = freshSchemaUrl();
    const owner = await openOn(url);
    const other = await openOn(url);
    const gate = deferred();
    const model = scriptedModel(({ messages }) =>
      turnOf(messages) === 0 ? { text: "Let me look.", toolCalls: [{ toolName: "lookup", input: { orderId: "42" } }] } : { text: "Order 42 has shipped." },
    );
    const run = owner.agent({ id: "support", model, tools: { lookup: lookupTool({ gate: gate.promise }) } }).start("Where is order 42?");
    const executionId = await run.executionId;
    atEnd(async () => gate.resolve());

    const reader = (await other.stream(executionId)).getReader();
    const before: ChatChunk[] = [];
    while (before.at(-1)?.type !== "tool-input-available") before.push((await reader.read()).value!);
    await reader.cancel();
    gate.resolve();

    const after: ChatChunk[] = [];
    for await (const chunk of await other.stream(executionId, { resumeAt: before.at(-1)!.position })) after.push(chunk);
    expect(after.at(-1)).toMatchObject({ type: "finish", finishReason: "stop" });
    const stitched = [...before, ...after.filter((chunk) => chunk.type !== "start")];
    const positions = stitched.filter((chunk) => chunk.type !== "start").map((chunk) => chunk.position);
    expect(new Set(positions).size).toBe(positions.length);
    const replay: ChatChunk[] = [];
    for await (const chunk of await owner.stream(executionId)) replay.push(chunk);
    const message = await messageOf(stitched);
    expect(message).toEqual(await messageOf(replay));
    expect(message.parts.filter((part) => part.type !== "step-start")).toEqual([
      expect.objectContaining({ type: "text", text: "Let me look." }),
      expect.objectContaining({ type: "tool-lookup", state: "output-available", output: { orderId: "42", status: "shipped" } }),
      expect.objectContaining({ type: "text", text: "Order 42 has shipped." }),
    ]);
  });
});

describe("a conversation's history on PostgreSQL", () => {
  it("messages() from another environment: each answer with the parts its stream showed, sources and token details included", async () => {
    const url = freshSchemaUrl();
    const owner = await openOn(url);
    const other = await openOn(url);
    const model = scriptedModel(({ messages }) =>
      turnOf(messages) === 0
        ? { reasoning: "Look it up first.", text: "Let me look.", toolCalls: [{ toolName: "lookup", input: { orderId: "42" } }], usage: { reasoningTokens: 5 } }
        : { text: "Order 42 has shipped.", sources: [{ url: "https://example.com/42", title: "Order 42" }], usage: { reasoningTokens: 3 } },
    );
    const run = owner
      .agent({ name: "support", model, tools: { lookup: lookupTool() } })
      .conversation("chat-pg")
      .start("Where is order 42?", { stream: true });
    const executionId = await run.executionId;
    const replay: ChatChunk[] = [];
    for await (const chunk of await owner.stream(run)) replay.push(chunk);
    const streamed = await messageOf(replay);

    const history = await other
      .agent({ name: "support", model, tools: { lookup: lookupTool() } })
      .conversation("chat-pg")
      .messages();
    expect(history.map((message) => message.role)).toEqual(["user", "assistant"]);
    const { at, ...metadata } = history[1]!.metadata!;
    expect(at).toEqual(expect.any(Number));
    expect({ ...history[1]!, metadata }).toEqual(streamed);
    expect(metadata).toMatchObject({ executionId, outcome: "completed", usage: { reasoningTokens: 8 } }); // summed over both calls
    expect(streamed.parts.map((part) => part.type)).toEqual(["step-start", "reasoning", "text", "tool-lookup", "step-start", "text", "source-url"]);
  });
});
