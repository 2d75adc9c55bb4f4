// Every error a user of Phronomy can see (SPEC §7). Each has a stable
// `code`, names the ids involved in its message, and says what to do.
// Everything exported here is public: host/index.ts re-exports the file
// whole. Errors cross the offload worker as `StoredError` records, rebuilt
// by code in `error-records.ts`; helpers the library uses itself live
// beside their users, never here.

import type { StoredError } from "./words.js";

/** Every `code` a `PhronomyError` may have; stable across versions. */
export type PhronomyErrorCode =
  | "AGENT_CLOSED"
  | "AGENT_BUSY"
  | "RUNTIME_SHUTDOWN"
  | "OFFLOAD_FULL"
  | "EXECUTION_REHYDRATION_REQUIRED"
  | "STALE_RESULT"
  | "CANCELLED"
  | "TIMEOUT"
  | "APPROVAL_MISMATCH"
  | "STREAM_CALLBACK"
  | "STORE"
  | "INVALID_INPUT"
  | "INPUT_BLOCKED"
  | "OUTPUT_BLOCKED"
  | "BUDGET_EXCEEDED"
  | "MAX_TURNS_EXCEEDED"
  | "TOOL_FAILED"
  | "MODEL_FAILED"
  | "CAPACITY"
  | "CORE_FAILED"
  | "INTERNAL"
  | "APPROVAL_REQUIRED"
  | "QUEUE_FULL"
  | "EXECUTION_NOT_FOUND"
  | "EXECUTION_ENDED"
  | "RETRY_REFUSED"
  | "SIGNAL_REFUSED"
  | "UNSUPPORTED_RUNTIME";

/** The ids and data an error carries besides its message. */
export interface ErrorContext {
  /** The agent (conversation) involved. */
  readonly agentId?: string;
  /** The execution involved. */
  readonly executionId?: string;
  /** The error behind this one (a provider's, a tool's, the store's). */
  readonly cause?: unknown;
  /** Data for programs: what was refused and why (JSON-safe). */
  readonly details?: Record<string, unknown>;
}

/** The base of every error Phronomy raises or ends an execution with:
 * `code` says what happened (test it, not the class or the message), the
 * ids say to what, the message says what to do. */
export class PhronomyError extends Error {
  /** What happened, stable across versions. */
  readonly code: PhronomyErrorCode;
  /** The agent (conversation) involved, when there is one. */
  readonly agentId: string | undefined;
  /** The execution involved, when there is one. */
  readonly executionId: string | undefined;
  /** Data for programs: what was refused and why. */
  readonly details: Record<string, unknown> | undefined;

  constructor(code: PhronomyErrorCode, message: string, context: ErrorContext = {}) {
    super(message, context.cause === undefined ? undefined : { cause: context.cause });
    this.name = new.target.name;
    this.code = code;
    this.agentId = context.agentId;
    this.executionId = context.executionId;
    this.details = context.details;
  }

  /** The record persisted with a failed execution. */
  toRecord(): StoredError {
    const record: StoredError = { code: this.code, message: this.message };
    return this.details === undefined ? record : { ...record, details: JSON.parse(JSON.stringify(this.details)) };
  }
}

/** `AGENT_CLOSED`: the agent (conversation) was closed and accepts no new executions. */
export class AgentClosedError extends PhronomyError {
  constructor(agentId: string) {
    super("AGENT_CLOSED", `agent "${agentId}" is closed: it accepts no new executions; open a new agent id to continue`, { agentId });
  }
}

/** `AGENT_BUSY`: the conversation runs (or waits for approval on) another
 * execution, or is held for recovery (`details.reason`). */
export class AgentBusyError extends PhronomyError {
  /** Without a message: the plain busy refusal. `AgentBusyError.heldForRecovery`
   * says the admission is held after a store failure. */
  constructor(agentId: string, message?: string, details?: Record<string, unknown>) {
    super("AGENT_BUSY", message ?? `agent "${agentId}" is busy: it admits one execution at a time; wait for the current one (or resume it) and start again`, {
      agentId,
      ...(details === undefined ? {} : { details }),
    });
  }

