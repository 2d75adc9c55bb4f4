// The `Run` handle an application holds for one start or resume, and the
// waiter state behind it. A waiter is settled exactly once: resolved with
// the result, rejected with a typed error, or cancelled (rejected with
// CancellationError). Its events (stream and listener) end after its one
// terminal event, or when it settles: a start that suspends for approval
// hears `approval_required` last while its result waits for the real end
// (docs/decisions/0018).

import type { PhronomyError } from "../errors.js";
import type { Json, UsageTotals } from "../store/records.js";
import { EventStream, type EventListener, type ExecutionEvent, type HandoffRequest } from "./events.js";

/** How an execution ended well; every other end rejects `run.result`
 * with a typed `PhronomyError`. `OUTPUT` is the type of a completed
 * execution's output: the model's text, or the structured output's
 * schema type (`OutputOf`); a handed-off execution has none. */
export type RunResult<OUTPUT = Json> = CompletedRun<OUTPUT> | HandedOffRun;

/** What both ends of `RunResult` carry. */
interface RunResultBase {
  /** The execution. */
  readonly executionId: string;
  /** Its agent (conversation) id. */
  readonly agentId: string;
  /** Tokens used by every model call of the execution. */
  readonly usage: UsageTotals;
}

/** An execution that completed: its output. */
export interface CompletedRun<OUTPUT = Json> extends RunResultBase {
  readonly outcome: "completed";
  /** The model's final text, or the parsed object of structured output. */
  readonly output: OUTPUT;
  readonly handoff?: undefined;
}

/** An execution that handed off: start the target agent with `handoff`
 * (`agent.startFromHandoff`). */
export interface HandedOffRun extends RunResultBase {
  readonly outcome: "handed_off";
  readonly output: null;
  /** Absent only for a handoff recorded without its request. */
  readonly handoff?: HandoffRequest;
}

/** The handle `agent.start` and `agent.resume` return: the execution id,
 * its events and its result. Never throws: every failure rejects `result`. */
export interface Run<OUTPUT = Json> {
  /** Known once the execution is admitted and prepared. */
  readonly executionId: Promise<string>;
  /** Progress events, then one terminal event (`done`, `error`,
   * `timeout`, `cancelled`, `handoff`, or `approval_required` when the
   * execution suspends: the resume's Run carries the rest). */
  readonly events: AsyncIterable<ExecutionEvent>;
  /** The execution's final outcome. */
  readonly result: Promise<RunResult<OUTPUT>>;
}

/** A Run of an agent whose output type its definition says: the host
 * stores and parses the output as JSON, and structured output was
 * validated against the schema before it completed, so the type is the
 * definition's promise, not a cast of unknown data. */
export function typedRun<OUTPUT>(run: Run): Run<OUTPUT> {
  return run as unknown as Run<OUTPUT>;
}

/** What delivery needs of a waiter (`delivery.ts`): a live `Waiter`, or
 * the tail a suspended execution keeps of one (`Waiter.tail`). */
export interface Waiting {
  readonly observer: boolean;
  readonly settled: boolean;
  /** Set once the terminal event was delivered. */
  eventsEnded: boolean;
  listener: EventListener | undefined;
  callbackError: { readonly eventType: string; readonly error: unknown } | undefined;
  /** The promise an async listener returned on `done` or `handoff`,
   * until it settled: under `fail_task` the result waits for it. */
  listenerPending?: Promise<void> | undefined;
  readonly events: { push(event: ExecutionEvent): void };
  knowExecutionId(executionId: string): void;
  resolve(result: RunResult): void;
  reject(error: PhronomyError | Error): void;
  /** What a suspended execution keeps of it (`Waiter.tail`). */
  tail(): Waiting;
}

/** One waiter: the promises of a Run and the listener of its request.
 *
 * Its `result` promise is made when first read (docs/decisions/0066): a
 * promise that was never read has no reaction anyone could be waiting on,
 * so a suspended execution keeps only a weak reference to a Waiter whose
 * result nobody read — the Run itself, if the application still holds it,
 * settles it — and the strong tail (`WaiterTail`) of one whose result was
 * read (an `await run.result` may be reachable only through that promise). */
