// The approval inbox of a SQLite store (SPEC §4.3 "one owner, many
// visitors", docs/decisions/0015-sqlite-visitors.md): a visitor files a
// decision on a pending approval as a row of `approval_inbox`; the owner
// claims it and applies it through its normal resume path, then marks it
// applied or refused. The row's life is the PostgreSQL inbox's
// (docs/decisions/0011), with the owner's instance token in place of a lease
// epoch — one process owns a SQLite store, so a claim left by any other
// instance was left by a closed or dead owner:
//
//   filed ──claim (owner token)──▶ claimed ──▶ applied | refused
//                                   │  ▲
//                                   └──┘ claimed again by a later owner
//
// Rules kept here:
// * Filing reads the execution row and inserts in one IMMEDIATE
//   transaction: refused at once, nothing written, when the execution is
//   missing, another agent's, not suspended, or waits on another approval
//   id; one unsettled decision per approval (a unique partial index).
// * These functions write `approval_inbox` only, never `executions`,
//   `steps`, `journal` or `agents`: executions change only through the
//   owner's store operations (`operations.ts`).
// * Each function is one statement or one transaction; SQL texts are fixed
//   (the connection caches statements by text).

import { ApprovalMismatchError, InvalidInputError } from "../../errors.js";
import {
  approvalDecidedOf,
  decisionProgressOf,
  type ApprovalDecided,
  type ClaimedDecision,
  type DecisionFiling,
  type DecisionProgress,
  type DecisionSettlement,
  type FiledDecision,
} from "../inbox-records.js";
import type { Json } from "../records.js";
import type { SqliteConnection } from "./driver.js";
import { stepPayloadsOfKind } from "./timeline.js";
import { checkCancelFiling, inboxKindMigration, type DecisionKind } from "../cancel-filing.js";
import { checkRetryable, inboxKinds } from "../retry-filing.js";

/** Decisions one claim takes at most (the PostgreSQL inbox's bound, for the
 * same reason: an agent rarely has more than one; the drain claims again). */
export const claimBatchMax = 32;

/** Decision ids one progress read names at most (the runtime's bound on
 * waits is the same number). */
export const decisionReadMax = 1_000;

/** Agents one poll wakes at most. A wake of an agent the owner does not
 * define is a no-op; past this bound the rest are found on the next change. */
export const agentsPolledMax = 1_000;

/** The inbox's columns as migration 2 made them (migration 6 adds `kind`
 * to a rebuilt table: these texts are history, never edited). */
const inboxColumns = `
      decision_id        TEXT PRIMARY KEY NOT NULL,
      execution_id       TEXT NOT NULL,
      agent_id           TEXT NOT NULL,
      approval_id        TEXT NOT NULL,
      approved           INTEGER NOT NULL CHECK (approved IN (0, 1)),
      reason             TEXT,
      execution_revision INTEGER NOT NULL,
      filed_by           TEXT NOT NULL,
      filed_at           INTEGER NOT NULL,
      state              TEXT NOT NULL CHECK (state IN ('filed', 'claimed', 'applied', 'refused')),
      claimed_by         TEXT,
      claims             INTEGER NOT NULL DEFAULT 0,
      error              TEXT,
      settled_at         INTEGER`;

const inboxIndexes = `
    CREATE INDEX approval_inbox_unsettled ON approval_inbox (agent_id, filed_at) WHERE state IN ('filed', 'claimed');
    CREATE UNIQUE INDEX approval_inbox_one_per_approval ON approval_inbox (execution_id, approval_id) WHERE state IN ('filed', 'claimed');`;

/** Migration 2: the inbox table. */
export function createApprovalInbox(connection: SqliteConnection): void {
  connection.exec(`CREATE TABLE approval_inbox (${inboxColumns}\n    );${inboxIndexes}`);
}

/** Migration 3: the decision kind (`cancel`, docs/decisions/0026). */
export function addDecisionKind(connection: SqliteConnection): void {
  connection.exec(inboxKindMigration);
}

/** Migration 6: the `retry` kind (docs/decisions/0026). SQLite cannot
 * alter a column's CHECK, so the table is rebuilt (within the migration's
 * transaction: every row kept, indexes made again, the pruning index of
 * migration 3 too). */
