// The front page: counts per status, the filter, approvals waiting (with
// their arguments in full and the decision form), executions held for
// recovery, queued messages, and the executions themselves, newest first.

import type { AdminCounts, AdminExecutionQuery, AdminStatus, Environment, ExecutionRow, HeldExecution, PendingApproval } from "../index.js";
import { compactJson, formatDuration, formatTime } from "./format.js";
import { html, type Html } from "./html.js";
import type { Links } from "./links.js";
import { approvalContexts } from "./approval-context.js";
import type { ApprovalContext } from "./decision-card.js";
import { actionForm, approvalCard, badge } from "./pieces.js";
import { conversationLabel } from "./transcript.js";

/** Rows the front page lists (the filter narrows them). */
export const listShownMax = 200;

export const statusChoices: readonly AdminStatus[] = [
  "active",
  "suspended",
  "queued",
  "completed",
  "failed",
  "handed_off",
  "terminal",
  "preparing",
  "recovery_required",
];

/** `within` choices: how far back "created" reaches. */
export const withinChoices: Readonly<Record<string, number>> = { "15m": 15 * 60_000, "1h": 3_600_000, "24h": 86_400_000, "7d": 7 * 86_400_000 };

export interface ListQuery {
  readonly status?: string;
  readonly agent?: string;
  readonly q?: string;
  readonly within?: string;
}

export function adminQueryOf(query: ListQuery, now: number): AdminExecutionQuery {
  const status = statusChoices.includes(query.status as AdminStatus) ? (query.status as AdminStatus) : undefined;
  const within = query.within !== undefined ? withinChoices[query.within] : undefined;
  return {
    limit: listShownMax,
    ...(status ? { status } : {}),
    ...(query.agent ? { agentId: query.agent } : {}),
    ...(query.q ? { idPrefix: query.q.trim() } : {}),
    ...(within !== undefined ? { since: now - within } : {}),
  };
}

export async function listLive(environment: Environment, links: Links, query: ListQuery, now: number): Promise<Html> {
  const admin = environment.admin;
  const [counts, approvals, held, queued, rows] = await Promise.all([
    admin.counts(query.agent ? { agentId: query.agent } : {}),
    admin.approvals(),
    admin.held(),
    admin.queued(),
    admin.executions(adminQueryOf(query, now)),
  ]);
  const contexts = await approvalContexts(environment, approvals);
  return html`
    ${countsBar(links, counts, query)}
    ${filterForm(links, query)}
    ${approvalsSection(links, approvals, contexts)}
    ${heldSection(links, held, environment.visitor)}
    ${queuedSection(links, queued)}
    ${executionsSection(links, rows)}`;
}

function countsBar(links: Links, counts: AdminCounts, query: ListQuery): Html {
  const shown = ["active", "suspended", "queued", "completed", "failed", "handed_off"];
  const labels: Record<string, string> = {
    active: "running",
    suspended: "waiting for approval",
    queued: "queued",
    completed: "completed",
    failed: "failed",
    handed_off: "handed off",
  };
  const items = shown.map(
    (status) =>
      html`<a class="count${query.status === status ? " selected" : ""}" data-status="${status}" href="${links.to("/", { ...query, status })}"><b>${String(counts.byStatus[status] ?? 0)}</b> ${labels[status]}</a>`,
  );
  const note = counts.truncated ? html`<span class="muted small">(over the newest ${String(counts.scanned)})</span>` : "";
  return html`<nav class="counts" aria-label="counts per status"><a class="count${query.status ? "" : " selected"}" href="${links.to("/", { ...query, status: undefined })}"><b>${String(counts.scanned)}</b> all</a>${items}${note}</nav>`;
}