export class Waiter implements Run, Waiting {
  readonly executionId: Promise<string>;
  readonly events: EventStream = new EventStream();
  private resolveId!: (id: string) => void;
  private rejectId!: (error: Error) => void;
  private resultPromise: Promise<RunResult> | undefined;
  private resolveResult: ((result: RunResult) => void) | undefined;
  private rejectResult: ((error: Error) => void) | undefined;
  /** How it settled before its result was read. */
  private settlement: RunResult | Error | undefined;
  /** The weak tail a suspended execution keeps of it, if any: made strong
   * when the result is read after it (`WeakTail.hold`). */
  private weakTail: WeakTail | undefined;
  private idKnown = false;
  /** The first error this waiter's listener threw, for the callback-error
   * policy at settlement. */
  callbackError: { readonly eventType: string; readonly error: unknown } | undefined;
  listenerPending: Promise<void> | undefined;
  private settledWith: "pending" | "resolved" | "rejected" = "pending";
  /** Set once the terminal event was delivered: nothing more is streamed
   * to this waiter or its listener. */
  eventsEnded = false;

  /** `observer`: an exact observer (`env.wait`), rejected with
   * ApprovalRequiredError when the execution suspends (SPEC §6.3). */
  /** The application's listener; let go once the terminal event was
   * delivered (nothing more is sent to it), so that a run suspended for
   * days does not hold the closure (docs/decisions/0043). */
  listener: EventListener | undefined;

  constructor(
    readonly agentId: string,
    listener: EventListener | undefined,
    readonly observer = false,
  ) {
    this.listener = listener;
    this.executionId = new Promise((resolve, reject) => {
      this.resolveId = resolve;
      this.rejectId = reject;
    });
    // An application that only awaits one of the two must not crash the
    // process with an unhandled rejection from the other.
    this.executionId.catch(noop);
  }

  /** The execution's final outcome: made when first read, settled at once
   * if the execution already ended. */
  get result(): Promise<RunResult> {
    if (this.resultPromise !== undefined) return this.resultPromise;
    const settlement = this.settlement;
    this.settlement = undefined;
    const promise = new Promise<RunResult>((resolve, reject) => {
      if (settlement instanceof Error) reject(settlement);
      else if (settlement !== undefined) resolve(settlement);
      else {
        this.resolveResult = resolve;
        this.rejectResult = reject;
      }
    });
    promise.catch(noop);
    this.resultPromise = promise;
    // Read after its execution suspended: whatever awaits it may be
    // reachable only through this promise, so the execution holds it now.
    if (this.resolveResult !== undefined && this.rejectResult !== undefined) this.weakTail?.hold(this.resolveResult, this.rejectResult);
    this.weakTail = undefined;
    return promise;
  }

  /** Whether its result promise was made (read by someone). */
  get resultRead(): boolean {
    return this.resultPromise !== undefined;
  }

  get settled(): boolean {
    return this.settledWith !== "pending";
  }

  knowExecutionId(executionId: string): void {
    if (this.idKnown) return;
    this.idKnown = true;
    this.resolveId(executionId);
  }

  resolve(result: RunResult): void {
    if (this.settled) return;
    this.settledWith = "resolved";
    this.knowExecutionId(result.executionId);
    if (this.resolveResult !== undefined) this.resolveResult(result);
    else if (this.resultPromise === undefined) this.settlement = result;
    this.resolveResult = undefined;
    this.rejectResult = undefined;
    this.events.end();
  }

  reject(error: PhronomyError | Error): void {
    if (this.settled) return;
    this.settledWith = "rejected";
    if (!this.idKnown) {
      this.idKnown = true;
      this.rejectId(error);
    }
    if (this.rejectResult !== undefined) this.rejectResult(error);
    else if (this.resultPromise === undefined) this.settlement = error;
    this.resolveResult = undefined;
    this.rejectResult = undefined;
    this.events.end();
  }

