// The durable records and the store operations of SPEC §4.1, as plain data.
// Every operation is one transaction; every write to an execution is a
// compare-and-set on (execution_id, revision). Operations and results are
// structured-clone safe (no functions, no class instances), because they
// cross into the offload worker.

import type { Json, StoredError, UsageTotals } from "../words.js";

export type { Json, StoredError, UsageTotals };

/** `queued`: a message waiting behind its conversation's running execution
 * (`onBusy: "enqueue"`, `host/store/queue.ts`); it is no execution yet. */
export type ExecutionStatusName = "preparing" | "active" | "suspended" | "terminal" | "queued";

/** Where an execution is in its run, as stored (the core's FSM phases,
 * docs/fsm.md). */
export type PhaseName =
  | "preparing"
  | "calling_llm"
  | "dispatching_tools"
  | "recording_tool_results"
  | "suspended"
  | "resuming"
  | "terminal"
  | "recovery_provider_completed"
  | "recovery_tools"
  | "recovery_tools_completed"
  | "recovery_resolved_failed"
  | "queued";

/** How an execution ended (`completed`, `failed`, `handed_off`,
 * `coordination_wait`) or paused (`suspended`). */
export type OutcomeName = "completed" | "failed" | "suspended" | "handed_off" | "coordination_wait";

/** One tool call of a batch, as written in the tool barrier before the
 * batch runs. The idempotency key is `executionId:callId`. */
export interface ToolCallRecord {
  readonly callId: string;
  readonly toolName: string;
  readonly input: Json;
  readonly idempotencyKey: string;
  /** The call's result given by a person (a response in place of the
   * tool, a typed wait's value): the call does not run (decision 0075). */
  readonly response?: Json;
  /** Why the call is declined without running (held back by a typed wait). */
  readonly declined?: string;
  /** The call's error, given in place of a run: a child execution's
   * failure, for an `agentTool()` call (decision 0079). */
  readonly failed?: StoredError;
}

/** One step of an execution's timeline and runtime snapshot: the input, a
 * model response, tool results, barriers, approvals, recovery notes. Steps
 * are append-only; results ride on the next barrier's transaction. */
export interface StepRecord {
  /** What the step records. */
  readonly kind: StepKind;
  /** When (ms since the epoch). */
  readonly at: number;
  /** The step's data (the model's text and tool calls, the results, the decision…). */
  readonly payload: Json;
}

/** The kinds of steps in an execution's timeline. */
export type StepKind =
  | "input"
  | "provider_barrier"
  | "model_response"
  | "tool_barrier"
  | "tool_results"
  | "approval_requested"
  | "approval_decided"
  | "recovered"
  | "terminal"
  | "note"
  | "queued"
  | "retried"
  | "model_attempt_failed"
  | "tool_attempt_failed";

/** An agent's conversation memory entry. */
export interface JournalRecord {
  readonly executionId: string;
  readonly role: "user" | "assistant" | "tool";
  readonly content: Json;
  readonly at: number;
}

