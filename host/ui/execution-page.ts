// One execution: its state, input and outcome, the actions a person can
// take on it now (decide its approval, cancel, retry), and its durable
// timeline — input, barriers, model responses with tokens, tool calls with
// arguments, results and idempotency keys, approvals, recovery, terminal.

import { type Environment, type ExecutionRow, type Json, type PendingApproval, type StoredStep, type UsageTotals, usageSummary } from "../index.js";
import { formatDuration, formatTime } from "./format.js";
import { html, type Html } from "./html.js";
import type { Links } from "./links.js";
import { approvalContextOf } from "./approval-context.js";
import { approvalCard, type ApprovalContext } from "./decision-card.js";
import { actionForm, badge, jsonBlock } from "./pieces.js";
import { conversationLabel, decisionLine } from "./transcript.js";
import { waterfall } from "./waterfall.js";
import { treeSection } from "./execution-tree.js";

type Payload = { readonly [key: string]: Json } | null;

/** The region holds no clock-driven text (a running duration would change
 * it on every refresh and make the page swap it for nothing). */
export async function executionLive(environment: Environment, links: Links, row: ExecutionRow): Promise<Html> {
  const [timeline, approvals] = await Promise.all([
    environment.admin.timeline(row.executionId),
    row.status === "suspended" ? environment.admin.approvals() : [],
  ]);
  const approval = approvals.find((candidate) => candidate.executionId === row.executionId);
  const context = approval === undefined ? undefined : await approvalContextOf(environment, approval).catch(() => undefined);
  const attempt = timeline.at(-1)?.attempt ?? 1;
  const tree = await treeSection(environment, links, row, timeline);
  return html`
    <section class="summary" data-status="${row.status}" data-outcome="${row.outcome ?? ""}">
      <h1><code>${row.executionId}</code> ${badge(row)}</h1>
      <dl>
        <dt>conversation</dt><dd>${conversationLabel(links, row)} · <a class="small" href="${links.to("/", { agent: row.agentId })}">its executions</a></dd>
        <dt>phase</dt><dd>${row.phase}</dd>
        <dt>attempt</dt><dd>${String(attempt)}</dd>
        <dt>created</dt><dd>${formatTime(row.createdAt)}</dd>
        ${row.status === "terminal" ? html`<dt>took</dt><dd>${formatDuration(Math.max(0, row.updatedAt - row.createdAt))}</dd>` : html`<dt>last change</dt><dd>${formatTime(row.updatedAt)}</dd>`}
        <dt>tokens</dt><dd>${usageSummary(row.usage, "total")}</dd>
      </dl>
      <h3>Input</h3>${jsonBlock(row.input)}
      ${row.status === "terminal" && row.output !== null ? html`<h3>Output</h3>${jsonBlock(row.output)}` : ""}
      ${row.error ? html`<h3>Error</h3><p class="error-line"><code>${row.error.code}</code> ${row.error.message}</p>` : ""}
    </section>
    ${actions(links, row, approval, context)}
    ${tree}
    ${waterfall(timeline)}
    <section id="timeline"><h2>Timeline</h2><ol class="timeline">${timeline.map((step) => stepItem(step, timeline[0]?.at ?? step.at))}</ol></section>`;
}

function actions(links: Links, row: ExecutionRow, approval: PendingApproval | undefined, context: ApprovalContext | undefined): Html {
  const parts: Html[] = [];
  if (approval) parts.push(approvalCard(links, approval, context));
  if (row.status !== "terminal") {
    parts.push(
      actionForm(
        links,
        "cancel",
        { executionId: row.executionId },
        html`<input type="text" name="reason" placeholder="reason (recorded)" maxlength="2000" data-keep="cancel-reason"> <button type="submit" class="reject">Cancel execution</button>`,
        "cancel",
      ),
    );
  } else if (row.outcome !== "completed" && row.outcome !== "handed_off") {
    parts.push(actionForm(links, "retry", { executionId: row.executionId }, html`<button type="submit">Retry from its last durable step</button>`, "retry"));
  }
  return parts.length === 0 ? html`` : html`<section id="actions"><h2>Actions</h2>${parts}</section>`;
}

const labels: Record<string, string> = {
  input: "input",
  provider_barrier: "model barrier",
  model_response: "model response",
  model_attempt_failed: "model attempt failed",
  tool_barrier: "tool barrier",
  tool_results: "tool results",
  approval_requested: "approval requested",
  approval_decided: "approval decided",
  recovered: "recovered",
  terminal: "terminal",
  note: "note",
  queued: "queued",
  retried: "retried",
};

