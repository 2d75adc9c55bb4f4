// A wait for a person, as a card to decide it from (docs/decisions/0083):
// what the conversation said last and what the model said (and reasoned)
// before its call, then the answer a person may give —
// * an approval: the arguments of each call in an editable JSON field
//   (approve as they are, or with the edits: checked server-side, then by
//   the tool's input schema), a response in place of the tool, or a
//   rejection with its reason;
// * a typed wait: a form built from its `responseSchema` (one input per
//   property when the schema is an object of strings, numbers, booleans and
//   enums; a JSON field otherwise).
// Every form is bound to the approval id and the arguments' hash shown.

import type { Json, PendingApproval } from "../index.js";
import { formatTime, prettyJson, jsonShownMax } from "./format.js";
import { html, type Html } from "./html.js";
import type { Links } from "./links.js";

/** What a card shows around the wait (approval-context.ts reads it). */
export interface ApprovalContext {
  /** The definition the conversation belongs to, when named. */
  readonly definition?: string;
  /** The conversation's last turns, oldest first. */
  readonly turns: readonly { readonly role: "user" | "assistant"; readonly text: string }[];
  /** What the model said before the call, and its reasoning. */
  readonly modelText?: string;
  readonly reasoning?: string;
}

/** A simple form field derived from a JSON Schema property. */
export interface SchemaField {
  readonly name: string;
  readonly type: "string" | "number" | "integer" | "boolean" | "enum";
  readonly required: boolean;
  readonly options?: readonly string[];
  readonly description?: string;
}

/** The fields of an object schema of simple properties; undefined when
 * the schema is anything else (the form is then one JSON field). */
export function schemaFields(schema: Json | undefined): SchemaField[] | undefined {
  const record = schema as { type?: unknown; properties?: unknown; required?: unknown } | null | undefined;
  if (record === null || record === undefined || typeof record !== "object" || record.type !== "object") return undefined;
  if (typeof record.properties !== "object" || record.properties === null) return undefined;
  const required = new Set(Array.isArray(record.required) ? record.required.filter((name): name is string => typeof name === "string") : []);
  const fields: SchemaField[] = [];
  for (const [name, given] of Object.entries(record.properties as Record<string, unknown>)) {
    const property = given as { type?: unknown; enum?: unknown; description?: unknown } | null;
    if (property === null || typeof property !== "object") return undefined;
    const description = typeof property.description === "string" ? { description: property.description } : {};
    if (Array.isArray(property.enum) && property.enum.every((option) => typeof option === "string")) {
      fields.push({ name, type: "enum", required: required.has(name), options: property.enum as string[], ...description });
    } else if (property.type === "string" || property.type === "number" || property.type === "integer" || property.type === "boolean") {
      fields.push({ name, type: property.type, required: required.has(name), ...description });
    } else return undefined;
  }
  return fields;
}

/** `back`: the page the decision returns to (default: the execution's). */
export function approvalCard(links: Links, approval: PendingApproval, context?: ApprovalContext, back?: string): Html {
  const { request } = approval;
  const typed = approval.kind === "input";
  return html`<article class="approval${typed ? " typed-wait" : ""}" data-execution="${approval.executionId}" data-kind="${approval.kind}">
    <header><a href="${links.execution(approval.executionId)}"><code>${approval.executionId}</code></a> · ${context?.definition ? html`<b class="definition">${context.definition}</b> · ` : ""}conversation <code>${approval.agentId}</code> · ${waitWords(approval)} since ${formatTime(approval.since)}</header>
    ${context ? contextOf(context) : ""}
    ${answerOf(links, approval, back)}
    ${request.dueAt !== undefined && approval.kind !== "child" ? fireForm(links, approval, back) : ""}
    <p class="muted small">${approval.kind === "approval" ? "approval" : "wait"} <code>${request.approvalId}</code> · arguments hash <code>${request.argumentsHash}</code> · <a class="conversation" href="${links.to(`/conversations/${encodeURIComponent(approval.agentId)}`)}">the conversation</a></p>
  </article>`;
}

