// `env.retry(executionId)` (issue 12, docs/decisions/0026): a failed,
// timed-out or cancelled execution continues from its last durable point
// as a new attempt of the same execution — same id, same step keys, so its
// tools keep their idempotency keys and what the earlier attempt recorded
// (a tool batch's results) is reused, as recovery reuses it.
//
// How: the row's timeline names where the earlier attempt's durable facts
// end (`planRetry`); the core installs the row as it will be once reopened
// (`RecoveryInstall`: the agent's admission is taken there, so a busy
// conversation refuses with AGENT_BUSY and nothing is written); the store
// then reopens the row (`reopenExecution`: one compare-and-set, revision+1,
// attempt+1, a `retried` step); then the core continues it as recovery
// does (`ContinueRecovered`). A reopen that fails leaves the row terminal:
// the installed execution is refused its continuation and released.
//
// Where a retry continues (the last of these steps in the timeline):
//   tool_results          → calling_llm: the model is called with them
//   provider_barrier      → calling_llm: the model is called again (an
//                           answer recorded after it is dropped)
//   tool_barrier          → dispatching_tools: the batch runs again, same ids
//   approval_decided      → resuming, with that decision
//   approval_requested    → suspended again, waiting for the same approval
// No such step (the input guardrail blocked it): refused, `no_barrier`.
//
// Where a retry runs, before its conversation's first use here, is the
// core's verdict (`byIdVerdict`, source `Retry`, by-id-placement.ts): filed
// for the process holding the conversation, refused, or run here; once the
// conversation is used, its `Admit` decides as for a start.

import { AdmissionVerdict, Continuation, MessageKind as M } from "../../assembly/abi.js";
import type { ByIdPlacement } from "./by-id-placement.js";
import { ExecutionRehydrationRequiredError, InvalidInputError, RetryRefusedError, type PhronomyError } from "../errors.js";
import { endedOutcomeOf } from "../store/cancel-filing.js";
import type { ExecutionMetadata, ExecutionRow, Json, ReopenExecutionOperation, StoredStep, ToolCallRecord } from "../store/records.js";
import type { ExecutionStore } from "../store/store.js";
import type { ControlLoop } from "./control-loop.js";
import type { CoordinatorCalls } from "./coordinator-calls.js";
import { emitToWaiter, settleWaiterWithError } from "./delivery.js";
import { settleFromRow } from "./durable-outcome.js";
import type { ApprovalRequest } from "./events.js";
import { continuationOf, installFromRow, startRequestOf } from "./recovery.js";
import type { AgentEntry, ExecutionEntry, RecoveryRequest, RecoverySettlement, StartRequest } from "./requests.js";
import { Waiter, type Run } from "./run.js";
import { asPhronomyError } from "./session.js";
import { rejectUnknownKeys } from "./options.js";
import { checkRetryable } from "../store/retry-filing.js";
import type { EventListener } from "./events.js";

/** What `env.retry` needs of its environment. */
export interface RetryHost {
  readonly coordinator: CoordinatorCalls;
  readonly loop: ControlLoop;
  readonly store: ExecutionStore;
  /** Uses the row's conversation (its core entry, kept until `done`), or
   * undefined when neither it nor its definition is defined here. */
  useConversation(row: ExecutionRow): { readonly entry: Promise<AgentEntry>; readonly done: () => void } | undefined;
  /** Where a retry of the row goes: the core's verdict (source `Retry`)
   * on the facts read for its conversation — the store's lease and its
   * holder, the inbox, whether the conversation or its definition is here. */
  placement(row: ExecutionRow): Promise<ByIdPlacement>;
  /** The core's admission of the retry (`ConversationQueues.admitRetry`;
   * named here, not imported: conversation-queue.ts sits above this file). */
  readonly queues: {
    admitRetry(request: StartRequest, retry: () => void, install: () => void, elsewhere: () => void): void;
  };
}

/** Where the reopened row continues. */
interface RetryPlan {
  readonly status: ReopenExecutionOperation["status"];
  readonly phase: ReopenExecutionOperation["phase"];
  readonly resumeFromSeq: number;
  readonly toolBatch?: readonly ToolCallRecord[];
}

/** What `env.retry` takes. */
export interface RetryOptions {
  /** The new attempt's events, as a start's `onEvent`. */
  readonly onEvent?: EventListener;
}

