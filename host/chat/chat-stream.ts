// `env.stream()`: an execution as the AI SDK's UI message stream, which a
// client can leave and resume at any chunk's position — in the process that
// runs the execution, in another one on the same store, or after a restart
// (docs/decisions/0036).
//
// The stream is the durable timeline, tailed: every chunk is translated
// from a stored step (`timeline-chunks.ts`), so a replay from any process
// yields the same chunks at the same positions, and a resumed stream
// continues exactly after the position it was given — no duplicate, no gap.
// What is not durable is the text a streaming model call produces before
// its answer is recorded; it goes out as it arrives, positioned inside the
// call (`S.tN`), and the recorded answer later sends only what the client
// has not seen.
//
// Rules kept here:
// * The store is read after every event of the execution heard in this
//   process (events follow the commits they report), and otherwise polled
//   with a backoff from `chatStreamPollMsMin` to `chatStreamPollMsMax`:
//   the execution may run in another process.
// * Streamed text is sent only for a model call whose start this process
//   heard (the execution's tap, `execution-tap.ts`, shared by its streams):
//   a stream attached in the middle of a call sends the text so far, or,
//   when nothing here heard the call start, waits for its recorded answer
//   instead of sending half a text.
// * The stream ends (a `finish` chunk) when the execution ended or
//   suspended for approval, once the timeline says so; it closes without
//   `finish` when the environment closes, so the client reconnects.
// * Streams are bounded per environment (`chatStreamsMax`).

import type { UIMessageChunk } from "ai";
import { ExecutionNotFoundError, InvalidInputError, PhronomyError } from "../errors.js";
import type { ExecutionEvent } from "../runtime/events.js";
import type { Logger } from "../runtime/options.js";
import type { Run } from "../runtime/run.js";
import type { ExecutionRow, StoredStep, UsageTotals } from "../store/records.js";
import { beginning, comparePositions, formatPosition, parsePosition, type ChatPosition } from "./positions.js";
import { ExecutionTap } from "./execution-tap.js";
import { textPartId, TimelineTranslator, type TranslatedStep } from "./timeline-chunks.js";

/** A chunk of the AI SDK's UI message stream with its position: pass the
 * last one seen as `resumeAt` to continue after it. */
export type ChatChunk = UIMessageChunk & { readonly position: string };

/** What `env.stream` takes. */
export interface StreamOptions {
  /** Continue after this position (a chunk's `position`, or an SSE
   * `Last-Event-ID`); without it the whole response is replayed. */
  readonly resumeAt?: string;
}

/** What the stream's `start` and `finish` chunks carry as message metadata. */
export interface ChatMessageMetadata {
  /** The execution streamed. */
  readonly executionId: string;
  /** On `finish`: where the stream ended, to continue after it later (for
   * instance once a pending approval is decided). */
  readonly resumeAt?: string;
  /** On `finish`: `completed`, `failed`, `suspended`, `handed_off`, … */
  readonly outcome?: string;
  /** On `finish`: the tokens the execution used so far, with the
   * provider's details (cached, reasoning) when it reported them. */
  readonly usage?: UsageTotals;
}

/** Streams one environment serves at once; each holds a poll timer and,
 * for a local execution, an observer of it. */
export const chatStreamsMax = 1024;
/** First poll interval, and the one after anything happened. */
export const chatStreamPollMsMin = 50;
/** Longest poll interval, reached while nothing changes. */
export const chatStreamPollMsMax = 1_000;

/** What a chat stream needs from its environment. */
export interface ChatStreamHost {
  execution(executionId: string): Promise<ExecutionRow | undefined>;
  timeline(executionId: string): Promise<readonly StoredStep[]>;
  /** The execution's live events here (`env.wait`'s); a remote one's end. */
  wait(executionId: string): Run;
  closed(): boolean;
  readonly storePath: string;
  readonly logger: Logger;
}

const statusesThatEnd: ReadonlySet<string> = new Set(["terminal", "suspended"]);
const stepsThatEnd: ReadonlySet<string> = new Set(["terminal", "approval_requested"]);

export class ChatStreams {
  private open = 0;
  /** The event taps of executions streamed here, by execution id. */
  private readonly taps = new Map<string, ExecutionTap>();

  constructor(private readonly host: ChatStreamHost) {}

