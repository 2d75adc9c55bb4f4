// Where an execution's time went (docs/decisions/0083): each model call
// (barrier to response: its model id, settings, tokens, attempts and the
// failed ones, and — folded — the system prompt and the messages sent),
// each tool batch (barrier to results) and each wait for a person
// (request to decision), as bars on one time axis. Read from the timeline
// alone; the bars are SVG rects (the page's CSP allows no inline style).

import { waitingWords, waitKindOf, type Json, type StoredStep } from "../index.js";
import { compactJson, formatDuration } from "./format.js";
import { html, type Html } from "./html.js";

type Payload = { readonly [key: string]: Json };
type Step = StoredStep & { readonly attempt: number };

export interface Span {
  readonly kind: "model" | "tools" | "wait";
  readonly label: string;
  readonly start: number;
  /** Undefined while it has not ended. */
  readonly end: number | undefined;
  readonly seq: number;
  /** The model response or tool results closing it. */
  readonly closing?: Payload;
  /** Failed attempts before the answer (model_attempt_failed). */
  readonly failures: readonly Payload[];
}

const payloadOf = (step: Step): Payload =>
  typeof step.payload === "object" && step.payload !== null && !Array.isArray(step.payload) ? (step.payload as Payload) : {};

export function spansOf(timeline: readonly Step[]): Span[] {
  const spans: Span[] = [];
  for (const [index, step] of timeline.entries()) {
    const payload = payloadOf(step);
    const later = timeline.slice(index + 1);
    if (step.kind === "provider_barrier") {
      const callId = payload["callId"];
      const response = later.find((candidate) => candidate.kind === "model_response" && payloadOf(candidate)["callId"] === callId);
      const closing = response === undefined ? undefined : payloadOf(response);
      const failures = later.filter((candidate) => candidate.kind === "model_attempt_failed" && payloadOf(candidate)["callId"] === callId).map(payloadOf);
      const model = typeof closing?.["model"] === "string" ? closing["model"] : "model";
      spans.push({ kind: "model", label: model, start: step.at, end: response?.at, seq: step.seq, ...(closing !== undefined ? { closing } : {}), failures });
    } else if (step.kind === "tool_barrier") {
      const results = later.find((candidate) => candidate.kind === "tool_results" || candidate.kind === "tool_barrier");
      const names = (Array.isArray(payload["calls"]) ? payload["calls"] : []).map((call) => String((call as Payload | null)?.["toolName"] ?? ""));
      const closing = results?.kind === "tool_results" ? payloadOf(results) : undefined;
      spans.push({
        kind: "tools",
        label: names.join(", "),
        start: step.at,
        end: closing === undefined ? undefined : results!.at,
        seq: step.seq,
        ...(closing !== undefined ? { closing } : {}),
        failures: [],
      });
    } else if (step.kind === "approval_requested") {
      const decided = later.find((candidate) => candidate.kind === "approval_decided" || candidate.kind === "terminal");
      const request = (payload["approvalRequest"] ?? {}) as Payload;
      spans.push({
        kind: "wait",
        label: waitingWords(waitKindOf(request)),
        start: step.at,
        end: decided?.at,
        seq: step.seq,
        failures: [],
      });
    }
  }
  return spans;
}

export function waterfall(timeline: readonly Step[]): Html {
  const spans = spansOf(timeline);
  if (spans.length === 0) return html``;
  const first = timeline[0]!.at;
  const last = Math.max(...timeline.map((step) => step.at), ...spans.map((span) => span.end ?? span.start));
  const total = Math.max(1, last - first);
  const rows = spans.map((span) => {
    const x = Math.round(((span.start - first) / total) * 1000);
    const width = span.end === undefined ? 1000 - x : Math.max(3, Math.round(((span.end - span.start) / total) * 1000));
    return html`<tr class="span ${span.kind}" data-kind="${span.kind}">
      <td class="what"><span class="kind">${span.kind === "model" ? "model call" : span.kind === "tools" ? "tools" : "person"}</span> <code>${span.label}</code></td>
      <td class="num duration">${span.end === undefined ? "open" : formatDuration(span.end - span.start)}</td>
      <td class="bar"><svg viewBox="0 0 1000 12" preserveAspectRatio="none" role="img" aria-label="${span.label} from +${String(span.start - first)} ms"><rect class="${span.kind}${span.end === undefined ? " open" : ""}" x="${String(x)}" y="1" width="${String(Math.min(width, 1000 - x))}" height="10" rx="2"></rect></svg></td>
      <td class="facts">${factsOf(span, timeline)}</td>
    </tr>`;
  });
  return html`<section id="waterfall"><h2>Where the time went <span class="muted small">${formatDuration(total)} from the first step to the last</span></h2>
    <table class="waterfall"><thead><tr><th>step</th><th class="num">took</th><th>on the time axis</th><th>facts</th></tr></thead><tbody>${rows}</tbody></table></section>`;
}

