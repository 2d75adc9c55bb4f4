// Settling a waiter from an execution's durable row, for `env.wait` on an
// execution that is not live in this environment: its outcome when it
// ended, ApprovalRequiredError when it is suspended for approval (SPEC §6.3,
// docs/decisions/0018).

import { ExecutionRehydrationRequiredError, PhronomyError } from "../errors.js";
import { errorFromRecord } from "../error-records.js";
import type { ExecutionRow } from "../store/records.js";
import type { ApprovalRequest, HandoffRequest } from "./events.js";
import type { RunResult, Waiting } from "./run.js";
import { emitToWaiter, rejectSuspendedObserver, resolveWaiter, settleWaiterWithError, type DeliverySettings } from "./delivery.js";

export function settleFromRow(waiter: Waiting, executionId: string, row: ExecutionRow | undefined, settings: DeliverySettings): void {
  if (!row) {
    settleWaiterWithError(waiter, new PhronomyError("INVALID_INPUT", `no execution ${executionId} in this store`, { executionId }), settings);
    return;
  }
  // The row is there: its id is the Run's, however the execution ended
  // (a keyed start following a failed one answers with the id, not the
  // execution's stored error: seed 4166796260).
  waiter.knowExecutionId(executionId);
  const context = { executionId, agentId: row.agentId };
  if (row.status === "suspended") {
    rejectSuspendedObserver(waiter, context, (row.approvalRequest ?? undefined) as unknown as ApprovalRequest | undefined, settings);
    return;
  }
  if (row.status !== "terminal") {
    settleWaiterWithError(
      waiter,
      new ExecutionRehydrationRequiredError(`execution ${executionId} is ${row.status} but not live in this environment`, context),
      settings,
    );
    return;
  }
  if (row.outcome === "completed" || row.outcome === "handed_off") {
    const handoff = row.outcome === "handed_off" ? (row.metadata.handoff as unknown as HandoffRequest | undefined) : undefined;
    // The terminal event a live run would have heard.
    if (row.outcome === "completed") emitToWaiter(waiter, { type: "done", executionId, output: row.output, usage: row.usage }, settings);
    else if (handoff) emitToWaiter(waiter, { type: "handoff", executionId, handoff }, settings);
    // Under the callback-error policy, as a live Run (decision 0056).
    const base = { executionId, agentId: row.agentId, usage: row.usage };
    const result: RunResult =
      row.outcome === "completed"
        ? { ...base, outcome: "completed", output: row.output }
        : { ...base, outcome: "handed_off", output: null, ...(handoff ? { handoff } : {}) };
    resolveWaiter(waiter, result, row.outcome === "completed" ? "done" : "handoff", settings);
    return;
  }
  const error = row.error
    ? errorFromRecord(row.error, context)
    : new PhronomyError("INTERNAL", `execution ${executionId} ended ${row.outcome ?? "without an outcome"}`, context);
  settleWaiterWithError(waiter, error, settings);
}