  /** The admission is held after a store failure, and `env.recover()` (not
   * waiting) releases it. */
  static heldForRecovery(agentId: string): AgentBusyError {
    return new AgentBusyError(
      agentId,
      `agent "${agentId}" is held for recovery: a store operation of its execution failed and its durable outcome is not known here; call env.recover() (it reads the stored rows, recovers what was written and releases the agent), then start again`,
      { reason: "recovery_required" },
    );
  }

  /** Another process holds the conversation now (the core records it owned
   * elsewhere): a start filed for this process is left in the inbox for
   * that one. Never recorded as the start's refusal (approval-inbox.ts). */
  static ownedElsewhere(agentId: string): AgentBusyError {
    return new AgentBusyError(
      agentId,
      `agent "${agentId}" is held by another process now: the start filed for this process is left in the inbox for the process that holds the conversation, which runs it`,
      { reason: "lease_not_held" },
    );
  }

  /** Another process holds the conversation and the start cannot be filed
   * for it (the core answered `RefuseOwnedElsewhere`), when the store names
   * no refusal of its own (`admissionRefusal`): the words of its lease check. */
  static notOwnedHere(agentId: string): PhronomyError {
    return new PhronomyError(
      "AGENT_BUSY",
      `agent "${agentId}" is not owned by this process: another process holds its conversation; start it on the process that owns it, or retry here after that lease expires (this process takes the agent over then)`,
      { agentId, details: { reason: "lease_not_held" } },
    );
  }
}

/** `RUNTIME_SHUTDOWN`: the environment is closing or closed. */
export class RuntimeShutdownError extends PhronomyError {
  constructor(what: string, context: ErrorContext = {}) {
    super("RUNTIME_SHUTDOWN", `the environment is shutting down and refused ${what}; open a new environment to continue`, context);
  }
}

/** A message for a busy conversation (`onBusy: "enqueue"` or
 * `"interrupt"`) found its queue at the agent's `queueLimit`: nothing was
 * written (docs/decisions/0025-busy-conversations.md). */
export class QueueFullError extends PhronomyError {
  constructor(agentId: string, limit: number) {
    super(
      "QUEUE_FULL",
      `the message queue of agent "${agentId}" is full (${limit} messages waiting behind the running one); nothing was queued — retry once it drains, or raise the agent's queueLimit`,
      { agentId, details: { limit } },
    );
  }
}

/** `OFFLOAD_FULL`: the SQLite store's queue of operations is at its
 * `offloadCapacity`; nothing was written. */
export class OffloadFullError extends PhronomyError {
  constructor(capacity: number, context: ErrorContext = {}) {
    super("OFFLOAD_FULL", `the store queue is full (${capacity} operations waiting); retry later or raise offloadCapacity`, context);
  }
}

/** `EXECUTION_REHYDRATION_REQUIRED`: the execution is in the store but not
 * live here (after a store failure, or before its agent's recovery):
 * `env.recover()`, then try again. */
export class ExecutionRehydrationRequiredError extends PhronomyError {
  /** What happened, without the advice to recover. */
  readonly reason: string;

  constructor(reason: string, context: ErrorContext = {}) {
    super("EXECUTION_REHYDRATION_REQUIRED", `${reason}; the execution is left untouched for recovery (env.recover())`, context);
    this.reason = reason;
  }
}

/** What an observer of a suspended execution needs to show the approval:
 * the pending request's id and tool calls (the runtime's `ApprovalRequest`,
 * which carries these and more, is one). */
export interface SuspendedForApproval {
  /** The pending approval's id. */
  readonly approvalId: string;
  /** The tool calls waiting for the decision. */
  readonly toolCalls: readonly { readonly callId: string; readonly toolName: string; readonly input: unknown }[];
}

/** An exact observer (`env.wait`) of an execution suspended for approval
 * (SPEC §6.3, docs/decisions/0018): the execution is not failed and not
 * lost, it waits for a decision. The start's own `run.result` keeps waiting
 * for the real end instead. */
export class ApprovalRequiredError extends PhronomyError {
  /** The pending approval's id, when it is known. */
  readonly approvalId: string | undefined;
  /** The pending request (an `ApprovalRequest`: tool calls, arguments,
   * hash), when it is known. */
  readonly request: SuspendedForApproval | undefined;