/** An agent's (conversation's) root row: open or closed. */
export interface AgentRow {
  readonly agentId: string;
  readonly lifecycle: "open" | "closed";
  readonly revision: number;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** An execution as stored: where it is, and how it ended. */
export interface ExecutionRow {
  /** The execution's id. */
  readonly executionId: string;
  /** Its agent (conversation) id. */
  readonly agentId: string;
  /** Bumped by every durable write (compare-and-set). */
  readonly revision: number;
  /** The durable status. */
  readonly status: ExecutionStatusName;
  /** Where the run is (FSM phase). */
  readonly phase: PhaseName;
  /** How it runs: `invoke` (the one mode today). */
  readonly mode: string;
  /** The input as persisted (after an input guardrail's redaction). */
  readonly input: Json;
  /** Recovery facts: pending model call, tool batch, flags, config. */
  readonly metadata: ExecutionMetadata;
  /** How it ended or paused; null while it runs. */
  readonly outcome: OutcomeName | null;
  /** The final output (null until completed). */
  readonly output: Json;
  /** The typed error it failed with, or null. */
  readonly error: StoredError | null;
  /** Tokens used so far. */
  readonly usage: UsageTotals;
  /** The approval request while suspended (and the decision once made), or null. */
  readonly approvalRequest: Json;
  /** When it was created (ms since the epoch). */
  readonly createdAt: number;
  /** When it was last written (ms since the epoch). */
  readonly updatedAt: number;
}

/** What recovery needs to continue an execution, kept with its row. */
export interface ExecutionMetadata {
  readonly pendingModelCall?: { readonly callId: string; readonly startedAt: number };
  readonly toolBatch?: readonly ToolCallRecord[];
  readonly turns?: number;
  /** The invocation settings recovery needs (budget, limits, timeout). */
  readonly config?: { readonly [key: string]: Json };
  readonly handoff?: Json;
  /** The decision on the approval request, once an approval resume commit
   * applied it (phase `resuming`); cleared when the execution suspends
   * again for a new request. */
  readonly approval?: ApprovalDecision;
  /** When the execution's current running stretch began (host clock, ms):
   * written by the approval commit (a resume's budget starts there) and by
   * a recovered session's first barrier; absent, it is `createdAt`. The
   * running time spent is `updatedAt` minus it (docs/decisions/0016). */
  readonly runningSince?: number;
  /** The attempt the execution is on: absent for the first, 2 after its
   * first `env.retry` (docs/decisions/0026). */
  readonly attempt?: number;
  /** Set by the terminal commit when a cancel was asked for (the start's
   * signal, `env.cancel`) by then, even one that came after the run had
   * finished and so changed nothing (docs/decisions/0056). */
  readonly cancelRequested?: true;
  /** The first failure of one of the execution's event listeners before
   * its terminal commit (a throw, or an async listener's rejection): the
   * event it failed on and its message (docs/decisions/0056). */
  readonly callbackFailure?: { readonly eventType: string; readonly message: string };
}

/** A decision applied to an approval request. */
export interface ApprovalDecision {
  readonly approvalId: string;
  readonly approved: boolean;
  readonly reason: string | null;
  /** What the answer did beyond approving (`{ kind, callId, value,
   * inputHash? }`: edited arguments, a response, a typed wait's value). */
  readonly action?: Json;
  /** Who decided, when the decision said. */
  readonly decidedBy?: string | null;
}

// -- operations -------------------------------------------------------------

/** Writes a new execution (its root created if needed), its input and
 * journal, and usually its first provider barrier, in one transaction. */
export interface PrepareExecutionOperation {
  readonly type: "prepareExecution";
  readonly executionId: string;
  readonly agentId: string;
  readonly mode: string;
  /** The input as persisted and sent (after an input filter's redaction). */
  readonly input: Json;
  readonly config: { readonly [key: string]: Json };
  /** Set when the input filter blocked the input: the execution is written
   * terminal `failed` with this error instead of active. */
  readonly blockedBy?: StoredError;
  readonly journal: readonly JournalRecord[];
  /** The first provider barrier, written in the same transaction (not
   * with `blockedBy`): the execution is stored at revision 2, as the
   * preparation (1) followed by this barrier (2) would have left it, and the
   * result says so (`firstBarrierRevision`). A store that does not write it
   * leaves `firstBarrierRevision` out; the runtime then writes the barrier
   * as its own operation (docs/decisions/0014). */
  readonly firstBarrier?: { readonly callId: string };
  /** An earlier execution of this agent: its journal records and every
   * later one are deleted in this transaction, before `journal` is
   * appended (a start's `replaceFrom`, docs/decisions/0070). Refused,
   * nothing written, unless the core's verdict (`replaceVerdicts`) on what
   * the transaction reads is to replace. Not with `blockedBy`:
   * a blocked input replaces nothing. */
  readonly replaceFrom?: string;
  /** With `replaceFrom`: the core's `replaceVerdict` for every
   * `ReplaceFact` bits (`ReplaceFact.End` entries, indexed by the facts);
   * the store looks up what it read and writes nothing unless `Replace`
   * (docs/decisions/0087). */
  readonly replaceVerdicts?: readonly number[];
  readonly at: number;
}

/** What a preparation wrote: an active execution, one failed at once
 * (blocked input), or nothing (the agent closed). */
export type PrepareExecutionResult =
  | {
      readonly outcome: "active";
      readonly revision: number;
      readonly firstBarrierRevision?: number;
      /** True when no preparation of this agent came before this one (its
       * root was written now, or by an enqueue or `ensureAgent` and never
       * prepared on): its journal holds no other execution's records, so
       * the runtime skips reading its memory window (docs/decisions/0067).
       * Optional: a store that leaves it out gets the read. */
      readonly firstOfAgent?: true;
    }
  | { readonly outcome: "terminal"; readonly revision: number; readonly error: StoredError }
  | { readonly outcome: "not_established"; readonly error: StoredError };

/** The barrier before a model call: compare-and-set, then the pending
 * call recorded with the steps since the last barrier. */
export interface ProviderBarrierOperation {
  readonly type: "providerBarrier";
  readonly executionId: string;
  readonly expectedRevision: number;
  readonly callId: string;
  /** Results since the last barrier (model responses, tool results). */
  readonly steps: readonly StepRecord[];
  readonly usage: UsageTotals;
  readonly turns: number;
  readonly at: number;
  /** A recovered session's first barrier: the start of its running
   * stretch, stored as `metadata.runningSince`. */
  readonly runningSince?: number;
}

/** The barrier before a tool batch: compare-and-set, then the batch
 * (calls, inputs, idempotency keys) recorded with the steps since the last
 * barrier. */
export interface ToolBarrierOperation {
  readonly type: "toolBarrier";
  readonly executionId: string;
  readonly expectedRevision: number;
  readonly toolBatch: readonly ToolCallRecord[];
  readonly steps: readonly StepRecord[];
  readonly usage: UsageTotals;
  readonly turns: number;
  readonly at: number;
  /** A recovered session's first barrier: the start of its running
   * stretch, stored as `metadata.runningSince`. */
  readonly runningSince?: number;
}

/** Ends (or suspends) an execution: compare-and-set, then its outcome,
 * output or error, usage, the last steps and the conversation's memory. */
export interface TerminalCommitOperation {
  readonly type: "terminalCommit";
  readonly executionId: string;
  readonly expectedRevision: number;
  readonly outcome: OutcomeName;
  readonly output: Json;
  readonly error: StoredError | null;
  readonly usage: UsageTotals;
  readonly approvalRequest: Json;
  readonly handoff: Json;
  readonly steps: readonly StepRecord[];
  /** Conversation memory appended for the agent (completed runs). */
  readonly journal: readonly JournalRecord[];
  /** Only with outcome `suspended`: the tool batch waiting for approval,
   * stored as `metadata.toolBatch` (replacing a pending model call mark),
   * so a resume or a recovery dispatches exactly these calls. */
  readonly toolBatch?: readonly ToolCallRecord[];
  /** A cancel was asked for by now (stored as `metadata.cancelRequested`). */
  readonly cancelRequested?: true;
  /** A listener's first failure (stored as `metadata.callbackFailure`;
   * an earlier one already stored is kept). */
  readonly callbackFailure?: { readonly eventType: string; readonly message: string };
  readonly at: number;
}

/** Applies a human decision to a suspended execution (SPEC §4.1 "approval
 * resume commit"): compare-and-set on (executionId, expectedRevision) with
 * status `suspended`; the stored approval request must carry this
 * `approvalId` and `argumentsHash` and no decision yet, else
 * `ApprovalMismatchError` and nothing is written. On success: status
 * `active`, phase `resuming`, revision+1, outcome cleared, the decision
 * added to the approval request (`decision: { approved, reason, decidedAt }`)
 * and to `metadata.approval`, and an `approval_decided` step. */
export interface ApprovalCommitOperation {
  readonly type: "approvalCommit";
  readonly executionId: string;
  readonly expectedRevision: number;
  readonly approvalId: string;
  readonly approved: boolean;
  readonly reason: string | null;
  /** The hash of the tool calls' arguments the decision was made on; the
   * runtime computes it and stores it in the approval request. */
  readonly argumentsHash: string;
  readonly at: number;
  /** The answer beyond approving (decision 0075), recorded with the decision. */
  readonly action?: Json;
  /** Who decided, recorded with the decision. */
  readonly decidedBy?: string | null;
  /** The approval inbox decision this applies, when it came from a claim:
   * recorded, so a later owner that claims it again knows it landed
   * (docs/decisions/0086). */
  readonly filedAs?: string | null;
  /** The tool batch the decision leaves (edited arguments, a result given
   * in place of a call), stored as `metadata.toolBatch`; absent, it stays. */
  readonly toolBatch?: readonly ToolCallRecord[];
}

/** Reopens a terminal execution for a new attempt (`env.retry`,
 * docs/decisions/0026): compare-and-set on (executionId, expectedRevision)
 * with status `terminal`; then the given status and phase (where its last
 * durable barrier left it), revision+1, outcome, output and error cleared,
 * the given metadata (its attempt number, a fresh running stretch), and a
 * `retried` step. Nothing else changes: the steps of the earlier attempt
 * stay, so the timeline shows both. */
export interface ReopenExecutionOperation {
  readonly type: "reopenExecution";
  readonly executionId: string;
  readonly expectedRevision: number;
  readonly status: "active" | "suspended";
  readonly phase: "calling_llm" | "dispatching_tools" | "resuming" | "suspended";
  readonly metadata: ExecutionMetadata;
  /** The `retried` step's payload (attempt, the outcome retried, where it continues). */
  readonly step: Json;
  readonly at: number;
}

/** The writes to an execution (SPEC §4.1), each one transaction. */
export type StoreOperation =
  | ReopenExecutionOperation
  | PrepareExecutionOperation
  | ProviderBarrierOperation
  | ToolBarrierOperation
  | TerminalCommitOperation
  | ApprovalCommitOperation;

/** Result of a barrier, terminal or approval commit that passed its
 * compare-and-set. */
export interface CommittedRevision {
  readonly revision: number;
  /** A terminal commit that filed in the approval inbox (a child's end for
   * its parent, a cancel for a child, decision 0079): the agents whose
   * inbox got a row, for their owner to be told. */
  readonly inboxFiledFor?: readonly string[];
}

/** What each store operation answers. */
export type StoreResult<O extends StoreOperation> = O extends PrepareExecutionOperation ? PrepareExecutionResult : CommittedRevision;

// -- agent lifecycle (the root) ---------------------------------------------
// These run through the same offload as the execution operations, so every
// write to the store is ordered by one queue.

/** Creates the agent's root (open, revision 1) unless it exists; an
 * existing root is returned unchanged, open or closed. */
export interface EnsureAgentOperation {
  readonly type: "ensureAgent";
  readonly agentId: string;
  readonly at: number;
}

/** Marks the root closed (revision+1); new executions are then refused.
 * Closing a closed agent changes nothing; closing an unknown agent creates
 * its root closed, so a closed id stays closed. */
export interface CloseAgentOperation {
  readonly type: "closeAgent";
  readonly agentId: string;
  readonly at: number;
}

/** Deletes the root, the journal, the executions and their steps. Refused
 * with `InvalidInputError` while the agent has an execution that is not
 * terminal (suspended ones included). */
export interface PurgeAgentOperation {
  readonly type: "purgeAgent";
  readonly agentId: string;
}

/** The writes to an agent's root. */
export type AgentLifecycleOperation = EnsureAgentOperation | CloseAgentOperation | PurgeAgentOperation;

/** What purging an agent deleted. */
export interface PurgeAgentResult {
  /** Whether there was anything of this agent to delete. */
  readonly purged: boolean;
  readonly executionsDeleted: number;
}

// -- reads --------------------------------------------------------------------

/** A step as read back, with its position in the execution's timeline. */
export interface StoredStep extends StepRecord {
  readonly seq: number;
}

/** Which executions `env.executions()` (and the store's list) returns. */
export interface ExecutionListFilter {
  /** The durable status (`executionStatusNames` in check-operation.ts). */
  readonly status?: ExecutionStatusName;
  /** How the execution ended or paused (`outcomeNames`): `completed`,
   * `failed`, `suspended`, `handed_off`, `coordination_wait`. */
  readonly outcome?: OutcomeName;
  /** Only this agent's (conversation's). */
  readonly agentId?: string;
  /** At most this many rows, newest first (default and maximum in the store). */
  readonly limit?: number;
}
