// The approval inbox on PostgreSQL (issue 7,
// docs/decisions/0011-approval-inbox.md): a decision on a pending approval,
// filed by a process that does not own the agent, waits in `approval_inbox`
// until the agent's owner claims it and applies it through its normal
// resume path.
//
// A decision's life, one row:
//
//   filed ──claim (owner, epoch)──▶ claimed ──▶ applied | refused
//                                    │  ▲
//                                    └──┘ re-claimed by a later owner (higher epoch)
//
// Rules kept here:
// * Filing reads the execution row first and refuses at once, writing
//   nothing, when the execution is missing, belongs to another agent, is not
//   suspended, or waits on another approval id; one unsettled decision per
//   approval (a unique partial index), so a second filing is refused too.
// * The insert and its `pg_notify` are one statement: the notification goes
//   out when (and only if) the decision is committed.
// * Claiming is one fenced statement (`UPDATE … WHERE state = 'filed' …
//   FOR UPDATE SKIP LOCKED … RETURNING`): only the process holding the
//   agent's live lease claims, and each decision is claimed once per lease
//   epoch. A claim left behind by a dead owner (older epoch) is claimed
//   again by the next owner, which first looks for the former owner's
//   `approval_decided` step: the execution row's compare-and-set and the
//   lease fencing make the decision itself land at most once.
// * Settling (applied / refused) is fenced the same way: a former owner
//   cannot overwrite what its successor decided.
// * Reads and writes here never touch the execution rows; those change only
//   through the store operations (`operations.ts`).

import { decisionProgressOf, type ClaimedDecision, type DecisionFiling, type DecisionProgress, type DecisionSettlement, type FiledDecision } from "../inbox-records.js";
import { fenceHeldSql } from "./partitions.js";
import type pg from "pg";
import { ApprovalMismatchError, InvalidInputError, RetryRefusedError } from "../../errors.js";
import type { ExecutionRow, Json } from "../records.js";
import type { SqliteRow } from "../sqlite/driver.js";
import type { Fence } from "./operations.js";
import { checkCancelFiling, inboxKindMigration, type DecisionKind } from "../cancel-filing.js";
import { checkRetryable, inboxKinds } from "../retry-filing.js";

type Queryable = Pick<pg.Pool, "query">;

/** Decisions one claim takes at most. An agent admits one execution at a
 * time, so it rarely has more than one; the bound keeps a flooded inbox
 * from turning one claim into one huge transaction (the drain claims
 * again until nothing is left). */
export const claimBatchMax = 32;

/** Decision ids one progress read names at most (one `= ANY($1)` lookup
 * by primary key); the runtime bounds the decisions it waits on to this. */
export const decisionReadMax = 1_000;

/** PostgreSQL truncates identifiers at 63 bytes and `pg_notify` refuses
 * longer channel names. */
const channelLengthMax = 63;

export { decisionProgressOf } from "../inbox-records.js";
export type { ClaimedDecision, DecisionFiling, DecisionProgress, DecisionSettlement, DecisionState, FiledDecision } from "../inbox-records.js";

/** The LISTEN/NOTIFY channel of a store's inbox: one per schema. Two
 * schemas whose names share their first 48 characters share a channel;
 * that only costs a claim that finds nothing. */
export function inboxChannelOf(schema: string): string {
  return `phronomy_inbox_${schema}`.slice(0, channelLengthMax);
}

/** Migration 2: the inbox table. */
export async function createApprovalInbox(client: pg.ClientBase): Promise<void> {
  await client.query(`
    CREATE TABLE approval_inbox (
      decision_id        text PRIMARY KEY,
      execution_id       text NOT NULL,
      agent_id           text NOT NULL,
      approval_id        text NOT NULL,
      approved           boolean NOT NULL,
      reason             text,
      execution_revision bigint NOT NULL,
      filed_by           text NOT NULL,
      filed_at           bigint NOT NULL,
      state              text NOT NULL CHECK (state IN ('filed', 'claimed', 'applied', 'refused')),
      claimed_by         text,
      claimed_epoch      bigint,
      claims             integer NOT NULL DEFAULT 0,
      error              text,
      settled_at         bigint
    );
    CREATE INDEX approval_inbox_unsettled ON approval_inbox (agent_id, filed_at) WHERE state IN ('filed', 'claimed');
    -- One unsettled decision per approval: a second filing is refused.
    CREATE UNIQUE INDEX approval_inbox_one_per_approval ON approval_inbox (execution_id, approval_id) WHERE state IN ('filed', 'claimed');
  `);
}