  /** Opens the stream of a Run (its events heard from its start, so its
   * streamed text is sent live) or of an execution by id. Rejects with the
   * Run's own error when it was refused before it ran, EXECUTION_NOT_FOUND
   * for an unknown id, INVALID_INPUT for a bad `resumeAt`, CAPACITY past
   * `chatStreamsMax`. */
  async stream(target: Run | string, options: StreamOptions = {}): Promise<ReadableStream<ChatChunk>> {
    checkOptions(options);
    if (this.open >= chatStreamsMax)
      throw new PhronomyError("CAPACITY", `this environment already serves ${chatStreamsMax} chat streams; retry once some ended`);
    const run = typeof target === "string" ? undefined : target;
    // Read from now on, so no event of the Run is dropped unread.
    const events = run?.events[Symbol.asyncIterator]();
    let executionId: string;
    try {
      executionId = typeof target === "string" ? checkExecutionId(target) : await target.executionId;
    } catch (error) {
      await events?.return?.();
      throw error;
    }
    const tap =
      events !== undefined
        ? this.tapOf(executionId, events, true)
        : (this.existingTap(executionId) ?? this.tapOf(executionId, this.host.wait(executionId).events[Symbol.asyncIterator](), false));
    const resumeAt = options.resumeAt === undefined ? beginning : parsePosition(options.resumeAt, executionId);
    const pump = new StreamPump(this.host, executionId, resumeAt, tap, run !== undefined);
    try {
      await pump.begin();
    } catch (error) {
      pump.stop();
      throw error;
    }
    this.open += 1;
    return pump.readable(() => {
      this.open -= 1;
    });
  }

  private existingTap(executionId: string): ExecutionTap | undefined {
    const tap = this.taps.get(executionId);
    return tap !== undefined && !tap.ended ? tap : undefined;
  }

  /** A new tap, which later streams of the execution share (a Run's
   * replaces one made from an observer: it heard everything). */
  private tapOf(executionId: string, events: AsyncIterator<ExecutionEvent>, keep: boolean): ExecutionTap {
    const tap: ExecutionTap = new ExecutionTap(events, keep, () => {
      if (this.taps.get(executionId) === tap) this.taps.delete(executionId);
    });
    if (!tap.ended) this.taps.set(executionId, tap);
    return tap;
  }
}

/** The live state of one stream: what was read, what the client has. */
class StreamPump {
  private readonly translator = new TimelineTranslator();
  private lastSeq = 0;
  private lastRow: ExecutionRow | undefined;
  /** The open text part of a streaming call the client holds. */
  private clientText: { readonly seq: number; characters: number } | undefined;
  private readonly queued: ChatChunk[] = [];
  private controller: ReadableStreamDefaultController<ChatChunk> | undefined;
  private unsubscribe: (() => void) | undefined;
  private wakeUp: (() => void) | undefined;
  private stopped = false;
  /** Polls that found the row ended (see finishIfEnded). */
  private endedPolls = 0;
  private lastStepKind: string | undefined;

  /** `followsRun`: the stream of a Run ends only once the Run's own events
   * ended too — a resume's Run, streamed at once, must not end at the
   * suspension its decision is still being committed on. */
  constructor(
    private readonly host: ChatStreamHost,
    private readonly executionId: string,
    private readonly resumeAt: ChatPosition,
    private readonly tap: ExecutionTap,
    private readonly followsRun: boolean,
  ) {}

  /** Reads the timeline once and checks `resumeAt` against it. */
  async begin(): Promise<void> {
    this.unsubscribe = this.tap.subscribe((event) => this.heard(event));
    const row = await this.host.execution(this.executionId);
    if (row === undefined) throw new ExecutionNotFoundError(this.executionId, "its chat stream", this.host.storePath);
    const steps = await this.host.timeline(this.executionId);
    const last = steps.at(-1)?.seq ?? 0;
    const current = await this.rowAfter(row, steps);
    if (this.resumeAt.seq > last)
      throw this.unknownPosition(`execution ${this.executionId} has no step ${this.resumeAt.seq} (its timeline ends at step ${last})`);
    this.emit(startChunkOf(this.executionId), this.resumeAt);
    this.take(current, steps);
  }

  /** The row as the steps leave it: read again when they end with a
   * terminal the row (read before them) does not show yet — the final
   * output and the error come from it. */
  private async rowAfter(row: ExecutionRow, steps: readonly StoredStep[]): Promise<ExecutionRow> {
    if (steps.at(-1)?.kind !== "terminal" || row.status === "terminal" || (steps.at(-1)?.seq ?? 0) <= this.lastSeq) return row;
    return (await this.host.execution(this.executionId)) ?? row;
  }

  readable(onEnd: () => void): ReadableStream<ChatChunk> {
    let ended = false;
    const end = (): void => {
      if (ended) return;
      ended = true;
      onEnd();
    };
    return new ReadableStream<ChatChunk>({
      start: (controller) => {
        this.controller = controller;
        for (const chunk of this.queued.splice(0)) controller.enqueue(chunk);
        void this.follow()
          .catch((error: unknown) => this.fail(error))
          .finally(end);
      },
      cancel: () => {
        this.stop();
        end();
      },
    });
  }

