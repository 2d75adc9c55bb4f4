// A conversation's memory as the AI SDK's UI messages (`UIMessage`), what a
// chat page loads with `useChat({ messages })`: the journal — each
// execution's input and, once it completed, its answer — is the
// conversation's memory and outlives the executions themselves (retention
// keeps the newest records of every conversation, store/prune.ts), so a
// page shows what the agent remembers even after its executions are gone.
// An assistant message's id is its execution's id, as a streamed answer's
// is (its `start` chunk), so a page that loads the history and then
// resumes the running answer sees one message, not two.

import type { UIMessage } from "ai";
import type { JournalRecord, UsageTotals } from "../store/records.js";

/** What each history message carries as metadata. An answer rebuilt
 * from its stored timeline (chat/history.ts) carries what its chat
 * stream's `finish` did too (`ChatMessageMetadata`): an approval loaded
 * from the history is answered as one streamed live. */
export interface HistoryMetadata {
  /** The execution the message belongs to. */
  readonly executionId: string;
  /** When it was recorded (ms since the epoch). */
  readonly at: number;
  /** An answer's stream position at its end, to continue after it. */
  readonly resumeAt?: string;
  /** An answer's outcome: `completed`, `failed`, `suspended`, … */
  readonly outcome?: string;
  /** The tokens an answer used, with the provider's details. */
  readonly usage?: UsageTotals;
}

/** The journal's user and assistant records, oldest first, as UI messages. */
export function uiMessagesOf(records: readonly JournalRecord[]): UIMessage<HistoryMetadata>[] {
  const messages: UIMessage<HistoryMetadata>[] = [];
  for (const record of records) {
    if (record.role === "tool") continue;
    const text = typeof record.content === "string" ? record.content : JSON.stringify(record.content);
    messages.push({
      id: record.role === "assistant" ? record.executionId : `${record.executionId}:user`,
      role: record.role,
      parts: [{ type: "text", text }],
      metadata: { executionId: record.executionId, at: record.at },
    });
  }
  return messages;
}
