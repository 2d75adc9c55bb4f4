// Shared output helpers: JSON for `--json`, tables, times, short JSON for
// one-line summaries, and the JSON shape of an execution row. Human output
// is colored by `colors.ts`, which turns itself off for pipes, NO_COLOR and
// `--no-color`.

import pc from "./colors.js";
import { waitingWords, waitKindOf, type ExecutionRow, type Json } from "../index.js";

export { waitKindOf };

/** Characters of JSON shown inline in a line before it is cut. */
export const inlineJsonLengthMax = 120;

/** Writes one JSON document on stdout (the only thing `--json` prints there). */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** JSON on one line, cut at `lengthMax` characters. */
export function compactJson(value: unknown, lengthMax = inlineJsonLengthMax): string {
  const text = typeof value === "string" ? JSON.stringify(value) : (JSON.stringify(value) ?? "undefined");
  return text.length > lengthMax ? `${text.slice(0, lengthMax - 1)}…` : text;
}

/** An output as a person reads it: text as it is, anything else as JSON. */
export function outputText(output: Json): string {
  return typeof output === "string" ? output : JSON.stringify(output, null, 2);
}

export { table } from "./text-table.js";

/** `2025-05-01 12:00:03` in local time: what `ls` and `show` print. */
export function formatTime(epochMs: number): string {
  const date = new Date(epochMs);
  const pad = (value: number, width = 2) => String(value).padStart(width, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

export function formatDuration(milliseconds: number): string {
  if (milliseconds < 1000) return `${Math.round(milliseconds)} ms`;
  if (milliseconds < 60_000) return `${(milliseconds / 1000).toFixed(2)} s`;
  const minutes = Math.floor(milliseconds / 60_000);
  if (minutes < 120) return `${minutes} min ${Math.round((milliseconds % 60_000) / 1000)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** Where an execution is, in one word: its outcome once it has one. */
export function stateOf(row: Pick<ExecutionRow, "status" | "phase" | "outcome"> & { readonly approvalRequest?: unknown }): string {
  if (row.status === "terminal") return row.outcome ?? "terminal";
  if (row.status === "suspended") return waitingWords(waitKindOf(row.approvalRequest));
  if (row.status === "queued") return "queued";
  return `unfinished (${row.phase})`;
}

export function colorState(state: string): string {
  if (state === "completed" || state === "handed_off") return pc.green(state);
  if (state === "failed") return pc.red(state);
  if (state.startsWith("waiting for") || state === "queued") return pc.yellow(state);
  if (state.startsWith("unfinished")) return pc.magenta(state);
  return state;
}

/** An execution row as `--json` prints it (the recovery metadata left
 * out: it is the runtime's, not a stable interface). */
export function executionJson(row: ExecutionRow): Record<string, unknown> {
  return {
    executionId: row.executionId,
    agentId: row.agentId,
    status: row.status,
    phase: row.phase,
    outcome: row.outcome,
    revision: row.revision,
    input: row.input,
    output: row.output,
    error: row.error,
    usage: row.usage,
    approvalRequest: row.approvalRequest,
    createdAt: new Date(row.createdAt).toISOString(),
    updatedAt: new Date(row.updatedAt).toISOString(),
  };
}
