// What a failed approval commit did, read back from its row before the
// core hears of it (docs/decisions/0057), as a failed preparation is
// (decision 0020): a `StoreError` says the commit may or may not have
// landed. The row still suspended at the revision the decision was made
// on: nothing was written (`StoreFailed`: the core gives the suspension
// back and the same decision may be sent again). The row one revision on,
// resumed on this very decision: it landed (`Committed`: the run goes on).
// Anything else, or a read that fails: not known (`RehydrationRequired`:
// held for recovery, which reads the row again).
//
// An error marked `details.outcome: "unknown"` is not read back here: the
// write may still be in flight in a session the store lost (decision 0021,
// PostgreSQL's lost backends), so a read now could miss it.

import { CommitOutcome } from "../../assembly/abi.js";
import type { ExecutionRow } from "../store/records.js";
import type { ExecutionStore } from "../store/store.js";

export interface DecisionWritten {
  readonly executionId: string;
  readonly expectedRevision: number;
  readonly approvalId: string;
  readonly approved: boolean;
  readonly reason: string | null;
}

export interface ReadBack {
  readonly outcome: CommitOutcome;
  /** The revision the decision was written at (`Committed`), else 0. */
  readonly revision: number;
}

export async function approvalCommitReadBack(store: ExecutionStore, decision: DecisionWritten): Promise<ReadBack> {
  const row = await store.getExecution(decision.executionId).catch(() => undefined);
  if (row === undefined) return { outcome: CommitOutcome.RehydrationRequired, revision: 0 };
  if (row.status === "suspended" && row.revision === decision.expectedRevision) return { outcome: CommitOutcome.StoreFailed, revision: 0 };
  if (landed(row, decision)) return { outcome: CommitOutcome.Committed, revision: row.revision };
  return { outcome: CommitOutcome.RehydrationRequired, revision: 0 };
}

/** The row holds this decision, written as the very next revision. */
function landed(row: ExecutionRow, decision: DecisionWritten): boolean {
  const approval = row.metadata.approval;
  return (
    row.revision === decision.expectedRevision + 1
    && row.status === "active"
    && row.phase === "resuming"
    && approval?.approvalId === decision.approvalId
    && approval.approved === decision.approved
    && (approval.reason ?? null) === decision.reason
  );
}