  stop(): void {
    this.stopped = true;
    this.wakeUp?.();
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  // -- following the execution ------------------------------------------------------

  private async follow(): Promise<void> {
    let delay = chatStreamPollMsMin;
    while (!this.stopped) {
      if (this.finishIfEnded()) return;
      await this.sleep(delay);
      if (this.stopped) return;
      if (this.host.closed()) return this.close();
      const row = await this.host.execution(this.executionId);
      if (row === undefined) return this.failWith(`execution ${this.executionId} is no longer in the store (purged or pruned)`);
      const steps = await this.host.timeline(this.executionId);
      const grew = this.take(await this.rowAfter(row, steps), steps);
      delay = grew ? chatStreamPollMsMin : Math.min(delay * 2, chatStreamPollMsMax);
    }
  }

  /** Translates the steps not read yet; true when there were any. */
  private take(row: ExecutionRow, steps: readonly StoredStep[]): boolean {
    this.lastRow = row;
    const fresh = steps.filter((step) => step.seq > this.lastSeq);
    for (const [index, step] of fresh.entries()) {
      this.checkResumeStep(step);
      // A call that ends the execution unanswered leaves its streamed text open.
      if (step.kind === "terminal") this.closeOpenText();
      const translated = this.translator.translate(step, row, step === steps.at(-1), fresh[index + 1]);
      const at = this.resumeAt;
      if (at.kind === "chunk" && at.seq === step.seq && at.index >= translated.chunks.length) {
        throw this.unknownPosition(`step ${step.seq} of execution ${this.executionId} has ${translated.chunks.length} chunks`);
      }
      this.send(step.seq, translated);
      this.lastSeq = step.seq;
      this.lastStepKind = step.kind;
    }
    this.sendLiveText();
    return fresh.length > 0;
  }

  /** True (and the stream finished) once the execution ended or suspended. */
  private finishIfEnded(): boolean {
    const row = this.lastRow;
    if (row === undefined || !statusesThatEnd.has(row.status) || (this.followsRun && !this.tap.ended)) {
      this.endedPolls = 0;
      return false;
    }
    // The row says ended; the steps read after it end with its last step,
    // or nothing came for two polls (a row written without one).
    const lastKind = this.lastStepKind;
    this.endedPolls += 1;
    if (lastKind !== undefined && !stepsThatEnd.has(lastKind) && this.endedPolls < 3) return false;
    this.closeOpenText();
    this.push(finishChunkOf(row, this.lastSeq));
    this.close();
    return true;
  }

  /** Sends a step's chunks past `resumeAt`, adjusted to the text the client holds. */
  private send(seq: number, translated: TranslatedStep): void {
    const held = this.clientText;
    if (translated.replaces !== undefined && held?.seq === translated.replaces) this.clientText = undefined;
    const answered = translated.answers;
    const holdsText = answered !== undefined && held !== undefined && held.seq === answered.barrierSeq;
    if (holdsText) this.clientText = undefined;
    // The answer continues the streamed text only when its text is the
    // model's and comes first; otherwise the client's part would stand
    // before parts a replay shows ahead of it (reasoning the model showed
    // first, a source), so the step is sent again whole.
    const continues = holdsText && !answered.replaced && answered.textAt === 0;
    if (holdsText && !continues) {
      this.push({ type: "reset-step", position: formatPosition({ kind: "text", seq: held.seq, characters: held.characters }) });
    }
    translated.chunks.forEach((chunk, index) => {
      const position: ChatPosition = { kind: "chunk", seq, index };
      if (continues && answered.text.length > 0 && index >= answered.textAt && index < answered.textAt + 2) {
        // text-start was sent; text-delta sends what the client lacks.
        if (index === answered.textAt || comparePositions(position, this.resumeAt) <= 0) return;
        const rest = answered.text.slice(held.characters);
        if (rest.length > 0) this.emit({ type: "text-delta", id: textPartId(answered.barrierSeq), delta: rest }, position);
        return;
      }
      this.emit(chunk, position);
    });
    if (continues && answered.text.length === 0) this.closeOpenText(held);
  }

  /** A step at `resumeAt` tells what the client holds; checks the position. */
  private checkResumeStep(step: StoredStep): void {
    const at = this.resumeAt;
    if (at.seq !== step.seq) return;
    if (at.kind === "text") {
      if (step.kind !== "provider_barrier") throw this.unknownPosition(`step ${step.seq} of execution ${this.executionId} is a ${step.kind}, not a model call`);
      this.clientText = { seq: step.seq, characters: at.characters };
    }
  }

  private unknownPosition(why: string): InvalidInputError {
    return new InvalidInputError(
      `resumeAt "${formatPosition(this.resumeAt)}" is not a position of this execution's chat stream: ${why}; reconnect without resumeAt to replay the whole response`,
      { executionId: this.executionId, details: { resumeAt: formatPosition(this.resumeAt), reason: "unknown_position" } },
    );
  }

  // -- live events ---------------------------------------------------------------------

  /** An event of the execution was heard here (none: the events ended):
   * streamed text goes out; anything else follows a commit, so the store
   * is read. */
  private heard(event: ExecutionEvent | undefined): void {
    if (this.stopped) return;
    if (event?.type === "text_delta") return this.sendLiveText();
    this.wakeUp?.();
  }

  /** Sends the streamed text of the call in flight the client lacks. */
  private sendLiveText(): void {
    const call = this.translator.openCall;
    if (call === undefined) return;
    const text = this.tap.textOf(call.callId);
    if (text === undefined) return;
    const held = this.clientText?.seq === call.seq ? this.clientText : undefined;
    const id = textPartId(call.seq);
    if (held === undefined) {
      if (text.length === 0 || comparePositions({ kind: "text", seq: call.seq, characters: 0 }, this.resumeAt) <= 0) return;
      this.emit({ type: "text-start", id }, { kind: "text", seq: call.seq, characters: 0 });
      this.clientText = { seq: call.seq, characters: 0 };
    }
    const client = this.clientText!;
    if (text.length <= client.characters) return;
    this.emit({ type: "text-delta", id, delta: text.slice(client.characters) }, { kind: "text", seq: call.seq, characters: text.length });
    client.characters = text.length;
  }

  /** Ends the text part a call left open (it failed, or the stream ends). */
  private closeOpenText(held = this.clientText): void {
    if (held === undefined) return;
    this.clientText = undefined;
    this.push({ type: "text-end", id: textPartId(held.seq), position: formatPosition({ kind: "text", seq: held.seq, characters: held.characters }) });
  }

  // -- output --------------------------------------------------------------------------

  private emit(chunk: UIMessageChunk, position: ChatPosition): void {
    if (chunk.type !== "start" && comparePositions(position, this.resumeAt) <= 0) return;
    this.push({ ...chunk, position: formatPosition(position) } as ChatChunk);
  }

  private push(chunk: ChatChunk): void {
    if (this.controller === undefined) this.queued.push(chunk);
    else this.controller.enqueue(chunk);
  }

  private sleep(milliseconds: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, milliseconds);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = done;
    });
  }

  private failWith(message: string): void {
    this.push({ type: "error", errorText: message, position: formatPosition({ kind: "after_step", seq: this.lastSeq }) });
    this.close();
  }

  private fail(error: unknown): void {
    if (this.stopped) return;
    if (this.host.closed()) return this.close();
    this.failWith(`the chat stream of execution ${this.executionId} failed: ${error instanceof Error ? error.message : String(error)}; reconnect to continue`);
  }

  private close(): void {
    if (this.stopped) return;
    this.stop();
    try {
      this.controller?.close();
    } catch {
      // Already closed by a cancel.
    }
  }
}

