// The model of the browser test's chat server (server.ts): scripted from
// the prompt it is sent, so a call made again after a restart answers the
// same; it streams word by word with a pause before each part, and appends
// every prompt to <workDirectory>/prompts.jsonl, so the test sees what the
// model was told (an attachment's media type, a declined approval, a
// regenerated turn). A story stops before its seventh word while the file
// <workDirectory>/gate-<name> is missing, its name from the question ("a
// story (gate reload)"): the test holds an answer mid-stream for as long as
// it needs (a reload, a kill -9) without timing anything.

import { appendFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import type { LanguageModelV4, LanguageModelV4Content, LanguageModelV4Prompt, LanguageModelV4StreamPart, LanguageModelV4Usage } from "@ai-sdk/provider";

export const storyText = "Once upon a time a blue kettle sang every morning until the whole street woke up and came to listen.";
export const jokeText = "Why did the kettle whistle? Because it was steamed.";
export const storyReasoning = "The customer wants a story about a kettle.";
/** The words a story shows before its gate. */
export const wordsBeforeGate = 6;

/** What the model answers, decided from the prompt alone (so a call made
 * again after a restart answers the same). */
function answerTo(prompt: LanguageModelV4Prompt): { reasoning?: string; text?: string; refund?: boolean; askDate?: boolean } {
  const lastUser = prompt.map((message) => message.role).lastIndexOf("user");
  const asked = prompt[lastUser];
  const parts = asked?.role === "user" ? asked.content : [];
  const question = parts.map((part) => (part.type === "text" ? part.text : "")).join("");
  const files = parts.flatMap((part) => (part.type === "file" ? [part] : []));
  const results = prompt.slice(lastUser + 1).flatMap((message) => (message.role === "tool" ? message.content : []));
  const refund = results.find((part) => part.type === "tool-result" && part.toolName === "issueRefund");
  const date = results.find((part) => part.type === "tool-result" && part.toolName === "askDeliveryDate");
  // A typed wait (humanInput): the page answers it with a form.
  if (/delivery date/i.test(question) && date === undefined) return { askDate: true };
  if (date?.type === "tool-result") return { text: `Booked for ${date.output.type === "json" ? (date.output.value as { date?: string }).date : "?"}.` };
  if (files.length > 0) return { text: `I received ${files.map((file) => `${file.filename ?? "a file"} (${file.mediaType})`).join(", ")}.` };
  if (/refund/i.test(question) && refund === undefined) return { refund: true };
  if (refund?.type === "tool-result") {
    return { text: refund.output.type === "execution-denied" ? `The refund was not made: ${refund.output.reason ?? "declined"}.` : "Order 42 is refunded." };
  }
  if (/story/i.test(question)) return { reasoning: storyReasoning, text: storyText };
  if (/joke/i.test(question)) return { text: jokeText };
  return { text: `You said: ${question}` };
}

const usage: LanguageModelV4Usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 10, text: 10, reasoning: 0 },
};

export function pacedModel({ pacingMs, workDirectory }: { readonly pacingMs: number; readonly workDirectory: string }): LanguageModelV4 {
  let calls = 0;
  const contentOf = (prompt: LanguageModelV4Prompt): LanguageModelV4Content[] => {
    const answer = answerTo(prompt);
    calls += 1;
    const content: LanguageModelV4Content[] = [];
    if (answer.reasoning) content.push({ type: "reasoning", text: answer.reasoning });
    if (answer.text) content.push({ type: "text", text: answer.text });
    if (answer.askDate) {
      content.push({ type: "tool-call", toolCallId: `ask-${calls}`, toolName: "askDeliveryDate", input: JSON.stringify({ question: "Which day suits you?" }) });
    }
    if (answer.refund) {
      content.push({ type: "tool-call", toolCallId: `refund-${calls}`, toolName: "issueRefund", input: JSON.stringify({ orderId: "42", amountCents: 3990 }) });
    }
    return content;
  };
  return {
    specificationVersion: "v4",
    provider: "browser-test",
    modelId: "paced",
    supportedUrls: {},
    async doGenerate(options) {
      record(workDirectory, options.prompt, "generate");
      const content = contentOf(options.prompt);
      return { content, finishReason: finishOf(content), usage, warnings: [] };
    },
    async doStream(options) {
      record(workDirectory, options.prompt, "stream");
      const content = contentOf(options.prompt);
      const gate = /gate (\w+)/.exec(lastUserText(options.prompt))?.[1];
      const parts = streamPartsOf(content);
      let next = 0;
      const stream = new ReadableStream<LanguageModelV4StreamPart>(
        {
          async pull(controller) {
            const part = parts[next++];
            if (part === undefined) return controller.close();
            await pause(pacingMs, options.abortSignal);
            if (gate !== undefined && part.type === "text-delta" && part.id === "gate") await gateOpen(workDirectory, gate, options.abortSignal);
            controller.enqueue(part.type === "text-delta" && part.id === "gate" ? { ...part, id: "text" } : part);
          },
        },
        { highWaterMark: 0 },
      );
      return { stream };
    },
  };
}

function finishOf(content: LanguageModelV4Content[]) {
  const unified = content.some((part) => part.type === "tool-call") ? ("tool-calls" as const) : ("stop" as const);
  return { unified, raw: unified };
}

/** Word by word; the delta at the gate is marked (id "gate") for doStream to hold. */
function streamPartsOf(content: LanguageModelV4Content[]): LanguageModelV4StreamPart[] {
  const parts: LanguageModelV4StreamPart[] = [{ type: "stream-start", warnings: [] }];
  for (const part of content) {
    if (part.type === "reasoning") {
      parts.push(
        { type: "reasoning-start", id: "reasoning" },
        { type: "reasoning-delta", id: "reasoning", delta: part.text },
        { type: "reasoning-end", id: "reasoning" },
      );
    } else if (part.type === "text") {
      parts.push({ type: "text-start", id: "text" });
      for (const [index, word] of (part.text.match(/\S+\s*/g) ?? []).entries()) {
        parts.push({ type: "text-delta", id: index === wordsBeforeGate ? "gate" : "text", delta: word });
      }
      parts.push({ type: "text-end", id: "text" });
    } else if (part.type === "tool-call") {
      parts.push(part);
    }
  }
  parts.push({ type: "finish", usage, finishReason: finishOf(content) });
  return parts;
}

function lastUserText(prompt: LanguageModelV4Prompt): string {
  const asked = prompt.findLast((message) => message.role === "user");
  return asked?.role === "user" ? asked.content.map((part) => (part.type === "text" ? part.text : "")).join("") : "";
}

/** One line per call: its kind and the prompt (bytes as their length, URLs as strings). */
function record(workDirectory: string, prompt: LanguageModelV4Prompt, kind: "generate" | "stream"): void {
  const line = JSON.stringify({ kind, prompt }, (_key, value: unknown) => (value instanceof Uint8Array ? { bytes: value.length } : value));
  appendFileSync(join(workDirectory, "prompts.jsonl"), `${line}\n`);
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const aborted = (): void => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", aborted);
      resolve();
    }, ms);
    signal?.addEventListener("abort", aborted, { once: true });
  });
}

async function gateOpen(workDirectory: string, name: string, signal: AbortSignal | undefined): Promise<void> {
  while (!existsSync(join(workDirectory, `gate-${name}`))) await pause(50, signal);
}
