// The start inbox of the whole-host simulation's store (docs/decisions/0031,
// 0047) as PostgreSQL keeps it, on the shared SQLite database: a start made
// at a process that does not hold its conversation is filed for the
// holder (its own table here: SQLite's inbox has no `start` kind), claimed
// only by the lease's holder at its live epoch (a claim of an older epoch
// is claimed again), settled only under that claim, refused by a cancel
// while nobody claimed it, and read back by its filer (the execution row,
// whether it is queued, the decision's state, the steps after a cursor) —
// the statements of host/store/postgres/inbox.ts, each the same rule.

import type { ClaimedDecision, DecisionSettlement } from "../../host/store/inbox-records.js";
import type { SqliteConnection } from "../../host/store/sqlite/driver.js";
import * as reads from "../../host/store/sqlite/reads.js";
import { claimBatchMax } from "../../host/store/inbox-records.js";
import { startApprovalId, type FiledStart, type FiledStartAnswer, type StartFiling, type StartProgress } from "../../host/store/start-filing.js";

export function createStartInbox(connection: SqliteConnection): void {
  connection.exec(`
    CREATE TABLE IF NOT EXISTS sim_start_inbox (
      decision_id   TEXT PRIMARY KEY,
      execution_id  TEXT NOT NULL UNIQUE,
      agent_id      TEXT NOT NULL,
      filed_by      TEXT NOT NULL,
      filed_at      INTEGER NOT NULL,
      state         TEXT NOT NULL,
      claimed_by    TEXT,
      claimed_epoch INTEGER,
      claims        INTEGER NOT NULL DEFAULT 0,
      start         TEXT NOT NULL,
      error         TEXT,
      settled_at    INTEGER
    )`);
}

/** Files the start unless its execution is filed already (the earlier
 * decision answers), or run or queued (followed); a refused one is filed
 * again in its place. True in `filedNow` when this filing wrote the row. */
export function fileStart(connection: SqliteConnection, filing: StartFiling): FiledStartAnswer {
  const exists =
    connection.prepare("SELECT 1 FROM executions WHERE execution_id = ?").get(filing.executionId) !== undefined
    || connection.prepare("SELECT 1 FROM queued_messages WHERE execution_id = ?").get(filing.executionId) !== undefined;
  const earlier = connection.prepare("SELECT decision_id, state FROM sim_start_inbox WHERE execution_id = ?").get(filing.executionId);
  if (!exists && (earlier === undefined || earlier["state"] === "refused")) {
    connection.prepare("DELETE FROM sim_start_inbox WHERE execution_id = ?").run(filing.executionId);
    connection
      .prepare("INSERT INTO sim_start_inbox (decision_id, execution_id, agent_id, filed_by, filed_at, state, start) VALUES (?, ?, ?, ?, ?, 'filed', ?)")
      .run(filing.decisionId, filing.executionId, filing.agentId, filing.filedBy, filing.filedAt, JSON.stringify(filing.start));
    return { decisionId: filing.decisionId, filedNow: true };
  }
  return { decisionId: earlier === undefined ? undefined : String(earlier["decision_id"]), filedNow: false };
}

/** Whether a start waits for the agent: filed, or claimed at an epoch before `epoch`. */
export function startWaiting(connection: SqliteConnection, agentId: string, epoch: number): boolean {
  return (
    connection
      .prepare("SELECT 1 FROM sim_start_inbox WHERE agent_id = ? AND (state = 'filed' OR (state = 'claimed' AND claimed_epoch < ?)) LIMIT 1")
      .get(agentId, epoch) !== undefined
  );
}

/** The agents with a start filed, or claimed by anyone (a claimer may have died). */
export function agentsWithStartsWaiting(connection: SqliteConnection): string[] {
  return connection
    .prepare("SELECT DISTINCT agent_id FROM sim_start_inbox WHERE state IN ('filed', 'claimed') ORDER BY agent_id")
    .all()
    .map((row) => String(row["agent_id"]));
}

/** Claims the agent's waiting starts at `epoch` (the caller checked the
 * fence), oldest first, at most `claimBatchMax`. */
