// Delivering what the core decided to the application (SPEC §6.1, §6.3):
// events to every waiter's stream and listener, terminal outcomes to every
// waiter, the approval listener off the control loop, and the callback-error
// policy: a listener that throws (or, async, rejects) is reported, and its
// execution keeps the first failure for its terminal record; with policy
// `fail_task`, a throw on the event that ends the execution with a result
// (`done`, `handoff`) fails that waiter with StreamCallbackError (the
// seed's rule: progress events and `approval_required` are only reported).
//
// A suspension ends every waiter's events at `approval_required`; exact
// observers (`env.wait`) are rejected with ApprovalRequiredError, the
// others keep waiting for the real end (SPEC §6.3, docs/decisions/0018).

import { OutcomeType } from "../../assembly/abi.js";
import { ApprovalRequiredError, PhronomyError, StreamCallbackError } from "../errors.js";
import { OUTCOME_EVENT_TYPES, TERMINAL_EVENT_TYPES, type ApprovalRequest, type ExecutionEvent, type ExecutionEventType } from "./events.js";
import type { CallbackErrorPolicy, Logger } from "./options.js";
import type { ExecutionEntry } from "./requests.js";
import type { RunResult, Waiting } from "./run.js";

export interface DeliverySettings {
  readonly logger: Logger;
  readonly callbackErrorPolicy: CallbackErrorPolicy;
}

/** Told of a listener's failure (a throw, or the rejection of the promise
 * it returned), for the execution's terminal record. */
export interface ListenerFailures {
  listenerFailed(eventType: ExecutionEventType, error: unknown): void;
}

/** Sends one event to a waiter: its stream, then its listener; nothing
 * after the waiter's terminal event. A listener that returns a promise
 * (an async function) and rejects is one that threw (decision 0056). */
export function emitToWaiter(waiter: Waiting, event: ExecutionEvent, settings: DeliverySettings, failures?: ListenerFailures): void {
  if (waiter.eventsEnded) return;
  const terminal = TERMINAL_EVENT_TYPES.has(event.type);
  if (terminal) waiter.eventsEnded = true;
  waiter.events.push(event);
  const listener = waiter.listener;
  if (!listener) return;
  if (terminal) waiter.listener = undefined;
  let returned: unknown;
  try {
    returned = listener.call(waiter, event);
  } catch (error) {
    return listenerFailed(waiter, event.type, error, "threw", settings, failures);
  }
  if (!isPromiseLike(returned)) return;
  // Promise.resolve adopts the thenable; a `then` that throws rejects it.
  const settled = Promise.resolve(returned).then(
    () => undefined,
    (error: unknown) => listenerFailed(waiter, event.type, error, "rejected", settings, failures),
  );
  // Under fail_task the outcome waits for the listener of `done` / `handoff`.
  if (OUTCOME_EVENT_TYPES.has(event.type)) waiter.listenerPending = settled;
}

function listenerFailed(
  waiter: Waiting,
  eventType: ExecutionEventType,
  error: unknown,
  how: string,
  settings: DeliverySettings,
  failures: ListenerFailures | undefined,
): void {
  settings.logger.warn(`[phronomy] an event listener ${how} on "${eventType}": ${error instanceof Error ? error.message : String(error)}`);
  if (OUTCOME_EVENT_TYPES.has(eventType)) waiter.callbackError ??= { eventType, error };
  failures?.listenerFailed(eventType, error);
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return false;
  try {
    return typeof (value as { then?: unknown }).then === "function";
  } catch {
    return false; // a `then` getter that throws: nothing to wait for
  }
}

/** Tells an exact observer (`env.wait`) that the execution is suspended:
 * its `approval_required` event, then ApprovalRequiredError naming the
 * approval. */
export function rejectSuspendedObserver(
  waiter: Waiting,
  context: { readonly executionId: string; readonly agentId: string },
  request: ApprovalRequest | undefined,
  settings: DeliverySettings,
): void {
  if (waiter.settled) return;
  waiter.knowExecutionId(context.executionId);
  // Without the request no approval_required can be built: the rejection's
  // own `error` event is the terminal one.
  if (!request) return settleWaiterWithError(waiter, new ApprovalRequiredError(request, context), settings);
  emitToWaiter(waiter, { type: "approval_required", executionId: context.executionId, request }, settings);
  waiter.reject(new ApprovalRequiredError(request, context));
}

/** Sends one event to every waiter of the execution; the first listener
 * failure is kept for its terminal record (the seed's `callback_failure`). */
export function emitToEntry(entry: ExecutionEntry, event: ExecutionEvent, settings: DeliverySettings): void {
  for (const waiter of entry.waiters) emitToWaiter(waiter, event, settings, entry);
}

