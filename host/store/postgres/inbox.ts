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
// * A decision's insert and its `pg_notify` are one statement: the
//   notification goes out when (and only if) the decision is committed. A
//   filed start is announced after its insert committed, and the owner
//   tells its filer after each write, in a statement of their own that
//   does not wait for its flush (`notifyUnflushed`, docs/decisions/0068):
//   PostgreSQL commits notifying transactions one at a time.
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

import {
  approvalDecidedOf,
  claimBatchMax,
  decisionProgressOf,
  type ApprovalDecided,
  type ClaimedDecision,
  type DecisionFiling,
  type DecisionProgress,
  type DecisionSettlement,
  type FiledDecision,
} from "../inbox-records.js";
import { fenceHeldSql } from "./partitions.js";
import { createHash } from "node:crypto";
import type pg from "pg";
import { ApprovalMismatchError, InvalidInputError, RetryRefusedError } from "../../errors.js";
import type { Json } from "../records.js";
import type { SqliteRow } from "../sqlite/driver.js";
import type { Fence } from "./leases.js";
import { checkCancelFiling, inboxKindMigration, type DecisionKind } from "../cancel-filing.js";
import { checkRetryable, inboxKinds } from "../retry-filing.js";
import { startApprovalId, type FiledStart, type FiledStartAnswer, type StartFiling, type StartProgress } from "../start-filing.js";
export type { StartProgress } from "../start-filing.js";
import { executionFromRow, stepFromRow } from "../sqlite/rows.js";
import type { StoredStep } from "../records.js";

type Queryable = Pick<pg.Pool, "query">;

export { claimBatchMax } from "../inbox-records.js";

/** Settlements one statement writes at most (`settleDecisions`): a claim
 * batch's worth and then some; the rest leave with the next statement. */
export const settleBatchMax = 128;

/** Decision ids one progress read names at most (one `= ANY($1)` lookup
 * by primary key); the runtime bounds the decisions it waits on to this. */
export const decisionReadMax = 1_000;

/** PostgreSQL truncates identifiers at 63 bytes and `pg_notify` refuses
 * longer channel names. */
const channelLengthMax = 63;

export { decisionProgressOf } from "../inbox-records.js";
export type { ApprovalDecided, ClaimedDecision, DecisionFiling, DecisionProgress, DecisionSettlement, DecisionState, FiledDecision } from "../inbox-records.js";

/** The LISTEN/NOTIFY channel of a store's inbox: one per schema. Two
 * schemas whose names share their first 48 characters share a channel;
 * that only costs a claim that finds nothing. */
export function inboxChannelOf(schema: string): string {
  return `phronomy_inbox_${schema}`.slice(0, channelLengthMax);
}

/** The channel a filed start is announced on (payload: its agent id),
 * one per schema: only starts, so an owner woken on it claims them all in
 * one statement (`claimFiledStarts`, docs/decisions/0047). */
export function startChannelOf(schema: string): string {
  return `phronomy_start_${schema}`.slice(0, channelLengthMax);
}

/** The channel a run now claimed for the processes that fire schedules
 * is told on (docs/decisions/0097), one per schema: each such process's
 * sweep looks at once rather than at its next timer. */
export function schedulesChannelOf(schema: string): string {
  return `phronomy_schedules_${schema}`.slice(0, channelLengthMax);
}

/** The channel a process tells the partitions it gives up on (balance,
 * close; payload: their numbers, comma-separated), one per schema: the
 * others stop taking their tick's view as proof that it holds them
 * (docs/decisions/0068). */
export function releasedChannelOf(schema: string): string {
  return `phronomy_released_${schema}`.slice(0, channelLengthMax);
}

/** The channel a filer hears its filed starts move on (payload: the
 * execution id): one per (schema, filer instance id), a digest so any
 * instance id fits (docs/decisions/0047). */
export function filerChannelOf(schema: string, filedBy: string): string {
  return `phronomy_run_${createHash("sha256").update(`${schema}\u0000${filedBy}`, "utf8").digest("hex").slice(0, 40)}`;
}