export function claimStarts(connection: SqliteConnection, agentId: string, owner: string, epoch: number, limit = claimBatchMax): ClaimedDecision[] {
  const rows = connection
    .prepare(
      "SELECT * FROM sim_start_inbox WHERE agent_id = ? AND (state = 'filed' OR (state = 'claimed' AND claimed_epoch < ?)) ORDER BY filed_at, decision_id LIMIT ?",
    )
    .all(agentId, epoch, limit);
  const claim = connection.prepare(
    "UPDATE sim_start_inbox SET state = 'claimed', claimed_by = ?, claimed_epoch = ?, claims = claims + 1 WHERE decision_id = ?",
  );
  return rows.map((row) => {
    claim.run(owner, epoch, String(row["decision_id"]));
    const decisionId = String(row["decision_id"]);
    return {
      decisionId,
      kind: "start" as const,
      executionId: String(row["execution_id"]),
      agentId: String(row["agent_id"]),
      approvalId: startApprovalId(decisionId),
      approved: false,
      reason: null,
      filedBy: String(row["filed_by"]),
      filedAt: Number(row["filed_at"]),
      executionRevision: 0,
      claimedEpoch: epoch,
      claims: Number(row["claims"]) + 1,
      start: JSON.parse(String(row["start"])) as FiledStart,
    };
  });
}

/** Settles a start claimed by `owner` at the claim's epoch (the caller
 * checked the fence); false when the claim is not that one any more. */
export function settleStart(connection: SqliteConnection, claim: ClaimedDecision, owner: string, settlement: DecisionSettlement, at: number): boolean {
  const settled = connection
    .prepare(
      "UPDATE sim_start_inbox SET state = ?, error = ?, settled_at = ? WHERE decision_id = ? AND state = 'claimed' AND claimed_by = ? AND claimed_epoch = ?",
    )
    .run(
      settlement.applied ? "applied" : "refused",
      settlement.applied ? null : JSON.stringify(settlement.error),
      at,
      claim.decisionId,
      owner,
      claim.claimedEpoch,
    );
  return settled.changes === 1;
}

/** The filer's read: each start's row, queue, decision and new steps. */
export function readStarts(connection: SqliteConnection, follows: readonly { readonly executionId: string; readonly afterSeq: number }[]): StartProgress[] {
  const cursors = new Map<string, number>();
  for (const { executionId, afterSeq } of follows) cursors.set(executionId, Math.min(afterSeq, cursors.get(executionId) ?? afterSeq));
  return [...cursors].map(([executionId, afterSeq]) => {
    const decision = connection.prepare("SELECT state, error FROM sim_start_inbox WHERE execution_id = ?").get(executionId);
    const execution = reads.getExecution(connection, executionId);
    return {
      executionId,
      execution,
      queued: connection.prepare("SELECT 1 FROM queued_messages WHERE execution_id = ?").get(executionId) !== undefined,
      decisionState: decision === undefined ? undefined : String(decision["state"]),
      decisionError: decision === undefined || decision["error"] === null ? null : String(decision["error"]),
      steps: execution === undefined ? [] : reads.listSteps(connection, executionId).filter((step) => step.seq > afterSeq),
    };
  });
}

/** A cancel of a start still filed: refused with the cancellation; what it found. */
export function cancelFiledStart(
  connection: SqliteConnection,
  executionId: string,
  error: string,
  at: number,
): { readonly agentId: string; readonly state: "cancelled" | "claimed" | "settled" } | undefined {
  const row = connection.prepare("SELECT agent_id, state FROM sim_start_inbox WHERE execution_id = ?").get(executionId);
  if (row === undefined) return undefined;
  const agentId = String(row["agent_id"]);
  if (row["state"] === "filed") {
    connection.prepare("UPDATE sim_start_inbox SET state = 'refused', error = ?, settled_at = ? WHERE execution_id = ?").run(error, at, executionId);
    return { agentId, state: "cancelled" };
  }
  return { agentId, state: row["state"] === "claimed" ? "claimed" : "settled" };
}

/** The starts still filed or claimed (for the world's quiet). */
export function startsUnsettled(connection: SqliteConnection): string[] {
  return connection
    .prepare("SELECT execution_id FROM sim_start_inbox WHERE state IN ('filed', 'claimed')")
    .all()
    .map((row) => String(row["execution_id"]));
}

/** Filed starts by state (the run's counts). */
export function filedStartCounts(connection: SqliteConnection): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const row of connection.prepare("SELECT state, count(*) AS n FROM sim_start_inbox GROUP BY state").all())
    counts[String(row["state"])] = Number(row["n"]);
  return counts;
}