export function checkRetryOptions(executionId: unknown, options: unknown): void {
  if (typeof executionId !== "string" || executionId.length === 0) {
    throw new InvalidInputError(`env.retry(executionId): executionId must be a non-empty string, got ${JSON.stringify(executionId)}`);
  }
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new InvalidInputError(`env.retry(executionId, options): options must be an object { onEvent? }, got ${JSON.stringify(options)}`, { executionId });
  }
  rejectUnknownKeys(options, ["onEvent"], "env.retry(options)");
  const { onEvent } = options as RetryOptions;
  if (onEvent !== undefined && typeof onEvent !== "function") throw new InvalidInputError(`env.retry(options): "onEvent" must be a function`, { executionId });
}

/** `onReopened`: called once the retry's reopen committed (the owner's
 * side of a filed retry marks it applied then). */
export function retryById(host: RetryHost, executionId: string, options: RetryOptions = {}, onReopened?: () => void): Run {
  const waiter = new Waiter("", options.onEvent);
  const settings = host.coordinator.settings;
  prepareRetry(host, executionId, waiter, onReopened).catch((error: unknown) => settleWaiterWithError(waiter, asPhronomyError(error, "INTERNAL"), settings));
  return waiter;
}

async function prepareRetry(host: RetryHost, executionId: string, waiter: Waiter, onReopened: (() => void) | undefined): Promise<void> {
  const row = checkRetryable(executionId, await host.store.getExecution(executionId), host.store.path);
  const context = { executionId, agentId: row.agentId };
  const verdict = await placedElsewhere(host, row, waiter);
  if (verdict === AdmissionVerdict.FileForOwner) return;
  const use = verdict === AdmissionVerdict.RunHere ? host.useConversation(row) : undefined;
  if (use === undefined) throw notDefinedHere(row);
  // The conversation's entry is kept until the retry is installed (its
  // admission then keeps it) or refused.
  let placed: Placed;
  try {
    placed = await reopenAndInstall(host, row, await use.entry, waiter, onReopened);
  } finally {
    use.done();
  }
  // The core records the conversation owned elsewhere: filed for its owner, or refused.
  if (placed === "elsewhere" && (await placedElsewhere(host, row, waiter)) !== AdmissionVerdict.FileForOwner) {
    throw new RetryRefusedError(`execution ${executionId} was not retried: agent "${row.agentId}" is held by another process now; retry it there`, {
      ...context,
      reason: "owned_elsewhere",
    });
  }
}

/** Where the core's `Admit` sent a retry: installed here (or refused, its
 * Run told), or to the process that owns the conversation. */
type Placed = "here" | "elsewhere";

/** Where the core places the retry (`byIdVerdict`): filed for the process
 * that runs its conversation (`FileForOwner`), refused as owned elsewhere
 * (thrown: nobody holds its lease, or nothing to file it in), or answered
 * for the caller to carry out (`RunHere`, `RefuseNotDefined`). */
async function placedElsewhere(host: RetryHost, row: ExecutionRow, waiter: Waiter): Promise<AdmissionVerdict> {
  const { verdict, inbox, holder } = await host.placement(row);
  if (verdict === AdmissionVerdict.FileForOwner && inbox !== undefined) {
    inbox.fileRetry(row.agentId, row.executionId, waiter);
    return verdict;
  }
  if (verdict !== AdmissionVerdict.RefuseOwnedElsewhere) return verdict;
  const why =
    holder === undefined
      ? `no process here holds agent "${row.agentId}"'s lease`
      : `agent "${row.agentId}" is owned by ${holder.owner} (its lease runs until ${new Date(holder.expiresAt).toISOString()})`;
  throw new RetryRefusedError(`execution ${row.executionId} was not retried: ${why}; retry it in the process that owns agent "${row.agentId}"`, {
    executionId: row.executionId,
    agentId: row.agentId,
    reason: "owned_elsewhere",
  });
}

/** The retry's refusal when its agent is not defined here: the next
 * attempt runs its model and tools. */
function notDefinedHere(row: ExecutionRow): RetryRefusedError {
  const name = row.metadata.config?.["definition"];
  const define = typeof name === "string" ? `its definition "${name}" is` : `agent "${row.agentId}" is`;
  return new RetryRefusedError(
    `execution ${row.executionId} was not retried: ${define} not defined in this environment (its model and tools run the next attempt); define it, then retry`,
    { executionId: row.executionId, agentId: row.agentId, reason: "agent_not_defined" },
  );
}