  /** What an execution suspended for approval keeps of this waiter: only
   * the settling of its `result` (its events ended at `approval_required`
   * and its listener was let go). The Run itself — its id promise, its
   * event stream and the events it buffered — is then the application's
   * alone: an application that drops the Run frees it, one that keeps
   * `run.result` keeps just that promise (docs/decisions/0052). An exact
   * observer, or a waiter whose events have not ended, is kept whole. A
   * waiter whose result nobody read yet is kept weakly (`WeakTail`): if
   * the application still holds the Run, it may read it later and the
   * Run settles it; if not, nothing can (docs/decisions/0066). */
  tail(): Waiting {
    if (this.observer || !this.eventsEnded || this.settled || !this.idKnown || this.listener !== undefined) return this;
    if (this.resolveResult === undefined || this.rejectResult === undefined) return (this.weakTail ??= new WeakTail(this));
    return new WaiterTail(this.resolveResult, this.rejectResult, this.callbackError);
  }
}

/** What every tail is (`Waiter.tail`): its events ended and its listener
 * let go, so those are constants — accessors, not fields, so a tail keeps
 * only what settles its result. */
abstract class EndedTail implements Waiting {
  protected done = false;

  abstract readonly settled: boolean;
  abstract callbackError: { readonly eventType: string; readonly error: unknown } | undefined;
  abstract resolve(result: RunResult): void;
  abstract reject(error: PhronomyError | Error): void;

  get observer(): boolean {
    return false;
  }

  get eventsEnded(): boolean {
    return true;
  }

  set eventsEnded(_ended: boolean) {}

  get listener(): EventListener | undefined {
    return undefined;
  }

  set listener(_listener: EventListener | undefined) {}

  get events(): { push(event: ExecutionEvent): void } {
    return endedEvents;
  }

  knowExecutionId(): void {}

  tail(): Waiting {
    return this;
  }
}

/** A tail that holds its Waiter weakly (`Waiter.tail`): settles it if the
 * application still holds it; once collected, it is `gone`, and settled.
 * Held strongly from the moment the Waiter's result is read (`hold`). */
export class WeakTail extends EndedTail {
  private readonly weak: WeakRef<Waiter>;
  /** The settling of the result, once it was read (`hold`). */
  private held: { readonly resolve: (result: RunResult) => void; readonly reject: (error: Error) => void } | undefined;

  constructor(waiter: Waiter) {
    super();
    this.weak = new WeakRef(waiter);
  }

  /** The Waiter's result was read: its settling is kept (not the Run:
   * its stream and id promise stay the application's, as `WaiterTail`). */
  hold(resolve: (result: RunResult) => void, reject: (error: Error) => void): void {
    this.held = { resolve, reject };
  }

  private current(): Waiter | undefined {
    return this.weak.deref();
  }

  /** The Waiter was collected and its result never read: nothing can
   * observe its settling. */
  get gone(): boolean {
    return this.held === undefined && this.weak.deref() === undefined;
  }

  get settled(): boolean {
    return this.done || (this.current()?.settled ?? this.held === undefined);
  }

  get callbackError(): { readonly eventType: string; readonly error: unknown } | undefined {
    return this.current()?.callbackError;
  }

  set callbackError(error: { readonly eventType: string; readonly error: unknown } | undefined) {
    const waiter = this.current();
    if (waiter !== undefined) waiter.callbackError = error;
  }

  resolve(result: RunResult): void {
    if (this.done) return;
    this.done = true;
    const waiter = this.current();
    if (waiter !== undefined) waiter.resolve(result);
    else this.held?.resolve(result);
    this.held = undefined;
  }

  reject(error: PhronomyError | Error): void {
    if (this.done) return;
    this.done = true;
    const waiter = this.current();
    if (waiter !== undefined) waiter.reject(error);
    else this.held?.reject(error);
    this.held = undefined;
  }
}

/** The part of a Run's waiter a suspended execution keeps (`Waiter.tail`). */
class WaiterTail extends EndedTail {
  constructor(
    private readonly resolveResult: (result: RunResult) => void,
    private readonly rejectResult: (error: Error) => void,
    public callbackError: { readonly eventType: string; readonly error: unknown } | undefined,
  ) {
    super();
  }

  get settled(): boolean {
    return this.done;
  }

  resolve(result: RunResult): void {
    if (this.done) return;
    this.done = true;
    this.resolveResult(result);
  }

  reject(error: PhronomyError | Error): void {
    if (this.done) return;
    this.done = true;
    this.rejectResult(error);
  }
}

/** The events of a tail: ended, so nothing is ever pushed. */
const endedEvents = { push: noop };

function noop(): void {}
