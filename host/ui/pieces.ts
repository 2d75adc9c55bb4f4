// Small pieces several pages share: the state badge, the approval card with
// its decision form, the action forms (each a POST carrying the token), and
// a JSON block.

import type { ExecutionRow, Json, PendingApproval } from "../index.js";
import { formatTime, prettyJson, stateClass, stateOf } from "./format.js";
import { html, type Html } from "./html.js";
import type { Links } from "./links.js";

export function badge(row: Pick<ExecutionRow, "status" | "outcome" | "phase">): Html {
  return html`<span class="badge ${stateClass(row)}">${stateOf(row)}</span>`;
}

export function jsonBlock(value: Json | undefined): Html {
  return html`<pre class="json">${prettyJson(value)}</pre>`;
}

/** A POST form to one action; `fields` become hidden inputs. */
export function actionForm(links: Links, action: string, fields: Readonly<Record<string, string>>, body: Html, className = "inline"): Html {
  const hidden = Object.entries({ token: links.tokenValue, ...fields }).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`);
  return html`<form method="post" action="${links.action(action)}" class="${className}">${hidden}${body}</form>`;
}

/** An approval waiting: the tool calls with their arguments in full, and
 * the decision form bound to its approval id and arguments hash. */
export function approvalCard(links: Links, approval: PendingApproval): Html {
  const { request } = approval;
  const calls = request.toolCalls.map(
    (call) => html`<li><code class="tool">${call.toolName}</code> <span class="muted">call ${call.callId}</span>${jsonBlock(call.input)}</li>`,
  );
  const form = actionForm(
    links,
    "decide",
    { executionId: approval.executionId, approvalId: request.approvalId, argumentsHash: request.argumentsHash },
    html`
    <label>Reason <input type="text" name="reason" maxlength="2000" placeholder="recorded with the decision; told to the model when rejected" data-keep="reason-${approval.executionId}"></label>
    <button type="submit" name="decision" value="approve" class="approve">Approve</button>
    <button type="submit" name="decision" value="reject" class="reject">Reject</button>`,
    "decide",
  );
  return html`<article class="approval" data-execution="${approval.executionId}">
    <header><a href="${links.execution(approval.executionId)}"><code>${approval.executionId}</code></a> · agent <code>${approval.agentId}</code> · waiting since ${formatTime(approval.since)}</header>
    <ol class="calls">${calls}</ol>
    <p class="muted small">approval <code>${request.approvalId}</code> · arguments hash <code>${request.argumentsHash}</code></p>
    ${form}
  </article>`;
}