/** What the wait is for, in words (docs/decisions/0075–0079). */
function waitWords(approval: PendingApproval): string {
  const due = approval.request.dueAt !== undefined ? formatTime(approval.request.dueAt) : "";
  switch (approval.kind) {
    case "input":
      return `asks for input${due !== "" ? ` (times out ${due})` : ""}`;
    case "event":
      return `waits for the event ${approval.request.key ?? ""}${due !== "" ? ` (times out ${due})` : ""}`;
    case "child":
      return "waits for its child execution";
    case "timer":
      return `a timer due ${due}`;
    default:
      return "waits for approval";
  }
}

/** How a person answers the wait: a decision, a value, the event; a
 * child's wait is answered by its child's end, a timer by the clock. */
function answerOf(links: Links, approval: PendingApproval, back: string | undefined): Html | string {
  switch (approval.kind) {
    case "input":
      return typedWaitForm(links, approval, back);
    case "event":
      return eventForm(links, approval, back);
    case "child": {
      const child = approval.request.child?.executionId;
      return child === undefined
        ? ""
        : html`<p>Answered by the end of <a href="${links.execution(child)}"><code>${child}</code></a>: open it to act on its own waits.</p>`;
    }
    case "timer":
      return "";
    default:
      return approvalForm(links, approval, back);
  }
}

/** Sends the event the wait is keyed on (`env.signal`), as a webhook would. */
function eventForm(links: Links, approval: PendingApproval, back: string | undefined): Html {
  const key = approval.request.key ?? "";
  return html`<form method="post" action="${links.action("signal")}" class="decide event">
    ${hidden(links, { key }, back)}
    <label>Payload (JSON) for <code>${key}</code> <textarea class="json-edit" name="payload" rows="3" spellcheck="false" data-keep="payload-${approval.executionId}" aria-label="the event's payload"></textarea></label>
    <button type="submit">Send the event</button>
  </form>`;
}

/** The clock's answer now: a timer fires, a wait with a timeout ends timed out. */
function fireForm(links: Links, approval: PendingApproval, back: string | undefined): Html {
  const label = approval.kind === "timer" ? "Fire now" : "End it now (timed out)";
  return html`<form method="post" action="${links.action("decide")}" class="decide fire">
    ${hidden(links, { executionId: approval.executionId, approvalId: approval.request.approvalId, decision: "fire" }, back)}
    <button type="submit" class="fire">${label}</button>
  </form>`;
}

function contextOf(context: ApprovalContext): Html {
  const turns = context.turns.map(
    (turn) => html`<li class="turn ${turn.role}"><span class="who">${turn.role === "user" ? "user" : "assistant"}</span> ${turn.text}</li>`,
  );
  return html`<div class="context">
    ${turns.length > 0 ? html`<ol class="turns">${turns}</ol>` : ""}
    ${context.reasoning ? html`<blockquote class="muted small reasoning">reasoning: ${context.reasoning}</blockquote>` : ""}
    ${context.modelText ? html`<blockquote class="model-text">${context.modelText}</blockquote>` : ""}
  </div>`;
}

