// A suspended execution is a row, not an object graph (docs/decisions/0066).
// Once the core says an execution is at rest (`executionAtRest`: suspended,
// its admission suspended, nothing under way) and nothing of it lives only
// in this process (an AbortSignal, an approval listener, an output
// guardrail given to its start; a listener failure not yet recorded), the
// coordinator lets go of its `ExecutionEntry` (`letGo`): what stays is the
// core's record and the dormant index (dormant-executions.ts).
//
// The one way back in: any path that finds it — an effect of the core
// naming its slot, `entryById` (a decision, a cancel, `env.wait`, a retry,
// a recovery pass), the conversation's executions (an interrupt, a
// superseded suspension) — gets an entry rebuilt at once around the core's
// record (`wake`: bare, its Runs' tails back), and the paths that read what
// only the row holds (the pending approval, the start's input and durable
// options) wait for it to be read back (`whenRead`), as recovery reads a
// suspended execution (`startOf`, `restoreSuspension`). The row is used
// only if it still shows the suspension the core holds (its revision):
// a row that moved on is the superseded-suspension path's to handle.

import type { ControlCore } from "../core/control-core.js";
import type { ExecutionRow } from "../store/records.js";
import type { ExecutionStore } from "../store/store.js";
import type { DormantExecutions } from "./dormant-executions.js";
import type { ApprovalRequest } from "./events.js";
import type { Logger } from "./options.js";
import { startOf } from "./recovery.js";
import { ExecutionEntry, type AgentEntry, type RequestTable } from "./requests.js";
import { Waiter } from "./run.js";

/** What letting go and waking need of the coordinator. */
export interface RehydrationHost {
  readonly settings: { readonly core: ControlCore; readonly store: ExecutionStore; readonly logger: Logger };
  readonly requests: RequestTable;
  readonly dormant: DormantExecutions;
  post(message: () => void): void;
  /** The agent entry registered in the core's agent slot. */
  agentAt(slot: number): AgentEntry | undefined;
  /** Whether `entry` is the one in the tables for its slot now. */
  holds(entry: ExecutionEntry): boolean;
  /** Puts `entry` in the tables (by slot and by id). */
  install(entry: ExecutionEntry): void;
  /** Takes `entry` out of the tables. */
  uninstall(entry: ExecutionEntry): void;
  /** `entry` was let go of: its conversation may be too (docs/decisions/0092). */
  executionLetGo(entry: ExecutionEntry): void;
}

/** Lets go of a suspended execution at rest, keeping only its index entry
 * and the tails of Runs still waiting; false when something of it lives
 * only here, or the core says it is not at rest. */
export function letGo(host: RehydrationHost, entry: ExecutionEntry): boolean {
  if (!host.holds(entry) || !entry.suspended || !host.settings.core.executionAtRest(entry.slot)) return false;
  if (!heldOnlyByTheRow(entry) || host.requests.resumeOf(entry.executionId) !== undefined) return false;
  const tails = entry.waiters.map((waiter) => waiter.tail());
  // A Run whose events have not ended (or an exact observer) is not a tail.
  if (tails.some((tail) => tail instanceof Waiter)) return false;
  host.uninstall(entry);
  host.dormant.add(entry.slot, entry.executionId, tails);
  host.executionLetGo(entry);
  return true;
}

/** Nothing of the suspended execution lives only in this process: what
 * a resumed session reads of its start, the row holds too (`startOf`). */
function heldOnlyByTheRow(entry: ExecutionEntry): boolean {
  if (entry.session !== undefined || entry.span !== undefined || entry.terminalWatchers.length > 0) return false;
  if (entry.cancelById !== undefined || entry.recoveredFrom !== undefined || entry.resumeRow !== undefined) return false;
  if (entry.resumeReason !== undefined || entry.resumeSignal !== undefined) return false;
  if (entry.storeError !== undefined || entry.endedWith !== undefined || entry.callbackFailure !== undefined) return false;
  const { signal, approvalListener, outputGuardrail, approvalPolicy } = entry.start.options;
  if (signal !== undefined || approvalListener !== undefined || outputGuardrail !== undefined) return false;
  return approvalPolicy === undefined || approvalPolicy === "always" || approvalPolicy === "never";
}