export function addRetryKind(connection: SqliteConnection): void {
  const columns =
    "decision_id, execution_id, agent_id, approval_id, approved, reason, execution_revision, filed_by, filed_at, state, claimed_by, claims, error, settled_at, kind";
  connection.exec(`
    CREATE TABLE approval_inbox_next (${inboxColumns},
      kind               TEXT NOT NULL DEFAULT 'approval' CHECK (kind IN (${inboxKinds}))
    );
    INSERT INTO approval_inbox_next (${columns}) SELECT ${columns} FROM approval_inbox;
    DROP TABLE approval_inbox;
    ALTER TABLE approval_inbox_next RENAME TO approval_inbox;${inboxIndexes}
    CREATE INDEX approval_inbox_by_execution ON approval_inbox (execution_id);
  `);
}

/** Migration 7 (decision 0075): a decision's answer beyond approve or
 * decline — edited arguments, a response, a typed wait's value — and who
 * decided, as JSON text; NULL for a plain decision and for older rows. */
export function addDecisionAction(connection: SqliteConnection): void {
  connection.exec("ALTER TABLE approval_inbox ADD COLUMN action TEXT");
}

// -- filing (a visitor's inbox connection, or the owner's) -------------------------------

/** Files a decision, or refuses it (nothing written) with
 * `InvalidInputError` (no such execution) or `ApprovalMismatchError`
 * (`details.mismatch`: agent, not_suspended, approval_id, already_filed). */
export function fileDecision(connection: SqliteConnection, filing: DecisionFiling): FiledDecision {
  connection.exec("BEGIN IMMEDIATE");
  try {
    const filed = checkAndInsert(connection, filing);
    connection.exec("COMMIT");
    return filed;
  } catch (error) {
    connection.exec("ROLLBACK");
    throw error;
  }
}

function checkAndInsert(connection: SqliteConnection, filing: DecisionFiling): FiledDecision {
  if (filing.kind === "cancel") return insertCancel(connection, filing);
  if (filing.kind === "retry") return insertRetry(connection, filing);
  const { executionId, agentId, approvalId } = filing;
  const where = connection.path;
  const row = connection.prepare("SELECT agent_id, status, revision, approval_request FROM executions WHERE execution_id = ?").get(executionId);
  const context = { executionId, agentId };
  if (row === undefined) throw new InvalidInputError(`no execution ${executionId} in the store at ${where}; nothing was filed in the approval inbox`, context);
  const storedAgentId = String(row["agent_id"]);
  if (storedAgentId !== agentId) {
    throw new ApprovalMismatchError(
      `execution ${executionId} belongs to agent "${storedAgentId}", not "${agentId}"; resume it through its own agent (nothing was filed)`,
      { ...context, details: { mismatch: "agent", storedAgentId } },
    );
  }
  const status = String(row["status"]);
  if (status !== "suspended") {
    throw new ApprovalMismatchError(
      `execution ${executionId} is not suspended for approval (its status is ${status}: already decided, or never suspended); nothing was filed`,
      { ...context, details: { mismatch: "not_suspended", status } },
    );
  }
  const request = JSON.parse(String(row["approval_request"])) as Json;
  const pending = pendingApprovalId(request);
  // Only its child's end resumes a child's wait, and that is filed by the
  // child's terminal commit, not here (decision 0079).
  if ((request as { kind?: unknown } | null)?.kind === "child") {
    throw new ApprovalMismatchError(
      `wait ${approvalId} of execution ${executionId} waits for its child execution: only that child's end resumes it (cancel the parent to stop both); nothing was filed`,
      { ...context, details: { mismatch: "wait_kind", approvalId, waitKind: "child" } },
    );
  }
  if (pending !== approvalId) {
    throw new ApprovalMismatchError(
      `approval ${approvalId} is not the pending approval of execution ${executionId} (that is ${pending ?? "none"}); nothing was filed`,
      { ...context, details: { mismatch: "approval_id", approvalId, storedApprovalId: pending ?? null } },
    );
  }
  const earlier = connection
    .prepare("SELECT decision_id, filed_by FROM approval_inbox WHERE execution_id = ? AND approval_id = ? AND state IN ('filed', 'claimed')")
    .get(executionId, approvalId);
  if (earlier !== undefined) {
    throw new ApprovalMismatchError(
      `approval ${approvalId} of execution ${executionId} already has a decision in the approval inbox (${String(earlier["decision_id"])}, filed by ${String(earlier["filed_by"])}) that its owner has not applied yet; nothing else was filed — wait for that one`,
      { ...context, details: { mismatch: "already_filed", approvalId, decisionId: String(earlier["decision_id"]), filedBy: String(earlier["filed_by"]) } },
    );
  }
  const revision = Number(row["revision"]);
  connection
    .prepare(`
    INSERT INTO approval_inbox (decision_id, execution_id, agent_id, approval_id, approved, reason, execution_revision, filed_by, filed_at, state, action)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'filed', ?)
  `)
    .run(
      filing.decisionId,
      executionId,
      agentId,
      approvalId,
      filing.approved ? 1 : 0,
      filing.reason,
      revision,
      filing.filedBy,
      filing.filedAt,
      filing.action === undefined ? null : JSON.stringify(filing.action),
    );
  return { decisionId: filing.decisionId, executionRevision: revision };
}