/** Migration 5: the decision kind (`cancel`, docs/decisions/0026). */
export async function addDecisionKind(client: pg.ClientBase): Promise<void> {
  await client.query(inboxKindMigration);
}

/** Migration 9: the `retry` kind (docs/decisions/0026). */
export async function addRetryKind(client: pg.ClientBase): Promise<void> {
  await client.query(`
    ALTER TABLE approval_inbox DROP CONSTRAINT approval_inbox_kind_check;
    ALTER TABLE approval_inbox ADD CONSTRAINT approval_inbox_kind_check CHECK (kind IN (${inboxKinds}));
  `);
}

// -- filing ------------------------------------------------------------------------------

/** Files a decision, or refuses it (nothing written) with
 * `InvalidInputError` (no such execution) or `ApprovalMismatchError`
 * (`details.mismatch`: agent, not_suspended, approval_id, already_filed). */
export async function fileDecision(pool: Queryable, where: string, channel: string, filing: DecisionFiling): Promise<FiledDecision> {
  const { executionId, agentId, approvalId } = filing;
  const row = (await pool.query<{ agent_id: string; status: string; phase: string; revision: number; approval_request: string; outcome: string | null; error: string }>(
    "SELECT agent_id, status, phase, revision, approval_request, outcome, error FROM executions WHERE execution_id = $1", [executionId],
  )).rows[0];
  const context = { executionId, agentId };
  if (filing.kind === "cancel") {
    const checked = checkCancelFiling(executionId, row && { agentId: row.agent_id, status: row.status, revision: Number(row.revision), outcome: row.outcome, error: JSON.parse(row.error) }, where);
    await pool.query(`
      WITH filed AS (
        INSERT INTO approval_inbox (decision_id, execution_id, agent_id, approval_id, approved, reason, execution_revision, filed_by, filed_at, state, kind)
        VALUES ($1, $2, $3, $4, false, $5, $6, $7, $8, 'filed', 'cancel')
        RETURNING agent_id
      )
      SELECT pg_notify($9, agent_id) FROM filed
    `, [filing.decisionId, executionId, checked.agentId, approvalId, filing.reason, checked.revision, filing.filedBy, filing.filedAt, channel]);
    return { decisionId: filing.decisionId, executionRevision: checked.revision };
  }
  if (filing.kind === "retry") {
    const checked = checkRetryable(executionId, row && { executionId, agentId: row.agent_id, status: row.status, phase: row.phase, outcome: row.outcome, revision: Number(row.revision) }, where, "the retry (nothing was filed in the inbox)");
    // Filed only while the row is still at the revision read: a retry or a
    // purge meanwhile leaves nothing filed.
    const inserted = await pool.query(`
      WITH filed AS (
        INSERT INTO approval_inbox (decision_id, execution_id, agent_id, approval_id, approved, reason, execution_revision, filed_by, filed_at, state, kind)
        SELECT $1, $2, $3, $4, false, NULL, $5, $6, $7, 'filed', 'retry'
        WHERE EXISTS (SELECT 1 FROM executions WHERE execution_id = $2 AND revision = $5)
        RETURNING agent_id
      )
      SELECT pg_notify($8, agent_id) FROM filed
    `, [filing.decisionId, executionId, checked.agentId, approvalId, checked.revision, filing.filedBy, filing.filedAt, channel]);
    if (inserted.rowCount !== 1) throw new RetryRefusedError(`execution ${executionId} changed while its retry was being filed (retried or purged meanwhile); nothing was filed`, { ...context, reason: "moved" });
    return { decisionId: filing.decisionId, executionRevision: checked.revision };
  }
  if (row === undefined) {
    throw new InvalidInputError(`no execution ${executionId} in the store at ${where}; nothing was filed in the approval inbox`, context);
  }
  if (row.agent_id !== agentId) {
    throw new ApprovalMismatchError(`execution ${executionId} belongs to agent "${row.agent_id}", not "${agentId}"; resume it through its own agent (nothing was filed)`, { ...context, details: { mismatch: "agent", storedAgentId: row.agent_id } });
  }
  if (row.status !== "suspended") {
    throw new ApprovalMismatchError(`execution ${executionId} is not suspended for approval (its status is ${row.status}: already decided, or never suspended); nothing was filed`, { ...context, details: { mismatch: "not_suspended", status: row.status } });
  }
  const pending = pendingApprovalId(JSON.parse(row.approval_request) as Json);
  if (pending !== approvalId) {
    throw new ApprovalMismatchError(`approval ${approvalId} is not the pending approval of execution ${executionId} (that is ${pending ?? "none"}); nothing was filed`, { ...context, details: { mismatch: "approval_id", approvalId, storedApprovalId: pending ?? null } });
  }
  const inserted = await pool.query(`
    WITH filed AS (
      INSERT INTO approval_inbox (decision_id, execution_id, agent_id, approval_id, approved, reason, execution_revision, filed_by, filed_at, state)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'filed')
      ON CONFLICT (execution_id, approval_id) WHERE state IN ('filed', 'claimed') DO NOTHING
      RETURNING agent_id
    )
    SELECT pg_notify($10, agent_id) FROM filed
  `, [filing.decisionId, executionId, agentId, approvalId, filing.approved, filing.reason, row.revision, filing.filedBy, filing.filedAt, channel]);
  if (inserted.rowCount === 1) return { decisionId: filing.decisionId, executionRevision: Number(row.revision) };
  const earlier = (await pool.query<{ decision_id: string; filed_by: string }>(
    "SELECT decision_id, filed_by FROM approval_inbox WHERE execution_id = $1 AND approval_id = $2 AND state IN ('filed', 'claimed')", [executionId, approvalId],
  )).rows[0];
  throw new ApprovalMismatchError(
    `approval ${approvalId} of execution ${executionId} already has a decision in the approval inbox (${earlier?.decision_id ?? "settled meanwhile"}, filed by ${earlier?.filed_by ?? "another process"}) that its owner has not applied yet; nothing else was filed — wait for that one`,
    { ...context, details: { mismatch: "already_filed", approvalId, decisionId: earlier?.decision_id ?? null, filedBy: earlier?.filed_by ?? null } },
  );
}

