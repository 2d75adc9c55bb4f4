// What the last assistant message of a chat request answers, as the
// decision `agent.resume` takes (docs/decisions/0075, 0080). `useChat`
// answers in two ways, both leaving the answer in the message it sends:
//
//   addToolApprovalResponse({ id, approved, reason? })
//       the tool part turns `approval-responded`: the approval is decided,
//       with the person's reason (approved or declined)
//   addToolOutput({ toolCallId, output })
//       the tool part turns `output-available`: for a call a typed wait
//       asks about (a `data-wait` part names it), the output is the wait's
//       value; for a call of a pending approval, it is the response in
//       place of the tool (the call does not run, the others run approved)
//
// The AI SDK's approval response carries no edited arguments, so a chat
// page cannot approve with edits: the CLI, the dashboard and
// `agent.resume` can. Here only the shape is read; the value is checked
// against its schema by the runtime, which refuses it with INVALID_INPUT
// and leaves the wait pending.

import { PhronomyError } from "../errors.js";
import type { ResumeDecision } from "../runtime/options.js";
import type { ExecutionRow } from "../store/records.js";
import { approvalIdOf } from "./timeline-chunks.js";

/** A part of a chat request's message, as far as an answer reads it. */
export interface AnsweringPart {
  readonly type: string;
  readonly state?: unknown;
  readonly approval?: unknown;
  readonly toolCallId?: unknown;
  readonly output?: unknown;
  readonly errorText?: unknown;
  readonly data?: unknown;
}

/** The wait a message answers, as `agent.resume` takes it (no listener). */
export type ChatAnswer = Omit<ResumeDecision, "onEvent" | "signal">;

/** The decision the message's parts give, for the execution's pending
 * request (its row's `approvalRequest`, null when it waits for nothing).
 * INVALID_INPUT when the parts answer nothing. */
export function answerOf(parts: readonly AnsweringPart[], row: ExecutionRow | undefined): ChatAnswer {
  const typed = typedWaitAnswer(parts);
  if (typed !== undefined) return typed;
  const responses = parts.filter((part) => part.state === "approval-responded" && isRecord(part.approval) && typeof part.approval.id === "string");
  const request = pendingRequestOf(row);
  const responded = request === undefined ? [] : parts.filter((part) => part.state === "output-available" && request.callIds.includes(String(part.toolCallId)));
  if (responded.length > 0) return respondedAnswer(request!.approvalId, responded);
  if (responses.length === 0) {
    throw new PhronomyError("INVALID_INPUT", "the last message is the assistant's without approval responses or an answer to a wait (addToolOutput)");
  }
  const approvals = responses.map((part) => part.approval as { id: string; approved?: unknown; reason?: unknown });
  const declined = approvals.find((approval) => approval.approved !== true);
  // The person's words go with the decision either way: told to the model
  // when declined, recorded when approved.
  const reason = (declined ?? approvals.find((approval) => typeof approval.reason === "string"))?.reason;
  return {
    approvalId: approvalIdOf(approvals[0]!.id),
    approved: declined === undefined,
    ...(typeof reason === "string" ? { reason } : {}),
  };
}

/** A typed wait's value: the output the client added to the call a
 * `data-wait` part names. */
function typedWaitAnswer(parts: readonly AnsweringPart[]): ChatAnswer | undefined {
  for (const wait of parts.filter((part) => part.type === "data-wait" && isRecord(part.data))) {
    const { waitId, toolCallId } = wait.data as { waitId?: unknown; toolCallId?: unknown };
    if (typeof waitId !== "string" || typeof toolCallId !== "string") continue;
    const call = parts.find((part) => part.toolCallId === toolCallId && typeof part.type === "string" && part.type !== "data-wait");
    if (call?.state === "output-error") {
      throw new PhronomyError(
        "INVALID_INPUT",
        `wait ${waitId} (call ${toolCallId}) is answered with a value: give it with addToolOutput({ toolCallId, output }), not an error; to drop it, stop the chat or send a new message`,
        { details: { waitId, callId: toolCallId } },
      );
    }
    if (call?.state !== "output-available") continue;
    if (call.output === undefined) {
      throw new PhronomyError("INVALID_INPUT", `the answer to wait ${waitId} (call ${toolCallId}) has no output`, { details: { waitId, callId: toolCallId } });
    }
    return { waitId, value: call.output, callId: toolCallId };
  }
  return undefined;
}

/** A response in place of the tool, for one call of the pending approval. */
function respondedAnswer(approvalId: string, responded: readonly AnsweringPart[]): ChatAnswer {
  if (responded.length > 1) {
    throw new PhronomyError(
      "INVALID_INPUT",
      `approval ${approvalId}: ${responded.length} calls were answered in place of their tools; answer one (the others are approved or declined)`,
      { details: { approvalId } },
    );
  }
  const [part] = responded;
  return { approvalId, respond: part!.output ?? null, callId: String(part!.toolCallId) };
}

/** The pending approval's id and calls, from the row (kind approval only). */
function pendingRequestOf(row: ExecutionRow | undefined): { approvalId: string; callIds: string[] } | undefined {
  if (row?.status !== "suspended" || !isRecord(row.approvalRequest)) return undefined;
  const request = row.approvalRequest as { approvalId?: unknown; kind?: unknown; toolCalls?: unknown };
  if (typeof request.approvalId !== "string" || request.kind === "input" || !Array.isArray(request.toolCalls)) return undefined;
  return { approvalId: request.approvalId, callIds: request.toolCalls.map((call) => String((call as { callId?: unknown }).callId)) };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
