// A conversation's history as the AI SDK's UI messages with every part a
// chat page showed (docs/decisions/0073): an answer whose execution is
// still stored is rebuilt from its timeline — the very chunks its chat
// stream sends (timeline-chunks.ts), read by the AI SDK's own
// `readUIMessageStream` — so reasoning, tool parts in their states
// (output, error, denied, waiting for approval), sources and files come
// back as `useChat` built them, with the stream's message metadata; a
// user message comes back under the client's id with its attachments
// (user-turns.ts). An answer whose execution retention pruned keeps the
// text its memory holds (journal-messages.ts; decision 0081 says why).
//
// Rules kept here: the steps are read before the row, so a row that says
// ended never comes with a timeline missing its end (they commit
// together; a row read later is at least as new); one read of each per
// answer in the window.

import type { UIMessage, UIMessageChunk } from "ai";
import { loadAiSdk } from "../agent/ai-sdk.js";
import { uiMessagesOf, type HistoryMetadata } from "../runtime/journal-messages.js";
import type { ExecutionRow, JournalRecord, StoredStep } from "../store/records.js";
import { endsStream, finishChunkOf, startChunkOf } from "./chat-stream.js";
import { TimelineTranslator } from "./timeline-chunks.js";
import { userMessageOf } from "./user-turns.js";

/** What the history reads of its store. */
export interface HistoryReader {
  execution(executionId: string): Promise<ExecutionRow | undefined>;
  timeline(executionId: string): Promise<readonly StoredStep[]>;
}

/** The journal's records as UI messages, each answer rebuilt from its
 * timeline when its execution is still stored. */
export async function chatHistory(records: readonly JournalRecord[], reader: HistoryReader): Promise<UIMessage<HistoryMetadata>[]> {
  const messages = uiMessagesOf(records);
  const executionIds = [...new Set(records.filter((record) => record.role !== "tool").map((record) => record.executionId))];
  const answers = await Promise.all(executionIds.map((executionId) => answerOf(executionId, reader)));
  const history: UIMessage<HistoryMetadata>[] = [];
  for (const [index, executionId] of executionIds.entries()) {
    const own = messages.filter((message) => message.metadata?.executionId === executionId);
    const { message: rebuilt, row } = answers[index]!;
    const remembered = own.find((message) => message.role === "assistant");
    history.push(...own.filter((message) => message.role === "user").map((message) => userMessageOf(message, row)));
    if (rebuilt !== undefined) {
      history.push({ ...rebuilt, metadata: { ...rebuilt.metadata!, at: remembered?.metadata?.at ?? rebuilt.metadata!.at } });
    } else if (remembered !== undefined) history.push(remembered);
  }
  return history;
}

/** The execution's row (its user message's id and attachments) and its
 * answer as its chat stream builds it — no answer when the execution is
 * gone, still queued, or has nothing to show yet. */
async function answerOf(executionId: string, reader: HistoryReader): Promise<{ message?: UIMessage<HistoryMetadata>; row?: ExecutionRow }> {
  const steps = await reader.timeline(executionId);
  const row = await reader.execution(executionId);
  if (row === undefined) return {};
  return { row, ...(steps.some((step) => step.seq > 0) ? { message: await rebuiltAnswerOf(row, steps) } : {}) };
}

async function rebuiltAnswerOf(row: ExecutionRow, steps: readonly StoredStep[]): Promise<UIMessage<HistoryMetadata> | undefined> {
  const { executionId } = row;
  const chunks = chunksOf(row, steps);
  const { readUIMessageStream } = await loadAiSdk();
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  let message: UIMessage | undefined;
  // An `error` chunk (a failed answer) ends nothing here: the parts before it are the answer.
  for await (const state of readUIMessageStream({ stream, onError: () => undefined })) message = state;
  if (message === undefined || message.parts.length === 0) return undefined;
  const metadata = { ...(message.metadata as object), executionId, at: row.updatedAt } as HistoryMetadata;
  return { ...message, metadata };
}

function chunksOf(row: ExecutionRow, stored: readonly StoredStep[]): UIMessageChunk[] {
  // As a stream reads them: from step 1 (a queued message's mark is step 0).
  const steps = stored.filter((step) => step.seq > 0);
  const translator = new TimelineTranslator();
  const chunks: UIMessageChunk[] = [startChunkOf(row.executionId)];
  steps.forEach((step, index) => chunks.push(...translator.translate(step, row, index === steps.length - 1, steps[index + 1]).chunks));
  if (endsStream(row)) {
    const { position: _position, ...finish } = finishChunkOf(row, steps.at(-1)!.seq);
    chunks.push(finish as UIMessageChunk);
  }
  return chunks;
}
