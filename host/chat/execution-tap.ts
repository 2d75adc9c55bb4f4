// The events of one execution as heard in this process, shared by its chat
// streams (docs/decisions/0036): each event wakes every stream (it follows
// the commit it reports, so the store has something new), and the text of
// each model call whose start was heard is kept until the call finishes —
// so a client that reconnects to this process in the middle of a call gets
// the text so far at once, not only when the answer is recorded.
//
// Rules kept here: a tap reads one event source (a Run's events, or an
// `env.wait` observer's) to its end — the execution's end or suspension —
// and holds only the text of the calls in flight. A tap made from a Run
// lives as long as the Run's events (the route that started the run may
// leave; its reconnecting client comes back to the text); one made for a
// stream by id is let go with its last stream.

import type { ExecutionEvent } from "../runtime/events.js";

export class ExecutionTap {
  private readonly texts = new Map<string, string>();
  private readonly listeners = new Set<(event: ExecutionEvent | undefined) => void>();
  private done = false;

  /** `keep`: read to the end even with no stream left (a Run's tap). */
  constructor(
    private readonly events: AsyncIterator<ExecutionEvent>,
    private readonly keep: boolean,
    private readonly onEnd: () => void,
  ) {
    void this.listen();
  }

  /** The events ended: the execution ended or suspended (or, for an
   * observer, was refused: then the streams poll the store). */
  get ended(): boolean {
    return this.done;
  }

  /** The text streamed so far by model call `callId`, when its start was heard. */
  textOf(callId: string): string | undefined {
    return this.texts.get(callId);
  }

  /** Calls `listener` after each event, and with none at the end; returns the unsubscribe. */
  subscribe(listener: (event: ExecutionEvent | undefined) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0 && !this.keep) this.close();
    };
  }

  private close(): void {
    if (this.done) return;
    this.finish();
    void this.events.return?.().catch(() => undefined);
  }

  private async listen(): Promise<void> {
    try {
      for (;;) {
        const next = await this.events.next();
        if (next.done || this.done) break;
        this.hear(next.value);
      }
    } catch {
      // An observer refused (capacity, shutdown): the streams poll instead.
    }
    this.finish();
  }

  private hear(event: ExecutionEvent): void {
    if (event.type === "model_call_started") this.texts.set(event.callId, "");
    else if (event.type === "text_delta" && this.texts.has(event.callId)) this.texts.set(event.callId, this.texts.get(event.callId) + event.delta);
    else if (event.type === "model_call_finished") this.texts.delete(event.callId);
    for (const listener of this.listeners) listener(event);
  }

  private finish(): void {
    if (this.done) return;
    this.done = true;
    this.texts.clear();
    this.onEnd();
    for (const listener of [...this.listeners]) listener(undefined);
  }
}
