// The bodies of the store operations (SPEC §4.1) and of the agent lifecycle,
// as functions over a connection. A body does not open or close a
// transaction: `transaction.ts` runs each one inside a transaction of its
// own, or inside a SAVEPOINT of a group commit, so a body that throws leaves
// nothing behind.
//
// Every write to an existing execution is a compare-and-set on
// (execution_id, revision) (`compare-and-set.ts`): the UPDATE carries `WHERE
// execution_id = ? AND revision = ?`, and a mismatch throws
// `ExecutionRehydrationRequiredError` naming the execution and the revision
// expected, before anything is written. Barriers also require status
// `active`; a terminal commit requires a status other than `terminal`; the
// approval resume commit (`approval-commit.ts`) requires `suspended`.

import { AgentClosedError, ExecutionRehydrationRequiredError, InvalidInputError } from "../../errors.js";
import { agentHasUnfinishedExecutions } from "../purge-refusal.js";
import type { OffloadOperation } from "../offload-operation.js";
import type {
  AgentRow,
  CloseAgentOperation,
  CommittedRevision,
  EnsureAgentOperation,
  ExecutionMetadata,
  ExecutionStatusName,
  Json,
  PrepareExecutionOperation,
  PrepareExecutionResult,
  ProviderBarrierOperation,
  PurgeAgentOperation,
  PurgeAgentResult,
  StepRecord,
  StoredError,
  TerminalCommitOperation,
  ToolBarrierOperation,
} from "../records.js";
import { approvalCommit } from "./approval-commit.js";
import { cancelQueued, enqueueMessage } from "./queue.js";
import { reopenExecution } from "./reopen.js";
import { replaceRefusal } from "../replace-from.js";
import { appendJournal, compareAndSet, selectForUpdate } from "./compare-and-set.js";
import { appendSteps, appendStepsAt, type TimelineEnd } from "./timeline.js";
import type { SqliteConnection } from "./driver.js";
import { pruneExecutions } from "./prune.js";
import { fileChildRows } from "./child-filings.js";
import { definitionOf } from "./page-counts.js";
import { agentFromRow, jsonText, zeroUsage } from "./rows.js";

/** Runs one operation's body (no transaction control). */
export function applyOperation(connection: SqliteConnection, operation: OffloadOperation): unknown {
  switch (operation.type) {
    case "prepareExecution":
      return prepareExecution(connection, operation);
    case "providerBarrier":
      return providerBarrier(connection, operation);
    case "toolBarrier":
      return toolBarrier(connection, operation);
    case "terminalCommit":
      return terminalCommit(connection, operation);
    case "approvalCommit":
      return approvalCommit(connection, operation);
    case "reopenExecution":
      return reopenExecution(connection, operation);
    case "ensureAgent":
      return ensureAgent(connection, operation);
    case "closeAgent":
      return closeAgent(connection, operation);
    case "purgeAgent":
      return purgeAgent(connection, operation);
    case "pruneExecutions":
      return pruneExecutions(connection, operation);
    case "enqueueMessage":
      return enqueueMessage(connection, operation);
    case "cancelQueued":
      return cancelQueued(connection, operation);
  }
}

// -- executions -----------------------------------------------------------------

