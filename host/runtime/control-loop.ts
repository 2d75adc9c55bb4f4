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

import { RuntimeShutdownError } from "../errors.js";

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

type LoopState = "open" | "draining" | "closed";

/** Messages queued at most; past it the loop is being flooded by a bug, not
 * by load (each in-flight operation posts a bounded number of messages). */
const MAILBOX_MESSAGES_MAX = 1_000_000;

export class ControlLoop {
  private readonly mailbox: (() => void)[] = [];
  private head = 0;
  private scheduled = false;
  private running = false;
  private state: LoopState = "open";

  constructor(private readonly reportError: (error: unknown) => void) {}

  /** Queues a message. Returns false (and fails the completion) when the
   * loop refused it. */
  post(message: () => void, options: PostOptions = {}): boolean {
    const refused = this.state === "closed" || (this.state === "draining" && options.admission === true);
    if (refused || this.mailbox.length - this.head >= MAILBOX_MESSAGES_MAX) {
      options.completion?.fail(new RuntimeShutdownError(options.label ?? "a control message"));
      return false;
    }
    this.mailbox.push(message);
    if (!this.scheduled && !this.running) {
      this.scheduled = true;
      queueMicrotask(() => this.drain());
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

  /** Refuse admissions from now on; completions are still accepted. */
  beginDraining(): void {
    if (this.state === "open") this.state = "draining";
  }

  /** Refuse everything from now on. */
  close(): void {
    this.state = "closed";
  }

  private drain(): void {
    this.scheduled = false;
    this.running = true;
    try {
      while (this.head < this.mailbox.length) {
        const message = this.mailbox[this.head]!;
        this.mailbox[this.head] = noop;
        this.head += 1;
        try {
          message();
        } catch (error) {
          this.reportError(error);
        }
      }
    } finally {
      this.mailbox.length = 0;
      this.head = 0;
      this.running = false;
    }
  }
}

function noop(): void {}