function pendingApprovalId(request: Json): string | undefined {
  if (typeof request !== "object" || request === null || Array.isArray(request)) return undefined;
  const id = (request as { readonly [key: string]: Json })["approvalId"];
  return typeof id === "string" ? id : undefined;
}

// -- the owner's side ----------------------------------------------------------------------

interface InboxRow {
  decision_id: string;
  kind: DecisionKind;
  execution_id: string;
  agent_id: string;
  approval_id: string;
  approved: boolean;
  reason: string | null;
  execution_revision: number;
  filed_by: string;
  filed_at: number;
  claimed_epoch: number;
  claims: number;
}

/** Claims the agent's filed decisions (and those a former owner claimed at
 * an older epoch), oldest first, at most `claimBatchMax` — only while
 * `fence` is the agent's live lease (same statement). */
export async function claimDecisions(pool: Queryable, agentId: string, fence: Fence): Promise<ClaimedDecision[]> {
  const claimed = await pool.query<InboxRow>(`
    UPDATE approval_inbox AS inbox
    SET state = 'claimed', claimed_by = $2, claimed_epoch = $3, claims = inbox.claims + 1
    WHERE inbox.decision_id IN (
        SELECT decision_id FROM approval_inbox
        WHERE agent_id = $1 AND (state = 'filed' OR (state = 'claimed' AND claimed_epoch < $3))
        ORDER BY filed_at, decision_id LIMIT $4
        FOR UPDATE SKIP LOCKED)
      AND (inbox.state = 'filed' OR (inbox.state = 'claimed' AND inbox.claimed_epoch < $3))
      AND ${fenceHeldSql("$1", "$2", "$3", true)}
    RETURNING inbox.*
  `, [agentId, fence.owner, fence.epoch, claimBatchMax]);
  return claimed.rows
    .map((row) => ({
      decisionId: row.decision_id, executionId: row.execution_id, agentId: row.agent_id, approvalId: row.approval_id,
      approved: row.approved, reason: row.reason, filedBy: row.filed_by, filedAt: Number(row.filed_at),
      executionRevision: Number(row.execution_revision), claimedEpoch: Number(row.claimed_epoch), claims: Number(row.claims),
      kind: row.kind,
    }))
    .sort((a, b) => a.filedAt - b.filedAt || (a.decisionId < b.decisionId ? -1 : 1));
}