export function prepareExecution(connection: SqliteConnection, operation: PrepareExecutionOperation): PrepareExecutionResult {
  // The agent's root is written by its first preparation, not when the
  // agent (a conversation) is defined (docs/decisions/0024-conversations.md);
  // a closed root refuses the start in this same transaction.
  if (connection.prepare("SELECT 1 AS found FROM executions WHERE execution_id = ?").get(operation.executionId) !== undefined) {
    return refusedPreparation(connection, operation);
  }
  // Read before the root is written: a refusal writes nothing.
  const replaced = operation.replaceFrom === undefined ? undefined : replacedFrom(connection, operation, operation.replaceFrom);
  if (replaced !== undefined && "refusal" in replaced) return { outcome: "not_established", error: replaced.refusal };
  const rootRevision = openAgentRoot(connection, operation.agentId, operation.at);
  if (rootRevision === undefined) return notEstablished(new AgentClosedError(operation.agentId));
  const first = rootRevision === firstPreparedRootRevision ? ({ firstOfAgent: true } as const) : {};
  const metadata: ExecutionMetadata = { config: operation.config };
  const input: StepRecord = { kind: "input", at: operation.at, payload: operation.input };
  if (operation.blockedBy !== undefined) {
    // A blocked input never enters the conversation memory: no journal.
    const end = insertExecution(connection, operation, { status: "terminal", phase: "terminal", metadata, error: operation.blockedBy });
    appendStepsAt(connection, end, [input, { kind: "terminal", at: operation.at, payload: { outcome: "failed", revision: 1 } }]);
    return { outcome: "terminal", revision: 1, error: operation.blockedBy };
  }
  if (operation.firstBarrier !== undefined) {
    const barrier = firstBarrierOperation(operation, operation.firstBarrier);
    const revision = firstBarrierRevision;
    const end = insertExecution(connection, operation, {
      status: "active",
      phase: "calling_llm",
      metadata: barrierMetadata(metadata, barrier),
      error: null,
      revision,
    });
    appendStepsAt(connection, end, [input, barrierStep(barrier, revision)]);
    if (replaced !== undefined) truncateJournal(connection, operation.agentId, replaced.seq);
    appendJournal(connection, operation.agentId, operation.journal);
    return { outcome: "active", revision: 1, firstBarrierRevision: revision, ...first };
  }
  const end = insertExecution(connection, operation, { status: "active", phase: "calling_llm", metadata, error: null });
  appendStepsAt(connection, end, [input]);
  if (replaced !== undefined) truncateJournal(connection, operation.agentId, replaced.seq);
  appendJournal(connection, operation.agentId, operation.journal);
  return { outcome: "active", revision: 1, ...first };
}

/** Where the agent's journal is cut for a preparation replacing from
 * `replaceFrom` (its first record's seq), or why it may not be. */
function replacedFrom(connection: SqliteConnection, operation: PrepareExecutionOperation, replaceFrom: string): { seq: number } | { refusal: StoredError } {
  const first = connection.prepare("SELECT min(seq) AS seq FROM journal WHERE agent_id = ? AND execution_id = ?").get(operation.agentId, replaceFrom)?.["seq"];
  const row = connection.prepare("SELECT agent_id, status FROM executions WHERE execution_id = ?").get(replaceFrom);
  const facts = {
    inMemory: first !== null && first !== undefined,
    row: row === undefined ? undefined : { agentId: String(row["agent_id"]), status: row["status"] as ExecutionStatusName },
  };
  const refusal = replaceRefusal(operation.agentId, operation.executionId, replaceFrom, facts, operation.replaceVerdicts ?? []);
  return refusal === undefined ? { seq: Number(first) } : { refusal };
}

/** Deletes the agent's journal records from `seq` on. */
function truncateJournal(connection: SqliteConnection, agentId: string, seq: number): void {
  connection.prepare("DELETE FROM journal WHERE agent_id = ? AND seq >= ?").run(agentId, seq);
}

/** A preparation under an execution id already stored: refused, and the
 * agent's root written if it was not yet (a closed root refuses it first). */
function refusedPreparation(connection: SqliteConnection, operation: PrepareExecutionOperation): PrepareExecutionResult {
  const agent = ensureAgent(connection, { type: "ensureAgent", agentId: operation.agentId, at: operation.at });
  if (agent.lifecycle === "closed") return notEstablished(new AgentClosedError(operation.agentId));
  return notEstablished(
    new InvalidInputError(`execution id ${operation.executionId} is already in the store; every start needs a new execution id`, {
      agentId: operation.agentId,
      executionId: operation.executionId,
      details: { reason: "execution_exists" },
    }),
  );
}

/** A preparation's write of its agent's root, in one statement (issue 25:
 * it was an insert, a read and an update): a new root is written at
 * revision 2 (its creation's and this preparation's), an open one's
 * revision goes up by one; its revision now, or undefined when the root
 * is closed, and nothing is written. */
function openAgentRoot(connection: SqliteConnection, agentId: string, at: number): number | undefined {
  const opened = connection
    .prepare(`
    INSERT INTO agents (agent_id, lifecycle, revision, created_at, updated_at) VALUES (?, 'open', 2, ?, ?)
    ON CONFLICT (agent_id) DO UPDATE SET revision = revision + 1, updated_at = excluded.updated_at WHERE lifecycle = 'open'
    RETURNING revision
  `)
    .get(agentId, at, at);
  return opened === undefined ? undefined : Number(opened["revision"]);
}

