// The events an execution streams (SPEC §6.1) to `onEvent` and to
// `run.events`. Progress events report the model and tool calls as they
// happen; one terminal event ends each Run's stream: the execution ended
// (`done`, `error`, `timeout`, `cancelled`, `handoff`) or suspended
// (`approval_required`: the resume's Run carries the rest,
// docs/decisions/0018).

import type { Json, UsageTotals } from "../store/records.js";
import type { PhronomyError } from "../errors.js";
import type { WaitKind } from "../words.js";

/** One event of an execution, told by its `type`: progress (model and tool
 * calls, retries, streamed text), then one terminal event (`done`, `error`,
 * `timeout`, `cancelled`, `approval_required`, `handoff`). */
export type ExecutionEvent =
  | { readonly type: "model_call_started"; readonly executionId: string; readonly callId: string; readonly turn: number }
  | { readonly type: "model_call_finished"; readonly executionId: string; readonly callId: string; readonly usage: UsageTotals; readonly toolCalls: number }
  | {
      readonly type: "model_call_retrying";
      readonly executionId: string;
      readonly callId: string;
      readonly attempt: number;
      readonly delayMs: number;
      readonly statusCode: number | undefined;
      readonly message: string;
    }
  | {
      readonly type: "tool_call_retrying";
      readonly executionId: string;
      readonly callId: string;
      readonly toolName: string;
      readonly attempt: number;
      readonly delayMs: number;
      readonly message: string;
    }
  | { readonly type: "text_delta"; readonly executionId: string; readonly callId: string; readonly delta: string }
  | { readonly type: "tool_call_started"; readonly executionId: string; readonly callId: string; readonly toolName: string; readonly idempotencyKey: string }
  | { readonly type: "tool_call_finished"; readonly executionId: string; readonly callId: string; readonly toolName: string; readonly isError: boolean }
  | { readonly type: "done"; readonly executionId: string; readonly output: Json; readonly usage: UsageTotals }
  | { readonly type: "error"; readonly executionId: string | undefined; readonly error: PhronomyError }
  | { readonly type: "timeout"; readonly executionId: string | undefined; readonly error: PhronomyError }
  | { readonly type: "cancelled"; readonly executionId: string | undefined; readonly error: PhronomyError }
  | { readonly type: "approval_required"; readonly executionId: string; readonly request: ApprovalRequest }
  | { readonly type: "handoff"; readonly executionId: string; readonly handoff: HandoffRequest };

/** The `type` of an `ExecutionEvent`. */
export type ExecutionEventType = ExecutionEvent["type"];

/** The event types that end a Run's stream. */
export const TERMINAL_EVENT_TYPES: ReadonlySet<ExecutionEventType> = new Set(["done", "error", "timeout", "cancelled", "approval_required", "handoff"]);

/** Terminal events that end the execution itself with a result: only a
 * listener throwing on one of these fails the task under `fail_task` (the
 * seed's rule; a throw on progress or `approval_required` is reported). */
export const OUTCOME_EVENT_TYPES: ReadonlySet<ExecutionEventType> = new Set(["done", "handoff"]);

