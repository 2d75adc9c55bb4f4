// The hot store operations — prepare, provider barrier, tool barrier,
// terminal commit (SPEC §4.1) — each as ONE call of a server-side function
// (`functions.ts`), so the group commit (`group-commit.ts`) can send many
// of them in one round trip and one transaction. Semantics and errors are
// the SQLite store's (`../sqlite/operations.ts`); the approval commit is
// one too (`approval-commit.ts`, docs/decisions/0048); the rarer operations
// (a retry's reopen, the queue, the agent lifecycle) keep their
// multi-statement transactions in `operations.ts`.
//
// Rules kept here:
// * A call never fails for a refusal: it writes nothing and returns 0.
//   Why it was refused is read afterwards (`explain…`), because refusals are
//   rare and their messages name what the store holds.
// * The new metadata is computed here from the row as it was at
//   `expectedRevision` (`KnownRow`, remembered from this process's own
//   last write or read just before); the compare-and-set guarantees the
//   row still is that revision, and a revision is written once, so the
//   metadata computed from it is the metadata of the row it replaces.
// * With fencing, the call carries the lease (owner, epoch), checked in the
//   same statement as the write (docs/decisions/0010).
// * The last step a call appends carries the operation's `writeId`
//   (outcome resolution after a lost connection, `outcome.ts`).

import { partitionHeldSql } from "./partitions.js";
import type pg from "pg";
import { AgentClosedError, ExecutionRehydrationRequiredError, InvalidInputError, type PhronomyError } from "../../errors.js";
import type {
  ApprovalCommitOperation,
  ExecutionMetadata,
  ExecutionStatusName,
  JournalRecord,
  PrepareExecutionOperation,
  PrepareExecutionResult,
  ProviderBarrierOperation,
  StepRecord,
  StoredError,
  TerminalCommitOperation,
  ToolBarrierOperation,
} from "../records.js";
import { replaceRefusal } from "../replace-from.js";
import { childFilingsOfCommit, withChildFilings } from "./child-filings.js";
import { barrierMetadata, barrierStep, firstBarrierOperation, firstBarrierRevision, terminalMetadata } from "../sqlite/operations.js";
import { jsonText, zeroUsage } from "../sqlite/rows.js";
import { bigintArray, integer, text, textArray } from "./literals.js";
import type { Fence } from "./leases.js";

export type CompareAndSetOperation = ProviderBarrierOperation | ToolBarrierOperation | TerminalCommitOperation;
/** The operations sent as one statement of a group; the approval commit
 * is one since migration 14 (`approval-commit.ts`). */
export type GroupedOperation = PrepareExecutionOperation | CompareAndSetOperation | ApprovalCommitOperation;

export function isGrouped(operation: { readonly type: string }): operation is GroupedOperation {
  return (
    operation.type === "prepareExecution"
    || operation.type === "providerBarrier"
    || operation.type === "toolBarrier"
    || operation.type === "terminalCommit"
    || operation.type === "approvalCommit"
  );
}

/** What the store holds for an execution at one revision. */
export interface KnownRow {
  readonly agentId: string;
  readonly revision: number;
  readonly status: ExecutionStatusName;
  readonly metadata: ExecutionMetadata;
}

/** One operation as one statement: its SQL, its result when it applies,
 * and what the row is afterwards (undefined: not worth remembering). */
export interface Statement {
  readonly sql: string;
  /** The same write as one scalar expression answering what `sql`'s
   * `applied` answers (a plain function call), when it is one: the group
   * commit folds such calls into one statement (docs/decisions/0130). */
  readonly call?: string;
  readonly value: unknown;
  readonly after: KnownRow | undefined;
}

/** The statuses each compare-and-set operation may replace. */
export function statusesOf(operation: CompareAndSetOperation): readonly ExecutionStatusName[] {
  return operation.type === "terminalCommit" ? ["preparing", "active", "suspended"] : ["active"];
}

// -- prepare ------------------------------------------------------------------------