/** A root's revision after its first preparation. A root is written at
 * revision 1 (an enqueue, `ensureAgent`, a close) or 2 (a preparation),
 * and only a preparation or a close raises it, by one, and a closed root
 * is never prepared on: an open root at 2 right after a preparation was
 * never prepared on before, so no execution wrote to its journal. */
const firstPreparedRootRevision = 2;

/** The revision an execution prepared with its first provider barrier is
 * stored at: the preparation's (1) and the barrier's (2). */
export const firstBarrierRevision = 2;

function notEstablished(error: InvalidInputError | AgentClosedError): PrepareExecutionResult {
  return { outcome: "not_established", error: error.toRecord() };
}

interface InitialState {
  readonly status: ExecutionStatusName;
  readonly phase: "calling_llm" | "terminal";
  readonly metadata: ExecutionMetadata;
  readonly error: PrepareExecutionOperation["blockedBy"] | null;
  /** 1, or `firstBarrierRevision` with the first barrier. */
  readonly revision?: number;
}

/** Writes the new executions row; where its steps go. A new row's timeline
 * holds at most the queued step (seq 0) its admission trigger moved there,
 * so its first step is seq 1 either way; its rowid is the insert's (not the
 * trigger's: SQLite restores the last insert rowid when a trigger ends). */
function insertExecution(connection: SqliteConnection, operation: PrepareExecutionOperation, state: InitialState): TimelineEnd {
  const { lastInsertRowid } = connection
    .prepare(`
    INSERT INTO executions (execution_id, agent_id, revision, status, phase, mode, input, metadata, definition, outcome, output,
                            error, usage, approval_request, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'null', ?, ?, 'null', ?, ?)
  `)
    .run(
      operation.executionId,
      operation.agentId,
      state.revision ?? 1,
      state.status,
      state.phase,
      operation.mode,
      jsonText(operation.input),
      jsonText(state.metadata),
      definitionOf(operation.config),
      state.error === null ? null : "failed",
      jsonText(state.error),
      jsonText(zeroUsage),
      operation.at,
      operation.at,
    );
  return { executionRowid: Number(lastInsertRowid), last: 0 };
}

export function providerBarrier(connection: SqliteConnection, operation: ProviderBarrierOperation): CommittedRevision {
  const pending = jsonText({ callId: operation.callId, startedAt: operation.at });
  const revision = barrierUpdate(connection, operation, pending);
  appendSteps(connection, operation.executionId, [...operation.steps, barrierStep(operation, revision)]);
  return { revision };
}

export function toolBarrier(connection: SqliteConnection, operation: ToolBarrierOperation): CommittedRevision {
  const batch = jsonText(operation.toolBatch);
  const revision = barrierUpdate(connection, operation, batch);
  appendSteps(connection, operation.executionId, [...operation.steps, barrierStep(operation, revision)]);
  return { revision };
}

/** A barrier's compare-and-set in one statement (docs/decisions/0091): the
 * row's metadata is changed where it is, by SQLite's JSON functions, as
 * `barrierMetadata` changes it (a key set keeps its place, a new key goes
 * last, the other mark goes), so a barrier neither reads the row nor
 * parses and writes its metadata in JavaScript. The UPDATE requires the
 * expected revision and status `active`; when it updates nothing,
 * `selectForUpdate` reads why and throws its refusal. `mark` is the JSON
 * text of the barrier's mark (`barrierUpdates`). */
function barrierUpdate(connection: SqliteConnection, operation: ProviderBarrierOperation | ToolBarrierOperation, mark: string): number {
  const since = operation.runningSince;
  const texts = barrierUpdates[operation.type];
  const revision = operation.expectedRevision + 1;
  const usage = jsonText(operation.usage);
  const { changes } =
    since === undefined
      ? connection.prepare(texts.plain).run(revision, mark, operation.turns, usage, operation.at, operation.executionId, operation.expectedRevision)
      : connection.prepare(texts.running).run(revision, mark, operation.turns, since, usage, operation.at, operation.executionId, operation.expectedRevision);
  if (changes === 1) return revision;
  selectForUpdate(connection, operation, ["active"]);
  throw new ExecutionRehydrationRequiredError(
    `execution ${operation.executionId} moved on: ${operation.type} expected revision ${operation.expectedRevision} and updated no row`,
    { executionId: operation.executionId },
  );
}