/** `filerChannelOf` computed by the database, for a statement that tells
 * the filer of an inbox row it writes without reading the row first (the
 * cancel of a start, by whichever process): `schema` and `filedBy` are SQL
 * expressions. The same digest — `test/postgres/start-cancel-told.test.ts`
 * checks the two agree. */
export function filerChannelSql(schema: string, filedBy: string): string {
  return `'phronomy_run_' || left(encode(sha256(convert_to(${schema}, 'UTF8') || '\\x00'::bytea || convert_to(${filedBy}, 'UTF8')), 'hex'), 40)`;
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

/** Migration 11: the `start` kind (docs/decisions/0031): the filed start
 * (input and options, JSON) in a column of its own, and at most one start
 * per execution id — the id is the start's identity (derived from its
 * idempotency key when it has one), so a second filing finds the first. */
export async function addStartKind(client: pg.ClientBase): Promise<void> {
  await client.query(`
    ALTER TABLE approval_inbox DROP CONSTRAINT approval_inbox_kind_check;
    ALTER TABLE approval_inbox ADD CONSTRAINT approval_inbox_kind_check CHECK (kind IN (${inboxKinds}, 'start'));
    ALTER TABLE approval_inbox ADD COLUMN start text;
    CREATE UNIQUE INDEX approval_inbox_one_start ON approval_inbox (execution_id) WHERE kind = 'start';
  `);
}

// -- filing ------------------------------------------------------------------------------

/** Migration 15 (decision 0075): a decision's answer beyond approve or
 * decline — edited arguments, a response, a typed wait's value — and who
 * decided, as JSON text; NULL for a plain decision and for older rows. */
export async function addDecisionAction(client: pg.ClientBase): Promise<void> {
  await client.query("ALTER TABLE approval_inbox ADD COLUMN action text");
}

/** Files a start for the owner of its conversation's partition (one
 * statement, its notification with it) — unless its execution id is filed
 * already (the earlier decision is answered) or in the store already, run
 * or queued (no decision: the filer follows the execution). A start
 * refused before is filed again in its place. */
export async function fileStart(pool: Queryable, channel: string, filing: StartFiling): Promise<FiledStartAnswer> {
  const inserted = await pool.query(
    `
    WITH filed AS (
      INSERT INTO approval_inbox (decision_id, execution_id, agent_id, approval_id, approved, reason, execution_revision, filed_by, filed_at, state, kind, start)
      SELECT $1, $2, $3, $4, false, NULL, 0, $5, $6, 'filed', 'start', $7
      WHERE NOT EXISTS (SELECT 1 FROM executions WHERE execution_id = $2)
        AND NOT EXISTS (SELECT 1 FROM queued_messages WHERE execution_id = $2)
      -- A start refused before (busy, not defined there) wrote nothing: the
      -- same id (its idempotency key) may be filed again.
      ON CONFLICT (execution_id) WHERE kind = 'start' DO UPDATE
        SET decision_id = excluded.decision_id, approval_id = excluded.approval_id, filed_by = excluded.filed_by, filed_at = excluded.filed_at,
            start = excluded.start, state = 'filed', claimed_by = NULL, claimed_epoch = NULL, claims = 0, error = NULL, settled_at = NULL
        WHERE approval_inbox.state = 'refused'
      RETURNING agent_id
    )
    SELECT agent_id FROM filed
  `,
    [filing.decisionId, filing.executionId, filing.agentId, startApprovalId(filing.decisionId), filing.filedBy, filing.filedAt, JSON.stringify(filing.start)],
  );
  if (inserted.rowCount === 1) {
    // Announced once committed, in a transaction of its own
    // (`notifyUnflushed`); not sent, the owner's lease tick claims it.
    await notifyUnflushed(pool, [{ channel, payload: filing.agentId }]).catch(() => undefined);
    return { decisionId: filing.decisionId, filedNow: true };
  }
  const earlier = (
    await pool.query<{ decision_id: string; agent_id: string }>("SELECT decision_id, agent_id FROM approval_inbox WHERE execution_id = $1 AND kind = 'start'", [
      filing.executionId,
    ])
  ).rows[0];
  return { decisionId: earlier?.decision_id, filedNow: false };
}

/** Notifications at most sent per `notifyUnflushed` statement. */
export const notifyBatchMax = 256;

/** Sends notifications in a transaction of their own whose commit does
 * not wait for the WAL flush (docs/decisions/0068). PostgreSQL serializes
 * the commits of every transaction that notified (a database-wide lock
 * held from before the commit until it ends, the WAL flush included):
 * a NOTIFY in a durable write made every notifying write of the cluster
 * commit one after another, at the one-connection floor. Sent after the
 * write committed, the notification is only a hint, as before: lost if
 * this process dies in between, and the listener's poll covers that. */
export async function notifyUnflushed(pool: Queryable, told: readonly { readonly channel: string; readonly payload: string }[]): Promise<void> {
  if (told.length === 0) return;
  await pool.query(
    `SELECT set_config('synchronous_commit', 'off', true) AS unflushed,
            (SELECT count(pg_notify(told.channel, told.payload)) FROM unnest($1::text[], $2::text[]) AS told(channel, payload)) AS told`,
    [told.map((item) => item.channel), told.map((item) => item.payload)],
  );
}

/** Files a decision, or refuses it (nothing written) with
 * `InvalidInputError` (no such execution) or `ApprovalMismatchError`
 * (`details.mismatch`: agent, not_suspended, approval_id, already_filed). */
export async function fileDecision(pool: Queryable, where: string, channel: string, filing: DecisionFiling): Promise<FiledDecision> {
  const { executionId, agentId, approvalId } = filing;
  const row = (
    await pool.query<{ agent_id: string; status: string; phase: string; revision: number; approval_request: string; outcome: string | null; error: string }>(
      "SELECT agent_id, status, phase, revision, approval_request, outcome, error FROM executions WHERE execution_id = $1",
      [executionId],
    )
  ).rows[0];
  const context = { executionId, agentId };
  if (filing.kind === "cancel") {
    const checked = checkCancelFiling(
      executionId,
      row && { agentId: row.agent_id, status: row.status, revision: Number(row.revision), outcome: row.outcome, error: JSON.parse(row.error) },
      where,
    );
    await pool.query(
      `
      WITH filed AS (
        INSERT INTO approval_inbox (decision_id, execution_id, agent_id, approval_id, approved, reason, execution_revision, filed_by, filed_at, state, kind)
        VALUES ($1, $2, $3, $4, false, $5, $6, $7, $8, 'filed', 'cancel')
        RETURNING agent_id
      )
      SELECT pg_notify($9, agent_id) FROM filed
    `,
      [filing.decisionId, executionId, checked.agentId, approvalId, filing.reason, checked.revision, filing.filedBy, filing.filedAt, channel],
    );
    return { decisionId: filing.decisionId, executionRevision: checked.revision };
  }
  if (filing.kind === "retry") {
    const checked = checkRetryable(
      executionId,
      row && { executionId, agentId: row.agent_id, status: row.status, phase: row.phase, outcome: row.outcome, revision: Number(row.revision) },
      where,
      "the retry (nothing was filed in the inbox)",
    );
    // Filed only while the row is still at the revision read: a retry or a
    // purge meanwhile leaves nothing filed.
    const inserted = await pool.query(
      `
      WITH filed AS (
        INSERT INTO approval_inbox (decision_id, execution_id, agent_id, approval_id, approved, reason, execution_revision, filed_by, filed_at, state, kind)
        SELECT $1, $2, $3, $4, false, NULL, $5, $6, $7, 'filed', 'retry'
        WHERE EXISTS (SELECT 1 FROM executions WHERE execution_id = $2 AND revision = $5)
        RETURNING agent_id
      )
      SELECT pg_notify($8, agent_id) FROM filed
    `,
      [filing.decisionId, executionId, checked.agentId, approvalId, checked.revision, filing.filedBy, filing.filedAt, channel],
    );
    if (inserted.rowCount !== 1)
      throw new RetryRefusedError(`execution ${executionId} changed while its retry was being filed (retried or purged meanwhile); nothing was filed`, {
        ...context,
        reason: "moved",
      });
    return { decisionId: filing.decisionId, executionRevision: checked.revision };
  }
  if (row === undefined) {
    throw new InvalidInputError(`no execution ${executionId} in the store at ${where}; nothing was filed in the approval inbox`, context);
  }
  if (row.agent_id !== agentId) {
    throw new ApprovalMismatchError(
      `execution ${executionId} belongs to agent "${row.agent_id}", not "${agentId}"; resume it through its own agent (nothing was filed)`,
      { ...context, details: { mismatch: "agent", storedAgentId: row.agent_id } },
    );
  }
  if (row.status !== "suspended") {
    throw new ApprovalMismatchError(
      `execution ${executionId} is not suspended for approval (its status is ${row.status}: already decided, or never suspended); nothing was filed`,
      { ...context, details: { mismatch: "not_suspended", status: row.status } },
    );
  }
  const request = JSON.parse(row.approval_request) as Json;
  const pending = pendingApprovalId(request);
  // Only its child's end resumes a child's wait, filed by the child's
  // terminal commit, not here (decision 0079).
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
  const inserted = await pool.query(
    `
    WITH filed AS (
      INSERT INTO approval_inbox (decision_id, execution_id, agent_id, approval_id, approved, reason, execution_revision, filed_by, filed_at, state, action)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'filed', $11)
      ON CONFLICT (execution_id, approval_id) WHERE state IN ('filed', 'claimed') DO NOTHING
      RETURNING agent_id
    )
    SELECT pg_notify($10, agent_id) FROM filed
  `,
    [
      filing.decisionId,
      executionId,
      agentId,
      approvalId,
      filing.approved,
      filing.reason,
      row.revision,
      filing.filedBy,
      filing.filedAt,
      channel,
      filing.action === undefined ? null : JSON.stringify(filing.action),
    ],
  );
  if (inserted.rowCount === 1) return { decisionId: filing.decisionId, executionRevision: Number(row.revision) };
  const earlier = (
    await pool.query<{ decision_id: string; filed_by: string }>(
      "SELECT decision_id, filed_by FROM approval_inbox WHERE execution_id = $1 AND approval_id = $2 AND state IN ('filed', 'claimed')",
      [executionId, approvalId],
    )
  ).rows[0];
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
  start: string | null;
  action?: string | null;
}

/** Claims the agent's filed decisions (and those a former owner claimed at
 * an older epoch), oldest first, at most `claimBatchMax` — only while
 * `fence` is the agent's live lease (same statement). `startsOnly`: only
 * filed starts (a conversation not live here: a start makes it live). */
export async function claimDecisions(pool: Queryable, agentId: string, fence: Fence, startsOnly = false): Promise<ClaimedDecision[]> {
  const claimed = await pool.query<InboxRow>(
    `
    UPDATE approval_inbox AS inbox
    SET state = 'claimed', claimed_by = $2, claimed_epoch = $3, claims = inbox.claims + 1
    WHERE inbox.decision_id IN (
        SELECT decision_id FROM approval_inbox
        WHERE agent_id = $1 AND (state = 'filed' OR (state = 'claimed' AND claimed_epoch < $3)) AND (NOT $5::boolean OR kind = 'start')
        ORDER BY filed_at, decision_id LIMIT $4
        FOR UPDATE SKIP LOCKED)
      AND (inbox.state = 'filed' OR (inbox.state = 'claimed' AND inbox.claimed_epoch < $3))
      AND ${fenceHeldSql("$1", "$2", "$3", true)}
    RETURNING inbox.*
  `,
    [agentId, fence.owner, fence.epoch, claimBatchMax, startsOnly],
  );
  return claimedFromRows(claimed.rows);
}

function claimedFromRows(rows: readonly InboxRow[]): ClaimedDecision[] {
  return rows
    .map((row) => ({
      decisionId: row.decision_id,
      executionId: row.execution_id,
      agentId: row.agent_id,
      approvalId: row.approval_id,
      approved: row.approved,
      reason: row.reason,
      filedBy: row.filed_by,
      filedAt: Number(row.filed_at),
      executionRevision: Number(row.execution_revision),
      claimedEpoch: Number(row.claimed_epoch),
      claims: Number(row.claims),
      kind: row.kind,
      ...(row.start !== null && row.start !== undefined ? { start: JSON.parse(row.start) as FiledStart } : {}),
      ...(typeof row.action === "string" ? { action: JSON.parse(row.action) as Json } : {}),
    }))
    .sort((a, b) => a.filedAt - b.filedAt || (a.decisionId < b.decisionId ? -1 : 1));
}

/** Marks a claimed decision applied or refused; false when this claim is
 * no longer this process's (a successor claimed it, or the lease lapsed). */
export async function settleDecision(pool: Queryable, claim: ClaimedDecision, fence: Fence, settlement: DecisionSettlement, at: number): Promise<boolean> {
  const settled = await pool.query(
    `
    UPDATE approval_inbox SET state = $2, error = $3, settled_at = $4
    WHERE decision_id = $1 AND state = 'claimed' AND claimed_by = $5 AND claimed_epoch = $6
      AND ${fenceHeldSql("approval_inbox.agent_id", "$5", "$6", true)}
  `,
    [
      claim.decisionId,
      settlement.applied ? "applied" : "refused",
      settlement.applied ? null : JSON.stringify(settlement.error),
      at,
      fence.owner,
      claim.claimedEpoch,
    ],
  );
  return settled.rowCount === 1;
}

/** The held agents (with the epoch held) that have a decision other than
 * a start to claim: the poll on the lease tick, for notifications lost
 * while the listener was reconnecting. Filed starts are claimed all at
 * once (`claimFiledStarts`). Reads only unsettled rows (the partial index
 * `approval_inbox_unsettled`), however many settled ones wait for pruning. */
export async function agentsWithDecisions(pool: Queryable, held: readonly { readonly partition: number; readonly epoch: number }[]): Promise<string[]> {
  if (held.length === 0) return [];
  const found = await pool.query<{ agent_id: string }>(
    `
    SELECT DISTINCT inbox.agent_id FROM approval_inbox AS inbox
    JOIN unnest($1::integer[], $2::bigint[]) AS held(partition, epoch) ON held.partition = conversation_partition(inbox.agent_id)
    WHERE inbox.state IN ('filed', 'claimed') AND inbox.kind <> 'start'
      AND (inbox.state = 'filed' OR inbox.claimed_epoch < held.epoch)
  `,
    [held.map((lease) => lease.partition), held.map((lease) => lease.epoch)],
  );
  return found.rows.map((row) => row.agent_id);
}

/** Claims, in ONE statement, the filed starts of every partition held
 * (`held`, with the epoch held) — and those a former owner claimed at an
 * older epoch — oldest first, at most `claimBatchMax`: each at its
 * partition's epoch, only while that epoch is the partition's live lease
 * (the fence check, in the same statement, per row). The owner's answer
 * to a notification on the start channel and to its lease tick
 * (docs/decisions/0047). */
export async function claimFiledStarts(
  pool: Queryable,
  owner: string,
  held: readonly { readonly partition: number; readonly epoch: number }[],
): Promise<ClaimedDecision[]> {
  if (held.length === 0) return [];
  const claimed = await pool.query<InboxRow>(
    `
    UPDATE approval_inbox AS inbox
    SET state = 'claimed', claimed_by = $3, claimed_epoch = chosen.epoch, claims = inbox.claims + 1
    FROM (
      SELECT unsettled.decision_id, held.epoch FROM approval_inbox AS unsettled
      JOIN unnest($1::integer[], $2::bigint[]) AS held(partition, epoch) ON held.partition = conversation_partition(unsettled.agent_id)
      WHERE unsettled.state IN ('filed', 'claimed') AND unsettled.kind = 'start'
        AND (unsettled.state = 'filed' OR unsettled.claimed_epoch < held.epoch)
      ORDER BY unsettled.filed_at, unsettled.decision_id LIMIT $4
      FOR UPDATE OF unsettled SKIP LOCKED) AS chosen
    WHERE inbox.decision_id = chosen.decision_id
      AND (inbox.state = 'filed' OR (inbox.state = 'claimed' AND inbox.claimed_epoch < chosen.epoch))
      AND ${fenceHeldSql("inbox.agent_id", "$3", "chosen.epoch", true)}
    RETURNING inbox.*
  `,
    [held.map((lease) => lease.partition), held.map((lease) => lease.epoch), owner, claimBatchMax],
  );
  return claimedFromRows(claimed.rows);
}

/** Marks claimed decisions applied or refused in ONE statement (a batch
 * the store gathers, docs/decisions/0047), each only while its claim is
 * still this process's (same epoch, fence held); a refused start is told
 * to its filer (its channel, `filerChannelOf`). The decision ids settled. */
export async function settleDecisions(
  pool: Queryable,
  schema: string,
  owner: string,
  items: readonly { readonly claim: ClaimedDecision; readonly settlement: DecisionSettlement }[],
  at: number,
): Promise<Set<string>> {
  if (items.length === 0) return new Set();
  const settled = await pool.query<{ decision_id: string }>(
    `
    WITH settled AS (
      UPDATE approval_inbox SET state = wanted.state, error = wanted.error, settled_at = $5
      FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $7::text[]) AS wanted(decision_id, state, error, epoch, channel)
      WHERE approval_inbox.decision_id = wanted.decision_id AND approval_inbox.state = 'claimed'
        AND approval_inbox.claimed_by = $6 AND approval_inbox.claimed_epoch = wanted.epoch
        AND ${fenceHeldSql("approval_inbox.agent_id", "$6", "wanted.epoch", true)}
      RETURNING approval_inbox.decision_id, approval_inbox.execution_id, approval_inbox.kind, wanted.state, wanted.channel
    )
    SELECT decision_id, CASE WHEN kind = 'start' AND state = 'refused' THEN pg_notify(channel, execution_id) END AS told FROM settled
  `,
    [
      items.map(({ claim }) => claim.decisionId),
      items.map(({ settlement }) => (settlement.applied ? "applied" : "refused")),
      items.map(({ settlement }) => (settlement.applied ? null : JSON.stringify(settlement.error))),
      items.map(({ claim }) => claim.claimedEpoch),
      at,
      owner,
      items.map(({ claim }) => filerChannelOf(schema, claim.filedBy)),
    ],
  );
  return new Set(settled.rows.map((row) => row.decision_id));
}

/** The decision an `approval_decided` step recorded for this approval,
 * if one did: how a successor tells whether a former owner's claim landed. */
export async function approvalDecided(pool: Queryable, executionId: string, approvalId: string): Promise<ApprovalDecided | undefined> {
  const found = await pool.query<{ payload: string }>("SELECT payload FROM steps WHERE execution_id = $1 AND kind = 'approval_decided' ORDER BY seq", [
    executionId,
  ]);
  for (const { payload } of found.rows) {
    const decided = approvalDecidedOf(payload, approvalId);
    if (decided !== undefined) return decided;
  }
  return undefined;
}

// -- the filer's side ------------------------------------------------------------------------

/** Where each decision is, with its execution as it is now (one statement). */
export async function readDecisions(pool: Queryable, where: string, decisionIds: readonly string[]): Promise<DecisionProgress[]> {
  if (decisionIds.length === 0) return [];
  if (decisionIds.length > decisionReadMax)
    throw new InvalidInputError(`at most ${decisionReadMax} inbox decisions are read at once, got ${decisionIds.length}`);
  const found = await pool.query<SqliteRow>(
    `
    SELECT executions.*, inbox.decision_id, inbox.execution_id AS decision_execution_id, inbox.agent_id AS decision_agent_id,
           inbox.state AS decision_state, inbox.error AS decision_error, inbox.execution_revision AS decision_revision
    FROM approval_inbox AS inbox LEFT JOIN executions ON executions.execution_id = inbox.execution_id
    WHERE inbox.decision_id = ANY($1::text[])
  `,
    [decisionIds],
  );
  return found.rows.map((row) => decisionProgressOf(row, where));
}

/** One statement however many starts are followed: the rows (with their
 * decisions) and the steps after each cursor. An execution followed twice
 * is read once, after the earlier cursor. */
export async function readStarts(
  pool: Queryable,
  where: string,
  follows: readonly { readonly executionId: string; readonly afterSeq: number }[],
): Promise<StartProgress[]> {
  if (follows.length === 0) return [];
  if (follows.length > decisionReadMax) throw new InvalidInputError(`at most ${decisionReadMax} starts are read at once, got ${follows.length}`);
  const cursors = new Map<string, number>();
  for (const { executionId, afterSeq } of follows) cursors.set(executionId, Math.min(afterSeq, cursors.get(executionId) ?? afterSeq));
  // One statement, one snapshot (docs/decisions/0068: it was two round
  // trips, the rows then the steps, on the path from a terminal write to
  // the filer's Run settling). The new steps come as one JSON array per
  // execution, in seq order.
  const found = await pool.query<SqliteRow>(
    `
    SELECT executions.*, wanted.id AS wanted_id, inbox.state AS decision_state, inbox.error AS decision_error,
           EXISTS (SELECT 1 FROM queued_messages WHERE queued_messages.execution_id = wanted.id) AS queued,
           (SELECT json_agg(json_build_object('seq', steps.seq, 'kind', steps.kind, 'at', steps.at, 'payload', steps.payload) ORDER BY steps.seq)::text
              FROM steps WHERE steps.execution_id = wanted.id AND steps.seq > wanted.after_seq) AS new_steps
    FROM unnest($1::text[], $2::bigint[]) AS wanted(id, after_seq)
    LEFT JOIN executions ON executions.execution_id = wanted.id
    LEFT JOIN approval_inbox AS inbox ON inbox.execution_id = wanted.id AND inbox.kind = 'start'
  `,
    [[...cursors.keys()], [...cursors.values()]],
  );
  return found.rows.map((row) => ({
    executionId: String(row["wanted_id"]),
    execution: row["execution_id"] === null ? undefined : executionFromRow(row, where),
    queued: (row["queued"] as unknown) === true,
    decisionState: row["decision_state"] === null ? undefined : String(row["decision_state"]),
    decisionError: row["decision_error"] === null ? null : String(row["decision_error"]),
    steps: stepsOfJson(row["new_steps"], where),
  }));
}

/** The steps of `readStarts`'s JSON array (null: none), each checked as a
 * row of the steps table is. */
function stepsOfJson(value: unknown, where: string): StoredStep[] {
  if (value === null || value === undefined) return [];
  const rows = JSON.parse(String(value)) as SqliteRow[];
  return rows.map((row) => stepFromRow({ ...row, seq: Number(row["seq"]), at: Number(row["at"]) }, where));
}

/** `env.cancel` of a start still filed (docs/decisions/0031): refused in
 * the inbox with the cancellation (`error`, a transferred error's JSON)
 * while nobody claimed it — a claim and this update take the row's lock in
 * turn, so the start is either cancelled here or run by its owner (then
 * the cancel goes to the execution). `claimed`: an owner is starting it.
 * A cancel from another process than the filer tells the filer in the
 * same statement (its channel, sent at commit); the filer's own cancel
 * settles its Run itself (docs/decisions/0047). */
export async function cancelFiledStart(
  pool: Queryable,
  schema: string,
  cancelledBy: string,
  executionId: string,
  error: string,
  at: number,
): Promise<{ readonly agentId: string; readonly state: "cancelled" | "claimed" | "settled" } | undefined> {
  const { rows } = await pool.query<{ agent_id: string; state: string; cancelled: boolean }>(
    `
    WITH cancelled AS (
      UPDATE approval_inbox SET state = 'refused', error = $2, settled_at = $3
      WHERE execution_id = $1 AND kind = 'start' AND state = 'filed'
      RETURNING agent_id, filed_by
    )
    SELECT agent_id, 'cancelled' AS state, true AS cancelled,
           CASE WHEN filed_by <> $5 THEN pg_notify(${filerChannelSql("$4::text", "filed_by")}, $1) END AS told
    FROM cancelled
    UNION ALL
    SELECT agent_id, state, false, NULL FROM approval_inbox WHERE execution_id = $1 AND kind = 'start' AND NOT EXISTS (SELECT 1 FROM cancelled)
  `,
    [executionId, error, at, schema, cancelledBy],
  );
  const row = rows[0];
  if (row === undefined) return undefined;
  return { agentId: row.agent_id, state: row.cancelled ? "cancelled" : row.state === "claimed" || row.state === "filed" ? "claimed" : "settled" };
}
