// `env.cancel(executionId, { reason })` (issue 12, docs/decisions/0026):
// cancel an execution by id from any process, and settle with how it ended.
//
// Where the cancel goes:
// * live in this process — a running execution's session is cancelled as
//   its AbortSignal would be (work in flight finishes, then the quiescent
//   terminal `failed` / CANCELLED); a suspended one is ended by the core
//   (`CancelSuspended`, `cancel-commit.ts`);
// * a row that says `queued` (the durable queue of the busy policy) — the
//   one dispatch point `cancelQueued` below;
// * any other unfinished row: the core decides (`byIdVerdict`, source
//   `Cancel`, by-id-placement.ts) — filed in the approval inbox as a
//   decision of kind `cancel` for the process that runs it (a SQLite
//   visitor, or a PostgreSQL process not holding the agent's lease), which
//   applies it as above; refused until its recovery installs it here; or
//   ended here when nothing will ever run it (`cancelDormant`).
//
// Rules kept here:
// * The answer is read from the durable row once the execution ended:
//   `outcome` is `cancelled`, or how it ended first when it finished before
//   the cancel took (a cancel never turns a committed outcome into another).
// * An unknown id is ExecutionNotFoundError, an execution that had already
//   ended ExecutionEndedError naming its outcome; cancelling one that is
//   being cancelled (or ending) is not an error: it waits for the same end.
// * A start filed from this process and cancelled here (still filed, or
//   queued by its owner): its Run settles once the cancel committed, not
//   at its next read (docs/decisions/0047).
// * A running execution that suspends before the cancel reaches its session
//   is cancelled again, suspended (bounded rounds) — decided by the core
//   (`cancelRoundVerdict`, cancel-round.ts, decision 0110).
// * In the owner, an unfinished row nothing runs (its process died and its
//   agent is not defined here) is cancelled by writing its terminal commit
//   directly (`cancelDormant`): `phronomy cancel` on a crashed execution.

import {
  CancellationError,
  ExecutionEndedError,
  ExecutionNotFoundError,
  ExecutionRehydrationRequiredError,
  InvalidInputError,
  PhronomyError,
} from "../errors.js";
import { endedOutcomeOf } from "../store/cancel-filing.js";
import type { ExecutionRow, Json, OutcomeName, StoredError } from "../store/records.js";
import type { ExecutionStore } from "../store/store.js";
import { AdmissionVerdict, MessageKind as M } from "../../assembly/abi.js";
import type { ByIdPlacement } from "./by-id-placement.js";
import { judgeCancelRound } from "./cancel-round.js";
import type { ControlLoop } from "./control-loop.js";
import type { Coordinator } from "./coordinator.js";
import type { ExecutionEntry } from "./requests.js";
import { Waiter } from "./run.js";
import { rejectUnknownKeys } from "./options.js";
import { asPhronomyError } from "./session.js";

/** What `env.cancel` takes. */
export interface CancelOptions {
  /** Why: kept in the execution's error (`details.reason`) and message. */
  readonly reason?: string;
}

/** How a cancelled (or already ending) execution ended. */
export interface CancelResult {
  /** The execution. */
  readonly executionId: string;
  /** Its agent (conversation) id. */
  readonly agentId: string;
  /** `cancelled`, or the outcome it reached before the cancel took. */
  readonly outcome: "cancelled" | Exclude<OutcomeName, "suspended">;
  /** The error it ended with (`CANCELLED` with the reason, or its own). */
  readonly error: StoredError | null;
  /** Its output, when it completed before the cancel took. */
  readonly output: Json;
}

/** What `env.cancel` needs of its environment. */
export interface CancelHost {
  readonly coordinator: Coordinator;
  readonly loop: ControlLoop;
  readonly store: ExecutionStore;
  /** Where the cancel of this unfinished row not live here goes: the
   * core's verdict (source `Cancel`) on the facts read for its
   * conversation — whether it is live here or its definition is defined
   * here (its recovery installs the row; docs/decisions/0024) among them. */
  placement(row: ExecutionRow): Promise<ByIdPlacement>;
  /** Cancels a message still in its conversation's queue
   * (docs/decisions/0025): false when it left the queue meanwhile. */
  cancelQueued(executionId: string, reason: string | undefined): Promise<boolean>;
  /** An execution's row, or a queued message's as status `queued`. */
  readRow(executionId: string): Promise<ExecutionRow | undefined>;
  /** Cancels a start filed for another process and not claimed yet
   * (docs/decisions/0031); `claimed`: its owner is starting it now. */
  cancelFiledStart?(
    executionId: string,
    reason: string | undefined,
  ): Promise<{ readonly agentId: string; readonly state: "cancelled" | "claimed" | "settled" } | undefined>;
  /** A queued message this process cancelled, its terminal row read: a
   * Run here following it (a start filed here and queued by its owner)
   * settles now (docs/decisions/0047). */
  cancelledQueued?(row: ExecutionRow): void;
}

