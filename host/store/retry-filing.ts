// Retries filed in the approval inbox (issue 12, docs/decisions/0026): a
// process that does not run an execution's conversation — a SQLite
// visitor, a PostgreSQL process while another holds the agent — files
// `env.retry` as a decision of kind `retry`; the owner claims it and
// retries the execution as a local `env.retry` would. Both stores' inboxes
// share this check and the migration's kinds.
//
// Rules kept here:
// * Only an execution that ended failed (an error, a timeout, a cancel) is
//   retried: an unknown id is ExecutionNotFoundError, one that has not
//   ended or did not fail RetryRefusedError naming why — nothing is written
//   either way, in the filer and in the owner alike (`checkRetryable`).
// * A retry is filed under its own approval id (`retry:<decisionId>`), as
//   a cancel is, out of the way of the one-decision-per-approval index.
// * The filing records the ended row's revision: a retry claimed again
//   (its first owner died) is applied only if the row is still at that
//   revision — a row past it was reopened by the first claim.

import { ExecutionNotFoundError, RetryRefusedError } from "../errors.js";

/** The execution's columns a retry reads. */
export interface RetryableRow {
  readonly executionId: string;
  readonly agentId: string;
  readonly status: string;
  readonly phase: string;
  readonly outcome: string | null;
  readonly revision: number;
}

/** The approval id a retry decision is filed under. */
export function retryApprovalId(decisionId: string): string {
  return `retry:${decisionId}`;
}

/** Refuses a retry of a missing execution, one that has not ended, or one
 * that ended other than failed; `what` names the refused act. */
export function checkRetryable<Row extends RetryableRow>(executionId: string, row: Row | undefined, where: string, what = "the retry"): Row {
  if (row === undefined) throw new ExecutionNotFoundError(executionId, what, where);
  const context = { executionId, agentId: row.agentId };
  if (row.status !== "terminal") {
    const reason = row.status === "suspended" ? "suspended" : row.status === "queued" ? "queued" : "running";
    throw new RetryRefusedError(
      `execution ${executionId} has not ended (status ${row.status}, phase ${row.phase}); only a failed, timed-out or cancelled execution is retried`,
      { ...context, reason },
    );
  }
  if (row.outcome !== "failed") {
    throw new RetryRefusedError(
      `execution ${executionId} ended ${row.outcome ?? "without an outcome"}, not failed; only a failed, timed-out or cancelled execution is retried (start a new one to run it again)`,
      { ...context, reason: row.outcome === "completed" ? "completed" : (row.outcome ?? "unknown") },
    );
  }
  return row;
}

/** The decision kinds an inbox row may hold, as its CHECK lists them. */
export const inboxKinds = "'approval', 'cancel', 'retry'";