async function reopenAndInstall(host: RetryHost, row: ExecutionRow, agent: AgentEntry, waiter: Waiter, onReopened: (() => void) | undefined): Promise<Placed> {
  const executionId = row.executionId;
  const context = { executionId, agentId: row.agentId };
  const plan = planRetry(row, await host.store.listSteps(executionId));
  const at = host.coordinator.settings.now();
  const attempt = (row.metadata.attempt ?? 1) + 1;
  const metadata: ExecutionMetadata = { ...row.metadata, attempt, runningSince: at, ...(plan.toolBatch !== undefined ? { toolBatch: plan.toolBatch } : {}) };
  const reopened: ExecutionRow = {
    ...row,
    revision: row.revision + 1,
    status: plan.status,
    phase: plan.phase,
    outcome: null,
    output: null,
    error: null,
    metadata,
    updatedAt: at,
  };
  const step: Json = {
    attempt,
    revision: reopened.revision,
    resumeAt: plan.phase,
    resumeFromSeq: plan.resumeFromSeq,
    retried: { outcome: endedOutcomeOf(row.outcome, row.error), error: row.error as unknown as Json },
  };
  const operation: ReopenExecutionOperation = {
    type: "reopenExecution",
    executionId,
    expectedRevision: row.revision,
    status: plan.status,
    phase: plan.phase,
    metadata,
    step,
    at,
  };
  const settings = host.coordinator.settings;
  const settle = (settlement: RecoverySettlement): void => {
    if (!settlement.ok) return settleWaiterWithError(waiter, settlement.error, settings);
    const request = reopened.approvalRequest as unknown as ApprovalRequest | null;
    if (settlement.suspended && request) emitToWaiter(waiter, { type: "approval_required", executionId, request }, settings);
  };
  const request: RecoveryRequest = {
    type: "recovery",
    start: startRequestOf(agent, reopened, waiter),
    row: reopened,
    continuation: continuationOf(reopened),
    settle,
    reopen: () => host.store.run(operation),
    onReopened,
  };
  // The core's `Admit` decides (as for a start with the busy policy
  // "reject"); installed in the same turn it answered. A refusal tells the
  // Run; a wait asks again once the conversation is ready.
  return new Promise<Placed>((resolve, reject) => {
    waiter.result.then(
      () => resolve("here"),
      () => resolve("here"),
    );
    const ask = (): void => {
      host.loop.post(
        () => {
          if (host.coordinator.hasExecution(executionId))
            return reject(
              new RetryRefusedError(
                `execution ${executionId} is running in this process (attempt ${row.metadata.attempt ?? 1}); only a failed, timed-out or cancelled execution is retried`,
                { ...context, reason: "running" },
              ),
            );
          const install = (): void => {
            installFromRow(host.coordinator, agent, reopened, host.coordinator.requests.add(request));
            resolve("here");
          };
          host.queues.admitRetry(request.start, ask, install, () => resolve("elsewhere"));
        },
        { admission: true, completion: { fail: reject }, label: `the retry of execution ${executionId}` },
      );
    };
    ask();
  });
}

/** Where the earlier attempt's durable facts end (see the table above). */
export function planRetry(row: ExecutionRow, steps: readonly StoredStep[]): RetryPlan {
  for (let index = steps.length - 1; index >= 0; index -= 1) {
    const step = steps[index]!;
    const resumeFromSeq = step.seq;
    switch (step.kind) {
      case "tool_results":
      case "provider_barrier":
        return { status: "active", phase: "calling_llm", resumeFromSeq };
      case "tool_barrier": {
        const calls = (step.payload as { calls?: unknown } | null)?.calls;
        return {
          status: "active",
          phase: "dispatching_tools",
          resumeFromSeq,
          toolBatch: Array.isArray(calls) ? (calls as ToolCallRecord[]) : (row.metadata.toolBatch ?? []),
        };
      }
      case "approval_decided":
        if (row.metadata.approval !== undefined) return { status: "active", phase: "resuming", resumeFromSeq };
        break;
      case "approval_requested":
        if (typeof row.approvalRequest === "object" && row.approvalRequest !== null) return { status: "suspended", phase: "suspended", resumeFromSeq };
        break;
      default:
        break;
    }
  }
  throw new RetryRefusedError(
    `execution ${row.executionId} has no durable barrier to continue from (it ended before its first model call: ${row.error?.code ?? "no error recorded"}); start a new execution instead`,
    { executionId: row.executionId, agentId: row.agentId, reason: "no_barrier" },
  );
}