/** A barrier's UPDATE texts, with `runningSince` or not: `change` is the
 * `json_set(json_remove(metadata, …), '$.<mark>', json(?)` it opens. Built
 * once (four statements), not at every barrier (docs/decisions/0126). */
function barrierUpdateTexts(phase: "calling_llm" | "dispatching_tools", change: string): { readonly plain: string; readonly running: string } {
  const text = (running: boolean) =>
    `UPDATE executions SET revision = ?, phase = '${phase}', metadata = ${change}, '$.turns', ?${running ? ", '$.runningSince', ?" : ""}), usage = ?, updated_at = ?
       WHERE execution_id = ? AND revision = ? AND status = 'active'`;
  return { plain: text(false), running: text(true) };
}

const barrierUpdates = {
  providerBarrier: barrierUpdateTexts("calling_llm", "json_set(json_remove(metadata, '$.toolBatch'), '$.pendingModelCall', json(?)"),
  toolBarrier: barrierUpdateTexts("dispatching_tools", "json_set(json_remove(metadata, '$.pendingModelCall'), '$.toolBatch', json(?)"),
} as const;

export function terminalCommit(connection: SqliteConnection, operation: TerminalCommitOperation): CommittedRevision {
  const current = selectForUpdate(connection, operation, ["preparing", "active", "suspended"]);
  const suspended = operation.outcome === "suspended";
  const metadata = terminalMetadata(current.metadata, operation);
  const revision = compareAndSet(
    connection,
    operation,
    `
    UPDATE executions SET revision = ?, status = ?, phase = ?, outcome = ?, output = ?, error = ?, usage = ?,
                          approval_request = ?, metadata = ?, updated_at = ?
    WHERE execution_id = ? AND revision = ?
  `,
    [
      suspended ? "suspended" : "terminal",
      suspended ? "suspended" : "terminal",
      operation.outcome,
      jsonText(operation.output),
      jsonText(operation.error),
      jsonText(operation.usage),
      jsonText(operation.approvalRequest),
      jsonText(metadata),
      operation.at,
    ],
  );
  const finalStep: StepRecord = suspended
    ? { kind: "approval_requested", at: operation.at, payload: { revision, approvalRequest: operation.approvalRequest } }
    : { kind: "terminal", at: operation.at, payload: { outcome: operation.outcome, revision } };
  appendStepsAt(connection, current.end, [...operation.steps, finalStep]);
  appendJournal(connection, current.agentId, operation.journal);
  // A child's end for its parent, a parent's end for its child (decision 0079).
  const woken = fileChildRows(connection, current, operation);
  return woken.length > 0 ? { revision, inboxFiledFor: woken } : { revision };
}

/** What a barrier leaves in the metadata, from the row it replaces: a
 * provider barrier marks the model call pending (the tool batch it follows
 * is finished), a tool barrier records the batch (the model call that
 * produced it is answered). Shared with the PostgreSQL store. */
export function barrierMetadata(current: ExecutionMetadata, operation: ProviderBarrierOperation | ToolBarrierOperation): ExecutionMetadata {
  const running = operation.runningSince === undefined ? {} : { runningSince: operation.runningSince };
  if (operation.type === "providerBarrier") {
    const { toolBatch: _finished, ...kept } = current;
    return { ...kept, pendingModelCall: { callId: operation.callId, startedAt: operation.at }, turns: operation.turns, ...running };
  }
  const { pendingModelCall: _answered, ...kept } = current;
  return { ...kept, toolBatch: operation.toolBatch, turns: operation.turns, ...running };
}

/** The step a barrier appends after the results it carries. The batch
 * goes in as it is, not copied: both stores write a payload as JSON text
 * at once (`jsonText`), which is the copy (it was copied, then written). */
export function barrierStep(operation: ProviderBarrierOperation | ToolBarrierOperation, revision: number): StepRecord {
  return operation.type === "providerBarrier"
    ? { kind: "provider_barrier", at: operation.at, payload: { callId: operation.callId, revision } }
    : { kind: "tool_barrier", at: operation.at, payload: { calls: operation.toolBatch as unknown as Json, revision } };
}

/** The first provider barrier a preparation carries (docs/decisions/0014),
 * as the provider barrier operation it stands for: no steps, no usage, turn 0. */
