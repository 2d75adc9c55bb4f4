// The front page: counts per status over the whole store, the filter and
// the search box, approvals waiting (with their arguments in full and the
// decision form; narrowed by the filter), executions held for recovery,
// queued messages, and the executions themselves, newest first, a page at
// a time by cursor, each with a box to select it for a bulk cancel or
// retry (`bulk-page.ts` asks to confirm; docs/decisions/0082).

import type {
  AdminCounts,
  AdminDefinition,
  AdminPage,
  AdminPageQuery,
  AdminStatus,
  Environment,
  ExecutionRow,
  HeldExecution,
  PendingApproval,
} from "../index.js";
import { compactJson, formatDuration, formatTime } from "./format.js";
import { html, type Html } from "./html.js";
import type { Links } from "./links.js";
import { approvalContexts } from "./approval-context.js";
import type { ApprovalContext } from "./decision-card.js";
import { actionForm, approvalCard, badge } from "./pieces.js";
import { conversationLabel } from "./transcript.js";
import { bulkExecutionsMax } from "../index.js";

/** Rows one page of the front page lists. */
export const listShownMax = 50;

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

/** The page's URL parameters (`within` is relative to now, so a page
 * reloaded later still shows "the last hour"). */
export interface ListQuery {
  readonly status?: string;
  readonly agent?: string;
  /** An agent definition's name: its conversations. */
  readonly definition?: string;
  /** An id or the start of one. */
  readonly q?: string;
  /** Words searched in inputs and outputs. */
  readonly text?: string;
  readonly within?: string;
  /** A page's next or previous. */
  readonly cursor?: string;
}

/** The filter of the list (no cursor, no limit): what "all matching" means. */
export function filterOf(query: ListQuery, now: number): AdminPageQuery {
  const status = statusChoices.includes(query.status as AdminStatus) ? (query.status as AdminStatus) : undefined;
  const within = query.within !== undefined ? withinChoices[query.within] : undefined;
  return {
    ...(status ? { status } : {}),
    ...(query.agent ? { agentId: query.agent.trim() } : {}),
    ...(query.definition?.trim() ? { definition: query.definition.trim() } : {}),
    ...(query.q?.trim() ? { idPrefix: query.q.trim() } : {}),
    ...(query.text?.trim() ? { text: query.text.trim() } : {}),
    ...(within !== undefined ? { since: now - within } : {}),
  };
}

export async function listLive(environment: Environment, links: Links, query: ListQuery, now: number): Promise<Html> {
  const admin = environment.admin;
  const filter = filterOf(query, now);
  const [counts, approvals, held, queued, page] = await Promise.all([
    admin.counts(query.agent ? { agentId: query.agent.trim() } : {}),
    admin.approvals(),
    admin.held(),
    admin.queued(),
    admin.page({ ...filter, limit: listShownMax, ...(query.cursor ? { cursor: query.cursor } : {}) }).catch((error: unknown) => error as Error),
  ]);
  const candidates = approvals.filter((approval) => approvalShown(approval, filter));
  const candidateContexts = await approvalContexts(environment, candidates);
  // A definition is known from the conversation's rows, which the context read.
  const kept = candidates.flatMap((approval, index) =>
    filter.definition === undefined || candidateContexts[index]?.definition === filter.definition ? [{ approval, context: candidateContexts[index] }] : [],
  );
  const shown = kept.map(({ approval }) => approval);
  const contexts = kept.map(({ context }) => context);
  return html`
    ${countsBar(links, counts, query)}
    ${filterForm(links, query, environment.admin.definitions())}
    ${approvalsSection(links, shown, contexts, approvals.length)}
    ${heldSection(links, held, environment.visitor)}
    ${queuedSection(links, queued)}
    ${page instanceof Error ? html`<p class="notice bad" role="alert">${page.message}</p>` : executionsSection(links, page, query)}`;
}

/** An approval is an execution waiting (status `suspended`): shown when the
 * filter would list it. */
function approvalShown(approval: PendingApproval, filter: AdminPageQuery): boolean {
  return (
    (filter.status === undefined || filter.status === "suspended")
    && (filter.agentId === undefined || approval.agentId === filter.agentId)
    && (filter.idPrefix === undefined || approval.executionId.startsWith(filter.idPrefix))
    && (filter.since === undefined || approval.since >= filter.since)
  );
}

function countsBar(links: Links, counts: AdminCounts, query: ListQuery): Html {
  const shown = ["active", "suspended", "queued", "completed", "failed", "handed_off"];
  const labels: Record<string, string> = {
    active: "running",
    suspended: "waiting",
    queued: "queued",
    completed: "completed",
    failed: "failed",
    handed_off: "handed off",
  };
  const items = shown.map(
    (status) =>
      html`<a class="count${query.status === status ? " selected" : ""}" data-status="${status}" href="${links.to("/", { ...query, status, cursor: undefined })}"><b>${String(counts.byStatus[status] ?? 0)}</b> ${labels[status]}</a>`,
  );
  const note = counts.truncated ? html`<span class="muted small">(over the newest ${String(counts.scanned)})</span>` : "";
  const all = links.to("/", { ...query, status: undefined, cursor: undefined });
  return html`<nav class="counts" aria-label="counts per status"><a class="count${query.status ? "" : " selected"}" href="${all}"><b>${String(counts.scanned)}</b> all</a>${items}${note}</nav>`;
}