/** Rebuilds the entry of the dormant execution in `slot`, bare, and
 * starts reading its row back (`read`; not on close, when only its Runs'
 * tails are told); undefined when the slot is not dormant. */
export function wake(host: RehydrationHost, slot: number, read = true): ExecutionEntry | undefined {
  const identity = host.settings.core.executionIdentity(slot);
  const agent = identity === undefined ? undefined : host.agentAt(identity.agentSlot);
  const executionId = host.dormant.idAt(slot);
  if (executionId === undefined || identity === undefined || agent === undefined) return undefined;
  const taken = host.dormant.take(slot);
  const bare: ExecutionEntry["start"] = { type: "start", agent, input: "", options: noOptions, deadline: undefined, executionId };
  const entry = new ExecutionEntry(slot, identity.generation, executionId, agent, bare);
  entry.suspended = true;
  entry.bare = true;
  entry.waiters = taken?.waiters ?? [];
  host.install(entry);
  if (read) void readBack(host, entry);
  return entry;
}

/** Reads the row of a bare entry back (once at a time): settles after the
 * entry was filled on the loop, or rejects with the store's error (the
 * entry stays bare: the next path that needs the row reads it again). */
function readBack(host: RehydrationHost, entry: ExecutionEntry): Promise<void> {
  if (entry.rowRead !== undefined) return entry.rowRead;
  const read = host.settings.store.getExecution(entry.executionId).then(
    (row) =>
      new Promise<void>((resolve) =>
        host.post(() => {
          entry.rowRead = undefined;
          if (entry.bare && host.holds(entry)) fill(host, entry, row);
          resolve();
        }),
      ),
    (error: unknown) => {
      entry.rowRead = undefined;
      throw error;
    },
  );
  read.catch(() => undefined);
  entry.rowRead = read;
  return read;
}

/** Fills a bare entry from its row, if the row still shows the suspension
 * the core holds; else it stays without a pending approval (the core
 * refuses a decision on it, and a recovery pass releases it as superseded). */
function fill(host: RehydrationHost, entry: ExecutionEntry, row: ExecutionRow | undefined): void {
  entry.bare = false;
  // Woken by a path that does not let it go again itself (an effect, an
  // existence check): let go of later if it is still at rest then. Not at
  // once: a path waiting for this read (`whenRead`) runs first.
  setTimeout(() => host.post(() => letGo(host, entry)), letGoAgainAfterMs).unref?.();
  const revision = host.settings.core.executionIdentity(entry.slot)?.revision;
  if (row === undefined || row.status !== "suspended" || row.revision !== revision) {
    host.settings.logger.debug?.(
      `[phronomy] execution ${entry.executionId}, suspended here, was read back at ${row === undefined ? "no row" : `${row.status} revision ${row.revision}`} (the core holds revision ${revision ?? "none"})`,
    );
    return;
  }
  entry.start = startOf(entry.agent, row);
  restoreSuspension(entry, row);
  entry.filledFrom = row;
}

/** A suspended execution's entry from its row (recovery installs one so,
 * and a bare entry is filled so): the pending approval, and of the start
 * only what a resumed session reads. */
export function restoreSuspension(entry: ExecutionEntry, row: ExecutionRow): void {
  entry.suspended = true;
  entry.approvalRequest = row.approvalRequest as unknown as ApprovalRequest;
  entry.keepForResume();
}

/** Runs `then` on the loop once the entry's row was read back, if it is
 * bare, and lets the entry go again afterwards if it is still at rest;
 * false (nothing deferred) when it is not bare. `fail`: the read failed. */
export function whenRead(host: RehydrationHost, entry: ExecutionEntry, then: () => void, fail: (error: unknown) => void): boolean {
  if (!entry.bare) return false;
  readBack(host, entry).then(
    () =>
      host.post(() => {
        then();
        host.post(() => letGo(host, entry));
      }),
    fail,
  );
  return true;
}

/** How long an entry read back stays before it is let go of again, if no
 * path let it go of itself: a decision usually follows a read of the
 * pending approval within this. */
const letGoAgainAfterMs = 1_000;

/** The options of a start rebuilt bare. */
const noOptions = Object.freeze({});