/** Coordinator hook: a retry's row is installed (its admission held); the
 * store reopens it, then it continues as a recovered one (`proceed`).
 * A reopen that failed is read back (a store failure may have committed,
 * docs/decisions/0020): the row reopened → it continues; the row still as
 * it was → the continuation is refused (the core holds the execution) and
 * it is released at once, the retry failing with the store's error; the
 * read failing too → it stays held, and `env.recover()` reads the row and
 * resolves it. */
export function reopenInstalled(coordinator: CoordinatorCalls, entry: ExecutionEntry, request: RecoveryRequest, handle: number, proceed: () => void): void {
  const reopen = request.reopen!;
  request.reopen = undefined;
  const reopened = request.row;
  /** `unchanged`: the row as read back, still as it was — observers that
   * attached meanwhile (`env.wait`, a cancel) are settled from it. */
  const hold = (refusal: PhronomyError, unchanged: ExecutionRow | undefined): void =>
    coordinator.post(() => {
      request.error = refusal;
      entry.storeError = refusal;
      const observers = unchanged === undefined ? [] : entry.waiters.splice(0);
      coordinator.apply(M.ContinueRecovered, entry.slot, entry.generation, reopened.revision, Continuation.None, 0, handle);
      if (unchanged === undefined) return;
      coordinator.apply(M.DischargeRecovery, entry.slot, entry.generation);
      for (const observer of observers) settleFromRow(observer, reopened.executionId, unchanged, coordinator.settings);
    });
  // A submission refused on the spot (the offload full) is a failure like any other.
  const landed = (): void => {
    request.onReopened?.();
    coordinator.post(proceed);
  };
  new Promise((resolve) => resolve(reopen())).then(landed, (error: unknown) => {
    const refusal = asPhronomyError(error, "STORE");
    coordinator.settings.store.getExecution(reopened.executionId).then(
      (row) => {
        const committed = row !== undefined && row.revision === reopened.revision && row.status === reopened.status && row.phase === reopened.phase;
        if (committed) return landed();
        // Nothing was written: the retry is refused, the row as it was. The
        // store's own refusal (a replaced turn, decision 0070) is told as it is.
        if (refusal instanceof RetryRefusedError) return hold(refusal, row);
        const moved = refusal instanceof ExecutionRehydrationRequiredError;
        hold(
          new RetryRefusedError(
            `execution ${reopened.executionId} was not retried: ${moved ? "its row moved on meanwhile" : "the store failed while reopening it"} (${refusal.message}); its row is unchanged${moved ? "" : " — retry again"}`,
            {
              executionId: reopened.executionId,
              agentId: reopened.agentId,
              reason: moved ? "moved" : "store_failed",
              cause: refusal,
            },
          ),
          row,
        );
      },
      () => hold(refusal, undefined),
    );
  });
}

/** The owner's side of a retry filed in the inbox (docs/decisions/0026):
 * undefined once the reopen committed (here, or by a former owner that
 * claimed it and died: the row is past the filed revision), or the
 * refusal a local `env.retry` would have given. */
export async function applyFiledRetry(host: RetryHost, executionId: string, filedRevision: number): Promise<PhronomyError | undefined> {
  try {
    const row = await host.store.getExecution(executionId);
    if (row !== undefined && row.revision > filedRevision) return undefined;
    return await new Promise<PhronomyError | undefined>((resolve) => {
      const run = retryById(host, executionId, {}, () => resolve(undefined));
      run.result.then(
        () => resolve(undefined),
        (error: unknown) => resolve(asPhronomyError(error, "INTERNAL")),
      );
    });
  } catch (error) {
    return asPhronomyError(error, "INTERNAL");
  }
}

/** The timeline with each step's attempt (1, then 2 after the first
 * `retried` step, …). */
export function withAttempts(steps: readonly StoredStep[]): (StoredStep & { readonly attempt: number })[] {
  let attempt = 1;
  return steps.map((step) => {
    if (step.kind === "retried") attempt = Number((step.payload as { attempt?: unknown } | null)?.attempt ?? attempt + 1);
    return { ...step, attempt };
  });
}