function filterForm(links: Links, query: ListQuery, definitions: readonly AdminDefinition[]): Html {
  const named = definitions.filter((definition) => definition.kind !== "agent").map((definition) => html`<option value="${definition.name}"></option>`);
  const options = statusChoices.map(
    (status) => html`<option value="${status}"${query.status === status ? html` selected` : ""}>${status.replace(/_/g, " ")}</option>`,
  );
  const withins = Object.keys(withinChoices).map((key) => html`<option value="${key}"${query.within === key ? html` selected` : ""}>last ${key}</option>`);
  return html`<form class="filter" method="get" action="${links.basePath}/">
    <input type="hidden" name="token" value="${links.tokenValue}">
    <label>Status <select name="status" data-keep="status"><option value="">any</option>${options}</select></label>
    <label>Agent / conversation <input type="text" name="agent" value="${query.agent ?? ""}" data-keep="agent"></label>
    <label>Definition <input type="text" name="definition" value="${query.definition ?? ""}" list="definition-names" placeholder="agent definition's name" data-keep="definition"></label>
    <datalist id="definition-names">${named}</datalist>
    <label>Created <select name="within" data-keep="within"><option value="">any time</option>${withins}</select></label>
    <label>Search inputs and outputs <input type="search" name="text" value="${query.text ?? ""}" placeholder="words, e.g. refund 42" maxlength="200" data-keep="text"></label>
    <label>Id <input type="search" name="q" value="${query.q ?? ""}" placeholder="id or prefix" data-keep="q"></label>
    <button type="submit">Filter</button>
  </form>`;
}

function approvalsSection(links: Links, shown: readonly PendingApproval[], contexts: readonly (ApprovalContext | undefined)[], waiting: number): Html {
  if (shown.length === 0) {
    const why = waiting > 0 ? `None matches the filter (${waiting} waiting in all).` : "None.";
    return html`<section id="approvals"><h2>Approvals waiting</h2><p class="muted">${why}</p></section>`;
  }
  return html`<section id="approvals"><h2>Approvals waiting <span class="pill">${String(shown.length)}</span></h2>${shown.map((approval, index) => approvalCard(links, approval, contexts[index]))}</section>`;
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

function executionsSection(links: Links, page: AdminPage, query: ListQuery): Html {
  const rows = page.rows;
  const pager = pagerOf(links, page, query);
  if (rows.length === 0) return html`<section id="executions"><h2>Executions</h2><p class="muted">No execution matches.</p>${pager}</section>`;
  const body = rows.map(
    (row) => html`<tr data-execution="${row.executionId}">
    <td><input type="checkbox" name="executionIds" value="${row.executionId}" form="bulk" data-keep="select-${row.executionId}" aria-label="select ${row.executionId}"></td>
    <td><a href="${links.execution(row.executionId)}"><code>${row.executionId}</code></a></td>
    <td>${conversationLabel(links, row)}</td><td>${badge(row)}</td>
    <td>${formatTime(row.createdAt)}</td><td>${row.status === "terminal" ? formatDuration(Math.max(0, row.updatedAt - row.createdAt)) : "…"}</td>
    <td class="num">${String(row.usage.totalTokens)}</td><td class="input">${compactJson(row.input, 80)}</td></tr>`,
  );
  return html`<section id="executions"><h2>Executions</h2>
    ${bulkForm(links, query)}
    <table><thead><tr><th></th><th>execution</th><th>agent</th><th>state</th><th>created</th><th>took</th><th>tokens</th><th>input</th></tr></thead><tbody>${body}</tbody></table>${pager}</section>`;
}

/** Newer / older by cursor; "newest" back to the first page. */
function pagerOf(links: Links, page: AdminPage, query: ListQuery): Html {
  const newer = page.previous ? html`<a class="page" rel="prev" href="${links.to("/", { ...query, cursor: page.previous })}">← Newer</a>` : "";
  const older = page.next ? html`<a class="page" rel="next" href="${links.to("/", { ...query, cursor: page.next })}">Older →</a>` : "";
  const newest = query.cursor ? html`<a class="page" href="${links.to("/", { ...query, cursor: undefined })}">Newest</a>` : "";
  return newer === "" && older === "" && newest === "" ? html`` : html`<nav class="pager" aria-label="pages">${newest}${newer}${older}</nav>`;
}

/** The bulk form: the boxes of the rows belong to it (`form="bulk"`); it
 * asks for a confirmation page (GET: nothing is done until confirmed). */
function bulkForm(links: Links, query: ListQuery): Html {
  const carried = Object.entries({ status: query.status, agent: query.agent, definition: query.definition, q: query.q, text: query.text, within: query.within })
    .filter(([, value]) => value !== undefined && value !== "")
    .map(([name, value]) => html`<input type="hidden" name="${name}" value="${value!}">`);
  return html`<form id="bulk" class="bulk" method="get" action="${links.basePath}/bulk">
    <input type="hidden" name="token" value="${links.tokenValue}">${carried}
    <span class="muted small">Selected:</span>
    <button type="submit" name="action" value="cancel">Cancel selected…</button>
    <button type="submit" name="action" value="retry">Retry selected…</button>
    <span class="muted small">or every execution the filter matches (at most ${String(bulkExecutionsMax)}):</span>
    <button type="submit" name="matching" value="cancel">Cancel all matching…</button>
    <button type="submit" name="matching" value="retry">Retry all matching…</button>
  </form>`;
}