export const CANCEL_REASON_LENGTH_MAX = 1_000;

export function checkCancel(executionId: unknown, options: unknown): asserts options is CancelOptions {
  if (typeof executionId !== "string" || executionId.length === 0) {
    throw new InvalidInputError(`env.cancel(executionId): executionId must be a non-empty string, got ${JSON.stringify(executionId)}`);
  }
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new InvalidInputError(`env.cancel(executionId, options): options must be an object { reason? }, got ${JSON.stringify(options)}`, { executionId });
  }
  rejectUnknownKeys(options, ["reason"], "env.cancel(options)");
  const { reason } = options as CancelOptions;
  if (reason !== undefined && (typeof reason !== "string" || reason.length > CANCEL_REASON_LENGTH_MAX)) {
    throw new InvalidInputError(
      `env.cancel(options): "reason" must be a string of at most ${CANCEL_REASON_LENGTH_MAX} characters, got ${JSON.stringify(reason)?.slice(0, 80)}`,
      { executionId },
    );
  }
}

/** Cancels the execution wherever it runs and reads how it ended. */
export async function cancelById(host: CancelHost, executionId: string, reason: string | undefined): Promise<CancelResult> {
  for (let round = 0; ; round += 1) {
    const waiter = new Waiter("", undefined, true);
    const queued = await dispatch(host, executionId, reason, waiter, round === 0);
    if (queued !== undefined) return queued;
    const settled = await waiter.result.then(
      () => undefined,
      (error: unknown) => asPhronomyError(error, "INTERNAL"),
    );
    // The core decides (`cancelRoundVerdict`, decision 0110): thrown,
    // answered from the terminal row, or — it suspended before the cancel
    // reached its session — the suspension cancelled in the next round.
    const step = await judgeCancelRound(host.coordinator.settings.core, executionId, settled, round, () => host.store.getExecution(executionId));
    if (step.kind === "answer") return resultOf(step.row);
    if (step.kind === "throw") throw step.error;
  }
}

/** Applies a cancel claimed from the inbox (the owner's side): undefined
 * once applied — or when the execution had already ended, which the filer
 * reads from the row — else the refusal. */
export async function applyFiledCancel(host: CancelHost, executionId: string, reason: string | undefined): Promise<PhronomyError | undefined> {
  try {
    const live = await onLoop(host, () => {
      const entry = host.coordinator.entryById(executionId);
      if (entry) cancelLive(host.coordinator, entry, reason, new Waiter("", undefined, true));
      return entry !== undefined;
    });
    if (live) return undefined;
    const row = await host.store.getExecution(executionId);
    if (row === undefined) return new ExecutionNotFoundError(executionId, "the cancel", host.store.path);
    if (row.status === "terminal") return undefined;
    return notLiveHere(row);
  } catch (error) {
    return asPhronomyError(error, "INTERNAL");
  }
}

/** Sends the cancel where the execution runs; `waiter` settles when it
 * ended. A queued row's cancel answers at once (its result). */
async function dispatch(host: CancelHost, executionId: string, reason: string | undefined, waiter: Waiter, first: boolean): Promise<CancelResult | undefined> {
  const live = await onLoop(host, () => {
    const entry = host.coordinator.entryById(executionId);
    if (entry) cancelLive(host.coordinator, entry, reason, waiter);
    return entry !== undefined;
  });
  if (live) return undefined;
  const row = await host.readRow(executionId);
  if (row === undefined) {
    const filed = await cancelFiled(host, executionId, reason);
    if (filed !== undefined) return filed;
    // Claimed by its owner meanwhile: its row (or queued message) follows.
    if ((await host.readRow(executionId)) !== undefined) return dispatch(host, executionId, reason, waiter, first);
    throw new ExecutionNotFoundError(executionId, "the cancel", host.store.path);
  }
  if (row.status === "terminal") {
    if (!first) return resultOf(row);
    throw new ExecutionEndedError(executionId, row.agentId, endedOutcomeOf(row.outcome, row.error), row.error, "the cancel");
  }
  if ((row.status as string) === "queued") {
    if (await host.cancelQueued(executionId, reason)) {
      const ended = await host.store.getExecution(executionId);
      if (ended?.status === "terminal") host.cancelledQueued?.(ended);
      // Cancelled while its enqueue was still being written: the terminal
      // row follows once that commit lands.
      return ended?.status === "terminal"
        ? resultOf(ended)
        : {
            executionId,
            agentId: row.agentId,
            outcome: "cancelled",
            error: new CancellationError({ executionId, agentId: row.agentId }, reason).toRecord(),
            output: null,
          };
    }
    // Taken from the queue meanwhile: it is live (or a row) now.
    return dispatch(host, executionId, reason, waiter, first);
  }
  const { verdict, inbox } = await host.placement(row);
  if (verdict === AdmissionVerdict.FileForOwner && inbox !== undefined) {
    inbox.fileCancel(row.agentId, executionId, reason, waiter);
    return undefined;
  }
  if (verdict === AdmissionVerdict.RefuseNotInstalled) throw notLiveHere(row);
  if (verdict !== AdmissionVerdict.RunHere) {
    throw new PhronomyError("INTERNAL", `the cancel of execution ${executionId} was placed ${verdict}, which a cancel never is`, { executionId });
  }
  await cancelDormant(host, row, reason);
  waiter.reject(new CancellationError({ executionId, agentId: row.agentId }, reason));
  return undefined;
}