/** The chunk a stream of the execution opens with: its message id and metadata. */
export function startChunkOf(executionId: string): UIMessageChunk {
  return { type: "start", messageId: executionId, messageMetadata: { executionId } satisfies ChatMessageMetadata };
}

/** The chunk a stream ends with once the execution ended or suspended
 * (`row`), its timeline read to step `lastSeq`. */
export function finishChunkOf(row: ExecutionRow, lastSeq: number): ChatChunk {
  const outcome = row.status === "suspended" ? "suspended" : (row.outcome ?? "failed");
  const position = formatPosition({ kind: "after_step", seq: lastSeq });
  const metadata: ChatMessageMetadata = { executionId: row.executionId, resumeAt: position, outcome, usage: row.usage };
  return { type: "finish", finishReason: finishReasonOf(outcome), messageMetadata: metadata, position };
}

/** Row statuses a stream ends at. */
export function endsStream(row: ExecutionRow): boolean {
  return statusesThatEnd.has(row.status);
}

function finishReasonOf(outcome: string): "stop" | "error" | "tool-calls" | "other" {
  if (outcome === "completed") return "stop";
  if (outcome === "suspended") return "tool-calls";
  if (outcome === "handed_off") return "other";
  return "error";
}

const optionKeys: readonly string[] = ["resumeAt"];

function checkOptions(options: StreamOptions): void {
  if (typeof options !== "object" || options === null) throw new InvalidInputError(`env.stream(target, options): options must be an object`);
  for (const key of Object.keys(options)) {
    if (!optionKeys.includes(key)) throw new InvalidInputError(`env.stream(target, options): unknown option "${key}" (allowed: ${optionKeys.join(", ")})`);
  }
}

function checkExecutionId(executionId: unknown): string {
  if (typeof executionId !== "string" || executionId.length === 0 || executionId.length > 200) {
    throw new InvalidInputError(`env.stream(executionId): the execution id must be a non-empty string (got ${JSON.stringify(executionId)})`);
  }
  return executionId;
}
