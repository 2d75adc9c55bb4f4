// Values from the store as the dashboard shows them: times, durations,
// states, and JSON pretty-printed with secrets masked (`masking.ts`).

import { waitingWords, waitKindOf, type ExecutionRow, type Json } from "../index.js";
import { maskText, masked } from "./masking.js";

/** Characters of one JSON value shown before it is cut (a page stays small;
 * the CLI's `show --json` prints it whole). */
export const jsonShownMax = 20_000;

export function prettyJson(value: Json | undefined): string {
  if (value === undefined) return "";
  const text = typeof value === "string" ? maskText(value) : JSON.stringify(masked(value), null, 2);
  return text.length > jsonShownMax
    ? `${text.slice(0, jsonShownMax)}\n… (${text.length - jsonShownMax} more characters; phronomy show --json prints it whole)`
    : text;
}

export function compactJson(value: Json | undefined, shownMax = 120): string {
  if (value === undefined || value === null) return "";
  const text = typeof value === "string" ? maskText(value) : JSON.stringify(masked(value));
  return text.length > shownMax ? `${text.slice(0, shownMax - 1)}…` : text;
}

export function formatTime(at: number): string {
  return new Date(at)
    .toISOString()
    .replace("T", " ")
    .replace(/\.\d+Z$/, "Z");
}

export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1_000)} s`;
  return `${Math.floor(ms / 3_600_000)} h ${Math.round((ms % 3_600_000) / 60_000)} min`;
}

/** `completed`, `failed`, `waiting for approval`, `running`, … */
export function stateOf(row: Pick<ExecutionRow, "status" | "outcome" | "phase"> & { readonly approvalRequest?: unknown }): string {
  if (row.status === "terminal") return row.outcome ?? "terminal";
  if (row.status === "suspended") return waitingWords(waitKindOf(row.approvalRequest));
  if (row.status === "queued") return "queued";
  if (row.status === "preparing") return "preparing";
  return `running (${row.phase.replace(/_/g, " ")})`;
}

/** A CSS class for the state's badge. */
export function stateClass(row: Pick<ExecutionRow, "status" | "outcome">): string {
  if (row.status === "terminal") return row.outcome === "completed" ? "ok" : row.outcome === "failed" ? "bad" : "neutral";
  if (row.status === "suspended") return "wait";
  if (row.status === "queued") return "neutral";
  return "live";
}
