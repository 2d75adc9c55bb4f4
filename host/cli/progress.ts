// Live progress of an execution on stderr: what it is doing (its phase as
// the events show it), model calls, tools, a wait for approval, and the
// time since it started. On a terminal, a spinner line (spinner.ts) keeps the
// phase and counters current while event lines scroll above it; anywhere
// else (a pipe, CI, a test), one plain line per event, each with its
// elapsed time, so logs and tests can read it.
//
// Progress never goes to stdout: stdout carries the result (or `--json`).

import { Spinner } from "./spinner.js";
import pc from "./colors.js";
import type { ExecutionEvent } from "../index.js";
import { compactJson } from "./format.js";

/** How often the spinner line's elapsed time is redrawn. */
const redrawIntervalMs = 100;

export interface ProgressOptions {
  readonly stream?: NodeJS.WriteStream;
  /** Draw a spinner line (a terminal); default: the stream is a TTY and CI is unset. */
  readonly interactive?: boolean;
  /** Text deltas go here as they arrive (`--stream`). */
  readonly onText?: (delta: string) => void;
}

export interface ProgressCounts {
  readonly modelCalls: number;
  readonly toolCalls: number;
  readonly totalTokens: number;
  readonly elapsedMs: number;
}

export class Progress {
  private readonly stream: NodeJS.WriteStream;
  private readonly interactive: boolean;
  private readonly onText: ((delta: string) => void) | undefined;
  private readonly startedAt = performance.now();
  private phase = "starting";
  private modelCalls = 0;
  private toolCalls = 0;
  private totalTokens = 0;
  private readonly toolsRunning = new Map<string, string>();
  private spinner: Spinner | undefined;
  private ticker: NodeJS.Timeout | undefined;
  /** Whether streamed text left the stdout line open. */
  private textOpen = false;
  private stopped = false;

  constructor(options: ProgressOptions = {}) {
    this.stream = options.stream ?? process.stderr;
    this.interactive = options.interactive ?? (this.stream.isTTY === true && !process.env["CI"]);
    this.onText = options.onText;
    if (this.interactive) this.startSpinner();
  }

  /** Only on a terminal (a pipe never draws a spinner). */
  private startSpinner(): void {
    this.spinner = new Spinner(this.stream, this.statusText());
    this.ticker = setInterval(() => this.redraw(), redrawIntervalMs);
    this.ticker.unref();
  }

  get counts(): ProgressCounts {
    return { modelCalls: this.modelCalls, toolCalls: this.toolCalls, totalTokens: this.totalTokens, elapsedMs: performance.now() - this.startedAt };
  }

  get elapsedMs(): number {
    return performance.now() - this.startedAt;
  }

  setPhase(phase: string): void {
    this.phase = phase;
    this.redraw();
  }

  /** A line above the spinner (or a plain line), with the elapsed time. */
  log(line: string): void {
    this.closeText();
    const text = `${pc.dim(formatElapsed(this.elapsedMs).padStart(7))}  ${line}\n`;
    if (this.spinner) {
      this.spinner.clear();
      this.stream.write(text);
      this.spinner.render();
    } else {
      this.stream.write(text);
    }
  }

  /** One execution event: counters, phase and (most) a line. */
  event(event: ExecutionEvent): void {
    switch (event.type) {
      case "model_call_started":
        this.modelCalls += 1;
        this.phase = `calling the model (turn ${event.turn})`;
        this.log(`model call · turn ${event.turn}`);
        break;
      case "model_call_finished":
        this.totalTokens += event.usage.totalTokens;
        this.phase = "model answered";
        this.log(`model answered: ${event.toolCalls === 0 ? "final answer" : plural(event.toolCalls, "tool call")} · ${event.usage.totalTokens} tokens`);
        break;
      case "text_delta":
        this.phase = "the model is writing";
        this.text(event.delta);
        break;
      case "tool_call_started":
        this.toolCalls += 1;
        this.toolsRunning.set(event.callId, event.toolName);
        this.phase = `running ${[...this.toolsRunning.values()].join(", ")}`;
        this.log(`tool ${pc.bold(event.toolName)} started · idempotency key ${event.idempotencyKey}`);
        break;
      case "tool_call_finished":
        this.toolsRunning.delete(event.callId);
        this.phase = this.toolsRunning.size > 0 ? `running ${[...this.toolsRunning.values()].join(", ")}` : "recording tool results";
        this.log(`tool ${pc.bold(event.toolName)} ${event.isError ? pc.red("failed") : "done"}`);
        break;
      case "approval_required":
        this.phase = "waiting for approval";
        for (const call of event.request.toolCalls) this.log(`${pc.yellow("approval required")}: ${call.toolName}(${compactJson(call.input)})`);
        break;
      case "cancelled":
        this.phase = "cancelled";
        break;
      default:
        break;
    }
    this.redraw();
  }

  /** Stops the spinner, leaving nothing of it on screen. */
  stop(): void {
    this.stopped = true;
    this.closeText();
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = undefined;
    this.spinner?.stop();
    this.spinner = undefined;
  }

  private text(delta: string): void {
    if (this.onText === undefined) return;
    if (this.spinner) this.spinner.clear();
    this.onText(delta);
    this.textOpen = true;
    this.spinner?.render();
  }

  /** Streamed text ends its line before anything else is printed. */
  private closeText(): void {
    if (!this.textOpen) return;
    this.textOpen = false;
    this.onText?.("\n");
  }

  private redraw(): void {
    if (this.spinner) this.spinner.text = this.statusText();
  }

  private statusText(): string {
    const counts = [plural(this.modelCalls, "model call"), plural(this.toolCalls, "tool call")];
    if (this.totalTokens > 0) counts.push(`${this.totalTokens} tokens`);
    return `${this.phase} ${pc.dim(`· ${formatElapsed(this.elapsedMs)} · ${counts.join(" · ")}`)}`;
  }
}

export function formatElapsed(milliseconds: number): string {
  if (milliseconds < 10_000) return `${(milliseconds / 1000).toFixed(2)}s`;
  if (milliseconds < 60_000) return `${(milliseconds / 1000).toFixed(1)}s`;
  const minutes = Math.floor(milliseconds / 60_000);
  const seconds = Math.floor((milliseconds % 60_000) / 1000);
  return `${minutes}m${String(seconds).padStart(2, "0")}s`;
}

export function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}
