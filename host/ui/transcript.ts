// A conversation as one transcript (docs/decisions/0083): each execution's
// user message, then what its timeline holds — the model's answers (its
// reasoning folded), tool calls and results, approvals asked and decided
// (by whom, with what), typed waits, how it ended — and queued messages
// marked as waiting their turn.

import type { ExecutionRow, Json, StoredStep } from "../index.js";
import { compactJson } from "./format.js";
import { html, type Html } from "./html.js";
import type { Links } from "./links.js";
import { badge } from "./pieces.js";

type Payload = { readonly [key: string]: Json };

/** The definition an execution's conversation belongs to (`env.agent({ name })`). */
export function definitionOf(row: Pick<ExecutionRow, "metadata">): string | undefined {
  const definition = row.metadata?.config?.["definition"];
  return typeof definition === "string" ? definition : undefined;
}

/** The text of an execution's input: the string, or its last user message's text. */
export function messageText(input: Json): string {
  if (typeof input === "string") return input;
  if (Array.isArray(input)) {
    const user = [...input].reverse().find((message) => (message as Payload | null)?.["role"] === "user") as Payload | undefined;
    const content = user?.["content"];
    if (typeof content === "string") return content;
    if (Array.isArray(content)) {
      const texts = content.map((part) => (part as Payload | null)?.["text"]).filter((text): text is string => typeof text === "string");
      if (texts.length > 0) return texts.join(" ");
    }
  }
  return compactJson(input, 400);
}

/** The conversation label shown beside an id: definition name and conversation link. */
export function conversationLabel(links: Links, row: Pick<ExecutionRow, "agentId" | "metadata">): Html {
  const definition = definitionOf(row);
  return html`${definition !== undefined ? html`<b class="definition">${definition}</b> · ` : ""}<a class="conversation" href="${links.to(`/conversations/${encodeURIComponent(row.agentId)}`)}"><code>${row.agentId}</code></a>`;
}

/** One execution as transcript entries. */
export function transcriptOf(links: Links, row: ExecutionRow, timeline: readonly StoredStep[], pendingCard: Html | undefined): Html {
  const entries: Html[] = [
    html`<li class="msg user${row.status === "queued" ? " queued" : ""}"><span class="who">user</span> ${messageText(row.input)}${row.status === "queued" ? html` <span class="badge neutral">queued: waits for the answer before it</span>` : ""}</li>`,
  ];
  for (const step of timeline) {
    const entry = stepEntry(step);
    if (entry !== undefined) entries.push(entry);
  }
  if (pendingCard !== undefined) entries.push(html`<li class="msg wait">${pendingCard}</li>`);
  if (row.status === "active" || row.status === "preparing") entries.push(html`<li class="msg assistant working muted">answering…</li>`);
  return html`<li class="exchange" data-execution="${row.executionId}"><div class="exchange-head muted small"><a href="${links.execution(row.executionId)}">execution <code>${row.executionId}</code></a> ${badge(row)}</div><ol class="messages">${entries}</ol></li>`;
}

function stepEntry(step: StoredStep): Html | undefined {
  const payload = (typeof step.payload === "object" && step.payload !== null && !Array.isArray(step.payload) ? step.payload : {}) as Payload;
  switch (step.kind) {
    case "model_response": {
      const reasoning = (Array.isArray(payload["reasoning"]) ? payload["reasoning"] : [])
        .map((part) => (part as Payload | null)?.["text"])
        .filter((text): text is string => typeof text === "string" && text !== "");
      const text = typeof payload["text"] === "string" ? payload["text"] : "";
      const calls = Array.isArray(payload["toolCalls"]) ? payload["toolCalls"] : [];
      if (text === "" && calls.length === 0 && reasoning.length === 0) return undefined;
      return html`<li class="msg assistant"><span class="who">assistant</span>
        ${reasoning.length > 0 ? html`<details class="reasoning"><summary class="muted small">reasoning</summary><p class="muted small">${reasoning.join(" ")}</p></details>` : ""}
        ${text !== "" ? html`<p>${text}</p>` : ""}
        ${calls.map((call) => {
          const record = (call ?? {}) as Payload;
          return html`<div class="tool-call"><span class="muted small">calls</span> <code class="tool">${String(record["toolName"] ?? "")}</code> <code class="small">${compactJson(record["input"] ?? null, 200)}</code></div>`;
        })}</li>`;
    }
    case "tool_results": {
      const results = Array.isArray(payload["results"]) ? payload["results"] : [];
      return html`<li class="msg tool">${results.map((result) => {
        const record = (result ?? {}) as Payload;
        return html`<div><span class="who">tool</span> <code class="tool">${String(record["toolName"] ?? "")}</code>${record["isError"] === true ? html` <span class="badge bad">error</span>` : ""} <code class="small">${compactJson(record["output"] ?? null, 200)}</code></div>`;
      })}</li>`;
    }
    case "approval_requested": {
      const request = (payload["approvalRequest"] ?? {}) as Payload;
      const names = (Array.isArray(request["toolCalls"]) ? request["toolCalls"] : []).map((call) => String((call as Payload | null)?.["toolName"] ?? ""));
      return html`<li class="msg event muted small">${request["kind"] === "input" ? "asked a person for input" : "asked for approval"}: ${names.join(", ")}</li>`;
    }
    case "approval_decided":
      return html`<li class="msg event small">${decisionLine(payload)}</li>`;
    case "terminal": {
      const outcome = String(payload["outcome"] ?? "");
      if (outcome === "completed") return undefined;
      const error = (payload["error"] ?? null) as Payload | null;
      return html`<li class="msg event bad-text small">${outcome}${error?.["message"] ? html`: ${String(error["message"])}` : ""}</li>`;
    }
    default:
      return undefined;
  }
}

/** "approved with edited arguments by ana@support — reason: …" */
export function decisionLine(payload: Payload): Html {
  const action = (payload["action"] ?? null) as Payload | null;
  const kind = action?.["kind"];
  const verb =
    kind === "value"
      ? "answered"
      : kind === "respond"
        ? "responded in place of the tool"
        : kind === "edit"
          ? "approved with edited arguments"
          : payload["approved"] === true
            ? "approved"
            : "rejected";
  const good = kind !== undefined || payload["approved"] === true;
  const by = typeof payload["decidedBy"] === "string" ? html` by <b class="decided-by">${payload["decidedBy"]}</b>` : "";
  const value = action !== null && action["value"] !== undefined ? html` <code class="small">${compactJson(action["value"], 200)}</code>` : "";
  return html`<b class="${good ? "ok-text" : "bad-text"}">${verb}</b>${by}${value}${payload["reason"] ? html` — reason: <q>${String(payload["reason"])}</q>` : ""}`;
}