/** A cancel by id (docs/decisions/0026): filed for an execution that has not ended. */
function insertCancel(connection: SqliteConnection, filing: DecisionFiling): FiledDecision {
  const { executionId } = filing;
  const row = connection.prepare("SELECT agent_id, status, revision, outcome, error FROM executions WHERE execution_id = ?").get(executionId);
  const checked = checkCancelFiling(
    executionId,
    row && {
      agentId: String(row["agent_id"]),
      status: String(row["status"]),
      revision: Number(row["revision"]),
      outcome: row["outcome"] === null ? null : String(row["outcome"]),
      error: JSON.parse(String(row["error"])),
    },
    connection.path,
  );
  connection
    .prepare(`
    INSERT INTO approval_inbox (decision_id, execution_id, agent_id, approval_id, approved, reason, execution_revision, filed_by, filed_at, state, kind)
    VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, 'filed', 'cancel')
  `)
    .run(filing.decisionId, executionId, checked.agentId, filing.approvalId, filing.reason, checked.revision, filing.filedBy, filing.filedAt);
  return { decisionId: filing.decisionId, executionRevision: checked.revision };
}

/** A retry by id: filed for an execution that ended failed. */
function insertRetry(connection: SqliteConnection, filing: DecisionFiling): FiledDecision {
  const { executionId } = filing;
  const row = connection.prepare("SELECT agent_id, status, phase, outcome, revision FROM executions WHERE execution_id = ?").get(executionId);
  const checked = checkRetryable(
    executionId,
    row && {
      executionId,
      agentId: String(row["agent_id"]),
      status: String(row["status"]),
      phase: String(row["phase"]),
      outcome: row["outcome"] === null ? null : String(row["outcome"]),
      revision: Number(row["revision"]),
    },
    connection.path,
    "the retry (nothing was filed in the inbox)",
  );
  connection
    .prepare(`
    INSERT INTO approval_inbox (decision_id, execution_id, agent_id, approval_id, approved, reason, execution_revision, filed_by, filed_at, state, kind)
    VALUES (?, ?, ?, ?, 0, NULL, ?, ?, ?, 'filed', 'retry')
  `)
    .run(filing.decisionId, executionId, checked.agentId, filing.approvalId, checked.revision, filing.filedBy, filing.filedAt);
  return { decisionId: filing.decisionId, executionRevision: checked.revision };
}

function pendingApprovalId(request: Json): string | undefined {
  if (typeof request !== "object" || request === null || Array.isArray(request)) return undefined;
  const id = (request as { readonly [key: string]: Json })["approvalId"];
  return typeof id === "string" ? id : undefined;
}

// -- the owner's side --------------------------------------------------------------------

/** Claims the agent's filed decisions, and those another (closed or dead)
 * owner instance claimed, oldest first, at most `claimBatchMax` — only its
 * retries with `retriesOnly` (a conversation not live here: nothing of it
 * is suspended, and a retry is what brings it back). One statement:
 * atomic. `claimedEpoch` is 0: ownership, not a lease, fences. */