function filterForm(links: Links, query: ListQuery): Html {
  const options = statusChoices.map(
    (status) => html`<option value="${status}"${query.status === status ? html` selected` : ""}>${status.replace(/_/g, " ")}</option>`,
  );
  const withins = Object.keys(withinChoices).map((key) => html`<option value="${key}"${query.within === key ? html` selected` : ""}>last ${key}</option>`);
  return html`<form class="filter" method="get" action="${links.basePath}/">
    <input type="hidden" name="token" value="${links.tokenValue}">
    <label>Status <select name="status" data-keep="status"><option value="">any</option>${options}</select></label>
    <label>Agent / conversation <input type="text" name="agent" value="${query.agent ?? ""}" data-keep="agent"></label>
    <label>Created <select name="within" data-keep="within"><option value="">any time</option>${withins}</select></label>
    <label>Id <input type="search" name="q" value="${query.q ?? ""}" placeholder="id or prefix" data-keep="q"></label>
    <button type="submit">Filter</button>
  </form>`;
}

function approvalsSection(links: Links, approvals: readonly PendingApproval[], contexts: readonly (ApprovalContext | undefined)[]): Html {
  if (approvals.length === 0) return html`<section id="approvals"><h2>Approvals waiting</h2><p class="muted">None.</p></section>`;
  return html`<section id="approvals"><h2>Approvals waiting <span class="pill">${String(approvals.length)}</span></h2>${approvals.map((approval, index) => approvalCard(links, approval, contexts[index]))}</section>`;
}

function heldSection(links: Links, held: readonly HeldExecution[], visitor: boolean): Html {
  if (held.length === 0) return html`<section id="held"><h2>Held for recovery</h2><p class="muted">None.</p></section>`;
  const rows = held.map(
    ({ row, reason }) =>
      html`<tr><td><a href="${links.execution(row.executionId)}"><code>${row.executionId}</code></a></td><td><code>${row.agentId}</code></td><td>${row.phase}</td><td>${reason}</td></tr>`,
  );
  const recover = visitor
    ? html`<p class="muted small">This page visits the store: recovery runs in the process that owns it (restart it, or <code>phronomy recover</code> once it stopped).</p>`
    : actionForm(links, "recover", {}, html`<button type="submit">Recover now</button>`);
  return html`<section id="held"><h2>Held for recovery <span class="pill">${String(held.length)}</span></h2>
    <table><thead><tr><th>execution</th><th>agent</th><th>phase</th><th>why</th></tr></thead><tbody>${rows}</tbody></table>${recover}</section>`;
}

function queuedSection(links: Links, queued: readonly ExecutionRow[]): Html {
  if (queued.length === 0) return html`<section id="queued"><h2>Queued messages</h2><p class="muted">None.</p></section>`;
  const rows = queued.map(
    (
      row,
    ) => html`<tr><td><a href="${links.execution(row.executionId)}"><code>${row.executionId}</code></a></td><td><code>${row.agentId}</code></td><td>${formatTime(row.createdAt)}</td><td>${compactJson(row.input)}</td>
    <td>${actionForm(links, "cancel", { executionId: row.executionId }, html`<button type="submit">Cancel</button>`)}</td></tr>`,
  );
  return html`<section id="queued"><h2>Queued messages <span class="pill">${String(queued.length)}</span></h2>
    <table><thead><tr><th>message</th><th>conversation</th><th>queued</th><th>input</th><th></th></tr></thead><tbody>${rows}</tbody></table></section>`;
}

function executionsSection(links: Links, rows: readonly ExecutionRow[]): Html {
  if (rows.length === 0) return html`<section id="executions"><h2>Executions</h2><p class="muted">No execution matches.</p></section>`;
  const body = rows.map(
    (row) => html`<tr data-execution="${row.executionId}">
    <td><a href="${links.execution(row.executionId)}"><code>${row.executionId}</code></a></td>
    <td>${conversationLabel(links, row)}</td><td>${badge(row)}</td>
    <td>${formatTime(row.createdAt)}</td><td>${row.status === "terminal" ? formatDuration(Math.max(0, row.updatedAt - row.createdAt)) : "…"}</td>
    <td class="num">${String(row.usage.totalTokens)}</td><td class="input">${compactJson(row.input, 80)}</td></tr>`,
  );
  return html`<section id="executions"><h2>Executions</h2>
    <table><thead><tr><th>execution</th><th>agent</th><th>state</th><th>created</th><th>took</th><th>tokens</th><th>input</th></tr></thead><tbody>${body}</tbody></table></section>`;
}