function factsOf(span: Span, timeline: readonly Step[]): Html {
  if (span.kind !== "model") {
    if (span.kind === "tools" && span.closing !== undefined) {
      const errors = (Array.isArray(span.closing["results"]) ? span.closing["results"] : []).filter(
        (result) => (result as Payload | null)?.["isError"] === true,
      ).length;
      return errors > 0 ? html`<span class="bad-text small">${String(errors)} failed</span>` : html``;
    }
    return html``;
  }
  const closing = span.closing;
  if (closing === undefined) return html`<span class="muted small">in flight</span>`;
  const usage = (closing["usage"] ?? {}) as Payload;
  const settings = (closing["settings"] ?? {}) as Payload;
  const attempts = typeof closing["attempts"] === "number" ? closing["attempts"] : span.failures.length + 1;
  const settingText = Object.entries(settings)
    .map(([key, value]) => `${key} ${compactJson(value, 60)}`)
    .join(" · ");
  const retries = span.failures.map(
    (failure) => html`<li>attempt ${String(failure["attempt"] ?? "?")}: ${String(failure["statusCode"] ?? "")} ${String(failure["message"] ?? "")}</li>`,
  );
  return html`<span class="small tokens">${String(usage["inputTokens"] ?? 0)} in · ${String(usage["outputTokens"] ?? 0)} out${typeof usage["reasoningTokens"] === "number" ? ` · ${usage["reasoningTokens"]} reasoning` : ""}</span>
    <span class="small muted">${String(closing["finishReason"] ?? "")}</span>
    ${attempts > 1 ? html`<span class="badge wait small">${String(attempts)} attempts</span>` : ""}
    ${settingText !== "" ? html`<div class="muted small settings">${settingText}</div>` : ""}
    ${retries.length > 0 ? html`<ul class="retries small">${retries}</ul>` : ""}
    ${promptOf(span, timeline)}`;
}

/** The system prompt and the messages sent, folded: rebuilt from the
 * timeline before the call (this execution's part) and the recorded
 * system prompt (the latest recorded up to this call). */
function promptOf(span: Span, timeline: readonly Step[]): Html {
  const before = timeline.filter((step) => step.seq < span.seq);
  const system = [
    ...before,
    ...timeline.filter((step) => step.seq >= span.seq && step.kind === "model_response" && payloadOf(step)["callId"] === span.closing?.["callId"]),
  ]
    .filter((step) => step.kind === "model_response" && typeof payloadOf(step)["system"] === "string")
    .map((step) => payloadOf(step)["system"] as string)
    .at(-1);
  const messages: Html[] = [];
  for (const step of before) {
    const payload = payloadOf(step);
    if (step.kind === "input")
      messages.push(html`<li><span class="who">user</span> ${typeof step.payload === "string" ? step.payload : compactJson(step.payload, 2_000)}</li>`);
    else if (step.kind === "model_response") {
      const calls = (Array.isArray(payload["toolCalls"]) ? payload["toolCalls"] : []).map(
        (call) => `${String((call as Payload | null)?.["toolName"] ?? "")}(${compactJson((call as Payload | null)?.["input"] ?? null, 400)})`,
      );
      messages.push(
        html`<li><span class="who">assistant</span> ${String(payload["text"] ?? "")}${calls.length > 0 ? html` <code class="small">${calls.join(" ")}</code>` : ""}</li>`,
      );
    } else if (step.kind === "tool_results") {
      const results = (Array.isArray(payload["results"]) ? payload["results"] : []).map(
        (result) => `${String((result as Payload | null)?.["toolName"] ?? "")} → ${compactJson((result as Payload | null)?.["output"] ?? null, 400)}`,
      );
      messages.push(html`<li><span class="who">tool</span> <code class="small">${results.join(" · ")}</code></li>`);
    }
  }
  const sent = typeof span.closing?.["messagesSent"] === "number" ? span.closing["messagesSent"] : undefined;
  const earlier = sent !== undefined && sent > messages.length ? sent - messages.length : 0;
  return html`<details class="prompt"><summary class="small">prompt${sent !== undefined ? ` · ${sent} messages sent` : ""}</summary>
    ${system !== undefined ? html`<div class="small"><span class="who">system</span><pre class="json">${system}</pre></div>` : html`<p class="muted small">no system prompt recorded</p>`}
    ${earlier > 0 ? html`<p class="muted small">and before these, ${String(earlier)} earlier messages of the conversation (its memory)</p>` : ""}
    <ol class="sent small">${messages}</ol>
  </details>`;
}