export function claimDecisions(connection: SqliteConnection, agentId: string, ownerToken: string, retriesOnly = false): ClaimedDecision[] {
  const rows = connection
    .prepare(`
    UPDATE approval_inbox SET state = 'claimed', claimed_by = ?, claims = claims + 1
    WHERE decision_id IN (
      SELECT decision_id FROM approval_inbox
      WHERE agent_id = ? AND (state = 'filed' OR (state = 'claimed' AND claimed_by <> ?)) AND (? = 0 OR kind = 'retry')
      ORDER BY filed_at, decision_id LIMIT ?)
    RETURNING *
  `)
    .all(ownerToken, agentId, ownerToken, retriesOnly ? 1 : 0, claimBatchMax);
  return rows
    .map((row) => ({
      decisionId: String(row["decision_id"]),
      executionId: String(row["execution_id"]),
      agentId: String(row["agent_id"]),
      approvalId: String(row["approval_id"]),
      approved: Number(row["approved"]) === 1,
      reason: row["reason"] === null ? null : String(row["reason"]),
      filedBy: String(row["filed_by"]),
      filedAt: Number(row["filed_at"]),
      executionRevision: Number(row["execution_revision"]),
      claimedEpoch: 0,
      claims: Number(row["claims"]),
      kind: String(row["kind"]) as DecisionKind,
      ...(typeof row["action"] === "string" ? { action: JSON.parse(row["action"]) as Json } : {}),
    }))
    .sort((a, b) => a.filedAt - b.filedAt || (a.decisionId < b.decisionId ? -1 : 1));
}

/** Marks a decision this owner instance claimed applied or refused; false
 * when the claim is not (or no longer) this instance's. */
export function settleDecision(connection: SqliteConnection, claim: ClaimedDecision, ownerToken: string, settlement: DecisionSettlement, at: number): boolean {
  const settled = connection
    .prepare(`
    UPDATE approval_inbox SET state = ?, error = ?, settled_at = ?
    WHERE decision_id = ? AND state = 'claimed' AND claimed_by = ?
  `)
    .run(settlement.applied ? "applied" : "refused", settlement.applied ? null : JSON.stringify(settlement.error), at, claim.decisionId, ownerToken);
  return settled.changes === 1;
}

/** The agents with a decision for this owner instance to claim. */
export function agentsWithDecisions(connection: SqliteConnection, ownerToken: string): string[] {
  const rows = connection
    .prepare(`
    SELECT DISTINCT agent_id FROM approval_inbox
    WHERE state = 'filed' OR (state = 'claimed' AND claimed_by <> ?) LIMIT ?
  `)
    .all(ownerToken, agentsPolledMax);
  return rows.map((row) => String(row["agent_id"]));
}

/** The decision an `approval_decided` step recorded for this approval, if
 * one did: how a later owner tells whether a former owner's claim landed. */
export function approvalDecided(connection: SqliteConnection, executionId: string, approvalId: string): ApprovalDecided | undefined {
  for (const payload of stepPayloadsOfKind(connection, executionId, "approval_decided")) {
    const decided = approvalDecidedOf(payload, approvalId);
    if (decided !== undefined) return decided;
  }
  return undefined;
}

// -- the filer's side ----------------------------------------------------------------------

/** Where each decision is, with its execution as it is now (one statement). */
export function readDecisions(connection: SqliteConnection, decisionIds: readonly string[]): DecisionProgress[] {
  if (decisionIds.length === 0) return [];
  if (decisionIds.length > decisionReadMax)
    throw new InvalidInputError(`at most ${decisionReadMax} inbox decisions are read at once, got ${decisionIds.length}`);
  const rows = connection
    .prepare(`
    SELECT executions.*, inbox.decision_id, inbox.execution_id AS decision_execution_id, inbox.agent_id AS decision_agent_id,
           inbox.state AS decision_state, inbox.error AS decision_error, inbox.execution_revision AS decision_revision
    FROM approval_inbox AS inbox LEFT JOIN executions ON executions.execution_id = inbox.execution_id
    WHERE inbox.decision_id IN (SELECT value FROM json_each(?))
  `)
    .all(JSON.stringify(decisionIds));
  return rows.map((row) => decisionProgressOf(row, connection.path));
}
