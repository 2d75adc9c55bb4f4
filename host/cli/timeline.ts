// An execution's durable timeline (`env.timeline`) as `phronomy show`
// prints it: every barrier, model response, tool call with its idempotency
// key, approval, recovery and the terminal, with times.
//
// Recovery shows twice: the runtime writes a `recovered` step (phase,
// continuation, pid) when it continues an execution after a restart, and
// what recovery then does is marked from the steps themselves — a tool
// barrier naming call ids an earlier tool barrier already named with no
// results in between (the batch re-dispatched with the same idempotency
// keys), or a model barrier after a model barrier with no response in
// between (the model called again).

import pc from "./colors.js";
import type { Json, StoredStep } from "../index.js";
import { compactJson, formatTime } from "./format.js";

export interface TimelineEntry {
  readonly seq: number;
  readonly kind: string;
  /** Epoch milliseconds, as stored. */
  readonly at: number;
  /** Milliseconds since the first step. */
  readonly offsetMs: number;
  /** One line: what the step says. */
  readonly summary: string;
  /** Set when the step is recovery's work (see the file comment). */
  readonly recovery?: string;
  readonly payload: Json;
}

type Record_ = { readonly [key: string]: Json };

export function describeTimeline(steps: readonly StoredStep[]): TimelineEntry[] {
  const firstAt = steps[0]?.at ?? 0;
  const tracker = new RecoveryTracker();
  return steps.map((step) => {
    const recovery = tracker.observe(step);
    return {
      seq: step.seq,
      kind: step.kind,
      at: step.at,
      offsetMs: step.at - firstAt,
      summary: summaryOf(step),
      ...(recovery ? { recovery } : {}),
      payload: step.payload,
    };
  });
}

