// The approval inbox rows a terminal commit files for the executions linked
// to it (host/store/child-filings.ts, docs/decisions/0079), written in the
// terminal commit's own transaction. A child's end is filed only while its
// parent still waits for it (suspended on that wait); a cancel only for a
// child that has not ended. Each row's id is fixed by the child's, and an
// insert that finds it already there does nothing: filed once.

import { childFilingsOf } from "../child-filings.js";
import type { ExecutionMetadata, Json, TerminalCommitOperation } from "../records.js";
import type { SqliteConnection } from "./driver.js";

/** Who filed a row the store wrote itself (the filer column). */
export const terminalCommitFiler = "terminal-commit";

/** Files what the terminal commit owes its parent and child; the agents
 * whose inbox got a row (for the owner to be told at once). */
export function fileChildRows(
  connection: SqliteConnection,
  current: { readonly metadata: ExecutionMetadata; readonly approvalRequest: Json },
  operation: TerminalCommitOperation,
): string[] {
  const { parentEnd, childCancel } = childFilingsOf(current, operation);
  const woken: string[] = [];
  if (parentEnd !== undefined) {
    const parent = connection.prepare("SELECT status, revision, approval_request FROM executions WHERE execution_id = ?").get(parentEnd.executionId);
    const waiting =
      parent !== undefined && String(parent["status"]) === "suspended" && approvalIdOf(String(parent["approval_request"])) === parentEnd.approvalId;
    if (waiting) {
      connection
        .prepare(`
        INSERT INTO approval_inbox (decision_id, execution_id, agent_id, approval_id, approved, reason, execution_revision, filed_by, filed_at, state, action)
        VALUES (?, ?, ?, ?, 1, NULL, ?, ?, ?, 'filed', ?) ON CONFLICT DO NOTHING
      `)
        .run(
          parentEnd.decisionId,
          parentEnd.executionId,
          parentEnd.agentId,
          parentEnd.approvalId,
          Number(parent["revision"]),
          terminalCommitFiler,
          parentEnd.filedAt,
          JSON.stringify(parentEnd.action),
        );
      woken.push(parentEnd.agentId);
    }
  }
  if (childCancel !== undefined) {
    const child = connection.prepare("SELECT agent_id, status, revision FROM executions WHERE execution_id = ?").get(childCancel.executionId);
    if (child !== undefined && String(child["status"]) !== "terminal") {
      connection
        .prepare(`
        INSERT INTO approval_inbox (decision_id, execution_id, agent_id, approval_id, approved, reason, execution_revision, filed_by, filed_at, state, kind)
        VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, 'filed', 'cancel') ON CONFLICT DO NOTHING
      `)
        .run(
          childCancel.decisionId,
          childCancel.executionId,
          String(child["agent_id"]),
          childCancel.approvalId,
          childCancel.reason,
          Number(child["revision"]),
          terminalCommitFiler,
          childCancel.filedAt,
        );
      woken.push(String(child["agent_id"]));
    }
  }
  return woken;
}

function approvalIdOf(text: string): string | undefined {
  const request = JSON.parse(text) as { approvalId?: unknown } | null;
  return typeof request?.approvalId === "string" ? request.approvalId : undefined;
}
