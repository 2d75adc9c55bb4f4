// Rebuilding a session's conversation from what the store holds, for a
// resumed approval and for recovery: the execution's input, then every
// model response and tool result in the order the barriers recorded them.
// Results ride on the next barrier, so what a crash lost is exactly what
// recovery repeats: an unrecorded model call is made again under a new
// barrier; an unrecorded tool batch is re-dispatched with the same ids.

import type { ConversationMessage, ReasoningPart, ToolCall, ToolResult } from "../agent/messages.js";
import type { ExecutionRow, StoredStep } from "../store/records.js";
import type { ExecutionStore } from "../store/store.js";

/** The conversation after the input message, as recorded. */
export function historyOf(steps: readonly StoredStep[]): ConversationMessage[] {
  const history: ConversationMessage[] = [];
  const discarded = discardedByRetries(steps);
  for (const step of steps) {
    if (discarded(step.seq)) continue;
    const payload = step.payload as Record<string, unknown> | null;
    if (step.kind === "model_response" && payload) {
      const reasoning = Array.isArray(payload["reasoning"]) ? { reasoning: payload["reasoning"] as ReasoningPart[] } : {};
      history.push({ role: "assistant", text: String(payload["text"] ?? ""), toolCalls: (payload["toolCalls"] ?? []) as ToolCall[], ...reasoning });
    } else if (step.kind === "tool_results" && payload) {
      history.push({ role: "tool", results: (payload["results"] ?? []) as ToolResult[] });
    } else if (step.kind === "approval_decided" && payload) {
      editCall(history, payload["action"]);
    }
  }
  return history;
}

/** Approved with edited arguments (decision 0075): the model is shown the
 * call as it ran, with the edited input, from then on. */
function editCall(history: ConversationMessage[], action: unknown): void {
  const edit = action as { kind?: unknown; callId?: unknown; value?: unknown } | null | undefined;
  if (edit?.kind !== "edit") return;
  for (let index = history.length - 1; index >= 0; index -= 1) {
    const message = history[index]!;
    if (message.role !== "assistant" || !message.toolCalls.some((call) => call.callId === edit.callId)) continue;
    const toolCalls = message.toolCalls.map((call) => (call.callId === edit.callId ? { ...call, input: edit.value as ToolCall["input"] } : call));
    history[index] = { ...message, toolCalls };
    return;
  }
}

/** A retry (docs/decisions/0026) continues from a durable point of the
 * earlier attempt (`resumeFromSeq` of its `retried` step): what that
 * attempt recorded after it — a model answer the failure came after — is
 * not part of the conversation the next attempt continues. */
function discardedByRetries(steps: readonly StoredStep[]): (seq: number) => boolean {
  const ranges: [number, number][] = [];
  for (const step of steps) {
    const from = step.kind === "retried" ? (step.payload as { resumeFromSeq?: unknown } | null)?.resumeFromSeq : undefined;
    if (typeof from === "number") ranges.push([from, step.seq]);
  }
  return (seq) => ranges.some(([from, to]) => seq > from && seq < to);
}

export async function readHistory(store: ExecutionStore, executionId: string): Promise<ConversationMessage[]> {
  return historyOf(await store.listSteps(executionId));
}

/** The conversation after the input, and the records it was rebuilt from
 * (those a retry discarded left out): a session whose definition reads
 * its steps rebuilds them from the same records (agent-steps.ts). */
export async function readRecorded(store: ExecutionStore, executionId: string): Promise<{ history: ConversationMessage[]; records: StoredStep[] }> {
  const steps = await store.listSteps(executionId);
  const discarded = discardedByRetries(steps);
  return { history: historyOf(steps), records: steps.filter((step) => !discarded(step.seq)) };
}

/** The input as persisted (after the input guardrail). */
export function inputOf(row: ExecutionRow): string {
  return typeof row.input === "string" ? row.input : JSON.stringify(row.input);
}