/** Marks a claimed decision applied or refused; false when this claim is
 * no longer this process's (a successor claimed it, or the lease lapsed). */
export async function settleDecision(pool: Queryable, claim: ClaimedDecision, fence: Fence, settlement: DecisionSettlement, at: number): Promise<boolean> {
  const settled = await pool.query(`
    UPDATE approval_inbox SET state = $2, error = $3, settled_at = $4
    WHERE decision_id = $1 AND state = 'claimed' AND claimed_by = $5 AND claimed_epoch = $6
      AND ${fenceHeldSql("approval_inbox.agent_id", "$5", "$6", true)}
  `, [
    claim.decisionId, settlement.applied ? "applied" : "refused", settlement.applied ? null : JSON.stringify(settlement.error),
    at, fence.owner, claim.claimedEpoch,
  ]);
  return settled.rowCount === 1;
}

/** The held agents (with the epoch held) that have a decision to claim:
 * the poll on the lease tick, for notifications lost while the listener
 * was reconnecting. */
export async function agentsWithDecisions(pool: Queryable, held: readonly { readonly partition: number; readonly epoch: number }[]): Promise<string[]> {
  if (held.length === 0) return [];
  const found = await pool.query<{ agent_id: string }>(`
    SELECT DISTINCT inbox.agent_id FROM approval_inbox AS inbox
    JOIN unnest($1::integer[], $2::bigint[]) AS held(partition, epoch) ON held.partition = partition_of(inbox.agent_id)
    WHERE inbox.state = 'filed' OR (inbox.state = 'claimed' AND inbox.claimed_epoch < held.epoch)
  `, [held.map((lease) => lease.partition), held.map((lease) => lease.epoch)]);
  return found.rows.map((row) => row.agent_id);
}

/** The decision an `approval_decided` step recorded for this approval,
 * if one did: how a successor tells whether a former owner's claim landed. */
export async function approvalDecided(pool: Queryable, executionId: string, approvalId: string): Promise<{ readonly approved: boolean } | undefined> {
  const found = await pool.query<{ payload: string }>("SELECT payload FROM steps WHERE execution_id = $1 AND kind = 'approval_decided' ORDER BY seq", [executionId]);
  for (const { payload } of found.rows) {
    const decided = JSON.parse(payload) as { approvalId?: unknown; approved?: unknown };
    if (decided.approvalId === approvalId && typeof decided.approved === "boolean") return { approved: decided.approved };
  }
  return undefined;
}

// -- the filer's side ------------------------------------------------------------------------

/** Where each decision is, with its execution as it is now (one statement). */
export async function readDecisions(pool: Queryable, where: string, decisionIds: readonly string[]): Promise<DecisionProgress[]> {
  if (decisionIds.length === 0) return [];
  if (decisionIds.length > decisionReadMax) throw new InvalidInputError(`at most ${decisionReadMax} inbox decisions are read at once, got ${decisionIds.length}`);
  const found = await pool.query<SqliteRow>(`
    SELECT executions.*, inbox.decision_id, inbox.execution_id AS decision_execution_id, inbox.agent_id AS decision_agent_id,
           inbox.state AS decision_state, inbox.error AS decision_error, inbox.execution_revision AS decision_revision
    FROM approval_inbox AS inbox LEFT JOIN executions ON executions.execution_id = inbox.execution_id
    WHERE inbox.decision_id = ANY($1::text[])
  `, [decisionIds]);
  return found.rows.map((row) => decisionProgressOf(row, where));
}