  constructor(request: SuspendedForApproval | undefined, context: ErrorContext & { readonly executionId: string }) {
    const kind = (request as { readonly kind?: unknown } | undefined)?.kind;
    const approval = request ? `${kind === "input" || kind === "event" ? "wait" : "approval"} ${request.approvalId}` : "an approval";
    const how =
      kind === "input"
        ? "give it its value with agent.resume(executionId, { waitId, value })"
        : kind === "event"
          ? "send its event with env.signal(key, payload)"
          : "decide it with agent.resume(executionId, { approvalId, approved })";
    super(
      "APPROVAL_REQUIRED",
      `execution ${context.executionId} is suspended for ${approval}: ${how} (env.pendingApprovals() lists the request), then env.wait(executionId) again for the outcome`,
      {
        ...context,
        details: request ? { approvalId: request.approvalId } : {},
      },
    );
    this.approvalId = request?.approvalId;
    this.request = request;
  }
}

/** `STALE_RESULT`: a result arrived for an execution whose live state
 * moved on (a duplicate, or one from before a recovery); it was dropped. */
export class StaleResultError extends PhronomyError {
  constructor(reason: string, context: ErrorContext = {}) {
    super("STALE_RESULT", `stale result dropped: ${reason}`, context);
  }
}

/** `CANCELLED`: the execution was cancelled (its start's signal,
 * `env.cancel`, an interrupting message, Ctrl-C in the CLI). */
export class CancellationError extends PhronomyError {
  /** `reason`: given to `env.cancel` (docs/decisions/0026). */
  constructor(context: ErrorContext = {}, reason?: string) {
    super("CANCELLED", `execution ${context.executionId ?? ""} was cancelled${reason ? `: ${reason}` : ""}`.replace("  ", " "), context);
  }
}

/** An execution id the store does not know (never started, or purged). */
export class ExecutionNotFoundError extends PhronomyError {
  constructor(executionId: string, what: string, where: string) {
    super(
      "EXECUTION_NOT_FOUND",
      `there is no execution ${executionId} in the store at ${where} (an unknown id, or its agent was purged); ${what} was refused`,
      { executionId },
    );
  }
}

/** A cancel of an execution that had already ended: `details.outcome`
 * says how (`cancelled`, `completed`, `failed`, `handed_off`,
 * `coordination_wait`), `details.error` the stored error. */
export class ExecutionEndedError extends PhronomyError {
  constructor(executionId: string, agentId: string, outcome: string, error: StoredError | null, what: string) {
    super(
      "EXECUTION_ENDED",
      `execution ${executionId} of agent "${agentId}" already ended with outcome ${outcome}${error && outcome !== "cancelled" ? ` (${error.code}: ${error.message})` : ""}; ${what} was refused`,
      {
        executionId,
        agentId,
        details: { outcome, error: error as unknown as Record<string, unknown> | null },
      },
    );
  }
}

/** `env.retry` refused: `details.reason` says why (`completed`, `running`,
 * `suspended`, `queued`, `no_barrier`, `owned_elsewhere`, `visitor`,
 * `replaced`: a later start replaced its turn in memory). */
export class RetryRefusedError extends PhronomyError {
  constructor(message: string, context: ErrorContext & { readonly reason: string }) {
    super("RETRY_REFUSED", message, { ...context, details: { ...context.details, reason: context.reason } });
  }
}

/** `env.signal` refused (docs/decisions/0077): `details.reason` says why —
 * `not_waiting` (`ifWaiting: true` and no wait has the key),
 * `already_stored` (a signal for the key is already kept for the next
 * wait), `already_signalled` (the wait was resumed by another signal);
 * `details.key` names the key. Nothing was stored or resumed. */
export class SignalRefusedError extends PhronomyError {
  constructor(message: string, context: ErrorContext & { readonly reason: "not_waiting" | "already_stored" | "already_signalled"; readonly key: string }) {
    super("SIGNAL_REFUSED", message, { ...context, details: { ...context.details, reason: context.reason, key: context.key } });
  }
}