/** The timeline as printed lines. */
export function renderTimeline(entries: readonly TimelineEntry[]): string[] {
  const lines: string[] = [];
  for (const entry of entries) {
    const when = entry.seq === entries[0]?.seq ? formatTime(entry.at) : `+${formatOffset(entry.offsetMs)}`;
    const label = kindLabel(entry.kind);
    lines.push(`  ${pc.dim(`#${String(entry.seq).padEnd(3)}`)} ${pc.dim(when.padStart(19))}  ${label}  ${entry.summary}`);
    if (entry.recovery) lines.push(`  ${" ".repeat(25)}  ${" ".repeat(18)}  ${pc.magenta(`↻ ${entry.recovery}`)}`);
  }
  return lines;
}

const kindLabels: Record<string, string> = {
  input: "input",
  provider_barrier: "model barrier",
  model_response: "model response",
  tool_barrier: "tool barrier",
  tool_results: "tool results",
  approval_requested: "approval requested",
  approval_decided: "approval decided",
  recovered: "recovered",
  terminal: "terminal",
  note: "note",
  model_attempt_failed: "model retried",
  tool_attempt_failed: "tool retried",
};

function kindLabel(kind: string): string {
  const label = (kindLabels[kind] ?? kind).padEnd(18);
  if (kind.endsWith("barrier")) return pc.cyan(label);
  if (kind.startsWith("approval")) return pc.yellow(label);
  if (kind === "terminal") return pc.bold(label);
  if (kind === "recovered") return pc.magenta(label);
  return label;
}

function formatOffset(milliseconds: number): string {
  if (milliseconds < 60_000) return `${(milliseconds / 1000).toFixed(3)}s`;
  const minutes = Math.floor(milliseconds / 60_000);
  if (minutes < 60) return `${minutes}m${String(Math.floor((milliseconds % 60_000) / 1000)).padStart(2, "0")}s`;
  return `${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, "0")}m`;
}

// -- summaries -------------------------------------------------------------------

function summaryOf(step: StoredStep): string {
  const payload = asRecord(step.payload);
  switch (step.kind) {
    case "input":
      return compactJson(step.payload);
    case "provider_barrier":
      return `model call ${String(payload["callId"] ?? "?")} · revision ${String(payload["revision"] ?? "?")}`;
    case "recovered":
      return `by process ${String(payload["pid"] ?? "?")}: from ${String(payload["phase"] ?? "?")}, continuing with ${String(payload["continuation"] ?? "?")}`;
    case "model_response":
      return modelResponseSummary(payload);
    case "tool_barrier":
      return toolBarrierSummary(payload);
    case "tool_results":
      return toolResultsSummary(payload);
    case "approval_requested":
      return approvalRequestedSummary(payload);
    case "approval_decided":
      return approvalDecidedSummary(payload);
    case "terminal":
      return `${String(payload["outcome"] ?? "?")} · revision ${String(payload["revision"] ?? "?")}${payload["whileQueued"] === true ? " · while queued" : ""}`;
    case "model_attempt_failed":
    case "tool_attempt_failed":
      return attemptSummary(payload);
    case "queued":
      return `behind the running execution, position ${String(payload["position"] ?? "?")}${payload["interrupt"] === true ? " (interrupt: it runs next)" : ""}`;
    default:
      return compactJson(step.payload);
  }
}

/** `attempt 1 · HTTP 429 · retried after 300 ms · Rate limit reached`. */
function attemptSummary(payload: Record_): string {
  const parts = [`attempt ${String(payload["attempt"] ?? "?")}`];
  if (typeof payload["toolName"] === "string") parts.push(`tool ${payload["toolName"]}`);
  if (typeof payload["statusCode"] === "number") parts.push(`HTTP ${payload["statusCode"]}`);
  if (typeof payload["delayMs"] === "number") parts.push(`retried after ${payload["delayMs"]} ms`);
  parts.push(compactJson(String(payload["message"] ?? ""), 80));
  return parts.join(" · ");
}

function modelResponseSummary(payload: Record_): string {
  const parts: string[] = [];
  const calls = asArray(payload["toolCalls"]).map(asRecord);
  if (calls.length > 0) parts.push(`asks for ${calls.map((call) => `${String(call["toolName"])}(${compactJson(call["input"], 60)})`).join(", ")}`);
  const text = typeof payload["text"] === "string" ? payload["text"] : "";
  if (text.length > 0) parts.push(compactJson(text, 80));
  const counted = (field: string, word: string): void => {
    const count = asArray(payload[field]).length;
    if (count > 0) parts.push(`${count} ${word}${count === 1 ? "" : "s"}`);
  };
  counted("sources", "source");
  counted("files", "file");
  const usage = asRecord(payload["usage"]);
  if (typeof usage["totalTokens"] === "number") parts.push(`${usage["totalTokens"]} tokens`);
  if (typeof usage["reasoningTokens"] === "number") parts.push(`${usage["reasoningTokens"]} reasoning`);
  return parts.join(" · ");
}

function toolBarrierSummary(payload: Record_): string {
  const calls = asArray(payload["calls"]).map(asRecord);
  const described = calls.map((call) => `${String(call["toolName"])} ${String(call["callId"])} key ${String(call["idempotencyKey"])}`);
  return `${described.join("; ")} · revision ${String(payload["revision"] ?? "?")}`;
}

function toolResultsSummary(payload: Record_): string {
  const results = asArray(payload["results"]).map(asRecord);
  return results
    .map((result) => {
      const output = asRecord(result["output"]);
      if (payload["declined"] === true || output["declined"] === true)
        return `${String(result["toolName"])} declined (${String(output["reason"] ?? "no reason")})`;
      const marker = result["isError"] === true ? " (error)" : "";
      return `${String(result["toolName"])}${marker} → ${compactJson(result["output"], 80)}`;
    })
    .join("; ");
}

function approvalRequestedSummary(payload: Record_): string {
  const request = asRecord(payload["approvalRequest"]);
  const calls = asArray(request["toolCalls"]).map(asRecord);
  const described = calls.map((call) => `${String(call["toolName"])}(${compactJson(call["input"], 60)})`).join(", ");
  const id = request["kind"] === "input" ? `waits for input · wait id` : "approval id";
  return `${described} · ${id} ${String(request["approvalId"] ?? "?")} · revision ${String(payload["revision"] ?? "?")}`;
}

/** The decision: approved or declined, what it answered (edited
 * arguments, a response, a typed wait's value: decision 0075), who, why. */
function approvalDecidedSummary(payload: Record_): string {
  const action = asRecord(payload["action"]);
  const answered =
    action["kind"] === "value"
      ? `answered ${compactJson(action["value"], 60)}`
      : action["kind"] === "edit"
        ? `approved with input ${compactJson(action["value"], 60)} for call ${String(action["callId"])}`
        : action["kind"] === "respond"
          ? `responded ${compactJson(action["value"], 60)} in place of call ${String(action["callId"])}`
          : payload["approved"] === true
            ? "approved"
            : "declined";
  const by = typeof payload["decidedBy"] === "string" ? ` · by ${JSON.stringify(payload["decidedBy"])}` : "";
  const reason = typeof payload["reason"] === "string" ? ` · reason ${JSON.stringify(payload["reason"])}` : "";
  return `${answered}${by}${reason} · revision ${String(payload["revision"] ?? "?")}`;
}

// -- recovery marks ----------------------------------------------------------------

class RecoveryTracker {
  /** Call ids of tool barriers whose results are not recorded yet. */
  private readonly toolCallsWithoutResults = new Set<string>();
  private modelCallWithoutResponse = false;

  observe(step: StoredStep): string | undefined {
    const payload = asRecord(step.payload);
    switch (step.kind) {
      case "provider_barrier": {
        const repeated = this.modelCallWithoutResponse;
        this.modelCallWithoutResponse = true;
        return repeated ? "recovery: the earlier model call's answer was never recorded, so the model is called again" : undefined;
      }
      case "model_response":
        this.modelCallWithoutResponse = false;
        return undefined;
      case "tool_barrier": {
        const ids = asArray(payload["calls"]).map((call) => String(asRecord(call)["callId"]));
        const repeated = ids.length > 0 && ids.every((id) => this.toolCallsWithoutResults.has(id));
        for (const id of ids) this.toolCallsWithoutResults.add(id);
        return repeated ? "recovery: the batch is dispatched again after a crash, with the same call ids and idempotency keys" : undefined;
      }
      case "tool_results":
        for (const result of asArray(payload["results"])) this.toolCallsWithoutResults.delete(String(asRecord(result)["callId"]));
        return undefined;
      case "recovered":
        return undefined;
      default:
        return undefined;
    }
  }
}

function asRecord(value: Json | undefined): Record_ {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? value : {};
}

function asArray(value: Json | undefined): Json[] {
  return Array.isArray(value) ? value : [];
}