export function prepareStatement(operation: PrepareExecutionOperation, fence: Fence | undefined, writeId: string): Statement & { readonly call: string } {
  const blocked = operation.blockedBy !== undefined;
  const barrier = blocked || operation.firstBarrier === undefined ? undefined : firstBarrierOperation(operation, operation.firstBarrier);
  const revision = barrier === undefined ? 1 : firstBarrierRevision;
  const prepared: ExecutionMetadata = { config: operation.config };
  const metadata = barrier === undefined ? prepared : barrierMetadata(prepared, barrier);
  const steps: StepRecord[] = [{ kind: "input", at: operation.at, payload: operation.input }];
  if (blocked) steps.push({ kind: "terminal", at: operation.at, payload: { outcome: "failed", revision: 1 } });
  if (barrier !== undefined) steps.push(barrierStep(barrier, revision));
  // A blocked input never enters the conversation memory: no journal.
  const journal = blocked ? [] : operation.journal;
  // Every preparation names its revision: a replacing one's function has
  // one signature (migrations 15 and 21), the revision-taking one, and
  // carries the core's verdicts (docs/decisions/0087); any other's
  // (migration 28) says 2 when it was the agent's first (0118). A
  // replacing preparation is never the first: what it replaces is an
  // earlier execution's.
  const replacing = operation.replaceFrom !== undefined && !blocked;
  const call = `${replacing ? `prepare_execution_replacing_decided(${verdictsArgument(operation.replaceVerdicts ?? [])}, ${text(operation.replaceFrom!)}, ` : "prepare_execution_reporting_first("}${[
    text(operation.executionId),
    text(operation.agentId),
    text(blocked ? "terminal" : "active"),
    text(blocked ? "terminal" : "calling_llm"),
    text(operation.mode),
    text(jsonText(operation.input)),
    text(jsonText(metadata)),
    blocked ? "'failed'" : "NULL",
    text(jsonText(operation.blockedBy ?? null)),
    text(jsonText(zeroUsage)),
    integer(operation.at, "prepareExecution.at"),
    ...fenceArguments(fence),
    ...stepArguments(steps),
    text(writeId),
    ...journalArguments(journal),
    String(revision),
  ].join(", ")})`;
  return {
    sql: `SELECT ${call} AS applied`,
    call,
    value: preparedValue(operation),
    after: blocked ? undefined : { agentId: operation.agentId, revision, status: "active", metadata },
  };
}

/**
 * A preparation that carries its conversation's move (`TakeHere`,
 * docs/decisions/0119): one statement, in the preparation's group, so the
 * move has no round trip (nor commit) of its own. `home_conversation`
 * (0101: the conversation's lock, its checks, its home written) runs
 * first; the preparation only when it answered `moved`, or `home` in the
 * partition asked (moved there before); otherwise nothing is written and
 * the statement answers `-1 - partition`, where the conversation lives
 * (`movedAnswerOf`). The move's lock waits at most `waitMs` (then
 * refused); its checks and its home are in the preparation's transaction,
 * committed — and flushed — with it, or not at all.
 */
export function movingPrepareStatement(
  operation: PrepareExecutionOperation,
  fence: Fence | undefined,
  writeId: string,
  move: { readonly agentId: string; readonly partition: number; readonly epoch: number },
  owner: string,
  waitMs: number,
): Statement {
  const { call: preparation, ...prepared } = prepareStatement(operation, fence, writeId);
  const partition = integer(move.partition, "move.partition");
  const sql = `SELECT CASE WHEN moved.home_outcome = 'moved' OR (moved.home_outcome = 'home' AND moved.home_partition = ${partition}) THEN ${preparation} ELSE -1 - moved.home_partition END AS applied FROM home_conversation(${[
    text(move.agentId),
    text(owner),
    partition,
    integer(move.epoch, "move.epoch"),
    integer(Math.max(1, Math.floor(waitMs)), "move.waitMs"),
  ].join(", ")}) AS moved`;
  return { ...prepared, sql };
}

/** A moving preparation's answer (`movingPrepareStatement`): the partition
 * the conversation lives in when the move was refused (nothing written),
 * undefined when the preparation ran (its own answer then). */
export function movedAnswerOf(applied: number): number | undefined {
  return applied < 0 ? -1 - applied : undefined;
}

/** The core's verdicts a replacing preparation carries, as an SQL array
 * (integers checked by `checkOperation`). */
function verdictsArgument(verdicts: readonly number[]): string {
  return `ARRAY[${verdicts.map((verdict) => String(Math.trunc(verdict))).join(", ")}]::integer[]`;
}

/** What a committed preparation returns (also rebuilt after a lost
 * connection, without `firstOfAgent`: the runtime then reads the journal). */
export function preparedValue(operation: PrepareExecutionOperation): PrepareExecutionResult {
  if (operation.blockedBy !== undefined) return { outcome: "terminal", revision: 1, error: operation.blockedBy };
  return operation.firstBarrier === undefined ? { outcome: "active", revision: 1 } : { outcome: "active", revision: 1, firstBarrierRevision };
}

/** Why a prepare wrote nothing, read now: the refusal to return (a
 * `not_established` result), or the fencing error to throw. */
export async function explainPrepareRefusal(
  client: pg.Pool | pg.ClientBase,
  operation: PrepareExecutionOperation,
  fence: Fence | undefined,
): Promise<PrepareExecutionResult | PhronomyError> {
  const { rows } = await client.query<{ lifecycle: string | null; existed: boolean; leased: boolean }>(
    `
    SELECT (SELECT lifecycle FROM agents WHERE agent_id = $1) AS lifecycle,
           EXISTS (SELECT 1 FROM executions WHERE execution_id = $2) AS existed,
           ($3::text IS NULL OR ${partitionHeldSql("$1", "$3", "$4", true)}) AS leased
  `,
    [operation.agentId, operation.executionId, fence?.owner ?? null, fence?.epoch ?? 0],
  );
  const row = rows[0]!;
  const context = { agentId: operation.agentId, executionId: operation.executionId };
  // Checked before the root: a replacing preparation refused for its
  // `replaceFrom` never reached the root's write (an agent's first one
  // finds none).
  const replaced = operation.replaceFrom === undefined ? undefined : await explainReplaceRefusal(client, operation, operation.replaceFrom);
  if (replaced !== undefined) return { outcome: "not_established", error: replaced };
  if (row.lifecycle === null) {
    return notEstablished(
      new InvalidInputError(
        `agent "${operation.agentId}" has no root in the store; ensure the agent before starting execution ${operation.executionId}`,
        context,
      ),
    );
  }
  if (row.lifecycle === "closed") return notEstablished(new AgentClosedError(operation.agentId));
  if (row.existed) {
    return notEstablished(
      new InvalidInputError(`execution id ${operation.executionId} is already in the store; every start needs a new execution id`, {
        ...context,
        details: { reason: "execution_exists" },
      }),
    );
  }
  if (fence !== undefined && !row.leased) return leaseLost(operation.type, operation.executionId, operation.agentId, fence);
  // Nothing explains it now: a concurrent change came and went. Refused, nothing written.
  return notEstablished(
    new InvalidInputError(
      `execution ${operation.executionId} of agent "${operation.agentId}" was not admitted (the agent's root changed concurrently); nothing was written, start it again`,
      context,
    ),
  );
}

/** Why a replacing preparation was refused by its `replaceFrom`, if it was (`replace-from.ts`). */
async function explainReplaceRefusal(
  client: pg.Pool | pg.ClientBase,
  operation: PrepareExecutionOperation,
  replaceFrom: string,
): Promise<StoredError | undefined> {
  const { rows } = await client.query<{ in_memory: boolean; agent_id: string | null; status: ExecutionStatusName | null }>(
    `
    SELECT EXISTS (SELECT 1 FROM journal WHERE agent_id = $1 AND execution_id = $2) AS in_memory,
           (SELECT agent_id FROM executions WHERE execution_id = $2) AS agent_id,
           (SELECT status FROM executions WHERE execution_id = $2) AS status
  `,
    [operation.agentId, replaceFrom],
  );
  const row = rows[0]!;
  const facts = { inMemory: row.in_memory, row: row.agent_id === null || row.status === null ? undefined : { agentId: row.agent_id, status: row.status } };
  return replaceRefusal(operation.agentId, operation.executionId, replaceFrom, facts, operation.replaceVerdicts ?? []);
}

function notEstablished(error: InvalidInputError | AgentClosedError): PrepareExecutionResult {
  return { outcome: "not_established", error: error.toRecord() };
}

// -- compare-and-set operations --------------------------------------------------------

/** The barrier or terminal commit replacing `known` (the row at
 * `operation.expectedRevision`). */
export function compareAndSetStatement(operation: CompareAndSetOperation, known: KnownRow, fence: Fence | undefined, writeId: string): Statement {
  const revision = operation.expectedRevision + 1;
  const head = [text(operation.executionId), integer(operation.expectedRevision, `${operation.type}.expectedRevision`)];
  const at = integer(operation.at, `${operation.type}.at`);
  if (operation.type === "providerBarrier" || operation.type === "toolBarrier") {
    const metadata = barrierMetadata(known.metadata, operation);
    const phase = operation.type === "providerBarrier" ? "calling_llm" : "dispatching_tools";
    const call = `barrier(${[
      ...head,
      text(phase),
      text(jsonText(metadata)),
      text(jsonText(operation.usage)),
      at,
      ...fenceArguments(fence),
      ...stepArguments([...operation.steps, barrierStep(operation, revision)]),
      text(writeId),
    ].join(", ")})`;
    return { sql: `SELECT ${call} AS applied`, call, value: { revision }, after: { agentId: known.agentId, revision, status: "active", metadata } };
  }
  const suspended = operation.outcome === "suspended";
  const finalStep: StepRecord = suspended
    ? { kind: "approval_requested", at: operation.at, payload: { revision, approvalRequest: operation.approvalRequest } }
    : { kind: "terminal", at: operation.at, payload: { outcome: operation.outcome, revision } };
  const call = `terminal_commit(${[
    ...head,
    text(suspended ? "suspended" : "terminal"),
    text(operation.outcome),
    text(jsonText(operation.output)),
    text(jsonText(operation.error)),
    text(jsonText(operation.usage)),
    text(jsonText(operation.approvalRequest)),
    text(jsonText(terminalMetadata(known.metadata, operation))),
    at,
    ...fenceArguments(fence),
    ...stepArguments([...operation.steps, finalStep]),
    text(writeId),
    ...journalArguments(operation.journal),
  ].join(", ")})`;
  // A child's end for its parent, a parent's end for its child (decision 0079).
  const { filings, told } = childFilingsOfCommit(known.metadata, operation);
  const commit = `SELECT ${call} AS applied`;
  const sql = withChildFilings(commit, filings);
  const value = told.length > 0 ? { revision, inboxFiledFor: told } : { revision };
  // Suspended or finished: a later write (a resume) reads the row again.
  // With filings, a statement of its own (their inserts are its CTEs).
  return sql === commit ? { sql, call, value, after: undefined } : { sql, value, after: undefined };
}

/** Reads the row a compare-and-set operation is about to replace, refusing
 * (nothing written) when it is missing or moved on. */
export async function readKnownRow(client: pg.Pool | pg.ClientBase, operation: CompareAndSetOperation): Promise<KnownRow> {
  const row = (
    await client.query<{ agent_id: string; revision: number; status: ExecutionStatusName; metadata: string }>(
      "SELECT agent_id, revision, status, metadata FROM executions WHERE execution_id = $1",
      [operation.executionId],
    )
  ).rows[0];
  const refusal = movedOn(operation, statusesOf(operation), row);
  if (refusal !== undefined) throw refusal;
  return { agentId: row!.agent_id, revision: row!.revision, status: row!.status, metadata: JSON.parse(row!.metadata) as ExecutionMetadata };
}

/** Why a compare-and-set statement wrote nothing, read now. */
export async function explainCompareAndSetRefusal(
  client: pg.Pool | pg.ClientBase,
  operation: CompareAndSetOperation,
  known: KnownRow,
  fence: Fence | undefined,
): Promise<PhronomyError> {
  const row = (
    await client.query<{ agent_id: string; revision: number; status: ExecutionStatusName }>(
      "SELECT agent_id, revision, status FROM executions WHERE execution_id = $1",
      [operation.executionId],
    )
  ).rows[0];
  const refusal = movedOn(operation, statusesOf(operation), row);
  if (refusal !== undefined) return refusal;
  if (fence !== undefined) return leaseLost(operation.type, operation.executionId, known.agentId, fence);
  return new ExecutionRehydrationRequiredError(
    `execution ${operation.executionId} moved on: ${operation.type} expected revision ${operation.expectedRevision} and updated no row`,
    { executionId: operation.executionId },
  );
}

/** Why a compare-and-set of `operation` cannot apply to `row` (missing,
 * another revision, a status not in `statuses`); undefined when it can. */
export function movedOn(
  operation: { readonly type: string; readonly executionId: string; readonly expectedRevision: number },
  statuses: readonly ExecutionStatusName[],
  row: { agent_id: string; revision: number; status: ExecutionStatusName } | undefined,
): PhronomyError | undefined {
  const details = { expectedRevision: operation.expectedRevision, operation: operation.type };
  if (row === undefined) {
    return new ExecutionRehydrationRequiredError(
      `execution ${operation.executionId} is not in the store (${operation.type} expected revision ${operation.expectedRevision})`,
      { executionId: operation.executionId, details },
    );
  }
  if (row.revision !== operation.expectedRevision || !statuses.includes(row.status)) {
    return new ExecutionRehydrationRequiredError(
      `execution ${operation.executionId} moved on: ${operation.type} expected revision ${operation.expectedRevision} with status ${statuses.join(" or ")}, the store holds revision ${String(row.revision)} with status ${row.status}`,
      { executionId: operation.executionId, agentId: row.agent_id, details },
    );
  }
  return undefined;
}

/** A write refused by the fencing check: another process took the agent
 * over (or this one let its lease lapse); the execution is its now. */
export function leaseLost(type: string, executionId: string, agentId: string, fence: Fence): ExecutionRehydrationRequiredError {
  return new ExecutionRehydrationRequiredError(
    `${type} of execution ${executionId} was refused by the fencing check: this process (${fence.owner}) no longer holds agent "${agentId}" at lease epoch ${fence.epoch}; another process took it over`,
    { executionId, agentId, details: { reason: "lease_lost", owner: fence.owner, epoch: fence.epoch } },
  );
}

// -- arguments ------------------------------------------------------------------------

export function fenceArguments(fence: Fence | undefined): string[] {
  return fence === undefined ? ["NULL", "NULL"] : [text(fence.owner), integer(fence.epoch, "lease epoch")];
}

export function stepArguments(steps: readonly StepRecord[]): string[] {
  return [
    textArray(steps.map((step) => step.kind)),
    bigintArray(
      steps.map((step) => step.at),
      "step.at",
    ),
    textArray(steps.map((step) => jsonText(step.payload))),
  ];
}

function journalArguments(records: readonly JournalRecord[]): string[] {
  return [
    textArray(records.map((record) => record.executionId)),
    textArray(records.map((record) => record.role)),
    textArray(records.map((record) => jsonText(record.content))),
    bigintArray(
      records.map((record) => record.at),
      "journal.at",
    ),
  ];
}