/** `TIMEOUT`: the execution ran past its `timeoutMs` (`details.timeoutMs`). */
export class TimeoutError extends PhronomyError {
  constructor(timeoutMs: number, context: ErrorContext = {}) {
    super("TIMEOUT", `execution ${context.executionId ?? ""} timed out after ${timeoutMs} ms`.replace("  ", " "), { ...context, details: { timeoutMs } });
  }
}

/** `APPROVAL_MISMATCH`: a decision that does not match the pending
 * approval (another approval id, another agent, nothing pending); nothing
 * was decided. */
export class ApprovalMismatchError extends PhronomyError {
  constructor(reason: string, context: ErrorContext = {}) {
    super("APPROVAL_MISMATCH", reason, context);
  }
}

/** `STREAM_CALLBACK`: an event listener threw (with `callbackErrorPolicy:
 * "fail_task"`, on `done` or `handoff`); the listener's error is `cause`. */
export class StreamCallbackError extends PhronomyError {
  constructor(eventType: string, cause: unknown, context: ErrorContext = {}) {
    super("STREAM_CALLBACK", `an event listener threw while handling "${eventType}"`, { ...context, cause });
  }
}

/** `STORE`: the store failed or refused (a file owned by another process,
 * a lost lease, a missing driver); the driver's error is `cause`. */
export class StoreError extends PhronomyError {
  constructor(message: string, context: ErrorContext = {}) {
    super("STORE", message, context);
  }
}

/** `INVALID_INPUT`: an option, a definition or an input that cannot be
 * used, refused before anything was written; the message names it. */
export class InvalidInputError extends PhronomyError {
  constructor(message: string, context: ErrorContext = {}) {
    super("INVALID_INPUT", message, context);
  }
}

/** A language model call failed (the provider threw, returned an error part
 * or returned output that cannot be used). The provider's error is `cause`. */
export class ModelFailedError extends PhronomyError {
  constructor(message: string, context: ErrorContext = {}) {
    super("MODEL_FAILED", message, context);
  }
}

/** One failed attempt of a retried model call or tool call. */
export interface FailedAttempt {
  /** 1 for the first attempt. */
  readonly attempt: number;
  /** The error's message. */
  readonly message: string;
  /** The provider's HTTP status, when it answered. */
  readonly statusCode?: number;
  /** How long the loop waited before the next attempt (none after the last). */
  readonly delayMs?: number;
}

/** A model call failed on every attempt with a transient error (HTTP 429,
 * 5xx, a network failure): `attempts` lists each one; the last provider
 * error is `cause`. Code MODEL_FAILED, like any model failure. */
export class ModelRetriesExhaustedError extends ModelFailedError {
  /** Every attempt, in order. */
  readonly attempts: readonly FailedAttempt[];
  constructor(message: string, attempts: readonly FailedAttempt[], context: ErrorContext = {}) {
    super(message, { ...context, details: { ...context.details, attempts } });
    this.attempts = attempts;
  }
}

/** A tool failed outside its own result: its approval predicate threw, or
 * its output is not JSON-safe. The tool's error is `cause`. */
export class ToolFailedError extends PhronomyError {
  constructor(message: string, context: ErrorContext = {}) {
    super("TOOL_FAILED", message, context);
  }
}

/** The control core trapped while applying a message (an `unreachable`, a
 * failed assertion): its memory may be inconsistent, so the environment
 * admits nothing more (docs/decisions/0023-core-failure-stops-the-environment.md).
 * Nothing durable was changed: the store's rows are recovered by the next
 * environment opened on it. The trap is `cause`. */
export class CoreFailureError extends PhronomyError {
  constructor(
    /** The control message the core was applying. */
    readonly messageKind: string,
    cause: unknown,
  ) {
    const trap = cause instanceof Error ? cause.message : String(cause);
    super(
      "CORE_FAILED",
      `the control core failed while applying ${messageKind} (${trap}); this environment admits nothing more and fails every live run: close it and open the store again, which recovers its executions`,
      { cause, details: { messageKind, trap } },
    );
  }
}

/** Errors that end an execution with a recorded, typed reason. */
export class ExecutionFailedError extends PhronomyError {}