/** How long a cancel waits for a filed start its owner claimed to appear
 * as a row (or a queued message) before calling it unknown. */
const claimedStartWaitMs = 10_000;

/** A start filed for another process and not run yet: cancelled in the
 * inbox (its filer's Run is told CANCELLED), or — claimed by its owner —
 * waited for until its row appears. Undefined: no such start, or its row
 * appeared. */
async function cancelFiled(host: CancelHost, executionId: string, reason: string | undefined): Promise<CancelResult | undefined> {
  if (host.cancelFiledStart === undefined) return undefined;
  const until = Date.now() + claimedStartWaitMs;
  for (;;) {
    const found = await host.cancelFiledStart(executionId, reason);
    if (found === undefined || found.state === "settled") return undefined;
    if (found.state === "cancelled") {
      const error = new CancellationError({ executionId, agentId: found.agentId }, reason);
      return { executionId, agentId: found.agentId, outcome: "cancelled", error: error.toRecord(), output: null };
    }
    if ((await host.readRow(executionId)) !== undefined || Date.now() > until) return undefined;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The owner's cancel of an unfinished row nothing runs (its process died,
 * and its agent is not defined here, so no recovery will install it): its
 * terminal commit is written at once, compare-and-set on the row as read
 * — if the row moved meanwhile, the next round reads it again. */
async function cancelDormant(host: CancelHost, row: ExecutionRow, reason: string | undefined): Promise<void> {
  const at = host.coordinator.settings.now();
  const error = new CancellationError({ executionId: row.executionId, agentId: row.agentId, ...(reason !== undefined ? { details: { reason } } : {}) }, reason);
  await host.store
    .run({
      type: "terminalCommit",
      executionId: row.executionId,
      expectedRevision: row.revision,
      outcome: "failed",
      output: null,
      error: error.toRecord(),
      usage: row.usage,
      approvalRequest: row.approvalRequest,
      handoff: null,
      steps: [{ kind: "note", at, payload: { cancelled: { reason: reason ?? null, while: `${row.status}, not running in any process` } } }],
      journal: [],
      at,
    })
    .catch((failure: unknown) => {
      if (!(failure instanceof ExecutionRehydrationRequiredError)) throw failure;
    });
}

/** On the loop: the cancel of an execution live here. */
function cancelLive(coordinator: Coordinator, entry: ExecutionEntry, reason: string | undefined, waiter: Waiter): void {
  if (coordinator.heldForRecovery(entry)) {
    throw new ExecutionRehydrationRequiredError(
      `execution ${entry.executionId} is held for recovery after a store failure: call env.recover() (it recovers the execution from its stored row), then cancel it`,
      { executionId: entry.executionId, agentId: entry.agent.id },
    );
  }
  if (entry.suspended) {
    const handle = coordinator.requests.add({ type: "cancel", waiter, executionId: entry.executionId, reason });
    coordinator.apply(M.CancelSuspended, entry.slot, entry.generation, handle);
    return;
  }
  const handle = coordinator.requests.add({ type: "attach", waiter });
  coordinator.apply(M.AttachWaiter, entry.slot, entry.generation, handle);
  entry.cancelById ??= reason ?? null;
  entry.session?.cancelById(reason);
}

function onLoop<T>(host: CancelHost, work: () => T): Promise<T> {
  return new Promise((resolve, reject) => {
    host.loop.post(
      () => {
        try {
          resolve(work());
        } catch (error) {
          reject(error);
        }
      },
      { completion: { fail: reject }, label: "a cancel by id" },
    );
  });
}

function notLiveHere(row: ExecutionRow): PhronomyError {
  return new ExecutionRehydrationRequiredError(
    `execution ${row.executionId} is ${row.status} in the store but not live in this process, which owns agent "${row.agentId}": its recovery has not installed it (define the agent, or call env.recover()), then cancel it`,
    { executionId: row.executionId, agentId: row.agentId },
  );
}

function resultOf(row: ExecutionRow): CancelResult {
  const outcome = endedOutcomeOf(row.outcome, row.error) as CancelResult["outcome"];
  return { executionId: row.executionId, agentId: row.agentId, outcome, error: row.error, output: row.output };
}