export function terminalEventType(error: PhronomyError): "error" | "timeout" | "cancelled" {
  if (error.code === "TIMEOUT") return "timeout";
  if (error.code === "CANCELLED") return "cancelled";
  return "error";
}

/** Rejects a waiter after telling its listener how the run ended. */
export function settleWaiterWithError(waiter: Waiting, error: PhronomyError, settings: DeliverySettings): void {
  if (waiter.settled) return;
  const type = terminalEventType(error);
  emitToWaiter(waiter, { type, executionId: error.executionId, error }, settings);
  waiter.reject(error);
}

/** The event that announces a result: `done`, or `handoff`. */
export function outcomeEventOf(result: RunResult): ExecutionEventType {
  return result.outcome === "handed_off" ? "handoff" : "done";
}

/** Resolves a Run under the callback-error policy: under fail_task it
 * waits for the listener of the outcome event and fails the Run with
 * StreamCallbackError if it threw or rejected (a live Run, and one that
 * follows an execution from the store: decision 0056). */
export function resolveWaiter(waiter: Waiting, result: RunResult, eventType: ExecutionEventType, settings: DeliverySettings): void {
  const pending = waiter.listenerPending;
  if (pending !== undefined && settings.callbackErrorPolicy === "fail_task") {
    waiter.listenerPending = undefined;
    void pending.then(() => resolveWaiter(waiter, result, eventType, settings));
    return;
  }
  if (waiter.callbackError && settings.callbackErrorPolicy === "fail_task") {
    waiter.reject(
      new StreamCallbackError(waiter.callbackError.eventType, waiter.callbackError.error, {
        executionId: result.executionId,
        agentId: result.agentId,
        details: { eventType },
      }),
    );
    return;
  }
  waiter.resolve(result);
}

/** DeliverOutcome: the terminal commit is durable; tell everyone. */
export function deliverOutcome(entry: ExecutionEntry, outcome: number, settings: DeliverySettings): void {
  const terminal = entry.session?.terminal;
  const usage = entry.session?.usage ?? { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
  const base = { executionId: entry.executionId, agentId: entry.agent.id, usage };
  switch (outcome as OutcomeType) {
    case OutcomeType.Completed: {
      const result: RunResult = { ...base, outcome: "completed", output: terminal?.output ?? null };
      emitToEntry(entry, { type: "done", executionId: entry.executionId, output: result.output, usage }, settings);
      for (const waiter of entry.waiters.splice(0)) resolveWaiter(waiter, result, "done", settings);
      entry.span?.end();
      return;
    }
    case OutcomeType.HandedOff: {
      const handoff = terminal?.handoff;
      const result: RunResult = { ...base, outcome: "handed_off", output: null, ...(handoff ? { handoff } : {}) };
      if (handoff) emitToEntry(entry, { type: "handoff", executionId: entry.executionId, handoff }, settings);
      for (const waiter of entry.waiters.splice(0)) resolveWaiter(waiter, result, "handoff", settings);
      entry.span?.end();
      return;
    }
    case OutcomeType.Suspended: {
      const request = terminal?.approvalRequest;
      if (!request) return;
      emitToEntry(entry, { type: "approval_required", executionId: entry.executionId, request }, settings);
      // Exact observers are told now; the others wait for the real end.
      const context = { executionId: entry.executionId, agentId: entry.agent.id };
      const observers = entry.waiters.filter((waiter) => waiter.observer);
      entry.waiters.splice(0, entry.waiters.length, ...entry.waiters.filter((waiter) => !waiter.observer));
      for (const observer of observers) rejectSuspendedObserver(observer, context, request, settings);
      const listener = entry.start.options.approvalListener;
      if (listener) callOffLoop(() => listener(request), settings, "approval listener");
      return;
    }
    default: {
      const error = terminal?.error ?? entry.endedWith ?? new PhronomyError("INTERNAL", `execution ${entry.executionId} ended without a recorded error`, base);
      entry.span?.fail(error);
      for (const waiter of entry.waiters.splice(0)) settleWaiterWithError(waiter, error, settings);
    }
  }
}

/** Runs an application callback after the current loop turn, reporting
 * what it throws or rejects with. */
function callOffLoop(callback: () => unknown, settings: DeliverySettings, what: string): void {
  setImmediate(() => {
    Promise.resolve()
      .then(callback)
      .catch((error: unknown) => {
        settings.logger.warn(`[phronomy] the ${what} failed: ${error instanceof Error ? error.message : String(error)}`);
      });
  });
}