/** A pending approval: the tool calls that wait for a human decision. */
export interface ApprovalRequest {
  /** What `agent.resume` names to decide this request (a later request of
   * the same execution has another). */
  readonly approvalId: string;
  /** The suspended execution. */
  readonly executionId: string;
  /** Its agent (conversation) id. */
  readonly agentId: string;
  /** The tool calls of the batch, with the arguments the model gave, and
   * the reason the definition's `toolApproval` gave for asking (its
   * `{ type: "user-approval", reason }`; the chat stream shows it as the
   * approval's `requestReason`). */
  readonly toolCalls: readonly { readonly callId: string; readonly toolName: string; readonly input: Json; readonly reason?: string }[];
  /** sha256 of the whole tool batch (call ids, tools, arguments): the
   * approval is bound to it, so a changed argument cannot be approved. */
  readonly argumentsHash: string;
  /** When the approval was asked for (ms since the epoch). */
  readonly requestedAt: number;
  /** `approval` (absent: an approval, as before) or `input`: a typed wait
   * of a `humanInput()` tool, resumed with `{ waitId: approvalId, value }`
   * (docs/decisions/0075); `event`: a keyed wait (docs/decisions/0077);
   * `child`: waits for its child execution (docs/decisions/0079); `timer`:
   * a `timer()` tool's call, fired by the clock or by
   * `{ waitId, fire: true }` (docs/decisions/0076). */
  readonly kind?: WaitKind;
  /** An event wait's key (`waitForEvent()`): `env.signal(key, payload)`
   * resumes it (docs/decisions/0077). */
  readonly key?: string;
  /** An event wait's `timeoutMs` (its due time is `dueAt`). */
  readonly timeoutMs?: number;
  /** When the wait is due (ms since the epoch): a timer fires then (its
   * call's result `{ firedAt }`), a typed wait or an event wait given
   * `timeoutMs` ends then (`{ timedOut: true }`). Absent: no due time
   * (docs/decisions/0076). */
  readonly dueAt?: number;
  /** A typed wait's response schema (an event wait's payload schema) as
   * JSON Schema, for a form (when the schema converts). */
  readonly responseSchema?: Json;
  /** Calls of the same turn a typed wait holds back: told to the model as
   * declined once the value is given (decision 0075). */
  readonly declinedCalls?: readonly string[];
  /** A wait of kind `child` (an `agentTool()` call, decision 0079): the
   * child execution it waits for. Its end resumes the wait; a person cannot. */
  readonly child?: ChildWait;
}

/** The child execution a `child` wait names (decision 0079). */
export interface ChildWait {
  /** The child's execution id: derived from the parent's execution and
   * call ids, so every (re)start of the child is the same execution. */
  readonly executionId: string;
  /** The child's conversation (agent id). */
  readonly conversationId: string;
  /** The child's definition name. */
  readonly definition: string;
  /** The child's input. */
  readonly input: string;
}

/** What a handed-off execution carries to its target agent. */
export interface HandoffRequest {
  /** The agent that handed off. */
  readonly fromAgentId: string;
  /** Its execution, which ended `handed_off`. */
  readonly fromExecutionId: string;
  /** The agent to start with it (`agent.startFromHandoff`). */
  readonly targetAgentId: string;
  /** The handoff tool call that decided it. */
  readonly callId: string;
  /** What the handoff tool was called with. */
  readonly input: Json;
  /** Why, in the model's words (the tool call's `reason`). */
  readonly reason: string;
}

/** A start's or resume's `onEvent`: called with each event, in order. It
 * may be async: a promise it returns that rejects is reported as a throw
 * would be (the callback-error policy), never left unhandled. */
export type EventListener = (event: ExecutionEvent) => void;

/** Events a stream keeps for a reader that has not started reading: a run
 * nobody iterates (the common case: only `result` is awaited) must not
 * accumulate every event of a long execution, or of 10,000 suspended ones.
 * Past it, the oldest unread events are dropped. */
export const UNREAD_EVENTS_MAX = 64;

/** The async-iterable side of `run.events`: buffers events until read (at
 * most UNREAD_EVENTS_MAX before the first read), ends after the terminal
 * event (or when the run settles without one). */
export class EventStream implements AsyncIterable<ExecutionEvent> {
  private readonly buffered: ExecutionEvent[] = [];
  private readonly readers: ((result: IteratorResult<ExecutionEvent>) => void)[] = [];
  private ended = false;
  private reading = false;

  push(event: ExecutionEvent): void {
    if (this.ended) return;
    const reader = this.readers.shift();
    if (reader) reader({ value: event, done: false });
    else {
      this.buffered.push(event);
      if (!this.reading && this.buffered.length > UNREAD_EVENTS_MAX) this.buffered.shift();
    }
    if (TERMINAL_EVENT_TYPES.has(event.type)) this.end();
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    for (const reader of this.readers.splice(0)) reader({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterator<ExecutionEvent> {
    this.reading = true;
    return {
      next: () => {
        const event = this.buffered.shift();
        if (event) return Promise.resolve({ value: event, done: false });
        if (this.ended) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => this.readers.push(resolve));
      },
      return: () => {
        this.end();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
