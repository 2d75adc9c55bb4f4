// The records of the approval inbox both stores keep (decisions 0011,
// 0015, 0026): what is filed, claimed and read back. Kept apart from the
// stores' SQL so that the runtime's types, and the package's public ones,
// name no driver (issue 17: a strict consumer compiles without `pg`).

import type { DecisionKind } from "./cancel-filing.js";
import type { TransferredError } from "./error-transfer.js";
import type { FiledStart } from "./start-filing.js";
import type { ExecutionRow, Json } from "./records.js";
import type { SqliteRow } from "./sqlite/driver.js";
import { executionFromRow } from "./sqlite/rows.js";

export type DecisionState = "filed" | "claimed" | "applied" | "refused";

export interface DecisionFiling {
  /** A fresh UUID per filing. */
  readonly decisionId: string;
  /** `approval` (default) or `cancel` (docs/decisions/0026: `approvalId`
   * is then `cancel:<decisionId>`, `approved` false). */
  readonly kind?: DecisionKind;
  readonly executionId: string;
  readonly agentId: string;
  readonly approvalId: string;
  readonly approved: boolean;
  readonly reason: string | null;
  /** An answer beyond approve/decline and who decided (`{ given: { kind,
   * callId, payload }, decidedBy }`, decision 0075), checked by the owner. */
  readonly action?: Json;
  /** The filing process's lease owner name. */
  readonly filedBy: string;
  readonly filedAt: number;
}

export interface FiledDecision {
  readonly decisionId: string;
  /** The suspended revision the decision was filed against. */
  readonly executionRevision: number;
}

/** Decisions one claim statement takes at most, on either store. An agent
 * admits one execution at a time, so it rarely has more than one; the
 * bound keeps a flooded inbox from turning one claim into one huge
 * transaction (a full batch is followed by another claim at once). */
export const claimBatchMax = 32;

export interface ClaimedDecision extends DecisionFiling {
  readonly executionRevision: number;
  readonly claimedEpoch: number;
  /** How many times it was claimed; more than 1: a former owner claimed it
   * and died (or lost the agent) before settling it. */
  readonly claims: number;
  /** A filed start's input and options (kind `start`, docs/decisions/0031). */
  readonly start?: FiledStart;
}

export interface DecisionProgress {
  readonly decisionId: string;
  readonly executionId: string;
  readonly agentId: string;
  readonly state: DecisionState;
  readonly executionRevision: number;
  /** Why the owner refused it (state `refused`). */
  readonly error: TransferredError | undefined;
  /** The execution row as it is now (undefined: purged). */
  readonly execution: ExecutionRow | undefined;
}

/** What an `approval_decided` step recorded of a decision: approved or
 * not, and the inbox decision it applied (`filedAs`, when a claim did). */
export interface ApprovalDecided {
  readonly approved: boolean;
  readonly filedAs?: string;
}

/** The decision a step's payload records for this approval, if it does. */
export function approvalDecidedOf(payload: string, approvalId: string): ApprovalDecided | undefined {
  const decided = JSON.parse(payload) as { approvalId?: unknown; approved?: unknown; filedAs?: unknown };
  if (decided.approvalId !== approvalId || typeof decided.approved !== "boolean") return undefined;
  return { approved: decided.approved, ...(typeof decided.filedAs === "string" ? { filedAs: decided.filedAs } : {}) };
}

export type DecisionSettlement = { readonly applied: true } | { readonly applied: false; readonly error: TransferredError };

/** A decision and its execution as read back, from a row of the inbox
 * joined with executions (columns as both stores select them). */
export function decisionProgressOf(row: SqliteRow, where: string): DecisionProgress {
  return {
    decisionId: String(row["decision_id"]),
    executionId: String(row["decision_execution_id"]),
    agentId: String(row["decision_agent_id"]),
    state: String(row["decision_state"]) as DecisionState,
    executionRevision: Number(row["decision_revision"]),
    error: row["decision_error"] === null ? undefined : (JSON.parse(String(row["decision_error"])) as TransferredError),
    execution: row["execution_id"] === null ? undefined : executionFromRow(row, where),
  };
}
