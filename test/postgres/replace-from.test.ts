// A start's `replaceFrom` on PostgreSQL through the public API
// (docs/decisions/0070): the cut is the one statement
// `prepare_execution_replacing_decided` (migration 21, the core's verdicts;
// migration 15's function, unused since, is dropped by migration 23), and
// another environment on the database reads the memory as cut. (The journal tail kept in memory
// is checked in journal-tails.test.ts.)

import type { UIMessage } from "ai";
import { describe, expect, it } from "vitest";
import { Phronomy, type Environment } from "../../host/index.js";
import { recordingLogger, scriptedModel } from "../runtime/helpers.js";
import { atEnd, freshSchema, freshSchemaUrl, postgresUrl, withClient } from "./database.js";

/** A message's text (an answer rebuilt from its timeline opens with a step-start part). */
function textOf(message: UIMessage): string {
  return message.parts.map((part) => (part.type === "text" ? part.text : "")).join("");
}

async function openOn(url: string): Promise<Environment> {
  const environment = await Phronomy.open({ store: url, logger: recordingLogger() });
  atEnd(() => environment.close());
  return environment;
}

describe("start({ replaceFrom }) on PostgreSQL", () => {
  it("the schema holds the core-decided replacing preparation only: migration 15's, unused since 21, is dropped (migration 23)", async () => {
    const schema = freshSchema();
    await openOn(`${postgresUrl}?schema=${schema}`);
    const functions = await withClient((client) =>
      client.query<{ proname: string }>(
        "SELECT proname FROM pg_proc WHERE pronamespace = $1::regnamespace AND proname LIKE 'prepare_execution_replacing%' ORDER BY proname",
        [schema],
      ),
    );
    expect(functions.rows.map((row) => row.proname)).toEqual(["prepare_execution_replacing_decided"]);
  });

  it("the model sees the replaced turn once, messages() shows the replaced history, and another environment on the database reads the same", async () => {
    const url = freshSchemaUrl();
    const env = await openOn(url);
    const prompts: string[][] = [];
    const model = scriptedModel(({ messages }) => {
      prompts.push(
        messages.flatMap((message) =>
          message.role === "user" ? [`user: ${message.content}`] : message.role === "assistant" ? [`assistant: ${message.text}`] : [],
        ),
      );
      const last = messages.at(-1);
      return { text: `answer ${prompts.length} to: ${last?.role === "user" ? last.content : "?"}` };
    });
    const chat = env.agent({ name: "support", model }).conversation("user-1");
    await chat.start("hello").result;
    const second = await chat.start("where is my order?").result;
    const regenerated = await chat.start("where is my order?", { replaceFrom: second.executionId }).result;
    expect(prompts.at(-1)).toEqual(["user: hello", "assistant: answer 1 to: hello", "user: where is my order?"]);
    await chat.start("thanks").result;
    expect(prompts.at(-1)).toEqual([
      "user: hello",
      "assistant: answer 1 to: hello",
      "user: where is my order?",
      "assistant: answer 3 to: where is my order?",
      "user: thanks",
    ]);
    await env.close();
    const other = await openOn(url);
    const again = other.agent({ name: "support", model }).conversation("user-1");
    expect((await again.messages()).map((message) => textOf(message))).toEqual([
      "hello",
      "answer 1 to: hello",
      "where is my order?",
      "answer 3 to: where is my order?",
      "thanks",
      "answer 4 to: thanks",
    ]);
    expect((await other.execution(regenerated.executionId))?.metadata.config?.["replaceFrom"]).toBe(second.executionId);
    await expect(again.start("x", { replaceFrom: second.executionId }).result).rejects.toMatchObject({
      code: "INVALID_INPUT",
      details: { reason: "replace_not_in_memory" },
    });
  });
});
