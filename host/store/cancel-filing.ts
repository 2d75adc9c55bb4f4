// Cancels filed in the approval inbox (docs/decisions/0026): a process that
// does not run an execution (a SQLite visitor, a PostgreSQL process not
// holding the agent's lease) files `env.cancel` as a decision of kind
// `cancel`; the owner claims it and cancels the execution as a local
// `env.cancel` would. Both stores' inboxes share this check and the
// migration text.
//
// Rules kept here:
// * A cancel is filed only for an execution that has not ended (status
//   `active` or `suspended`; the lead's queue adds `queued`): an unknown id
//   is ExecutionNotFoundError, an ended one ExecutionEndedError naming its
//   outcome — nothing is written either way.
// * Cancels are idempotent, so several may be unsettled for one execution:
//   each names its own approval id (`cancel:<decisionId>`), which keeps the
//   inbox's one-unsettled-decision-per-approval index out of their way.

import { ExecutionEndedError, ExecutionNotFoundError } from "../errors.js";
import type { StoredError } from "./records.js";

export type DecisionKind = "approval" | "cancel" | "retry" | "start";

/** The execution's columns a cancel filing reads. */
export interface CancelFilingRow {
  readonly agentId: string;
  readonly status: string;
  readonly revision: number;
  readonly outcome: string | null;
  readonly error: StoredError | null;
}

/** The approval id a cancel decision is filed under. */
export function cancelApprovalId(decisionId: string): string {
  return `cancel:${decisionId}`;
}

/** How an ended execution's outcome is named: `cancelled` for a failure
 * with CANCELLED. */
export function endedOutcomeOf(outcome: string | null, error: StoredError | null): string {
  return outcome === "failed" && error?.code === "CANCELLED" ? "cancelled" : (outcome ?? "failed");
}

/** Refuses a cancel filing (nothing written) for a missing or ended execution. */
export function checkCancelFiling(executionId: string, row: CancelFilingRow | undefined, where: string): CancelFilingRow {
  if (row === undefined) throw new ExecutionNotFoundError(executionId, "the cancel (nothing was filed in the inbox)", where);
  if (row.status === "terminal") {
    throw new ExecutionEndedError(executionId, row.agentId, endedOutcomeOf(row.outcome, row.error), row.error, "the cancel (nothing was filed in the inbox)");
  }
  return row;
}

/** The migration adding the decision kind to an inbox table (SQLite
 * migration 3, PostgreSQL migration 5). */
export const inboxKindMigration = "ALTER TABLE approval_inbox ADD COLUMN kind TEXT NOT NULL DEFAULT 'approval' CHECK (kind IN ('approval', 'cancel'))";