function hidden(links: Links, fields: Readonly<Record<string, string>>, back: string | undefined): Html[] {
  return Object.entries({ token: links.tokenValue, ...fields, ...(back !== undefined ? { back } : {}) }).map(
    ([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`,
  );
}

function approvalForm(links: Links, approval: PendingApproval, back: string | undefined): Html {
  const { request } = approval;
  const calls = request.toolCalls.map((call) => {
    const text = prettyJson(call.input);
    const editable = text.length <= jsonShownMax;
    return html`<li><code class="tool">${call.toolName}</code> <span class="muted">call ${call.callId}</span><pre class="json">${text}</pre>
      ${
        editable
          ? html`<details class="edit"><summary class="small">Edit the arguments</summary><textarea class="json-edit" name="input:${call.callId}" rows="${String(Math.min(12, text.split("\n").length + 1))}" spellcheck="false" data-keep="input-${approval.executionId}-${call.callId}" aria-label="arguments of ${call.toolName}">${text}</textarea>
            <p class="muted small">Approve runs the call with these (checked against the tool's input schema; fields shown <code>***</code> keep their value).</p></details>`
          : ""
      }</li>`;
  });
  const several = request.toolCalls.length > 1;
  const respondTo = several
    ? html`<label>For call <select name="respondCallId" data-keep="respond-call-${approval.executionId}">${request.toolCalls.map((call) => html`<option value="${call.callId}">${call.toolName} · ${call.callId}</option>`)}</select></label>`
    : "";
  return html`<form method="post" action="${links.action("decide")}" class="decide">
    ${hidden(links, { executionId: approval.executionId, approvalId: request.approvalId, argumentsHash: request.argumentsHash }, back)}
    <ol class="calls">${calls}</ol>
    <div class="decide-row">
      <label>Reason <input type="text" name="reason" maxlength="2000" placeholder="recorded with the decision; told to the model when rejected" data-keep="reason-${approval.executionId}"></label>
      <button type="submit" name="decision" value="approve" class="approve">Approve</button>
      <button type="submit" name="decision" value="reject" class="reject">Reject</button>
    </div>
    <details class="respond"><summary>Respond in place of the tool</summary>
      ${respondTo}
      <textarea class="json-edit" name="respond" rows="3" spellcheck="false" placeholder='the result, as JSON: {"status": "done"}' data-keep="respond-${approval.executionId}" aria-label="response in place of the tool"></textarea>
      <button type="submit" name="decision" value="respond">Respond</button>
    </details>
  </form>`;
}

function typedWaitForm(links: Links, approval: PendingApproval, back: string | undefined): Html {
  const { request } = approval;
  const call = request.toolCalls[0];
  const fields = schemaFields(request.responseSchema);
  const keep = (name: string) => `value-${approval.executionId}-${name}`;
  const inputs =
    fields === undefined
      ? html`<label>Value (JSON) <textarea class="json-edit" name="valueJson" rows="5" spellcheck="false" data-keep="${keep("json")}" aria-label="value as JSON"></textarea></label>`
      : fields.map((field) => fieldInput(field, keep(field.name)));
  return html`<div class="question">${call ? html`<code class="tool">${call.toolName}</code> ${prettyJson(call.input)}` : ""}</div>
  <form method="post" action="${links.action("decide")}" class="decide typed">
    ${hidden(links, { executionId: approval.executionId, approvalId: request.approvalId, argumentsHash: request.argumentsHash, decision: "value" }, back)}
    <div class="fields">${inputs}</div>
    <details class="schema"><summary class="muted small">response schema</summary><pre class="json">${prettyJson(request.responseSchema ?? null)}</pre></details>
    <div class="decide-row">
      <label>Reason <input type="text" name="reason" maxlength="2000" placeholder="recorded with the answer" data-keep="${keep("reason")}"></label>
      <button type="submit" class="approve">Answer</button>
    </div>
  </form>`;
}

function fieldInput(field: SchemaField, keep: string): Html {
  const label = html`${field.name}${field.required ? "" : html` <span class="muted">(optional)</span>`}${field.description ? html` <span class="muted small">${field.description}</span>` : ""}`;
  const name = `field:${field.name}`;
  switch (field.type) {
    case "boolean":
      return html`<label class="check"><input type="checkbox" name="${name}" value="true" data-keep="${keep}"> ${label}</label>`;
    case "enum":
      return html`<label>${label} <select name="${name}" data-keep="${keep}">${field.required ? "" : html`<option value=""></option>`}${(field.options ?? []).map((option) => html`<option value="${option}">${option}</option>`)}</select></label>`;
    case "number":
    case "integer":
      return html`<label>${label} <input type="number" name="${name}" step="${field.type === "integer" ? "1" : "any"}"${field.required ? html` required` : ""} data-keep="${keep}"></label>`;
    default:
      return html`<label>${label} <input type="text" name="${name}"${field.required ? html` required` : ""} data-keep="${keep}"></label>`;
  }
}
