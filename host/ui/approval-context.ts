// What a decision card shows around a wait (docs/decisions/0083): the
// conversation's last turns (the inputs and answers of its executions
// before this one, then this one's input) and what the model said and
// reasoned before the call it waits on. Read from the store: the
// execution's timeline and its conversation's newest executions.

import type { Environment, ExecutionRow, Json, PendingApproval } from "../index.js";
import type { ApprovalContext } from "./decision-card.js";
import { definitionOf, messageText } from "./transcript.js";

/** Turns a card shows at most. */
export const contextTurnsMax = 4;

export async function approvalContextOf(environment: Environment, approval: PendingApproval): Promise<ApprovalContext> {
  const admin = environment.admin;
  const [timeline, rows] = await Promise.all([admin.timeline(approval.executionId), admin.executions({ agentId: approval.agentId, limit: contextTurnsMax })]);
  const turns: { role: "user" | "assistant"; text: string }[] = [];
  const earlier = rows.filter((row) => row.executionId !== approval.executionId && row.status === "terminal").reverse();
  for (const row of earlier) {
    turns.push({ role: "user", text: messageText(row.input) });
    if (row.output !== null) turns.push({ role: "assistant", text: typeof row.output === "string" ? row.output : JSON.stringify(row.output) });
  }
  const own = rows.find((row) => row.executionId === approval.executionId) ?? (await admin.execution(approval.executionId));
  if (own !== undefined) turns.push({ role: "user", text: messageText(own.input) });
  const response = timeline.findLast((step) => step.kind === "model_response")?.payload as { readonly [key: string]: Json } | undefined;
  const reasoning = (Array.isArray(response?.["reasoning"]) ? response["reasoning"] : [])
    .map((part) => (part as { text?: unknown } | null)?.text)
    .filter((text): text is string => typeof text === "string" && text !== "")
    .join(" ");
  const modelText = typeof response?.["text"] === "string" ? response["text"] : "";
  const definition = own === undefined ? undefined : definitionOf(own as ExecutionRow);
  return {
    turns: turns.slice(-contextTurnsMax),
    ...(definition !== undefined ? { definition } : {}),
    ...(modelText !== "" ? { modelText } : {}),
    ...(reasoning !== "" ? { reasoning } : {}),
  };
}

/** Cards on one page that read their context (two reads each, every
 * refresh); the ones after show the calls alone. */
export const contextCardsMax = 20;

/** Each approval with its context, read side by side (the first `contextCardsMax`). */
export function approvalContexts(environment: Environment, approvals: readonly PendingApproval[]): Promise<(ApprovalContext | undefined)[]> {
  return Promise.all(
    approvals.map((approval, index) =>
      index < contextCardsMax ? approvalContextOf(environment, approval).catch(() => undefined) : Promise.resolve(undefined),
    ),
  );
}
