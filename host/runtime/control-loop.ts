// The control loop: a run-to-completion mailbox. Every change of live state
// is a message applied here, one at a time, in the order posted (SPEC §3).
// A message posted while another runs is queued behind it; the queue drains
// in a microtask, so an offload completion is applied as soon as its promise
// settles.
//
// `post(message, { admission, completion })`: while the environment drains
// for shutdown, admission messages are refused; after it closed, every
// message is refused. A refused message's completion is failed with
// RuntimeShutdownError — never silently dropped.
//
// A message that makes the control core trap (CoreFailureError) stops the
// loop for good (docs/decisions/0023): the messages still queued are
// dropped and their completions failed with that error, every later post is
// refused with it, and `onCoreFailure` lets the environment fail every live
// waiter. Nothing is written: the durable rows are the next environment's to
// recover.

import { CoreFailureError, RuntimeShutdownError } from "../errors.js";

/** What a refused message must settle. */
export interface Completion {
  fail(error: Error): void;
}

export interface PostOptions {
  /** Start and Resume: refused while draining. */
  readonly admission?: boolean;
  /** Failed with RuntimeShutdownError when the message is refused. */
  readonly completion?: Completion;
  /** Names the message in the shutdown error. */
  readonly label?: string;
}

type LoopState = "open" | "draining" | "closed" | "failed";

/** Messages queued at most; past it the loop is being flooded by a bug, not
 * by load (each in-flight operation posts a bounded number of messages). */
const MAILBOX_MESSAGES_MAX = 1_000_000;

export class ControlLoop {
  private readonly mailbox: (() => void)[] = [];
  /** The completion of each queued message (same index), failed if the
   * loop stops before applying it. */
  private readonly completions: (Completion | undefined)[] = [];
  private head = 0;
  private scheduled = false;
  private running = false;
  private state: LoopState = "open";
  private failure: CoreFailureError | undefined;

  constructor(
    private readonly reportError: (error: unknown) => void,
    /** Called once, on the loop, when a message made the core trap. */
    private readonly onCoreFailure: (error: CoreFailureError) => void = () => undefined,
  ) {}

  /** Queues a message. Returns false (and fails the completion) when the
   * loop refused it. */
  post(message: () => void, options: PostOptions = {}): boolean {
    if (this.failure) {
      options.completion?.fail(this.failure);
      return false;
    }
    const refused = this.state === "closed" || (this.state === "draining" && options.admission === true);
    if (refused || this.mailbox.length - this.head >= MAILBOX_MESSAGES_MAX) {
      options.completion?.fail(new RuntimeShutdownError(options.label ?? "a control message"));
      return false;
    }
    this.mailbox.push(message);
    this.completions.push(options.completion);
    if (!this.scheduled && !this.running) {
      this.scheduled = true;
      // A resolved promise's reaction, not queueMicrotask: the same
      // microtask, without the AsyncResource Node makes for every
      // queueMicrotask (≈1% of a run's CPU in the profile of
      // docs/decisions/0043). `void`: the reaction cannot reject, since
      // drainLater catches everything (a reportError that threw is
      // rethrown from a microtask of its own, as an uncaught exception).
      void resolved.then(this.drainLater);
    }
    return true;
  }

  /** True while a message is being applied: live state may be touched only
   * then. */
  get applying(): boolean {
    return this.running;
  }

  get isDraining(): boolean {
    return this.state !== "open";
  }

  /** The core failure that stopped the loop, if one did. */
  get failed(): CoreFailureError | undefined {
    return this.failure;
  }

  /** Refuse admissions from now on; completions are still accepted.
   * `onQuiet` is called after every batch of messages while draining: a
   * message that changes what is live without applying anything to the
   * core (a retry's reopened row installed as suspended, seed 3389776446)
   * is seen by the drain too. */
  beginDraining(onQuiet?: () => void): void {
    if (this.state === "open") this.state = "draining";
    this.onQuiet = onQuiet;
  }

  private onQuiet: (() => void) | undefined;

  /** Refuse everything from now on. */
  close(): void {
    if (this.state !== "failed") this.state = "closed";
  }

  private readonly drainLater = (): void => {
    try {
      this.drain();
    } catch (error) {
      // Only a reportError that threw gets here: thrown as queueMicrotask
      // would have (an uncaught exception), not as a rejected promise.
      queueMicrotask(() => {
        throw error;
      });
    }
  };

  private drain(): void {
    this.scheduled = false;
    this.running = true;
    try {
      while (this.head < this.mailbox.length) {
        const message = this.mailbox[this.head]!;
        const completion = this.completions[this.head];
        this.mailbox[this.head] = noop;
        this.completions[this.head] = undefined;
        this.head += 1;
        try {
          message();
        } catch (error) {
          if (error instanceof CoreFailureError) {
            completion?.fail(error);
            this.stop(error);
          } else {
            this.reportError(error);
          }
        }
      }
    } finally {
      this.mailbox.length = 0;
      this.completions.length = 0;
      this.head = 0;
      this.running = false;
    }
    if (this.state === "draining") this.onQuiet?.();
  }

  /** The core trapped: refuse everything from now on, fail what is queued,
   * let the environment fail what is live. */
  private stop(error: CoreFailureError): void {
    if (this.failure) return;
    this.failure = error;
    this.state = "failed";
    const queued = this.completions.slice(this.head);
    this.mailbox.length = this.head;
    this.completions.length = this.head;
    for (const completion of queued) completion?.fail(error);
    try {
      this.onCoreFailure(error);
    } catch (failure) {
      this.reportError(failure);
    }
  }
}

function noop(): void {}

const resolved = Promise.resolve();
