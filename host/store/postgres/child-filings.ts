// The approval inbox rows a PostgreSQL terminal commit files for the
// executions linked to it (host/store/child-filings.ts, docs/decisions/0079):
// the terminal commit's statement is wrapped so that its inserts run in the
// same statement, only once the compare-and-set applied — a child's end
// only while its parent still waits on that wait, a cancel only for a child
// that has not ended. Each row's id is fixed by the child's, and an insert
// that finds it already there does nothing: filed once. The owners are told
// after the commit (a hint; their inbox poll is the other path).

import { childFilingsOf, type ChildFilings } from "../child-filings.js";
import type { ExecutionMetadata, Json, TerminalCommitOperation } from "../records.js";
import { integer, text } from "./literals.js";

/** Who filed a row the store wrote itself (the filer column). */
const terminalCommitFiler = "terminal-commit";

/** The filings of this terminal commit, and the agents to tell. */
export function childFilingsOfCommit(
  metadata: ExecutionMetadata,
  operation: TerminalCommitOperation,
): { readonly filings: ChildFilings; readonly told: readonly string[] } {
  // The cancel commit of a suspended parent carries its pending request.
  const filings = childFilingsOf({ metadata, approvalRequest: operation.approvalRequest }, operation);
  const childConversation = (operation.approvalRequest as { child?: { conversationId?: unknown } } | null)?.child?.conversationId;
  const told = [
    ...(filings.parentEnd !== undefined ? [filings.parentEnd.agentId] : []),
    ...(filings.childCancel !== undefined && typeof childConversation === "string" ? [childConversation] : []),
  ];
  return { filings, told };
}

/** `commit` (a `SELECT … AS applied` statement) with the filings' inserts,
 * run only when it applied. */
export function withChildFilings(commit: string, filings: ChildFilings): string {
  const { parentEnd, childCancel } = filings;
  if (parentEnd === undefined && childCancel === undefined) return commit;
  const parts = [`committed AS (${commit})`];
  if (parentEnd !== undefined) {
    parts.push(`parent_end AS (
      INSERT INTO approval_inbox (decision_id, execution_id, agent_id, approval_id, approved, reason, execution_revision, filed_by, filed_at, state, action)
      SELECT ${text(parentEnd.decisionId)}, parent.execution_id, parent.agent_id, ${text(parentEnd.approvalId)}, true, NULL, parent.revision,
             ${text(terminalCommitFiler)}, ${integer(parentEnd.filedAt, "terminalCommit.at")}, 'filed', ${text(JSON.stringify(parentEnd.action as Json))}
      FROM committed, executions AS parent
      WHERE committed.applied::int = 1 AND parent.execution_id = ${text(parentEnd.executionId)} AND parent.status = 'suspended'
        AND (parent.approval_request::jsonb ->> 'approvalId') = ${text(parentEnd.approvalId)}
      ON CONFLICT DO NOTHING
      RETURNING 1)`);
  }
  if (childCancel !== undefined) {
    parts.push(`child_cancel AS (
      INSERT INTO approval_inbox (decision_id, execution_id, agent_id, approval_id, approved, reason, execution_revision, filed_by, filed_at, state, kind)
      SELECT ${text(childCancel.decisionId)}, child.execution_id, child.agent_id, ${text(childCancel.approvalId)}, false, ${text(childCancel.reason)}, child.revision,
             ${text(terminalCommitFiler)}, ${integer(childCancel.filedAt, "terminalCommit.at")}, 'filed', 'cancel'
      FROM committed, executions AS child
      WHERE committed.applied::int = 1 AND child.execution_id = ${text(childCancel.executionId)} AND child.status <> 'terminal'
      ON CONFLICT DO NOTHING
      RETURNING 1)`);
  }
  return `WITH ${parts.join(",\n")}\nSELECT applied FROM committed`;
}