export function firstBarrierOperation(operation: PrepareExecutionOperation, barrier: { readonly callId: string }): ProviderBarrierOperation {
  return {
    type: "providerBarrier",
    executionId: operation.executionId,
    expectedRevision: 1,
    callId: barrier.callId,
    steps: [],
    usage: zeroUsage,
    turns: 0,
    at: operation.at,
  };
}

/** A suspension records the tool batch waiting for approval (the model
 * call that produced it is answered, so its pending mark goes) and clears
 * the decision of any earlier approval and the start of the running
 * stretch; a handoff records its request; a cancel asked for and a
 * listener's failure are kept. */
export function terminalMetadata(current: ExecutionMetadata, operation: TerminalCommitOperation): ExecutionMetadata {
  let metadata = current;
  if (operation.outcome === "suspended") {
    // Nothing runs while suspended: the running stretch ends with the
    // earlier decision; the next one starts with the next decision.
    const { approval: _earlier, runningSince: _stretch, ...kept } = metadata;
    metadata = kept;
  }
  if (operation.toolBatch !== undefined) {
    const { pendingModelCall: _answered, ...kept } = metadata;
    metadata = { ...kept, toolBatch: operation.toolBatch };
  }
  // What the application asked for or broke meanwhile (docs/decisions/0056).
  if (operation.cancelRequested === true) metadata = { ...metadata, cancelRequested: true };
  if (operation.callbackFailure !== undefined && metadata.callbackFailure === undefined) metadata = { ...metadata, callbackFailure: operation.callbackFailure };
  return operation.handoff === null ? metadata : { ...metadata, handoff: operation.handoff };
}

// -- agents (the root) ------------------------------------------------------------

function selectAgent(connection: SqliteConnection, agentId: string): AgentRow | undefined {
  const row = connection.prepare("SELECT * FROM agents WHERE agent_id = ?").get(agentId);
  return row === undefined ? undefined : agentFromRow(row, connection.path);
}

function requireAgent(connection: SqliteConnection, agentId: string): AgentRow {
  const agent = selectAgent(connection, agentId);
  if (agent === undefined) throw new Error(`phronomy: agent "${agentId}" vanished inside its own transaction`);
  return agent;
}

export function ensureAgent(connection: SqliteConnection, operation: EnsureAgentOperation): AgentRow {
  connection
    .prepare(`
    INSERT INTO agents (agent_id, lifecycle, revision, created_at, updated_at) VALUES (?, 'open', 1, ?, ?)
    ON CONFLICT (agent_id) DO NOTHING
  `)
    .run(operation.agentId, operation.at, operation.at);
  return requireAgent(connection, operation.agentId);
}

export function closeAgent(connection: SqliteConnection, operation: CloseAgentOperation): AgentRow {
  connection
    .prepare(`
    INSERT INTO agents (agent_id, lifecycle, revision, created_at, updated_at) VALUES (?, 'closed', 1, ?, ?)
    ON CONFLICT (agent_id) DO UPDATE SET lifecycle = 'closed', revision = revision + 1, updated_at = excluded.updated_at
    WHERE lifecycle = 'open'
  `)
    .run(operation.agentId, operation.at, operation.at);
  return requireAgent(connection, operation.agentId);
}

/** How many unfinished execution ids a refused purge names in its error. */
const unfinishedNamedMax = 5;

export function purgeAgent(connection: SqliteConnection, operation: PurgeAgentOperation): PurgeAgentResult {
  const agentId = operation.agentId;
  const unfinished = connection
    .prepare(
      `SELECT execution_id FROM executions WHERE agent_id = ? AND status IN ('preparing', 'active', 'suspended') UNION ALL SELECT execution_id FROM queued_messages WHERE agent_id = ? LIMIT ${unfinishedNamedMax}`,
    )
    .all(agentId, agentId);
  if (unfinished.length > 0) {
    throw agentHasUnfinishedExecutions(
      agentId,
      unfinished.map((row) => String(row["execution_id"])),
    );
  }
  // Each execution's steps go with it (the trigger of `timeline.ts`).
  const executionsDeleted = connection.prepare("DELETE FROM executions WHERE agent_id = ?").run(agentId).changes;
  const journalDeleted = connection.prepare("DELETE FROM journal WHERE agent_id = ?").run(agentId).changes;
  const agentsDeleted = connection.prepare("DELETE FROM agents WHERE agent_id = ?").run(agentId).changes;
  return { purged: executionsDeleted + journalDeleted + agentsDeleted > 0, executionsDeleted };
}