function stepItem(step: StoredStep & { readonly attempt: number }, firstAt: number): Html {
  const payload = (typeof step.payload === "object" && !Array.isArray(step.payload) ? step.payload : null) as Payload;
  // A terminal's dot says how it ended (red when it failed).
  const ended = step.kind === "terminal" && typeof payload?.["outcome"] === "string" ? ` ${payload["outcome"]}` : "";
  return html`<li class="step ${step.kind}${ended}" data-kind="${step.kind}">
    <div class="step-head"><span class="kind">${labels[step.kind] ?? step.kind}</span> <span class="muted small">#${String(step.seq)} · ${step.seq === 0 || step.at === firstAt ? formatTime(step.at) : `+${formatDuration(step.at - firstAt)}`}${step.attempt > 1 ? ` · attempt ${step.attempt}` : ""}</span></div>
    <div class="step-body">${stepBody(step.kind, step.payload, payload)}</div>
  </li>`;
}

function stepBody(kind: string, raw: Json, payload: Payload): Html {
  switch (kind) {
    case "input":
      return jsonBlock(raw);
    case "provider_barrier":
      return html`<span class="muted">model call <code>${String(payload?.["callId"] ?? "")}</code> committed before it starts</span>`;
    case "model_response":
      return modelResponse(payload);
    case "tool_barrier":
      return toolCalls(payload?.["calls"], true);
    case "tool_results":
      return toolResults(payload?.["results"]);
    case "approval_requested": {
      const request = (payload?.["approvalRequest"] ?? null) as Payload;
      return html`${toolCalls(request?.["toolCalls"], false)}<p class="muted small">approval <code>${String(request?.["approvalId"] ?? "")}</code> · arguments hash <code>${String(request?.["argumentsHash"] ?? "")}</code></p>`;
    }
    case "approval_decided":
      return decisionLine(payload ?? {});
    case "terminal":
      return html`<b>${String(payload?.["outcome"] ?? "")}</b>${payload?.["error"] ? jsonBlock(payload["error"]) : ""}`;
    default:
      return jsonBlock(raw);
  }
}

function modelResponse(payload: Payload): Html {
  const usage = (payload?.["usage"] ?? null) as Payload;
  const text = typeof payload?.["text"] === "string" && payload["text"] !== "" ? html`<blockquote>${payload["text"]}</blockquote>` : "";
  const calls = Array.isArray(payload?.["toolCalls"]) && payload["toolCalls"].length > 0 ? toolCalls(payload["toolCalls"], false) : "";
  const tokens = usageSummary({ inputTokens: 0, outputTokens: 0, totalTokens: 0, ...(usage as Partial<UsageTotals> | null) }, "total");
  return html`${reasoningOf(payload)}${text}${sourcesOf(payload)}${calls}<p class="muted small">tokens: ${tokens}</p>`;
}

/** The model's reasoning, shown quieter than its answer. */
function reasoningOf(payload: Payload): Html | "" {
  const texts = (Array.isArray(payload?.["reasoning"]) ? payload["reasoning"] : [])
    .map((part) => (part as Payload)?.["text"])
    .filter((text): text is string => typeof text === "string" && text.length > 0);
  return texts.length === 0 ? "" : html`<blockquote class="muted small">reasoning: ${texts.join(" ")}</blockquote>`;
}

/** The sources the model cited and the files it generated, by name. */
function sourcesOf(payload: Payload): Html | "" {
  const sources = (Array.isArray(payload?.["sources"]) ? payload["sources"] : []).map((source) => {
    const record = (source ?? {}) as Payload;
    return String(record?.["title"] || record?.["url"] || record?.["filename"] || record?.["id"] || "");
  });
  const files = (Array.isArray(payload?.["files"]) ? payload["files"] : []).map((file) => `file: ${String((file as Payload)?.["mediaType"] ?? "")}`);
  const named = [...sources.map((name) => `source: ${name}`), ...files];
  return named.length === 0 ? "" : html`<p class="muted small">${named.join(" · ")}</p>`;
}

function toolCalls(calls: Json | undefined, withKeys: boolean): Html {
  if (!Array.isArray(calls)) return html``;
  return html`<ul class="calls">${calls.map((call) => {
    const record = (call ?? {}) as { readonly [key: string]: Json };
    return html`<li><code class="tool">${String(record["toolName"] ?? "")}</code> <span class="muted small">call ${String(record["callId"] ?? "")}</span>
      ${withKeys ? html`<span class="muted small"> · idempotency key <code class="key">${String(record["idempotencyKey"] ?? "")}</code></span>` : ""}${jsonBlock(record["input"] ?? null)}</li>`;
  })}</ul>`;
}

function toolResults(results: Json | undefined): Html {
  if (!Array.isArray(results)) return html``;
  return html`<ul class="calls">${results.map((result) => {
    const record = (result ?? {}) as { readonly [key: string]: Json };
    return html`<li><code class="tool">${String(record["toolName"] ?? "")}</code> ${record["isError"] === true ? html`<span class="badge bad">error</span>` : ""} <span class="muted small">call ${String(record["callId"] ?? "")}</span>${jsonBlock(record["output"] ?? null)}</li>`;
  })}</ul>`;
}
